"""What later calls keep of a replayed call, for breaking against it (R-RPL-6, R-RPL-9).

Input: a call's `MappedCall` (its items mapped back to their working messages) once a later call
has overtaken its first items (`cache.Cache.overtaken`). Output: `Earlier`, from the first item
not overtaken on, each item's key and the number of its side (tokens, role, breakpoint, the
working message behind it) in `Sides`, a table of each distinct side kept once; `Source`, the
working message behind a payload message as a break shows it.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter, itemgetter
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, NamedTuple

from ctxkit.history.working import Kind, Origin, Segment
from ctxkit.replay.cache import Keys
from ctxkit.replay.prefix import common_prefix, each, runs
from ctxkit.translate.itemmemo import Run
from ctxkit.translate.items import Item

if TYPE_CHECKING:
    from ctxkit.replay.breaks import MappedCall


@dataclass(frozen=True, slots=True)
class Source:
    """The working message behind a payload message."""

    key: str
    kind: Kind
    origin: Origin
    id: str | None  # the stored message or file id
    stored: str | None  # the stored message it comes from (for branch checks)
    segment: str | None
    placeholder: bool

    @staticmethod
    def of(side: tuple[Any, ...], segment: Segment | None) -> Source | None:
        """The source of a working message's side (`W_SIDE`: key, kind, origin, file id,
        stored id, placeholder) in `segment`; None for the pad (no working message)."""
        key, kind, origin, file_id, source_id, placeholder = side
        if key is None:
            return None
        stored = source_id if origin in STORED else None
        return Source(
            key, kind, origin, file_id or source_id, stored, str(segment) if segment is not None else None, placeholder
        )


class CallContext(NamedTuple):
    """What a break reads of an earlier call besides its items."""

    user: str
    system: str | None
    date: str | None
    model: str
    settings: tuple[tuple[str, str], ...]


class Sides:
    """Each distinct (tokens, role, breakpoint, source) of the items kept for later calls, once:
    an earlier call keeps one number per item instead of its assembled list (R-RPL-9)."""

    def __init__(self) -> None:
        self.table: list[Side] = []  # each side as numbered: its Source is made when a break reads it
        self._ids: dict[Side, int] = {}
        self._texts: dict[str, str] = {}
        self._items: dict[ItemSide, ItemSide] = {}  # see `_kept`
        self._last: tuple[_Placed, array[int]] = (_Placed((), [], []), array("i"))  # the last view numbered
        self._whole_last: tuple[MappedCall | None, array[int]] = (None, array("i"))  # the last plain view, whole

    def text(self, text: str | None) -> str | None:
        """One string object for equal texts (the system prompt, equal on most calls)."""
        return None if text is None else self._texts.setdefault(text, text)

    def numbers(self, view: MappedCall, start: int) -> array[int]:
        """The numbers of the view's items from `start` on. A run of the items the last view
        numbered (equal items), on equal working messages in the same segments, takes that
        view's numbers as one slice; the others' sides are built and looked up in C, and only a
        side not seen before is numbered one by one. A plain view (`Prompt.plain`: item n sits on
        assembled message n - lead) is numbered whole against the last plain view, its runs
        checked by comparing slices of the two assembled lists, so no column of the window is
        built (R-RPL-9)."""
        if view.items.plain():
            return self._whole(view)[start:]
        items, m = view.items.items[start:], len(view.messages)
        at = view.items.origins()[start:]  # -1 (no working message) reads the pad, after the list
        limit = min(m, view.items.placed)
        if at and max(at) >= limit:  # beyond the assembled list: no working message either
            at = [a if a < limit else -1 for a in at]
        ws, segments = [*view.messages, _PAD], [*view.segment_of, None]
        mine = _Placed(items, list(map(ws.__getitem__, at)), list(map(segments.__getitem__, at)))
        before, lent = self._last
        found, done = array("i"), 0
        for i, j, k in [*runs(items, before.items), (len(items), 0, 0)]:
            if k:  # the run goes on while its items sit on equal messages, in the same segments
                k = min(
                    common_prefix(mine.ws[i : i + k], before.ws[j : j + k]),
                    common_prefix(mine.segments[i : i + k], before.segments[j : j + k]),
                )
            if done < i:
                found += self._looked(mine.items[done:i], mine.ws[done:i], mine.segments[done:i])
            found += lent[j : j + k]
            done = i + k
        self._last = (mine, found)
        return found

    def _whole(self, view: MappedCall) -> array[int]:
        """The numbers of every item of a plain view, the runs it shares with the last plain
        view numbered taken from that view's numbers."""
        items, here = view.items.items, _Plain.of(view)
        last, lent = self._whole_last
        there = _Plain.of(last) if last is not None else None
        found, done = array("i"), 0
        shared: Sequence[Run] = ()
        if last is not None:  # the runs the call's columns found against the same items, or found now
            made = view.columns
            shared = (
                made.runs if made is not None and made.before is last.items.items else runs(items, last.items.items)
            )
        for i, j, k in [*shared, (len(items), 0, 0)]:
            if k and there is not None:
                k = _alike(here, i, there, j, k)
            if done < i:
                found += self._looked(items[done:i], *here.placed(done, i))
            found += lent[j : j + k]
            done = i + k
        self._whole_last = (view, found)
        return found

    def _looked(self, items: Sequence[Item], ws: Sequence[Any], segments: Sequence[Segment | None]) -> array[int]:
        """The numbers of `items`, on working messages `ws` in `segments`, each side looked up in C."""
        keys: list[Side] = list(zip(map(_ITEM_SIDE, items), map(W_SIDE, ws), segments, strict=True))
        found = list(map(self._ids.get, keys, repeat(-1)))
        for n in each(found, -1):
            got = self._ids.get(keys[n])
            if got is None:  # not even earlier in this call
                side = self._kept(keys[n])
                got = self._ids[side] = len(self.table)
                self.table.append(side)
            found[n] = got
        return array("i", found)

    def _kept(self, side: Side) -> Side:
        """A new side as the table keeps it: its item's part one object for equal values (most
        items share their tokens, role and breakpoint with an earlier one; a message's part is
        mostly its own, so it is kept as made)."""
        item, message, segment = side
        return (self._items.setdefault(item, item), message, segment)


class _Plain(NamedTuple):
    """A plain view's places (`Prompt.plain`): item n's working message is `messages[n - lead]`
    while n - lead is under `limit`, else none (the pad)."""

    lead: int
    limit: int
    messages: Sequence[Any]
    segments: Sequence[Segment | None]

    @classmethod
    def of(cls, view: MappedCall) -> _Plain:
        prompt = view.items
        return cls(prompt.lead, min(len(view.messages), prompt.placed), view.messages, view.segment_of)

    def placed(self, lo: int, hi: int) -> tuple[list[Any], list[Segment | None]]:
        """The working messages and segments of items `lo` to `hi`, as slices and pads."""
        lead, limit = self.lead, self.limit
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
        same = min(
            common_prefix(new.messages[a : a + most], old.messages[b : b + most]),
            common_prefix(new.segments[a : a + most], old.segments[b : b + most]),
        )
        if same < most:
            return t + same
        t, a, b = t + most, a + most, b + most
    if a >= new.limit and b >= old.limit:  # beyond both lists: no message on either side to the run's end
        return k
    return t


class _Placed(NamedTuple):
    """A view's items from where it is kept on, each with its working message and segment."""

    items: Sequence[Item]
    ws: list[Any]
    segments: list[Segment | None]


_PAD = SimpleNamespace(key=None, kind=None, origin=None, file_id=None, source_id=None, placeholder=None)  # no message
_ITEM_SIDE = itemgetter(1, 2, 3)  # an Item's tokens, role, breakpoint
W_SIDE = attrgetter("key", "kind", "origin", "file_id", "source_id", "placeholder")
STORED = frozenset({Origin.MESSAGE, Origin.FILE, Origin.TOOL_CALLS, Origin.TOOL_RESULT, Origin.ANSWER})
# an item's side: its (tokens, role, breakpoint), its working message's `W_SIDE` and segment
ItemSide = tuple[int, str | None, bool]
Side = tuple[ItemSide, tuple[Any, ...], Segment | None]


class Earlier:
    """An earlier call as later calls keep it (R-RPL-9): from item `start` on, each item's key and
    the number of its (tokens, role, breakpoint, source) in `Sides`.

    Items before `start` were overtaken (`cache.Cache.overtaken`): a later call that shares them
    shares them with a later call too, whose prompt is then its best candidate there, so this one
    can only be broken against at `start` or beyond. A conversation that grows keeps of each
    earlier call its last few items (its reminder); one that truncates keeps a key and a number
    per item of the window until the TTL ends."""

    __slots__ = (
        "_call",
        "_offset",
        "_sides",
        "_table",
        "date",
        "keys",
        "length",
        "model",
        "settings",
        "start",
        "system",
        "user",
    )

    def __init__(
        self,
        start: int,
        length: int,
        keys: Keys,
        offset: int,
        sides: array[int],
        table: list[Side],
        call: CallContext,
    ) -> None:
        self.start, self.length = start, length
        self.keys, self._offset = keys, offset  # item n's key is keys[n - start + offset]
        self._sides, self._table, self._call = sides, table, call
        self.user, self.system, self.date, self.model, self.settings = call

    def _side(self, n: int) -> Side | None:
        if n >= self.length:
            return None
        if n < self.start:
            raise AssertionError(f"item {n} of an earlier call was overtaken (kept from {self.start})")
        return self._table[self._sides[n - self.start]]

    def item(self, n: int) -> Item | None:
        side = self._side(n)
        if side is None:
            return None
        tokens, role, breakpoint = side[0]
        key = self.keys[n - self.start + self._offset]  # as the trie holds it: a number in a replay
        return Item(str(key), tokens, role, breakpoint)

    def keys_from(self, n: int) -> Keys:
        if n < self.start:
            raise AssertionError(f"keys from {n} of an earlier call were overtaken (kept from {self.start})")
        return self.keys[n - self.start + self._offset :]

    def source_at(self, n: int) -> Source | None:
        side = self._side(n)
        return Source.of(side[1], side[2]) if side is not None else None

    def trimmed(self, start: int, sides: Sides) -> Earlier | None:
        if start >= self.length:
            return None
        cut = max(start - self.start, 0)
        if cut == 0:
            return self
        keys, offset = self.keys, self._offset + cut
        left = self.length - start
        if 2 * left <= len(keys):  # little of the shared keys is still needed: keep only that
            keys, offset = keys[offset : offset + left], 0
        numbers = self._sides[cut:]
        return Earlier(start, self.length, keys, offset, numbers, self._table, self._call)
