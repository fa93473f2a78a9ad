"""Hostile logs (R-LOG-1): whatever a log holds, `replay` exits 0 or 2 with one `error:` line, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import ctxkit

SCALARS = st.none() | st.booleans() | st.integers(-5, 5000) | st.text(max_size=12)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
KEYS = [
    "role",
    "content",
    "type",
    "text",
    "parts",
    "tool_calls",
    "function",
    "name",
    "arguments",
    "source",
    "data",
    "image_url",
    "url",
    "cache_control",
    "images",
    "inlineData",
    "call_id",
    "output",
    "summary",
    "input",
]
SHAPED = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=4),
    max_leaves=12,
)
BODIES = st.fixed_dictionaries(
    {},
    optional={
        "messages": st.lists(SHAPED, max_size=3) | SHAPED,
        "contents": st.lists(SHAPED, max_size=3),
        "system": SHAPED,
        "input": SHAPED,
        "instructions": SCALARS,
        "tools": st.lists(SHAPED, max_size=2) | SHAPED,
        "model": SCALARS,
        "systemInstruction": SHAPED,
        "prompt_cache_key": SCALARS,
        "tool_choice": SHAPED,
        "cache_control": SHAPED,
    },
)
USAGE = st.dictionaries(
    st.sampled_from(
        [
            "prompt_tokens",
            "input_tokens",
            "cache_read_input_tokens",
            "promptTokenCount",
            "prompt_tokens_details",
            "completion_tokens",
            "prompt_eval_count",
            "usage",
        ]
    ),
    VALUES,
    max_size=3,
)
RECORDS = st.fixed_dictionaries(
    {"request": BODIES},
    optional={
        "provider": st.sampled_from(["openai", "azure", "anthropic", "gemini", "ollama", "x"]),
        "endpoint": st.sampled_from(
            ["chat.completions", "responses", "messages", "generateContent", "api.chat", "count"]
        ),
        "at": st.sampled_from(["2026-03-14T09:00:00Z", "2026-03-14", "yesterday", 5]),
        "usage": USAGE | VALUES,
        "response": VALUES,
        "session": SCALARS,
    },
)


def _error_lines(err: str) -> bool:
    """Each error one line starting `error:`, all of them listed (SPEC: no crash on any input). A
    one-line log whose record holds a `ctxkit` key reads as a fixture (`{"ctxkit": null}` is
    one), and the fixture's check lists every problem it finds, a line each."""
    lines = err.splitlines()
    return bool(lines) and err.endswith("\n") and all(line.startswith("error: ") for line in lines)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=st.lists(RECORDS | VALUES, min_size=1, max_size=4), skip_bad=st.booleans())
def test_r_log_1_hostile_records_are_an_error_never_a_crash(tmp_path: Path, records: list[Any], skip_bad: bool) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    r = ctxkit("replay", str(path), "--format", "json", *(["--skip-bad"] if skip_bad else []), expect=None)
    assert r.code in (0, 2), str(r)
    if r.code == 2:
        assert _error_lines(r.err), str(r)


INTERACTIONS = st.fixed_dictionaries(
    {
        "request": st.fixed_dictionaries(
            {
                "uri": st.sampled_from(
                    [
                        "https://api.openai.com/v1/chat/completions",
                        "https://api.anthropic.com/v1/messages",
                        "https://x/v1beta/models/gemini-2.0-flash:generateContent",
                        "https://x/api/chat",
                        "https://api.openai.com/v1/responses",
                        "https://x/y",
                        7,
                    ]
                )
            },
            optional={"method": st.sampled_from(["POST", "GET", None]), "body": BODIES.map(json.dumps) | VALUES},
        ),
    },
    optional={
        "response": st.fixed_dictionaries(
            {},
            optional={
                "headers": st.dictionaries(
                    st.sampled_from(["Date", "Content-Encoding"]), st.lists(SCALARS, max_size=2)
                ),
                "body": st.fixed_dictionaries({"string": st.text(max_size=30) | USAGE.map(json.dumps)}) | VALUES,
            },
        )
    },
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(interactions=st.lists(INTERACTIONS | VALUES, max_size=3))
def test_r_log_1_hostile_cassettes_are_an_error_never_a_crash(tmp_path: Path, interactions: list[Any]) -> None:
    path = tmp_path / "cassette.json"
    path.write_text(json.dumps({"interactions": interactions}), encoding="utf-8")
    r = ctxkit("replay", str(path), "--format", "json", expect=None)
    assert r.code in (0, 2), str(r)
    if r.code == 2:
        assert _error_lines(r.err), str(r)


def test_r_log_1_a_record_that_reads_as_a_fixture_lists_each_problem_on_its_line(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text('{"ctxkit": null}\n', encoding="utf-8")
    r = ctxkit("replay", str(path), "--format", "json", expect=2)
    assert _error_lines(r.err) and r.err.count("\n") == 2, str(r)
    assert "missing required key 'model'" in r.err and "/ctxkit: must be 1, got null" in r.err
