"""A plain view's places (`Prompt.plain`: one item per payload message), read as slices of its
assembled list, how far runs of equal items sit on equal working messages (`_alike`), and the
runs of equal items of two views found through their key numbers (`equal_runs`), for numbering
a view against the last plain one (`earlier.Sides`, R-RPL-9)."""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from itertools import repeat
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, NamedTuple

from ctxkit.history.working import Segment
from ctxkit.replay.prefix import runs
from ctxkit.translate.itemmemo import REACH, Run, common_run

if TYPE_CHECKING:
    from ctxkit.replay.breaks import MappedCall


class _Plain(NamedTuple):
    """A plain view's places (`Prompt.plain`): item n's working message is `messages[n - lead]`
    while n - lead is under `limit`, else none (the pad)."""

    lead: int
    limit: int
    messages: Sequence[Any]
    segments: Sequence[Segment | None]

    @classmethod
    def of(cls, view: MappedCall) -> _Plain:
        return cls(view.items.lead, min(len(view.messages), view.items.placed), view.messages, view.segment_of)

    def placed(self, lo: int, hi: int) -> tuple[list[Any], list[Segment | None]]:
        """The working messages and segments of items `lo` to `hi`, as slices and pads."""
        lead, limit = self.lead, self.limit
        if lead <= lo and hi - lead <= limit:  # all on messages (mostly): two slices
            return self.messages[lo - lead : hi - lead], self.segments[lo - lead : hi - lead]  # type: ignore[return-value]
        a, b = min(max(lo - lead, 0), limit), min(max(hi - lead, 0), limit)
        head = max(0, min(hi, lead) - lo)  # the definitions: no message
        tail = (hi - lo) - head - (b - a)
        ws = [*repeat(_PAD, head), *self.messages[a:b], *repeat(_PAD, tail)]
        segments = [*repeat(None, head), *self.segments[a:b], *repeat(None, tail)]
        return ws, segments


def _alike(new: _Plain, i: int, old: _Plain, j: int, k: int) -> int:
    """How many of the items from new's i and old's j (at most k) sit on equal working messages
    in the same segments, or on none on both sides, compared as slices of the assembled lists."""
    t = 0
    while t < k and (i + t < new.lead or j + t < old.lead):  # the definitions: no message
        if i + t >= new.lead or j + t >= old.lead:
            return t
        t += 1
    a, b = i + t - new.lead, j + t - old.lead
    most = min(k - t, new.limit - a, old.limit - b)
    if most > 0:
        # the segments first (by identity), then the messages only as far: where they part, they mostly part together
        same = common_run(new.messages, a, old.messages, b, common_run(new.segments, a, old.segments, b, most))
        if same < most:
            return t + same
        t, a, b = t + most, a + most, b + most
    if a >= new.limit and b >= old.limit:  # beyond both lists: no message on either side to the run's end
        return k
    return t


_PAD = SimpleNamespace(key=None, kind=None, origin=None, file_id=None, source_id=None, placeholder=None)  # no message


def equal_runs(new: Sequence[Any], old: Sequence[Any], keys: Sequence[Any], theirs: Sequence[Any]) -> list[Run]:
    """Runs of equal items of `new` and `old` (`prefix.runs`): with key numbers for both, found
    as runs of equal keys (an item's key is part of it), each cut to its equal items, compared as
    slices. A run's first key is looked for as bytes in C, where `runs` compares items field by
    field at each of up to `REACH` places for every new item."""
    if not (type(keys) is array and type(theirs) is array and keys.typecode == theirs.typecode == "i"):
        return runs(new, old)
    out: list[Run] = []
    for i, j, k in key_runs(keys, theirs):
        t = 0
        while t < k:
            n = common_run(new, i + t, old, j + t, k - t)
            if n:
                out.append((i + t, j + t, n))
            t += n + 1  # the item that differs (its breakpoint, say) is in no run
    return out


def key_runs(keys: array[int], theirs: array[int]) -> list[Run]:
    """`prefix.runs(keys, theirs)` over key numbers (the same runs): each run's first key looked
    for in the bytes of the next `REACH` keys (`array.index` makes an int a place)."""
    out: list[Run] = []
    mine, there, size = keys.tobytes(), theirs.tobytes(), keys.itemsize
    i, j, n, m = 0, 0, len(keys), len(theirs)
    while i < n:
        first, stop = mine[i * size : (i + 1) * size], min(m, j + REACH) * size
        at = there.find(first, j * size, stop)
        while at > 0 and at % size:  # inside two keys: on from there
            at = there.find(first, at + 1, stop)
        if at < 0:
            i += 1
            continue
        found = at // size
        length = common_run(keys, i, theirs, found, min(n - i, m - found))
        out.append((i, found, length))
        i, j = i + length, found + length
    return out
