"""`ctxkit import` reads the log strictly and points into the log (issue 19 item 16), and no
mutated body makes it crash."""

from __future__ import annotations

import copy
import io
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxkit.errors import CtxkitError
from ctxkit.loading.read import load_fixture
from ctxkit.pipeline import run

from .conftest import ctxkit


def _log_with_args(arguments: str) -> dict[str, Any]:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}
    return {
        "model": "gpt-4o",
        "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "r"},
        ],
    }


def _import_text(tmp_path, text: str, *args: str, expect: int | None = 0):
    path = tmp_path / "log.json"
    path.write_text(text, encoding="utf-8")
    return ctxkit("import", str(path), *args, expect=expect), path


ARGS_AT = "/messages/1/tool_calls/0/function/arguments"


def test_import_duplicate_key_in_tool_call_arguments_is_refused_at_its_log_pointer(tmp_path):
    r, path = _import_text(tmp_path, json.dumps(_log_with_args('{"a": 1, "a": 2}')), expect=2)
    assert r.err == f"error: {path}:{ARGS_AT}: duplicate key 'a' in the arguments JSON\n"


def test_import_bad_arguments_point_into_the_log_not_the_fixture(tmp_path):
    """A lone surrogate escaped inside the arguments, or a number no fixture can hold, used to be
    reported at `/in_flight/0/tool_calls/0/args` of the YAML import had not printed."""
    r, path = _import_text(tmp_path, json.dumps(_log_with_args('{"b": "\\ud800"}')), expect=2)
    assert r.err == f"error: {path}:{ARGS_AT}: a lone surrogate in the arguments JSON: the text is not valid Unicode\n"
    r, path = _import_text(tmp_path, json.dumps(_log_with_args('{"n": 1e999}')), expect=2)
    assert r.err == f"error: {path}:{ARGS_AT}: the number 1e999 is out of range in the arguments JSON\n"


def test_import_arguments_that_are_not_json_stay_text(tmp_path):
    r, _ = _import_text(tmp_path, json.dumps(_log_with_args('{"a": NaN}')))
    assert "args: '{\"a\": NaN}'" in r.out


def test_import_trailing_comma_is_not_json(tmp_path):
    """The README says the JSON is read strictly: no YAML fallback for a trailing comma."""
    r, path = _import_text(tmp_path, '{"messages": [{"role": "user", "content": "a"},]}', expect=2)
    assert r.err == f"error: {path}:1:48: not JSON: Expecting value\n"


def test_import_single_quoted_json_is_not_json(tmp_path):
    r, path = _import_text(tmp_path, "{'messages': [{'role': 'user', 'content': 'a'}]}", expect=2)
    assert r.err == f"error: {path}:1:2: not JSON: Expecting property name enclosed in double quotes\n"


def test_import_max_size_option_reads_a_log_over_the_default(tmp_path):
    """The size limit `import` applies is `--max-size`, as for every command that reads a fixture."""
    text = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "x" * 3000}]})
    r, path = _import_text(tmp_path, text, "--max-size", "2K", expect=2)
    assert r.err == f"error: {path}: cannot read: larger than the size limit of 2 KiB (see --max-size)\n"
    ok, _ = _import_text(tmp_path, text, "--max-size", "8K")
    assert "x" * 3000 in ok.out


def test_import_max_size_also_bounds_the_fixture_it_checks(tmp_path):
    """The fixture import writes is longer than the log here (YAML indents each nesting level):
    the limit applies to it too, and the error says so."""
    schema: dict[str, Any] = {}
    for _ in range(60):
        schema = {"a": schema}
    tools = [{"type": "function", "function": {"name": "f", "parameters": schema}}]
    log = {"model": "gpt-4o", "tools": tools, "messages": [{"role": "user", "content": "q"}]}
    text = json.dumps(log, separators=(",", ":"))
    size = len(text.encode("utf-8"))
    written, _ = _import_text(tmp_path, text)
    assert len(written.out.encode("utf-8")) > size
    r, path = _import_text(tmp_path, text, "--max-size", str(size), expect=2)
    assert r.err == (
        f"error: {path}: the imported fixture would not validate: larger than the size limit "
        f"of {size} bytes (see --max-size)\n"
    )


# --- fuzz: mutated real-looking bodies give exit 0, 1 or 2, never a traceback -------------------

SEEDS: list[dict[str, Any]] = [
    {
        "model": "gpt-4o",
        "tool_choice": "auto",
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
        "messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": [{"type": "text", "text": "q"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "r"},
        ],
    },
    {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}],
        "tools": [{"name": "f", "input_schema": {"type": "object"}}],
        "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {"a": [1]}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "r"}]},
        ],
    },
]
_scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=8)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
_keys = st.sampled_from(
    ["role", "content", "tool_calls", "tool_call_id", "type", "text", "id", "name", "arguments", "input"]
    + ["function", "tools", "system", "messages", "tool_use_id", "image_url", "source", "model", "response_format"]
)


def _nodes(doc: Any) -> list[Any]:
    """Every object and list in a document, the document first."""
    out, stack = [], [doc]
    while stack:
        item = stack.pop()
        if isinstance(item, (dict, list)):
            out.append(item)
            stack.extend(item.values() if isinstance(item, dict) else item)
    return out


@st.composite
def mutated_bodies(draw: st.DrawFn) -> Any:
    doc = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 4))):
        nodes = _nodes(doc)
        node = nodes[draw(st.integers(0, len(nodes) - 1))]
        how = draw(st.sampled_from(["set", "delete", "arguments"]))
        if isinstance(node, dict):
            key = draw(_keys | st.sampled_from(sorted(node) or ["x"]))
            if how == "delete":
                node.pop(key, None)
            elif how == "arguments":
                node[key] = draw(st.sampled_from(['{"a": 1, "a": 2}', '{"a": "\\ud800"}', "[1e999]", "{", "null"]))
            else:
                node[key] = draw(_values)
        elif node:
            index = draw(st.integers(0, len(node) - 1))
            if how == "delete":
                del node[index]
            else:
                node[index] = draw(_values)
    return doc


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_bodies(), st.sampled_from([[], ["--from", "openai"], ["--from", "anthropic"]]))
def test_import_fuzz_mutated_bodies_exit_0_1_or_2_never_a_traceback(body, args):
    r = ctxkit("import", "-", *args, "--max-input-tokens", "100000", stdin=json.dumps(body), expect=None)
    assert r.code in (0, 2), r
    assert "Traceback" not in r.err
    if r.code == 2:
        assert r.err.startswith("error: ") and r.err.count("\n") == 1, r.err
        return
    fixture = load_fixture("-", stdin=io.BytesIO(r.out.encode("utf-8")))
    try:
        run(fixture).wire_tokens()
    except CtxkitError:
        pass  # a rule error (exit 1) or bad input: both are answers, not crashes


def test_import_tools_that_are_not_a_list_are_refused_not_a_crash(tmp_path):
    """Found by the fuzz test: `"tools": true` crashed the format recognition (exit 3)."""
    log = {"model": "gpt-4o", "tools": True, "messages": [{"role": "user", "content": "q"}]}
    r, path = _import_text(tmp_path, json.dumps(log), expect=2)
    assert r.err == f"error: {path}:/tools: expected a list, got a boolean\n"
