"""Fuzzing the loader (SPEC §9): any input gives a Fixture or one-line errors, never a crash.

Mutations of the SPEC example also check that the compiled fast path (fastjsonschema's
code, shipped in `schema_compiled`) and jsonschema agree.
"""

from __future__ import annotations

import copy
import io
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from ctxkit.errors import InputError
from ctxkit.loading import domain
from ctxkit.loading.read import load_fixture, load_schema
from ctxkit.loading.schema import _fast_check

SPEC_EXAMPLE = Path(__file__).parent / "data" / "spec_example.yaml"
VALID: dict[str, Any] = yaml.safe_load(SPEC_EXAMPLE.read_text(encoding="utf-8"))
FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 200_000)
    | st.floats(-2, 2, allow_nan=False)
    | st.text(max_size=8)
    | st.sampled_from(["m1", "m2", "s1", "img-1", "call_9", "user", "text"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


@pytest.fixture(scope="module")
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as name:
        yield Path(name)


def assert_loads_or_explains(path: str, **options: Any) -> None:
    try:
        fixture = load_fixture(path, **options)
    except InputError as error:
        lines = error.lines()
        assert lines, "an InputError must name at least one problem"
        for line in lines:
            assert line.startswith(path + ":"), line
            assert len(line.splitlines()) == 1, repr(line)
    else:
        assert isinstance(fixture, domain.Fixture)


@FUZZ
@given(data=st.binary(max_size=300))
def test_random_bytes(folder: Path, data: bytes) -> None:
    (folder / "fx.yaml").write_bytes(data)
    assert_loads_or_explains(str(folder / "fx.yaml"))
    try:
        load_fixture("-", stdin=io.BytesIO(data))
    except InputError as error:
        assert all(line.startswith("-:") and len(line.splitlines()) == 1 for line in error.lines())


yaml_ish = st.lists(
    st.sampled_from(
        [
            "ctxkit: 1\n",
            "model: {provider: openai, name: x}\n",
            "messages:\n",
            "  - ",
            "{id: m1, role: user}\n",
            "&a ",
            "*a",
            "[",
            "]",
            "{",
            "}",
            ": ",
            "- ",
            "\t",
            "'",
            '"',
            "<<: *a\n",
            "!!set ",
            "? ",
            "\n",
            "  ",
            "1: x\n",
            "~",
            "0.1",
            "\x00",
            "\ufeff",
            "é",
            "\\u2028",
            "\u2028",
            "now: 2026-03-14\n",
            "---\n",
            "...\n",
            "!!bool ",
            "!!map ",
            "!!int ",
            "!!float ",
            "!!str ",
            "!!seq ",
            "!!null ",
            "!x ",
            "!!timestamp ",
            "9" * 5000,
            "1e999",
            ".inf",
            "0x",
            "%YAML 1.1\n",
        ]
    ),
    max_size=30,
).map("".join)


@FUZZ
@given(text=st.text(max_size=200) | yaml_ish)
def test_random_text(folder: Path, text: str) -> None:
    (folder / "fx.yaml").write_text(text, encoding="utf-8", errors="surrogatepass")
    assert_loads_or_explains(str(folder / "fx.yaml"))


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths(item, (*prefix, index))


def get(doc: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        doc = doc[part]
    return doc


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    doc = copy.deepcopy(VALID)
    for _ in range(draw(st.integers(1, 3))):
        every = list(paths(doc))
        path = draw(st.sampled_from(every))
        operation = draw(st.sampled_from(["delete", "retype", "unknown", "dangle", "swap", "dup"]))
        parent: Any = get(doc, path[:-1]) if path else None
        if operation == "delete" and path:
            del parent[path[-1]]
        elif operation == "retype" and path:
            parent[path[-1]] = draw(json_values)
        elif operation == "unknown":
            target = get(doc, path)
            if isinstance(target, dict):
                target[draw(st.sampled_from(["extra", "Text", "parnt", ""]))] = draw(json_values)
        elif (
            operation == "dangle"
            and path
            and path[-1] in ("parent", "leaf", "summarizes_through", "tool_call_id", "id", "file_id")
        ):
            parent[path[-1]] = draw(st.sampled_from(["m9", "m1", "1", 1, "s1", "call_9"]))
        elif operation == "swap" and len(doc.get("messages", [])) >= 2:
            messages = doc["messages"]
            i, j = draw(st.integers(0, len(messages) - 1)), draw(st.integers(0, len(messages) - 1))
            if isinstance(messages[i], dict) and isinstance(messages[j], dict):
                a, b = messages[i].get("id"), messages[j].get("id")
                messages[i]["id"], messages[j]["id"] = b, a
        elif operation == "dup" and path and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[path[-1]]))
        if not isinstance(doc, dict):
            break
    return doc


@FUZZ
@given(doc=mutated(), as_json=st.booleans())
def test_mutated_spec_example(folder: Path, doc: dict[str, Any], as_json: bool) -> None:
    path = folder / ("fx.json" if as_json else "fx.yaml")
    text = json.dumps(doc) if as_json else yaml.safe_dump(doc, allow_unicode=True)
    path.write_text(text, encoding="utf-8")
    assert_loads_or_explains(str(path))


@settings(FUZZ, max_examples=300)
@given(doc=mutated())
def test_fast_path_agrees_with_jsonschema(doc: dict[str, Any]) -> None:
    """fastjsonschema's compiled check accepts exactly what jsonschema accepts."""
    assert _fast_check()(doc) == Draft202012Validator(load_schema()).is_valid(doc)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("messages", 0, "tokens"), 3.0),  # an integral float is an integer in JSON Schema
        (("messages", 0, "tokens"), True),  # a boolean is not
        (("ctxkit",), 1.0),
        (("ctxkit",), True),
        (("messages", 0, "tokens"), -1),
        (("model", "max_input_tokens"), 0.5),
        (("messages", 0, "id"), 1.5),
        (("messages", 0, "role"), "summary"),  # then it needs summarizes_through
        (("settings", "safety_margin"), 1),
    ],
)
def test_fast_path_agrees_with_jsonschema_on_edge_values(path: tuple[Any, ...], value: Any) -> None:
    doc = copy.deepcopy(VALID)
    get(doc, path[:-1])[path[-1]] = value
    assert _fast_check()(doc) == Draft202012Validator(load_schema()).is_valid(doc)
