"""R-RPL-6, R-RPL-9: a row keeps its break's two sides as fields (`breakvalue.Break`), not as
dicts; read back they are the dicts the break finder worked out, and the rows' JSON text is the
same."""

from __future__ import annotations

import json

import pytest

from ctxkit.replay.breakvalue import Break, Side
from ctxkit.replay.causes import Cause

SIDES: list[Side] = [
    None,
    {"kind": "tools", "id": None, "segment": None},
    {"kind": "user", "id": "m7", "segment": "history"},
    {"kind": "setting", "id": "temperature, top_p", "segment": None},
    {"kind": "assistant", "id": "", "segment": "in_turn"},
]


@pytest.mark.parametrize("this", SIDES)
@pytest.mark.parametrize("candidate", SIDES)
def test_r_rpl_6_break_sides_read_back_as_given(this: Side, candidate: Side) -> None:
    brk = Break.of(Cause.OTHER, "R-RPL-6", 3, this, candidate, 41)
    assert json.dumps(brk.this) == json.dumps(this)
    assert json.dumps(brk.candidate) == json.dumps(candidate)
    plain = {"item": 3, "this": this, "candidate": candidate}
    assert json.dumps(brk.as_json()) == json.dumps(plain)
    assert brk == Break.of(Cause.OTHER, "R-RPL-6", 3, this and dict(this), candidate and dict(candidate), 41)


def test_r_rpl_6_break_without_item_writes_null() -> None:
    assert Break(Cause.FIRST_CALL, "R-RPL-1", None, 0).as_json() is None
    assert Break(Cause.FIRST_CALL, "R-RPL-1", None, 0).this is None


def test_r_rpl_6_break_sides_differ_when_a_field_does() -> None:
    a = Break.of(Cause.OTHER, "R-RPL-6", 1, SIDES[2], None, 0)
    b = Break.of(Cause.OTHER, "R-RPL-6", 1, {"kind": "user", "id": "m7", "segment": "tail"}, None, 0)
    assert a != b
    assert a != Break.of(Cause.OTHER, "R-RPL-6", 1, None, SIDES[2], 0)
