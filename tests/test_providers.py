"""Provider payloads: the official schemas and server-side rules for every gallery
fixture × provider, and one test (at least) per translation rule R-TR-2/3/4/6."""

from __future__ import annotations

import base64
import itertools
import json
from typing import Any

import pytest

from ctxkit import providers
from ctxkit.errors import RuleError
from ctxkit.loading.config import Options, resolve
from ctxkit.loading.read import load_fixture
from ctxkit.pipeline import Result, run
from ctxkit.reports.explain import rows as explain_rows

from .conftest import GALLERY
from .helpers import assemble
from .provider_schemas import validate
from .server_rules import check

PROVIDERS = providers.names()
PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="


def model(provider: str, window: int = 10000, extra: str = "", *, settings: str = "", task: str = "") -> str:
    """A model the table does not know, a round window, approx counts, no margin."""
    more = f", {extra}" if extra else ""
    task = f", task: {json.dumps(task)}" if task else ""
    return (
        f"model: {{provider: {provider}, name: test-model, max_input_tokens: {window}"
        f"{more}}}\n"
        "tokenizer: approx\n"
        f"settings: {{safety_margin: 0{', ' + settings if settings else ''}}}\n"
        f'prompts: {{system: "S", datetime_aware: false{task}}}\n'
    )


def valid(provider: str, result: Result) -> dict[str, Any]:
    body = result.payload.body
    assert validate(provider, body) == []
    assert check(provider, body) == []
    return body


# --- every gallery fixture × every provider --------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("path", GALLERY, ids=[p.stem for p in GALLERY])
def test_gallery_bodies_pass_official_schema_and_server_rules(path, provider):
    """Every payload validates and would be accepted (docs/rules.md#quality-targets). The fixture's own window is
    passed on, as a model named for one provider is unknown to the others' tables."""
    fixture = load_fixture(str(path))
    try:
        window = resolve(fixture).max_input_tokens
        result = run(fixture, Options(provider=provider, max_input_tokens=window))
    except RuleError:
        pytest.skip("the fixture fails by rule (exit 1)")
    body = result.payload.body
    assert validate(provider, body) == [], json.dumps(body, indent=1)[:3000]
    assert check(provider, body) == [], json.dumps(body, indent=1)[:3000]


# --- R-TR-2 Ollama ---------------------------------------------------------------------

TOOL_HISTORY = """\
messages:
  - {id: u1, role: user, text: "Weather?"}
  - id: a1
    role: assistant
    text: "Paris is mild."
    tool_calls:
      - {id: c1, name: get_weather, args: {city: "Zürich"}, response: "12°C"}
  - {id: u2, role: user, text: "And tomorrow?"}
in_flight:
  - role: assistant
    text: "Checking."
    tool_calls: [{id: c2, name: get_weather, args: {city: Paris, day: 1}}]
  - {role: tool, tool_call_id: c2, text: "14°C"}
"""


def test_r_tr_2_ollama_body_shape_and_num_ctx(tmp_path):
    body = valid("ollama", assemble(tmp_path, model("ollama", 5000) + TOOL_HISTORY))
    assert list(body) == ["model", "messages", "stream", "options"]
    assert body["stream"] is False
    assert body["options"] == {"num_ctx": 5000}


def test_r_tr_2_ollama_flattens_tool_history(tmp_path):
    body = valid("ollama", assemble(tmp_path, model("ollama") + TOOL_HISTORY))
    msgs = [(m["role"], m["content"]) for m in body["messages"]]
    assert ("assistant", '[Tool Call] name=get_weather id=c1 args={"city": "Zürich"}') in msgs
    placeholder = "This tool call completed but the results are no longer accessible."
    assert ("user", f"[Tool Result] id=c1\n{placeholder}") in msgs
    call = 'Checking.\n[Tool Call] name=get_weather id=c2 args={"city": "Paris", "day": 1}'
    assert ("assistant", call) in msgs
    assert ("user", "[Tool Result] id=c2\n14°C") in msgs
    assert all(m["role"] != "tool" and "tool_calls" not in m for m in body["messages"])


def test_r_tr_2_ollama_images_list_and_labels_in_text(tmp_path):
    body = valid(
        "ollama",
        assemble(
            tmp_path,
            model("ollama")
            + f"""\
files:
  - {{id: img-1, name: a.png, kind: image, data: "{PNG_B64}"}}
messages:
  - {{id: u1, role: user, text: "Look", files: [img-1]}}
""",
        ),
    )
    user = body["messages"][-1]
    assert user["images"] == [PNG_B64]
    assert user["content"] == "Look\n[attached image — file_id: img-1]"


def test_r_tr_2_ollama_full_tools_in_openai_function_format(tmp_path):
    body = valid(
        "ollama",
        assemble(
            tmp_path,
            model("ollama")
            + """\
tools:
  - {name: get_weather, description: "Weather", parameters: {type: object}}
  - web_search
messages:
  - {id: u1, role: user, text: "hi"}
""",
        ),
    )
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "get_weather", "description": "Weather", "parameters": {"type": "object"}},
        }
    ]


# --- R-TR-3 Anthropic ------------------------------------------------------------------


def test_r_tr_3_body_shape_system_blocks_and_max_tokens(tmp_path):
    body = valid(
        "anthropic",
        assemble(
            tmp_path,
            model("anthropic", extra="max_output_tokens: 777")
            + """\
messages:
  - {id: u1, role: user, text: "hi"}
""",
        ),
    )
    assert list(body) == ["model", "max_tokens", "system", "messages"]
    assert body["max_tokens"] == 777
    assert body["system"][0]["type"] == "text" and body["system"][0]["text"].startswith("S")


def test_r_tr_3_merges_tool_results_and_user_text_with_results_first(tmp_path):
    body = valid("anthropic", assemble(tmp_path, model("anthropic") + TOOL_HISTORY))
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant", "user"]
    first_results = body["messages"][2]["content"]
    assert [b["type"] for b in first_results] == ["tool_result"]
    assert first_results[0]["tool_use_id"] == "c1"
    in_flight = body["messages"][5]["content"]
    assert [b["type"] for b in in_flight] == ["text", "tool_use"]
    assert in_flight[1]["input"] == {"city": "Paris", "day": 1}
    assert body["messages"][6]["content"][0] == {"type": "tool_result", "tool_use_id": "c2", "content": "14°C"}


def test_r_tr_3_tool_results_merge_into_the_following_user_message(tmp_path):
    body = valid(
        "anthropic",
        assemble(
            tmp_path,
            model("anthropic")
            + """\
messages:
  - {id: u1, role: user, text: "q"}
  - id: a1
    role: assistant
    tool_calls: [{id: c1, name: lookup, args: {q: x}, response: "r"}]
  - {id: u2, role: user, text: "next"}
""",
        ),
    )
    last = body["messages"][-1]
    assert last["role"] == "user"
    assert [b["type"] for b in last["content"]] == ["tool_result", "text"]


def test_r_tr_3_cache_control_on_last_block_of_prefix_in_a_merged_message(tmp_path):
    """R-TR-8: the tool result closes the prefix; the last user text (not cacheable)
    joins its user message, so the breakpoint sits on the tool_result block."""
    r = assemble(
        tmp_path,
        model("anthropic")
        + """\
messages:
  - {id: u1, role: user, text: "q"}
  - id: a1
    role: assistant
    tool_calls: [{id: c1, name: lookup, args: {q: x}, response: "r"}]
  - {id: u2, role: user, text: "next"}
""",
    )
    body = valid("anthropic", r)
    assert r.payload.prepared.cache_prefix_messages == 4  # system, u1, the call, its result
    marked = [(i, b["type"]) for i, m in enumerate(body["messages"]) for b in m["content"] if "cache_control" in b]
    assert marked == [(2, "tool_result")]
    assert body["messages"][2]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in body["system"][-1]


def test_r_tr_3_cache_control_on_system_when_only_the_system_is_cacheable(tmp_path):
    body = valid(
        "anthropic",
        assemble(
            tmp_path,
            model("anthropic")
            + """\
messages:
  - {id: u1, role: user, text: "hi"}
""",
        ),
    )
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert all("cache_control" not in b for m in body["messages"] for b in m["content"])


def test_r_tr_3_at_most_one_breakpoint_and_none_without_prompt_cache(tmp_path):
    body = valid("anthropic", assemble(tmp_path, model("anthropic") + TOOL_HISTORY))
    assert json.dumps(body).count("cache_control") == 1
    off = model("anthropic", settings="prompt_cache: false") + TOOL_HISTORY
    assert "cache_control" not in json.dumps(valid("anthropic", assemble(tmp_path, off)))


def test_r_tr_3_sanitizes_tool_ids_consistently_and_collision_free(tmp_path):
    r = assemble(
        tmp_path,
        model("anthropic")
        + """\
messages:
  - {id: u1, role: user, text: "q"}
  - id: a1
    role: assistant
    text: "done"
    tool_calls:
      - {id: "call.1", name: lookup, args: {q: 1}, response: "r1"}
      - {id: "call_1", name: lookup, args: {q: 2}, response: "r2"}
  - {id: u2, role: user, text: "next"}
""",
    )
    body = valid("anthropic", r)
    uses = [b["id"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_use"]
    results = [b["tool_use_id"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_result"]
    assert uses == ["call_1_2", "call_1"] == results
    assert any("'call.1' → 'call_1_2'" in w for w in r.payload.prepared.warnings)
    assert any(row.rule == "R-TR-3" and str(row.fate) == "fixup" for row in explain_rows(r))


def test_r_tr_3_repeated_call_ids_become_unique_and_results_follow(tmp_path):
    r = assemble(
        tmp_path,
        model("anthropic")
        + """\
messages:
  - {id: u1, role: user, text: "q"}
  - id: a1
    role: assistant
    text: "done"
    tool_calls:
      - {id: c1, name: first, args: {}, turn: 0, response: "r1"}
      - {id: c1, name: second, args: {}, turn: 1, response: "r2"}
  - {id: u2, role: user, text: "next"}
""",
    )
    body = valid("anthropic", r)
    pairs = [
        (b.get("id"), b.get("tool_use_id"))
        for m in body["messages"]
        for b in m["content"]
        if b["type"] in ("tool_use", "tool_result")
    ]
    assert pairs == [("c1", None), (None, "c1"), ("c1_2", None), (None, "c1_2")]


def test_r_tr_3_declares_called_tools_minimally_without_definitions(tmp_path):
    r = assemble(tmp_path, model("anthropic") + "tools: [get_weather]\n" + TOOL_HISTORY)
    body = valid("anthropic", r)
    assert body["tools"] == [{"name": "get_weather", "input_schema": {"type": "object"}}]
    assert any("declared minimally" in w for w in r.payload.prepared.warnings)


def test_r_tr_3_full_definitions_translated_and_not_padded(tmp_path):
    r = assemble(
        tmp_path,
        model("anthropic")
        + """\
tools:
  - {name: get_weather, description: "Weather", parameters: {type: object, properties: {city: {type: string}}}}
  - {name: bare}
"""
        + TOOL_HISTORY,
    )
    body = valid("anthropic", r)
    assert body["tools"] == [
        {
            "name": "get_weather",
            "description": "Weather",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
        {"name": "bare", "input_schema": {"type": "object"}},
    ]
    assert not any("declared minimally" in w for w in r.payload.prepared.warnings)


def test_r_tr_3_history_starting_with_assistant_gets_a_user_opener(tmp_path):
    r = assemble(
        tmp_path,
        model("anthropic")
        + """\
messages:
  - {id: u1, role: user, text: "old"}
  - {id: a1, role: assistant, parent: u1, text: "old answer"}
  - {id: u2, role: user, parent: a1, text: "now"}
  - {id: s1, role: summary, parent: u2, summarizes_through: u1, text: "The user asked."}
""",
    )
    body = valid("anthropic", r)
    assert body["messages"][0] == {"role": "user", "content": [{"type": "text", "text": "(earlier conversation)"}]}
    assert body["messages"][1]["role"] == "assistant"
    assert any("starts with an assistant message" in w for w in r.payload.prepared.warnings)


def test_r_tr_3_no_empty_text_blocks_and_image_blocks(tmp_path):
    body = valid(
        "anthropic",
        assemble(
            tmp_path,
            model("anthropic")
            + f"""\
files:
  - {{id: img-1, name: a.png, kind: image, data: "{PNG_B64}"}}
messages:
  - {{id: u1, role: user, text: "", files: [img-1]}}
""",
        ),
    )
    blocks = body["messages"][-1]["content"]
    assert [b["type"] for b in blocks] == ["text", "image"]
    assert blocks[0]["text"] == "[attached image — file_id: img-1]"
    assert blocks[1]["source"] == {"type": "base64", "media_type": "image/png", "data": PNG_B64}


def test_r_tr_3_non_object_arguments_are_wrapped_and_reported(tmp_path):
    r = assemble(
        tmp_path,
        model("anthropic")
        + """\
messages:
  - {id: u1, role: user, text: "q"}
  - id: a1
    role: assistant
    text: "done"
    tool_calls: [{id: c1, name: lookup, args: [1, 2], response: "r"}]
  - {id: u2, role: user, text: "next"}
""",
    )
    body = valid("anthropic", r)
    use = next(b for m in body["messages"] for b in m["content"] if b["type"] == "tool_use")
    assert use["input"] == {"value": [1, 2]}
    assert any("not a JSON object" in w for w in r.payload.prepared.warnings)


# --- R-TR-4 Gemini ---------------------------------------------------------------------

LEADING_CALL = """\
messages:
  - {id: u1, role: user, text: "old question", tokens: 90}
  - id: a1
    role: assistant
    parent: u1
    text: "the answer"
    tokens: 3
    tool_calls: [{id: c1, name: lookup, args: {q: x}, tokens: 3, response: "found"}]
  - {id: u2, role: user, parent: a1, text: "next", tokens: 2}
"""


def test_r_tr_4_leading_function_contents_left_out_with_warning(tmp_path):
    """Truncation keeps the call and its result but not the user message before them."""
    r = assemble(tmp_path, model("gemini", 100) + LEADING_CALL)
    body = valid("gemini", r)
    assert body["contents"] == [
        {"role": "model", "parts": [{"text": "the answer"}]},
        {"role": "user", "parts": [{"text": "next"}]},
    ]
    assert "tools" not in body
    warning = "gemini: 1 function call(s) and 1 function response(s) before the first user"
    assert any(w.startswith(warning) for w in r.payload.prepared.warnings)
    assert any(row.rule == "R-TR-4" for row in explain_rows(r))


def test_r_tr_4_other_providers_keep_the_leading_calls(tmp_path):
    body = valid("anthropic", assemble(tmp_path, model("anthropic", 100) + LEADING_CALL))
    types = [b["type"] for m in body["messages"] for b in m["content"]]
    assert "tool_use" in types and "tool_result" in types


def test_r_tr_4_body_shape_roles_parts_and_name_lookup(tmp_path):
    r = assemble(
        tmp_path,
        model("gemini")
        + f"""\
files:
  - {{id: img-1, name: a.png, kind: image, data: "{PNG_B64}"}}
messages:
  - {{id: u1, role: user, text: "q", files: [img-1]}}
  - id: a1
    role: assistant
    parent: u1
    text: "done"
    tool_calls:
      - {{id: c1, name: first, args: {{}}, turn: 0, response: "r1"}}
      - {{id: c1, name: second, args: {{n: 2}}, turn: 1, response: "r2"}}
  - {{id: u2, role: user, parent: a1, text: "next"}}
""",
    )
    body = valid("gemini", r)
    assert list(body) == ["systemInstruction", "contents", "tools"]
    assert body["systemInstruction"] == {"parts": [{"text": "S"}]}
    contents = body["contents"]
    assert {c["role"] for c in contents} == {"user", "model"}
    assert contents[0]["parts"][-1] == {"inlineData": {"mimeType": "image/png", "data": PNG_B64}}
    responses = [p["functionResponse"]["name"] for c in contents for p in c["parts"] if "functionResponse" in p]
    assert responses == ["first", "second"]
    call = next(p["functionCall"] for c in contents for p in c["parts"] if "functionCall" in p)
    assert call == {"name": "first", "args": {}}
    placeholder = "This tool call completed but the results are no longer accessible."
    first = next(p for c in contents for p in c["parts"] if "functionResponse" in p)
    assert first["functionResponse"]["response"] == {"content": placeholder}
    assert body["tools"] == [{"functionDeclarations": [{"name": "first"}, {"name": "second"}]}]


def test_r_tr_4_full_definitions_and_name_only_for_the_rest(tmp_path):
    body = valid(
        "gemini",
        assemble(
            tmp_path,
            model("gemini")
            + """\
tools:
  - {name: search, description: "Search", parameters: {type: object, properties: {q: {type: string}}}}
"""
            + TOOL_HISTORY,
        ),
    )
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "search",
                    "description": "Search",
                    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
                },
                {"name": "get_weather"},
            ]
        }
    ]


def test_r_tr_4_merges_consecutive_same_role_contents(tmp_path):
    body = valid("gemini", assemble(tmp_path, model("gemini") + TOOL_HISTORY))
    roles = [c["role"] for c in body["contents"]]
    assert all(a != b for a, b in itertools.pairwise(roles))
    last = body["contents"][-1]["parts"]
    assert [next(iter(p)) for p in last] == ["functionResponse"]


# --- R-TR-6 image cap ------------------------------------------------------------------


def _images(n: int, first: int = 0) -> str:
    return "".join(
        f'  - {{id: i{k}, name: i{k}.png, kind: image, data: "{PNG_B64}"}}\n' for k in range(first, first + n)
    )


def _many_images(provider: str, settings: str) -> str:
    files = ", ".join(f"i{k}" for k in range(1, 51))
    return (
        model(provider, 100000, settings=settings, task="Be careful.")
        + "files:\n"
        + _images(51)
        + "messages:\n"
        + "  - {id: u1, role: user, text: old, files: [i0]}\n"
        + "  - {id: a1, role: assistant, parent: u1, text: ok}\n"
        + f"  - {{id: u2, role: user, parent: a1, text: new, files: [{files}]}}\n"
    )


def _kept_images(body: dict[str, Any]) -> int:
    return json.dumps(body).count(PNG_B64)


def test_r_tr_6_azure_cap_50_when_azure_image_cap_is_on(tmp_path):
    r = assemble(tmp_path, _many_images("azure", "azure_image_cap: true"))
    body = valid("azure", r)
    assert _kept_images(body) == 50
    assert "[attached image — file_id: i0]" not in json.dumps(body, ensure_ascii=False)
    assert r.payload.prepared.messages[-1].key == "image_drop_notice"
    assert r.payload.prepared.messages[-2].key == "reminder"
    assert "1 earlier image(s)" in body["messages"][-1]["content"]
    capped = [row for row in explain_rows(r) if str(row.fate) == "image_capped"]
    assert [(row.id, row.rule) for row in capped] == [("i0", "R-TR-6")]


def test_r_tr_6_no_azure_cap_without_the_setting_or_for_openai(tmp_path):
    for provider, settings in (("azure", "azure_image_cap: false"), ("openai", "azure_image_cap: true")):
        body = valid(provider, assemble(tmp_path, _many_images(provider, settings)))
        assert _kept_images(body) == 51
        assert "omitted" not in json.dumps(body)


def test_r_tr_6_image_cap_setting_keeps_newest_and_notice_is_last(tmp_path):
    text = (
        model("anthropic", settings="image_cap: 1", task="Be careful.")
        + "files:\n"
        + _images(2)
        + "messages:\n"
        + "  - {id: u1, role: user, text: old, files: [i0]}\n"
        + "  - {id: a1, role: assistant, parent: u1, text: ok}\n"
        + "  - {id: u2, role: user, parent: a1, text: new, files: [i1]}\n"
    )
    r = assemble(tmp_path, text)
    body = valid("anthropic", r)
    assert _kept_images(body) == 1
    last = body["messages"][-1]["content"]
    assert last[-1]["type"] == "text" and "1 earlier image(s)" in last[-1]["text"]
    assert last[-1]["text"].startswith("<system-reminder>")
    assert "Be careful." in last[-2]["text"]  # the reminder comes before the notice
    images = [b for m in body["messages"] for b in m["content"] if b["type"] == "image"]
    assert len(images) == 1 and images[0] in body["messages"][-1]["content"]  # the newest


def test_r_tr_6_image_bytes_are_sent_unchanged(tmp_path):
    body = valid(
        "openai",
        assemble(
            tmp_path,
            model("openai") + "files:\n" + _images(1) + "messages:\n  - {id: u1, role: user, text: x, files: [i0]}\n",
        ),
    )
    url = body["messages"][-1]["content"][-1]["image_url"]["url"]
    assert base64.b64decode(url.split(",", 1)[1]) == base64.b64decode(PNG_B64)


# --- the harness itself: it must catch what a server would reject ---------------------


def test_schema_harness_catches_invalid_bodies():
    bad_anthropic = {
        "model": "m",
        "max_tokens": 1,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": ""},
                    {"type": "tool_result", "tool_use_id": "a.b"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "!!"}},
                ],
            }
        ],
        "tools": [{"name": "n", "input_schema": {}}],
    }
    assert validate("anthropic", bad_anthropic) == [
        "/messages/0/content/0/text: '' should be non-empty",
        "/messages/0/content/1/tool_use_id: 'a.b' does not match '^[a-zA-Z0-9_-]+$'",
        "/messages/0/content/2/source/data: '!!' is not a 'byte'",
        "/tools/0/input_schema: 'type' is a required property",
    ]
    bad_gemini = {
        "contents": [
            {"role": "user", "parts": [{"txt": "a"}]},
            {"role": "model", "parts": [{"functionCall": {"args": {}}}]},
        ],
        "tools": [
            {"functionDeclarations": [{"name": "f", "parameters": {"type": "object", "additionalProperties": False}}]}
        ],
    }
    errors = validate("gemini", bad_gemini)
    assert any("'txt' was unexpected" in e for e in errors)
    assert any("'name' is a required property" in e for e in errors)
    assert any("'additionalProperties' was unexpected" in e for e in errors)
    assert validate("openai", {"model": "m", "messages": []}) != []
    assert validate("ollama", {"model": "m", "messages": [], "options": {"num_ctx": "8k"}}) != []


def test_server_rules_catch_what_the_apis_reject():
    anthropic = {
        "messages": [
            {"role": "assistant", "content": [{"type": "tool_use", "id": "x", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "text", "text": " "}, {"type": "tool_result", "tool_use_id": "y"}]},
            {"role": "user", "content": [{"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}] * 5},
        ]
    }
    found = "\n".join(check("anthropic", anthropic))
    for problem in (
        "first message must be a user",
        "roles must alternate",
        "must come first",
        "does not answer a tool_use",
        "have no tool_result",
        "whitespace-only",
        "cache_control breakpoints",
        "defines no tools",
    ):
        assert problem in found
    gemini = {
        "contents": [
            {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
            {"role": "user", "parts": [{"text": ""}]},
        ]
    }
    found = "\n".join(check("gemini", gemini))
    for problem in ("must follow a user", "not declared", "0 function response(s)", "non-empty datum"):
        assert problem in found
    openai = {"messages": [{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "c", "content": "r"}]}
    assert check("openai", openai) != []
    ollama = {"messages": [{"role": "user", "content": "[Tool Result] id=c\nr"}]}
    assert len(check("ollama", ollama)) == 3  # stream, num_ctx, the unanswered result
