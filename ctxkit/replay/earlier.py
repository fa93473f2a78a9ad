"""What later calls keep of a replayed call, for breaking against it (R-RPL-6, R-RPL-9).

Input: a call's `MappedCall` once a later call has overtaken its first items. Output: `Earlier`,
from the first item not overtaken on, each item's key and its side's code (tokens, role,
breakpoint, working message: `Table`), read from pieces of logs shared by the calls that keep the
same items (`Sides`); `Source`, the working message behind a payload message as a break shows it.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import compress, count
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from ctxkit.history.working import Kind, Origin, Segment
from ctxkit.replay.cache import Keys
from ctxkit.replay.plainview import _PAD, _alike, _Plain, equal_runs
from ctxkit.replay.prefix import runs
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


class Table:
    """Sides kept for later calls: each distinct part once (a working message's `W_SIDE`; an item's
    (tokens, role, breakpoint) and segment), a side's code its parts' numbers in one int (`table[code]`
    is the `Side`), and two logs of codes kept views hold pieces of (`Kept`): history's in `log`, the
    others' (they change from call to call) in `tail`, at positions from `TAIL` on."""

    __slots__ = ("_items", "_messages", "_older", "log", "tail")

    def __init__(self) -> None:
        self.log: array[int] = array("q")  # appended to only
        self.tail: array[int] = array("q")
        self._messages: _Parts = ({}, [])
        self._older: dict[Any, int] = {}  # the message parts numbered before the last `_RECENT`
        self._items: _Parts = ({}, [])

    def __getitem__(self, code: int) -> Side:
        item, segment = self._items[1][code & _ITEM_MAX]
        return (item, self._messages[1][code >> _MESSAGE_SHIFT], segment)

    def codes(self, items: Sequence[Item], ws: Sequence[Any], segments: Sequence[Segment | None]) -> list[int]:
        """The codes of `items` on working messages `ws` in `segments`, one by one (a few a call)."""
        if len(self._messages[0]) > _RECENT:  # the parts of messages long gone: looked up once more, then anew
            self._older, self._messages = self._messages[0], ({}, self._messages[1])
        messages, its = self._messages[0], self._items[0]
        out = []
        for item, w, segment in zip(items, ws, segments, strict=True):
            side = W_SIDE(w)
            m = messages.get(side)
            if m is None:
                m = _added(self._messages, side, _MESSAGE_MAX, self._older)
            part = (_ITEM_SIDE(item), segment)
            n = its.get(part)
            if n is None:
                n = _added(self._items, part, _ITEM_MAX)
            out.append(m << _MESSAGE_SHIFT | n)
        return out

    def read(self, a: int, n: int) -> array[int]:
        return self.log[a : a + n] if a < TAIL else self.tail[a - TAIL : a - TAIL + n]


_Parts = tuple[dict[Any, int], list[Any]]  # each part's number, and the parts by number
_MESSAGE_SHIFT, _ITEM_MAX, _MESSAGE_MAX = 32, (1 << 32) - 1, (1 << 31) - 1  # a code: message part, item part
TAIL = 1 << 48  # positions from here on are places in a table's `tail`
_RECENT, _NOTHING = 1 << 12, dict[Any, int]()  # message parts a table looks up (then once more); no parts


def _added(parts: _Parts, value: Any, most: int, older: dict[Any, int] = _NOTHING) -> int:
    """The number of a value not in `parts` yet: its number in `older`, else the next one."""
    ids, table = parts
    got = ids[value] = older.get(value, len(table))
    if got == len(table):
        if got > most:
            raise AssertionError(f"more than {most} distinct side parts")
        table.append(value)
    return got


class Kept:
    """A view's side codes from item `base` on: pieces (position, length, ...) of a table's logs."""

    __slots__ = ("base", "pieces", "table")

    def __init__(self, table: Table, base: int, pieces: array[int]) -> None:
        self.table, self.base, self.pieces = table, base, pieces

    def __iter__(self) -> Iterator[int]:
        for t in range(0, len(self.pieces), 2):
            yield from self.table.read(self.pieces[t], self.pieces[t + 1])

    @staticmethod
    def code(table: Table, pieces: array[int], n: int) -> int:
        for t in range(0, len(pieces), 2):
            if n < pieces[t + 1]:
                return table.read(pieces[t] + n, 1)[0]
            n -= pieces[t + 1]
        raise IndexError("beyond the kept items")


class _Pieces:
    """A view's codes being built: a run of the last view's takes its pieces, new codes go to a log."""

    __slots__ = ("p", "table")

    def __init__(self, table: Table) -> None:
        self.table, self.p = table, list[int]()  # each piece's position and length, one after the other

    def take(self, last: _Pieces, j: int, k: int) -> None:
        """The last view's codes `j` to `j + k` (k > 0), as its pieces cut."""
        p, theirs, pos = self.p, last.p, 0
        for t in range(0, len(theirs), 2):
            end = pos + theirs[t + 1]
            if j < end:
                m, a = min(end - j, k), theirs[t] + j - pos
                if p and p[-2] + p[-1] == a:
                    p[-1] += m
                else:
                    p += (a, m)
                k -= m
                if not k:
                    return
                j += m
            pos = end
        raise AssertionError("a run beyond the last view's codes")

    def add(self, codes: list[int], segments: Sequence[Segment | None], end: bool) -> None:
        """New codes, of items in `segments`: after the view's last run (`end`: where a window grows)
        the leading history's go to `log`, the rest to `tail`. A short last piece of the same log
        that the log went on past is appended again first: a view's end stays one piece."""
        cut = next(compress(count(), map(_HISTORY.isdisjoint, zip(segments))), len(codes)) if end else 0
        for chunk, history in ((codes[:cut], True), (codes[cut:], False)):
            if not chunk:
                continue
            p, (log, base) = self.p, (self.table.log, 0) if history else (self.table.tail, TAIL)
            at, n = base + len(log), len(chunk)
            if p and p[-2] + p[-1] != at and p[-1] <= _SHORT and (p[-2] >= TAIL) != history:
                n += p.pop()  # appended again, before the new codes
                a = p.pop() - base
                log.extend(log[a : a + n - len(chunk)])
            if p and p[-2] + p[-1] == at:
                p[-1] += n
            else:
                p += (at, n)
            log.extend(chunk)

    def kept(self, start: int, cut: int) -> Kept:
        """The codes from `cut` on, as a `Kept` of the items from `start` on (over `_MOST` pieces: one)."""
        p, log = self.p, self.table.log
        if len(p) > 2 * _MOST:
            at = len(log)
            for t in range(0, len(p), 2):  # each piece one slice, in C
                log.extend(self.table.read(p[t], p[t + 1]))
            p[:] = (at, len(log) - at)
        t = 0
        while cut and t < len(p):
            if cut < p[t + 1]:
                return Kept(self.table, start, array("q", [p[t] + cut, p[t + 1] - cut, *p[t + 2 :]]))
            cut -= p[t + 1]
            t += 2
        return Kept(self.table, start, array("q", p[t:]))  # made at its size: kept as long as the call


_SHORT, _MOST = 16, 6  # a last piece this short is appended again; more pieces are copied as one
LOG_LIMIT = 1 << 17  # codes a table's logs hold before the next view starts a new table
_HISTORY = frozenset({Segment.HISTORY})  # the segment whose codes go to a table's `log`


class Sides:
    """What later calls keep of earlier calls' items (R-RPL-9): each side a code in a `Table`, each
    kept view's codes pieces of its logs (`Kept`): consecutive windows share most of their items,
    shifted, so a view adds only what the last did not hold. Past `LOG_LIMIT` codes, a new table
    (the old one goes with the last call kept from it)."""

    _last: tuple[_Placed, _Pieces]  # the last view numbered
    _whole_last: tuple[MappedCall | None, _Pieces, _Plain | None]  # the last plain view numbered

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
            same = view.columns is not None and view.columns.before is last.items.items
            shared = view.columns.runs if same else equal_runs(items, last.items.items, view.keys, last.keys)  # type: ignore[union-attr]
        for i, j, k in [*shared, (len(items), 0, 0)]:
            if k and there is not None:
                k = _alike(here, i, there, j, k)
            if done < i:
                ws, got = here.placed(done, i)
                found.add(self.table.codes(items[done:i], ws, got), got, i == len(items))
            if k:
                found.take(lent, j, k)
            done = i + k
        self._whole_last = (view, found, here)
        return found

    def _renew(self) -> None:
        """A new table (`table[code]`: a side): the next views number all their items in it."""
        self.table = table = Table()
        self._last, self._whole_last = (_Placed((), [], []), _Pieces(table)), (None, _Pieces(table), None)


class _Placed(NamedTuple):
    """A view's items from where it is kept on, each with its working message and segment."""

    items: Sequence[Item]
    ws: list[Any]
    segments: list[Segment | None]


_ITEM_SIDE = itemgetter(1, 2, 3)  # an Item's tokens, role, breakpoint
W_SIDE = attrgetter("key", "kind", "origin", "file_id", "source_id", "placeholder")
_CALL = attrgetter(*CallContext._fields)  # an Earlier's call context, as a tuple
_SEGMENT_NAMES: dict[object, str] = {s: str(s) for s in Segment}
STORED = frozenset({Origin.MESSAGE, Origin.FILE, Origin.TOOL_CALLS, Origin.TOOL_RESULT, Origin.ANSWER})
# an item's side: its (tokens, role, breakpoint), its working message's `W_SIDE` and segment
ItemSide = tuple[int, str | None, bool]
Side = tuple[ItemSide, tuple[Any, ...], Segment | None]


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
        return self.keys[n - self.start + self._offset :]

    def source_at(self, n: int) -> Source | None:
        side = self._side(n)
        return Source.of(side[1], side[2]) if side is not None else None

    def trimmed(self, start: int, sides: Sides) -> Earlier | None:
        """Kept from `start` on: the same pieces (read from their base), keys sliced if few are left."""
        if start >= self.length:
            return None
        cut = max(start - self.start, 0)
        if cut == 0:
            return self
        keys, offset = self.keys, self._offset + cut
        left = self.length - start
        if 2 * left <= len(keys):  # little of the shared keys is still needed: keep only that
            keys, offset = keys[offset : offset + left], 0
        kept = Kept(self._table, self._base, self._pieces)
        return Earlier(start, self.length, keys, offset, kept, self._table, _CALL(self))
