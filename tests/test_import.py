"""`ctxkit import` (docs/rules.md#commands): logged requests and message lists become fixtures."""

from __future__ import annotations

import json

import yaml

from ctxkit.assembly.pipeline import run
from ctxkit.loading.read import load_fixture

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
