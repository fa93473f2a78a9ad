"""Replay's compact rows (`replay/rows.py`, R-RPL-7/R-RPL-9): every row read back equals the
`CallRow` made the plain way from the same call (its fields as the driver works them out, its
costs priced afresh by a new `Pricer`), by value and by `repr`, whichever way it is read."""

from __future__ import annotations

from dataclasses import fields
from decimal import Decimal
from typing import Any

import pytest

from ctxkit.loading.config import Options
from ctxkit.loading.read import load_fixture
from ctxkit.replay import breaks
from ctxkit.replay.calls import ReplayCall
from ctxkit.replay.cost import Pricer
from ctxkit.replay.driver import CallRow, replay
from ctxkit.replay.rows import CallRows

from .conftest import FIXTURES

REPLAY = FIXTURES / "replay"

CASES = [
    ("tools.yaml", Options()),
    ("long_session.yaml", Options(provider="anthropic", model="claude-sonnet-4-5")),
    ("long_session.yaml", Options(provider="openai", model="gpt-4o", max_input_tokens=3000)),
    ("lookback.yaml", Options(provider="anthropic", model="claude-3-5-haiku-20241022")),
    ("summary.yaml", Options(provider="ollama")),  # free: Decimal(0)
    ("placeholder.yaml", Options(provider="gemini", model="gemini-2.5-pro")),  # tiered prices
    ("system.yaml", Options(provider="openai", model="no-such-model")),  # unknown: null costs
    ("taubench_airline.yaml", Options(provider="anthropic", model="claude-sonnet-4-5")),
]


@pytest.mark.parametrize(("name", "options"), CASES)
def test_r_rpl_7_compact_rows_read_back_the_rows_made_per_call(
    name: str, options: Options, monkeypatch: pytest.MonkeyPatch
) -> None:
    fixture = load_fixture(str(REPLAY / name))
    added: list[tuple[Any, ...]] = []
    plain_add = CallRows.add

    def add(self: CallRows, *args: Any) -> None:
        added.append(args)
        plain_add(self, *args)

    monkeypatch.setattr(CallRows, "add", add)
    calls: list[ReplayCall] = []
    done = replay(fixture, options, on_call=lambda i, call, result: calls.append(call))
    assert len(done.calls) == len(added) == len(calls) > 1
    pricer = Pricer(done.provider, done.model, fixture.settings.prices, one_hour=done.rules.ttl == "1h")
    one_by_one = [done.calls[i] for i in range(len(done.calls))]  # made singly, before any full read
    assert [repr(r) for r in one_by_one] == [repr(done.calls[i - len(done.calls)]) for i in range(len(done.calls))]
    unread = 0
    for index, (args, call) in enumerate(zip(added, calls, strict=True)):
        user, step, on_branch, clock, numbers, output, _pricing, candidate, brk, limit, flags = args
        prompt, prefix, cached, written = numbers
        truncated, due, synthetic = flags
        cost, without = pricer.cost(prompt, cached, written, output, clock), pricer.cost(prompt, 0, 0, output, clock)
        row = done.calls[index]
        expected = CallRow(index, user, step, call.label, on_branch, clock, prompt, prefix, cached, written, output,
                           cost, without, candidate, brk, limit, truncated, due, synthetic)  # fmt: skip
        assert row.unread_write_tokens in (0, written)
        unread += row.unread_write_tokens
        expected.unread_write_tokens = row.unread_write_tokens
        for got in (row, one_by_one[index], done.calls[index : index + 1][0], list(done.calls)[index]):
            assert repr(got) == repr(expected) and got == expected
            assert all(type(getattr(got, f.name)) is type(getattr(expected, f.name)) for f in fields(CallRow))
        assert user == call.user.id and step == call.step and isinstance(brk, breaks.Break)
    assert done.calls == tuple(done.calls) and repr(done.calls) == repr(tuple(done.calls))
    if name == "long_session.yaml":
        assert unread > 0 or options.provider == "openai"


def test_compact_rows_keep_numbers_past_32_bits_and_refuse_bad_indexes() -> None:
    rows = CallRows()
    brk = replay(load_fixture(str(REPLAY / "tools.yaml"))).calls[0].brk
    free = Pricer("ollama", "llama3", None).pricing(1, 0, 0, None, None)
    rows.add("u1", 0, True, None, (2**70, 5, 0, 3), None, free, None, brk, None, (False, True, False))
    rows.add("u1", 2, False, None, (7, 5, 1, 0), 2**64, free, 0, brk, None, (True, False, True))
    rows.add("u2", 0, True, None, (2**31, 2**31 - 1, 0, 9), 4, free, 1, brk, None, (False, False, False))
    rows.add("u2", 1, True, None, (8, 6, 2, 1), 4, free, 1, brk, None, (False, False, False))
    rows.unread(0, 3)
    rows.unread(3, 1)
    assert list(rows.writes()) == [3, 0, 9, 1]
    assert [(r.prompt_tokens, r.prefix_tokens, r.unread_write_tokens) for r in rows[2:]] == [
        (2**31, 2**31 - 1, 0),
        (8, 6, 1),
    ]
    first = CallRow(0, "u1", 0, "u1", True, None, 2**70, 5, 0, 3, None, Decimal(0), Decimal(0), None, brk, None,
                    False, True, False, 3)  # fmt: skip
    assert repr(rows[0]) == repr(first) and rows[0] == first
    second = rows[1]
    assert (second.label, second.output_tokens, second.candidate, second.truncated, second.synthetic) == (
        "u1·2",
        2**64,
        0,
        True,
        True,
    )
    with pytest.raises(IndexError):
        rows[4]
    assert len(rows) == 4 and rows[-3] == second and rows[0:1] == (rows[0],)
