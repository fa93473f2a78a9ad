"""`ctxkit import` (docs/rules.md#commands): logged requests and message lists become fixtures."""

from __future__ import annotations

import json

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxkit.loading.read import load_fixture
from ctxkit.pipeline import run

from .conftest import ROOT, ctxkit

REQUEST = ROOT / "tests" / "data" / "openai_request.json"


def _imported(tmp_path, doc, *args, name="log.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    r = ctxkit("import", str(path), *args)
    out = tmp_path / "fixture.yaml"
    out.write_text(r.out, encoding="utf-8")
    return r, yaml.safe_load(r.out), out


def test_import_openai_request_attaches_results_and_in_flight(tmp_path):
    r, doc, out = _imported(tmp_path, json.loads(REQUEST.read_text()), "--from", "openai")
    assert doc["prompts"] == {"system": "You are the airline's support agent.", "datetime_aware": False}
    m2 = doc["messages"][1]
    assert m2["text"].startswith("Your booking ABC123 is refundable")
    assert m2["tool_calls"][0]["response"] == '{"status": "confirmed", "refundable": true}'
    assert [m["role"] for m in doc["in_flight"]] == ["assistant", "tool"]
    assert doc["tools"][0]["name"] == "get_reservation"
    result = run(load_fixture(str(out)))  # the imported fixture assembles
    assert result.payload.body["messages"][-1]["role"] == "tool"


def test_import_run_of_tool_calls_becomes_one_message_with_turns(tmp_path):
    msgs = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": "thinking aloud",
            "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "a", "content": "ra"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "b", "type": "function", "function": {"name": "g", "arguments": '{"x": 1}'}}],
        },
        {"role": "tool", "tool_call_id": "b", "content": "rb"},
        {"role": "assistant", "content": "final answer"},
        {"role": "user", "content": "next"},
    ]
    r, doc, _ = _imported(tmp_path, msgs, "--from", "openai", "--model", "gpt-4o")
    (answer,) = [m for m in doc["messages"] if m["role"] == "assistant"]
    assert answer["text"] == "final answer"
    assert [(c["id"], c.get("turn", 0)) for c in answer["tool_calls"]] == [("a", 0), ("b", 1)]
    assert "1 assistant text(s) written beside tool calls were left out" in r.err


def test_import_run_without_an_answer_keeps_its_texts_and_results_find_the_earliest_call():
    """A run the user interrupts keeps the texts written beside its calls; a repeated call id's
    results go to its calls in order; a result that answers no call is counted, not attached."""
    from ctxkit.loading.importer import build

    def call(ident: str) -> dict[str, object]:
        return {"id": ident, "type": "function", "function": {"name": "f", "arguments": "{}"}}

    msgs = [
        {"role": "user", "content": "q"},
        {"role": "tool", "tool_call_id": "z", "content": "before any call"},
        {"role": "assistant", "content": "one", "tool_calls": [call("a")]},
        {"role": "tool", "tool_call_id": "a", "content": "first"},
        {"role": "assistant", "content": "two", "tool_calls": [call("a")]},
        {"role": "tool", "tool_call_id": "a", "content": "second"},
        {"role": "user", "content": "stop"},
    ]
    imported = build(msgs, "openai", model="gpt-4o")
    user, run, last = imported.document["messages"]
    assert (user["id"], run["id"], last["id"]) == ("m1", "m2", "m3")
    assert run["text"] == "one\n\ntwo"
    assert [(c.get("turn", 0), c["response"]) for c in run["tool_calls"]] == [(0, "first"), (1, "second")]
    assert list(run["tool_calls"][1]) == ["id", "name", "args", "turn", "response"]
    assert any("tool result that answers no earlier call" in w for w in imported.warnings)
    assert not any("left out" in w for w in imported.warnings)


def test_import_anthropic(tmp_path):
    body = {
        "model": "claude-sonnet-4-5",
        "system": [{"type": "text", "text": "Be brief."}],
        "messages": [
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "w", "input": {"c": "Oslo"}}]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "cold"},
                    {"type": "text", "text": "and tomorrow?"},
                ],
            },
        ],
    }
    _, doc, out = _imported(tmp_path, body, "--from", "anthropic")
    assert doc["model"] == {"provider": "anthropic", "name": "claude-sonnet-4-5"}
    assert doc["messages"][1]["tool_calls"][0]["response"] == "cold"
    assert doc["messages"][2]["text"] == "and tomorrow?"
    run(load_fixture(str(out)))


def test_import_default_model_is_flagged(tmp_path):
    r, _, _ = _imported(tmp_path, [{"role": "user", "content": "hi"}], "--from", "openai")
    assert r.out.startswith("# model: the log names no model; gpt-4o")


def test_import_unknown_model_needs_window(tmp_path):
    path = tmp_path / "log.json"
    path.write_text(json.dumps({"model": "acme-1", "messages": [{"role": "user", "content": "x"}]}))
    r = ctxkit("import", str(path), "--from", "openai", expect=2)
    assert "--max-input-tokens" in r.err
    ok = ctxkit("import", str(path), "--from", "openai", "--max-input-tokens", "8000")
    assert "max_input_tokens: 8000" in ok.out


# --- issue 11 item 5: recognise the format, never drop silently, always a valid fixture --------


def _import(tmp_path, doc, *args, expect=0, raw=None):
    path = tmp_path / "log.json"
    path.write_text(raw if raw is not None else json.dumps(doc), encoding="utf-8")
    return ctxkit("import", str(path), *args, expect=expect)


ANTHROPIC_BODY = {
    "model": "claude-sonnet-4-5",
    "system": "Be brief.",
    "tools": [{"name": "w", "input_schema": {"type": "object"}}],
    "messages": [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "w", "input": {"c": "Oslo"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "cold"}]},
    ],
}


def test_import_anthropic_log_with_from_openai_is_exit_2_naming_the_right_from(tmp_path):
    r = _import(tmp_path, ANTHROPIC_BODY, "--from", "openai", expect=2)
    assert r.err.splitlines() == [
        f"error: {tmp_path / 'log.json'}: this looks like an anthropic log, not openai: "
        "use --from anthropic (or leave --from out)"
    ]
    assert r.out == ""


def test_import_recognises_the_format_without_from(tmp_path):
    doc = yaml.safe_load(_import(tmp_path, ANTHROPIC_BODY).out)
    assert doc["model"]["provider"] == "anthropic" and doc["prompts"]["system"] == "Be brief."
    assert doc["tools"] == [{"name": "w", "parameters": {"type": "object"}}]
    assert doc["in_flight"][0]["tool_calls"][0]["args"] == {"c": "Oslo"}
    openai = yaml.safe_load(_import(tmp_path, json.loads(REQUEST.read_text())).out)
    assert openai["model"]["provider"] == "openai"


def test_import_content_that_is_not_text_is_an_error(tmp_path):
    r = _import(tmp_path, [{"role": "user", "content": 42}], expect=2)
    assert "log.json:/messages/0/content: expected a string or a list of content parts, got a number" in r.err


def test_import_images_it_cannot_carry_are_counted_in_a_warning(tmp_path):
    content = [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,@@not base64@@"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
    ]
    r = _import(tmp_path, [{"role": "user", "content": content}])
    (line,) = [w for w in r.err.splitlines() if w.startswith("warning: not carried over")]
    assert "1 × image given by URL" in line and "1 × image whose base64 data cannot be decoded" in line


def test_import_unknown_fields_and_parts_are_counted(tmp_path):
    body = {
        "model": "gpt-4o",
        "temperature": 0.2,
        "functions": [],
        "messages": [{"role": "user", "content": [{"type": "input_audio"}], "audio": {}}],
    }
    r = _import(tmp_path, body)
    assert "1 × content part of type 'input_audio'" in r.err
    assert "1 × message field 'audio'" in r.err
    assert "functions" not in r.err  # carried as a request field (R-FIX-7)
    assert "temperature" not in r.err  # a sampling setting, not context


def test_import_duplicate_json_keys_are_refused(tmp_path):
    r = _import(tmp_path, None, raw='{"messages": [{"role": "user", "content": "a"}], "messages": []}', expect=2)
    assert "duplicate key 'messages'" in r.err


def test_import_lone_surrogate_is_refused(tmp_path):
    r = _import(tmp_path, None, raw='[{"role": "user", "content": "a\\ud800b"}]', expect=2)
    assert r.err.startswith("error: ") and len(r.err.splitlines()) == 1


def test_import_deeply_nested_arguments_are_an_error_not_a_crash(tmp_path):
    args = "{}"
    for _ in range(5000):
        args = '{"a": ' + args + "}"
    log = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": args}}],
        },
        {"role": "tool", "tool_call_id": "c", "content": "r"},
    ]
    r = _import(tmp_path, log, expect=2)
    assert "/messages/1/tool_calls/0/function/arguments: nested more than 100 levels deep" in r.err


def test_import_repeated_in_flight_call_ids_give_a_valid_fixture(tmp_path):
    call = {"id": "x", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    log = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [call, call]},
        {"role": "tool", "tool_call_id": "x", "content": "r1"},
        {"role": "tool", "tool_call_id": "x", "content": "r2"},
    ]
    r = _import(tmp_path, log)
    out = tmp_path / "f.yaml"
    out.write_text(r.out, encoding="utf-8")
    ctxkit("validate", str(out))
    doc = yaml.safe_load(r.out)
    assert [m.get("tool_call_id") for m in doc["in_flight"]] == [None, "x", "x~2"]
    assert "renamed" in r.err


def test_import_yaml_line_breaks_survive(tmp_path):
    r = _import(tmp_path, [{"role": "user", "content": "a\u0085b\u2028c"}])
    out = tmp_path / "f.yaml"
    out.write_text(r.out, encoding="utf-8")
    assert load_fixture(str(out)).messages[0].text == "a\u0085b\u2028c"


# generated logs: every fixture import writes passes validate

texts = st.text(st.characters(exclude_categories=["Cs"]), max_size=10)
ids = st.sampled_from(["c1", "c2", "c3"])
args = st.recursive(
    st.none() | st.booleans() | st.integers() | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)
openai_call = st.builds(
    lambda i, n, a: {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}},
    ids,
    st.sampled_from(["f", "g"]),
    args,
)
openai_message = st.one_of(
    st.builds(lambda t: {"role": "user", "content": t}, texts),
    st.builds(lambda t: {"role": "system", "content": t}, texts),
    st.builds(lambda t: {"role": "assistant", "content": t}, texts),
    st.builds(
        lambda t, c: {"role": "assistant", "content": t, "tool_calls": c},
        st.none() | texts,
        st.lists(openai_call, min_size=1, max_size=3),
    ),
    st.builds(lambda i, t: {"role": "tool", "tool_call_id": i, "content": t}, ids, texts),
)
anthropic_block = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, texts),
    st.builds(lambda i, a: {"type": "tool_use", "id": i, "name": "f", "input": {"v": a}}, ids, args),
    st.builds(lambda i, t: {"type": "tool_result", "tool_use_id": i, "content": t}, ids, texts),
)
anthropic_message = st.builds(
    lambda r, c: {"role": r, "content": c},
    st.sampled_from(["user", "assistant"]),
    texts | st.lists(anthropic_block, min_size=1, max_size=3),
)
logs = st.one_of(
    st.lists(openai_message, min_size=1, max_size=8),
    st.builds(lambda m, s: {"system": s, "messages": m}, st.lists(anthropic_message, min_size=1, max_size=8), texts),
)


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(log=logs)
def test_import_every_fixture_it_writes_passes_validate(tmp_path, log):
    r = _import(tmp_path, log, expect=None)
    assert r.code in (0, 2), str(r)
    if r.code == 2:
        assert r.out == "" and len(r.err.splitlines()) == 1 and r.err.startswith("error: ")
        return
    out = tmp_path / "f.yaml"
    out.write_text(r.out, encoding="utf-8")
    ctxkit("validate", str(out), expect=0)


def test_import_refuses_special_files_without_reading(tmp_path):
    """Issue 11 item 6 for `import`: a FIFO (which would hang) or a device is refused before any read."""
    import os
    import subprocess
    import sys

    fifo = tmp_path / "log.json"
    os.mkfifo(fifo)
    for path in (str(fifo), "/dev/zero"):
        run = subprocess.run(
            [sys.executable, "-c", "from ctxkit.cli import main; main()", "import", path, "--from", "openai"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert run.returncode == 2, run
        assert run.stderr.startswith(f"error: {path}: cannot read: not a regular file"), run.stderr
