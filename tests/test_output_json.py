"""`output.dumps` writes exactly what `json.dumps(indent=2, ensure_ascii=False, allow_nan=False)` writes."""

from __future__ import annotations

import enum
import json
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxkit.output import dumps, json_escaped

SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=30,
)


def _library(value: Any) -> str:
    return json_escaped(json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False) + "\n")


@settings(max_examples=300, deadline=None)
@given(value=VALUES)
def test_dumps_writes_what_the_library_writes(value: Any) -> None:
    assert dumps(value) == _library(value)


class _Colour(enum.StrEnum):
    RED = "red"


class _Size(enum.IntEnum):
    BIG = 3


def _nested(depth: int) -> Any:
    value: Any = ["x"]
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    "value",
    [
        {1: "a", None: 2, 1.5: 3, False: 4},  # keys json converts
        {_Colour.RED: [_Colour.RED, _Size.BIG, 1e300, -0.0, 2**80]},
        _nested(300),  # deeper than the fast writer goes
        {"a": [], "b": {}, "c": [[]], "\x9b": "\x7f\u2028"},
    ],
)
def test_dumps_matches_the_library_on_unusual_values(value: Any) -> None:
    assert dumps(value) == _library(value)


@pytest.mark.parametrize("value", [float("nan"), [float("inf")], {"a": Decimal("1.5")}, {"a": object()}])
def test_dumps_refuses_what_the_library_refuses(value: Any) -> None:
    with pytest.raises((ValueError, TypeError)) as ours:
        dumps(value)
    with pytest.raises(type(ours.value)) as theirs:
        json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)
    assert str(ours.value) == str(theirs.value)


def test_dumps_refuses_a_cycle_as_the_library_does() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match="Circular reference"):
        dumps({"a": cycle})
