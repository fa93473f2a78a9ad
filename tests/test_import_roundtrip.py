"""`import` → `assemble` gives back the logged request (issue 20): R-FIX-6 and R-FIX-7.

The expected bodies here are the logged bodies themselves (written by hand below), so a
test fails whenever the round trip adds, drops or changes anything the provider reads.
"""

from __future__ import annotations

import copy
import io
import json
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxkit.loading.importer import build
from ctxkit.loading.read import load_fixture
from ctxkit.loading.write import yaml_text
from ctxkit.pipeline import run

from .conftest import ctxkit

SAMPLING = {"temperature", "stream", "max_tokens"}


def assembled(body: Any, dialect: str | None = None) -> dict[str, Any]:
    """The body `assemble` prints for the fixture `import` writes for `body`."""
    doc = build(copy.deepcopy(body), dialect).document
    fixture = load_fixture("-", stdin=io.BytesIO(yaml_text(doc).encode("utf-8")))
    return run(fixture).payload.body


def assert_same_json(got: Any, expected: Any) -> None:
    """The same fields, each equal as the JSON that is sent: inside a field key order and number
    types count (a dict's `==` takes 1, 1.0 and true as equal and ignores key order). The order
    of the body's own fields, and of a tool definition's own fields, does not: R-FIX-7 merges a
    definition's logged fields after the ones translation writes, and providers read both by
    name (a schema inside a definition is still compared in order)."""

    def exact(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False)

    def sent(body: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {k: exact(v) for k, v in body.items()}
        if isinstance(body.get("tools"), list):
            out["tools"] = [{k: exact(v) for k, v in t.items()} for t in body["tools"]]
        return out

    assert sent(got) == sent(expected)


def prompt_part(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k not in SAMPLING}


def call(id: str, name: str, args: str) -> dict[str, Any]:
    return {"id": id, "type": "function", "function": {"name": name, "arguments": args}}


SEARCH_TOOLS = [
    {"type": "function", "function": {"name": n, "description": f"{n} tool", "parameters": {"type": "object"}}}
    for n in ("web_search", "open_url", "internal_search")
]
LOGGED_LOOP: dict[str, Any] = {
    "model": "gpt-4o",
    "temperature": 0,
    "tools": SEARCH_TOOLS,
    "messages": [
        {"role": "user", "content": "Who won in 2022?"},
        {"role": "assistant", "content": None, "tool_calls": [call("c1", "web_search", '{"q": "winner 2022"}')]},
        {"role": "tool", "tool_call_id": "c1", "content": "Argentina won the 2022 final."},
        {"role": "assistant", "content": "Argentina."},
        {"role": "user", "content": "And the top scorer?"},
        {"role": "assistant", "content": None, "tool_calls": [call("c2", "web_search", '{"q": "top scorer 2022"}')]},
        {"role": "tool", "tool_call_id": "c2", "content": "Mbappé scored eight goals."},
    ],
}


def test_r_fix_6_log_without_system_message_gets_none():
    """Issue 20: no default system prompt and no date line for a log that had no system message."""
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    assert_same_json(assembled(body), body)


def test_r_fix_6_imported_search_tools_add_no_guidance_no_reminder_and_keep_results():
    """web_search / open_url in the log are just tools: no `# Tools` section, no citation
    guidance, no open-url reminder; the earlier turn's result is sent as logged, not the
    placeholder."""
    out = assembled(LOGGED_LOOP)
    assert_same_json(out, prompt_part(LOGGED_LOOP))


def test_r_fix_6_off_keeps_the_application_behaviour():
    """The switch is what turns the additions off: the same fixture without it gets them."""
    doc = build(copy.deepcopy(LOGGED_LOOP), None).document
    del doc["settings"]["as_logged"]
    body = run(load_fixture("-", stdin=io.BytesIO(yaml_text(doc).encode()))).payload.body
    texts = json.dumps(body["messages"], ensure_ascii=False)
    assert "This tool call completed but the results are no longer accessible." in texts
    assert "<system-reminder>" in texts


def test_r_fix_6_system_prompt_is_sent_exactly_with_tools_and_a_reasoning_model():
    """No `# Tools` section after the logged system prompt, no formatting prefix (R-TR-7)."""
    body = {
        "model": "o3-mini",
        "tools": SEARCH_TOOLS,
        "messages": [{"role": "system", "content": "Be exact."}, {"role": "user", "content": "q"}],
    }
    assert_same_json(assembled(body), body)


def test_r_fix_6_image_is_sent_without_its_label():
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="
    content = [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}},
    ]
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": content}]}
    assert_same_json(assembled(body), body)


def test_r_fix_6_anthropic_log_round_trips_without_breakpoint():
    """An Anthropic log without `cache_control` gets no breakpoint from ctxkit (R-TR-8), and
    its `max_tokens` comes back too."""
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 321,
        "system": [{"type": "text", "text": "Be brief."}],
        "tools": [{"name": "web_search", "input_schema": {"type": "object"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "web_search", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "cold"}]},
        ],
    }
    assert_same_json(assembled(body), body)


@pytest.mark.parametrize(
    ("dialect", "fields"),
    [
        ("openai", {"tool_choice": "required", "parallel_tool_calls": False}),
        ("openai", {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}}),
        ("openai", {"functions": [{"name": "f", "parameters": {}}], "function_call": "auto"}),
        ("anthropic", {"thinking": {"type": "enabled", "budget_tokens": 1024}, "tool_choice": {"type": "any"}}),
        ("anthropic", {"cache_control": {"type": "ephemeral"}}),
    ],
)
def test_r_fix_7_prompt_fields_of_the_log_are_sent_again(dialect, fields):
    """Issue 20: `response_format`, `tool_choice`, `thinking`, `parallel_tool_calls`,
    Anthropic's top-level `cache_control` were dropped silently; now carried as written."""
    body: dict[str, Any] = {"model": "gpt-4o" if dialect == "openai" else "claude-sonnet-4-5", "messages": []}
    body["messages"] = [{"role": "user", "content": "q" if dialect == "openai" else [{"type": "text", "text": "q"}]}]
    body.update(fields)
    if dialect == "anthropic":
        body["max_tokens"] = 64
    assert_same_json(assembled(body, dialect), body)


def test_r_fix_7_request_fields_in_a_fixture_are_sent_after_the_built_ones(tmp_path):
    path = tmp_path / "f.yaml"
    path.write_text(
        "ctxkit: 1\nnow: '2026-01-01T00:00:00Z'\nmodel: {provider: openai, name: gpt-4o}\n"
        "settings: {request_fields: {tool_choice: none, seed_text: {a: [1, 2.5]}}}\n"
        "messages: [{id: m1, role: user, text: hi}]\n",
        encoding="utf-8",
    )
    body = json.loads(ctxkit("assemble", str(path)).out)
    assert list(body)[-2:] == ["tool_choice", "seed_text"]
    assert body["seed_text"] == {"a": [1, 2.5]} and body["tool_choice"] == "none"


def _assemble_refused(tmp_path, text: str):
    path = tmp_path / "f.yaml"
    path.write_text(text, encoding="utf-8")
    return ctxkit("assemble", str(path), expect=2).err, path


def test_r_fix_7_a_field_ctxkit_builds_is_refused(tmp_path):
    err, path = _assemble_refused(
        tmp_path,
        "ctxkit: 1\nmodel: {provider: openai, name: gpt-4o}\nsettings: {request_fields: {messages: []}}\n"
        "messages: [{id: m1, role: user, text: hi}]\n",
    )
    assert err == (
        f"error: {path}:/settings/request_fields/messages: ctxkit builds this request field itself (R-FIX-7)\n"
    )


def test_r_fix_7_tool_definition_fields_are_sent_again():
    """OpenAI's `strict` inside `function`, an Anthropic server tool's `type` (and no made-up
    input schema for it), a definition's `cache_control`: all as logged."""
    strict = {"name": "f", "parameters": {"type": "object"}, "strict": True}
    body: dict[str, Any] = {
        "model": "gpt-4o",
        "tools": [{"type": "function", "function": strict}],
        "messages": [{"role": "user", "content": "q"}],
    }
    assert_same_json(assembled(body), body)
    server = {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}
    own = {"name": "g", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 9,
        "tools": [server, own],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "q"}]}],
    }
    assert_same_json(assembled(body, "anthropic"), body)


def test_r_fix_7_a_definition_field_ctxkit_builds_is_refused(tmp_path):
    err, path = _assemble_refused(
        tmp_path,
        "ctxkit: 1\nmodel: {provider: openai, name: gpt-4o}\n"
        "tools: [{name: f, request_fields: {strict: true, parameters: {}}}]\n"
        "messages: [{id: m1, role: user, text: hi}]\n",
    )
    assert err == f"error: {path}:/tools/0/request_fields/parameters: ctxkit builds this field itself (R-FIX-7)\n"


def test_r_fix_7_arguments_come_back_as_the_model_wrote_them():
    """Compact or ASCII-escaped argument strings (what OpenAI models write) were re-serialised
    with spaces; import keeps the text as `args_text` when re-serialising would change it."""
    body = copy.deepcopy(LOGGED_LOOP)
    body["messages"][1]["tool_calls"][0]["function"]["arguments"] = '{"q":"winner 2022"}'
    body["messages"][5]["tool_calls"][0]["function"]["arguments"] = '{"q": "caf\\u00e9"}'
    doc = build(copy.deepcopy(body), None).document
    assert doc["messages"][1]["tool_calls"][0]["args_text"] == '{"q":"winner 2022"}'
    default = build(copy.deepcopy(LOGGED_LOOP), None).document  # json.dumps's own spelling needs none
    assert "args_text" not in default["messages"][1]["tool_calls"][0]
    assert_same_json(assembled(body), prompt_part(body))


def test_r_fix_7_args_text_that_is_not_the_args_is_refused(tmp_path):
    err, path = _assemble_refused(
        tmp_path,
        "ctxkit: 1\nmodel: {provider: openai, name: gpt-4o}\nmessages: [{id: m1, role: user, text: hi}]\n"
        "in_flight:\n- {role: assistant, tool_calls: [{id: c, name: f, args: {a: 1}, args_text: '{\"a\":2}'}]}\n"
        "- {role: tool, tool_call_id: c, text: r}\n",
    )
    assert err == f"error: {path}:/in_flight/0/tool_calls/0/args_text: not the JSON text of `args`\n"


def test_r_fix_7_args_text_is_what_the_budget_counts(tmp_path):
    """The call's tokens are the text as sent: `{"a":1}` is fewer tokens than `{"a": 1}`."""
    fixture = (
        "ctxkit: 1\nnow: '2026-01-01T00:00:00Z'\nmodel: {provider: openai, name: gpt-4o}\n"
        "messages: [{id: m1, role: user, text: hi}]\nin_flight:\n"
        "- {role: assistant, tool_calls: [{id: c, name: f, args: {alpha: [1, 2, 3]}ARGS}]}\n"
        "- {role: tool, tool_call_id: c, text: r}\n"
    )
    counts = []
    for extra in ("", ", args_text: '{\"alpha\":[1,2,3]}'"):
        path = tmp_path / "f.yaml"
        path.write_text(fixture.replace("ARGS", extra), encoding="utf-8")
        budget = json.loads(ctxkit("budget", str(path), "--format", "json").out)
        counts.append(budget["wire_tokens"])
        body = json.loads(ctxkit("assemble", str(path)).out)
        sent = body["messages"][-2]["tool_calls"][0]["function"]["arguments"]
        assert sent == ('{"alpha": [1, 2, 3]}' if not extra else '{"alpha":[1,2,3]}')
    assert counts[1] < counts[0]


def test_import_warns_about_anthropic_block_breakpoints(tmp_path):
    """A block's `cache_control` cannot be placed by a fixture: warned, never dropped silently."""
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "q", "cache_control": {"type": "x"}}]}],
    }
    path = tmp_path / "log.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    r = ctxkit("import", str(path), "--from", "anthropic")
    assert "1 × cache_control on a content block" in r.err
    assert "prompt_cache" not in yaml.safe_load(r.out)["settings"]


# A plain chat log: user / assistant turns, tool loops with results, a system prompt or none.
_text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
_args = st.dictionaries(st.text("abc", min_size=1, max_size=3), st.integers() | _text, max_size=3)


@st.composite
def chat_logs(draw: st.DrawFn) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(_text.filter(bool))})  # "" is no system prompt
    n = 0
    for _ in range(draw(st.integers(1, 3))):
        messages.append({"role": "user", "content": draw(_text)})
        for _ in range(draw(st.integers(0, 2))):
            n += 1
            compact = draw(st.sampled_from([None, (",", ":")]))  # as frameworks write it, or as models do
            args = json.dumps(draw(_args), ensure_ascii=draw(st.booleans()), separators=compact)
            messages.append({"role": "assistant", "content": None, "tool_calls": [call(f"c{n}", "web_search", args)]})
            messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": draw(_text)})
        if draw(st.booleans()):
            messages.append({"role": "assistant", "content": draw(_text) or "ok"})
    while messages[-1]["role"] == "assistant" and "tool_calls" not in messages[-1]:
        messages.pop()  # a log ends before the model's reply
    return {"model": "gpt-4o", "messages": messages, "tools": SEARCH_TOOLS[:1]}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chat_logs())
def test_r_fix_6_any_plain_chat_log_round_trips(body):
    assert_same_json(assembled(body), body)


def test_import_round_trip_benchmark_counts_each_outcome(tmp_path):
    """benchmarks/import_roundtrip.py (make bench): each body lands in the right column."""
    import gzip
    import importlib.util

    from .conftest import ROOT

    spec = importlib.util.spec_from_file_location("import_roundtrip", ROOT / "benchmarks" / "import_roundtrip.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    anthropic = {"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": [{"role": "user", "content": "q"}]}
    extra = {"role": "user", "content": "q", "name": "ada"}  # a message field a fixture cannot hold
    lines = [
        {"provider": "openai", "endpoint": "chat.completions", "request": LOGGED_LOOP},
        {"provider": "azure", "endpoint": "chat.completions", "request": {"messages": [extra]}},
        {"provider": "openai", "endpoint": "chat.completions", "request": {"messages": [{"role": "system"}]}},
        {"provider": "anthropic", "endpoint": "messages", "request": anthropic},
        {"provider": "gemini", "endpoint": "generateContent", "request": {"contents": []}},
    ]
    path = tmp_path / "calls.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(line) + "\n" for line in lines)
    m = bench.measure(path=path)
    assert m["openai"]["outcomes"] == {"identical": 1, "differs": 1, "refused": 1}
    assert m["openai"]["differs"] == [("/messages/*/name (missing)", 1)]
    assert m["openai"]["refused"] == [("the log has no user message: there is nothing to answer", 1)]
    assert m["anthropic"]["outcomes"] == {"equivalent": 1}  # "q" comes back as one text block
    assert m["anthropic"]["tokens"]["equal"] == 1
    # the dropped `name` is read by the model (its tokens + 1, R-RPL-4): that body's count differs too
    assert "| openai | 3 | 1 | 0 | 1 | 1 | 1 of 2 |" in "\n".join(bench.render(m))
