"""What later calls keep of a replayed call, for breaking against it (R-RPL-6, R-RPL-9).

Input: a call's `MappedCall` once a later call has overtaken its first items. Output: `Earlier`,
from the first item not overtaken on, each item's key and its side's code (tokens, role,
breakpoint, working message: `Table`), read from pieces of logs shared by the calls that keep the
same items (`Sides`); `Source`, the working message behind a payload message as a break shows it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from ctxkit.history.working import Kind, Origin, Segment
from ctxkit.replay.cache import Keys
from ctxkit.replay.plainview import _PAD, _alike, _Plain, equal_runs
from ctxkit.replay.prefix import runs
from ctxkit.replay.sidetable import LOG_LIMIT, Kept, Side, Table, _Pieces
from ctxkit.replay.sidetable import W_SIDE as W_SIDE  # breaks reads it from here
from ctxkit.translate.itemmemo import Run, common_run
from ctxkit.translate.items import Item

if TYPE_CHECKING:
    from ctxkit.replay.breaks import MappedCall


@dataclass(slots=True, unsafe_hash=True)  # not frozen: made twice a call by `find` (never changed once made)
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
        """The source of a working message's side (`W_SIDE`) in `segment`; None for the pad."""
        key, kind, origin, file_id, source_id, placeholder = side
        if key is None:
            return None
        stored = source_id if origin in STORED else None
        name = None if segment is None else _SEGMENT_NAMES.get(segment) or str(segment)  # one string per segment
        return Source(key, kind, origin, file_id or source_id, stored, name, placeholder)


class CallContext(NamedTuple):
    """What a break reads of an earlier call besides its items."""

    user: str
    system: str | None
    date: str | None
    model: str
    settings: tuple[tuple[str, str], ...]


class Sides:
    """What later calls keep of earlier calls' items (R-RPL-9): each side a code in a `Table`, each
    kept view's codes pieces of its logs (`Kept`): consecutive windows share most of their items,
    shifted, so a view adds only what the last did not hold. Past `LOG_LIMIT` codes, a new table
    (the old one goes with the last call kept from it)."""

    _last: tuple[_Placed, _Pieces]  # the last view numbered
    _whole_last: tuple[MappedCall | None, _Pieces, _Plain | None]  # the last plain view numbered
    _via: tuple[Sequence[Item], Sequence[Run]] | None  # plain views skipped since: the last one's items, runs

    def __init__(self) -> None:
        self._texts: dict[str, str] = {}
        self._renew()

    def text(self, text: str | None) -> str | None:
        """One string object for equal texts (the system prompt, equal on most calls)."""
        return None if text is None else self._texts.setdefault(text, text)

    def numbers(self, view: MappedCall, start: int) -> Kept:
        """The side codes of the view's items from `start` on: a run of the last view's items on equal
        working messages in the same segments takes its pieces, the others are coded in C. A plain
        view (`Prompt.plain`) is numbered whole, its runs checked on its assembled list's slices."""
        if len(self.table.log) + len(self.table.tail) > LOG_LIMIT:
            self._renew()
        if view.items.plain():
            return self._whole(view).kept(start, start)
        items, m = view.items.items[start:], len(view.messages)
        at = view.items.origins()[start:]  # -1 (no working message) reads the pad, after the list
        limit = min(m, view.items.placed)
        if at and max(at) >= limit:  # beyond the assembled list: no working message either
            at = [a if a < limit else -1 for a in at]
        ws, segments = [*view.messages, _PAD], [*view.segment_of, None]
        mine = _Placed(items, list(map(ws.__getitem__, at)), list(map(segments.__getitem__, at)))
        before, lent = self._last
        found, done = _Pieces(self.table), 0
        for i, j, k in [*runs(items, before.items), (len(items), 0, 0)]:
            if k:  # the run goes on while its items sit in the same segments (first: by identity), on equal messages
                k = common_run(mine.ws, i, before.ws, j, common_run(mine.segments, i, before.segments, j, k))
            if done < i:
                got = mine.segments[done:i]
                found.add(self.table.codes(mine.items[done:i], mine.ws[done:i], got), got, i == len(items))
            if k:
                found.take(lent, j, k)
            done = i + k
        self._last = (mine, found)
        return found.kept(start, 0)

    def _whole(self, view: MappedCall) -> _Pieces:
        """The codes of every item of a plain view, its runs of the last plain view's from its pieces."""
        items, here = view.items.items, _Plain.of(view)
        last, lent, there = self._whole_last
        found, done = _Pieces(self.table), 0
        shared: Sequence[Run] = ()  # the runs the call's columns found against the same items, or found now
        if last is not None:
            before, via = view.columns.before if view.columns is not None else None, self._via
            if before is last.items.items:
                shared = view.columns.runs  # type: ignore[union-attr]
            elif via is not None and before is via[0]:  # against views dropped whole since: their runs composed
                shared = composed(view.columns.runs, via[1])  # type: ignore[union-attr]
            else:
                shared = equal_runs(items, last.items.items, view.keys, last.keys)
        for i, j, k in [*shared, (len(items), 0, 0)]:
            if k and there is not None:
                k = _alike(here, i, there, j, k)
            if done < i:
                ws, got = here.placed(done, i)
                found.add(self.table.codes(items[done:i], ws, got), got, i == len(items))
            if k:
                found.take(lent, j, k)
            done = i + k
        self._whole_last, self._via = (view, found, here), None
        return found

    def skipped(self, view: MappedCall) -> None:
        """A view dropped whole, never numbered (a later call overtook all of it): a plain one's runs
        against the last plain view numbered, its columns' runs composed with those of the views
        skipped before it, so the next plain view takes its runs from its columns too (`_whole`)."""
        last, c = self._whole_last[0], view.columns
        if last is None or c is None or not view.items.plain():
            return
        if c.before is last.items.items:
            self._via = (view.items.items, c.runs)
        elif self._via is not None and c.before is self._via[0]:
            self._via = (view.items.items, composed(c.runs, self._via[1]))
        else:
            self._via = None

    def _renew(self) -> None:
        """A new table (`table[code]`: a side): the next views number all their items in it."""
        self.table = table = Table()
        self._last, self._whole_last = (_Placed((), [], []), _Pieces(table)), (None, _Pieces(table), None)
        self._via = None


def composed(outer: Sequence[Run], inner: Sequence[Run]) -> list[Run]:
    """The runs of A equal to runs of C, from `outer` (A's against B) and `inner` (B's against C),
    both in order of both sides: where an outer run's B items lie in inner runs (a few runs each)."""
    out: list[Run] = []
    t, most = 0, len(inner)
    for i, j, k in outer:
        while t < most and inner[t][0] + inner[t][2] <= j:
            t += 1
        u = t
        while u < most and inner[u][0] < j + k:
            b, c, m = inner[u]
            lo, hi = max(j, b), min(j + k, b + m)
            if lo < hi:
                a, z = i + lo - j, c + lo - b
                if out and out[-1][0] + out[-1][2] == a and out[-1][1] + out[-1][2] == z:
                    out[-1] = (out[-1][0], out[-1][1], out[-1][2] + hi - lo)
                else:
                    out.append((a, z, hi - lo))
            u += 1
    return out


class _Placed(NamedTuple):
    """A view's items from where it is kept on, each with its working message and segment."""

    items: Sequence[Item]
    ws: list[Any]
    segments: list[Segment | None]


_CALL = attrgetter(*CallContext._fields)  # an Earlier's call context, as a tuple
_SEGMENT_NAMES: dict[object, str] = {s: str(s) for s in Segment}
STORED = frozenset({Origin.MESSAGE, Origin.FILE, Origin.TOOL_CALLS, Origin.TOOL_RESULT, Origin.ANSWER})


class Earlier:
    """An earlier call as later calls keep it (R-RPL-9): from item `start` on, each item's key and
    its side's code, read from the pieces its view kept (`Kept`, shared with its trimmed copies).
    Items before `start` were overtaken (`cache.Cache.overtaken`): a later call sharing them shares
    them with a later call too, its best candidate there."""

    __slots__ = ("_base", "_offset", "_pieces", "_table", "keys", "length", "start", *CallContext._fields)

    def __init__(
        self, start: int, length: int, keys: Keys, offset: int, kept: Kept, _: Table, call: tuple[Any, ...]
    ) -> None:
        self.start, self.length = start, length
        self.keys, self._offset = keys, offset  # item n's key is keys[n - start + offset]
        self._table, self._base, self._pieces = kept.table, kept.base, kept.pieces  # (the table given is the Kept's)
        self.user, self.system, self.date, self.model, self.settings = call  # kept as slots, not the tuple

    def _side(self, n: int) -> Side | None:
        if n >= self.length:
            return None
        if n < self.start:
            raise AssertionError(f"item {n} of an earlier call was overtaken (kept from {self.start})")
        return self._table[Kept.code(self._table, self._pieces, n - self._base)]  # the base kept when trimmed

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
        at = n - self.start + self._offset
        return self.keys[at : at + self.length - n]  # the keys may be a log that goes on past the call

    def source_at(self, n: int) -> Source | None:
        side = self._side(n)
        return Source.of(side[1], side[2]) if side is not None else None

    def trimmed(self, start: int, sides: Sides) -> Earlier | None:
        """Kept from `start` on: the same pieces (read from their base), keys sliced if few of the
        call's own are left (a shared log, longer than the call, is never copied)."""
        if start >= self.length:
            return None
        cut = max(start - self.start, 0)
        if cut == 0:
            return self
        keys, offset = self.keys, self._offset + cut
        left = self.length - start
        if 2 * left <= len(keys) <= self.length:  # little of the call's keys is still needed: keep only that
            keys, offset = keys[offset : offset + left], 0
        kept = Kept(self._table, self._base, self._pieces)
        return Earlier(start, self.length, keys, offset, kept, self._table, _CALL(self))
