"""R-RPL-9: a plain view whose last numbered view was not the previous call's finds the runs of
items it shares with that view through their key numbers (`plainview.equal_runs`): the runs of
equal keys, searched as bytes, must be `prefix.runs`' own, and each run taken must hold equal
items (a key equal, a breakpoint not: no run there), in order of both views."""

from __future__ import annotations

from array import array

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxkit.replay.plainview import equal_runs, key_runs
from ctxkit.replay.prefix import runs
from ctxkit.translate.items import Item

_KEYS = st.lists(st.sampled_from([0, 1, 2, 256, 257, 65536, 65537, 1 << 30]), max_size=60)


@settings(max_examples=500, deadline=None)
@given(_KEYS, _KEYS)
def test_r_rpl_9_key_runs_found_as_bytes_are_the_runs_of_equal_keys(new: list[int], old: list[int]) -> None:
    """Keys whose bytes overlap across two numbers (256 and 1 beside 0) must not start a run."""
    assert key_runs(array("i", new), array("i", old)) == runs(array("i", new), array("i", old))


@settings(max_examples=500, deadline=None)
@given(
    _KEYS, _KEYS, st.lists(st.booleans(), min_size=60, max_size=60), st.lists(st.booleans(), min_size=60, max_size=60)
)
def test_r_rpl_9_runs_found_through_keys_hold_equal_items(
    new: list[int], old: list[int], marks: list[bool], theirs: list[bool]
) -> None:
    mine = tuple(Item(str(k), 10, "user", b) for k, b in zip(new, marks, strict=False))
    others = tuple(Item(str(k), 10, "user", b) for k, b in zip(old, theirs, strict=False))
    got = equal_runs(mine, others, array("i", new), array("i", old))
    i0 = j0 = 0
    for i, j, k in got:
        assert k > 0 and i >= i0 and j >= j0
        assert mine[i : i + k] == others[j : j + k]
        i0, j0 = i + k, j + k
    same = tuple(Item(str(k), 10, "user", k % 3 == 0) for k in new)  # breakpoints follow the keys
    them = tuple(Item(str(k), 10, "user", k % 3 == 0) for k in old)
    assert equal_runs(same, them, array("i", new), array("i", old)) == runs(same, them)
    assert equal_runs(mine, others, tuple(new), tuple(old)) == runs(mine, others)  # keys not numbers
