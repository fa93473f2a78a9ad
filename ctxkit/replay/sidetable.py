"""The side table of the calls a replay keeps for later breaks (R-RPL-6, R-RPL-9).

Input: a kept view's items, each with its working message and segment (`replay/earlier.py::Sides`).
Output: each item's side as one int code (`Table.codes`: its working message's `W_SIDE` and its item
part, each distinct part numbered once), and a view's codes as a few pieces of two append-only logs of
codes shared by every kept view (`_Pieces`, `Kept`); `table[code]` reads a side back.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from itertools import compress, count
from operator import attrgetter, itemgetter
from typing import Any

from ctxkit.history.working import MessageKey, Segment
from ctxkit.translate.items import Item


class Table:
    """Sides kept for later calls: each distinct part once (a working message's `W_SIDE`, kept as its
    source id and a shape shared by messages of one kind; an item's (tokens, role, breakpoint) and
    segment), a side's code its parts' numbers in one int (`table[code]` is the `Side`), and two logs
    of codes kept views hold pieces of (`Kept`): history's in `log`, the others' (they change from
    call to call) in `tail`, at positions from `TAIL` on."""

    __slots__ = ("_items", "_messages", "_older", "_pending", "_shape_of", "_shapes", "_sources", "log", "tail")

    def __init__(self) -> None:
        self.log: array[int] = array("q")  # appended to only
        self.tail: array[int] = array("q")
        self._messages: dict[Any, int] = {}  # the message parts numbered lately (`_RECENT`), by `W_SIDE`
        self._older: dict[Any, int] = {}  # the message parts numbered before the last `_RECENT`
        # a message part by number: the last ones numbered as their `W_SIDE` (`_pending`), the others as
        # their stored message's id and a shape number (`_compact`), a few bytes instead of a tuple and a
        # key string per working message the replay ever kept
        self._sources: list[str | None] = []
        self._shape_of: array[int] = array("I")
        self._shapes: _Parts = ({}, [])
        self._pending: list[tuple[Any, ...]] = []
        self._items: _Parts = ({}, [])

    def __getitem__(self, code: int) -> Side:
        item, segment = self._items[1][code & _ITEM_MAX]
        return (item, self.message(code >> _MESSAGE_SHIFT), segment)

    def message(self, m: int) -> tuple[Any, ...]:
        """Message part `m`'s `W_SIDE`: as numbered, or from its shape and source (its `MessageKey`
        made again: an equal one)."""
        done = len(self._sources)
        if m >= done:
            return self._pending[m - done]
        key, kind, origin, file_id, placeholder, made = self._shapes[1][self._shape_of[m]]
        source = self._sources[m]
        return (MessageKey(source, key) if made else key, kind, origin, file_id, source, placeholder)  # type: ignore[arg-type]

    def _compact(self) -> None:
        """The message parts numbered since the last time, each kept as its source id and a shape
        shared by the parts of one kind (a key that is its stored message's `MessageKey` kept as its
        part: `#result0`, or none), once every `_RECENT` parts: a few steps a part, none per call."""
        ids, shapes = self._shapes
        sources, shape_of = self._sources, self._shape_of
        for key, kind, origin, file_id, source, placeholder in self._pending:
            made = False
            if type(key) is MessageKey and source is not None and key.message_id == source:
                key, made = key.part, True  # the key is MessageKey(source, part), read by its own methods
            # equal shapes by identity and type (an enum's hash runs in Python; 0 is not False)
            basis = (key, type(key), id(kind), id(origin), file_id, type(file_id), placeholder, type(placeholder), made)
            n = ids.get(basis)
            if n is None:
                n = ids[basis] = len(shapes)
                shapes.append((key, kind, origin, file_id, placeholder, made))
            shape_of.append(n)
            sources.append(source)
        self._pending = []

    def codes(self, items: Sequence[Item], ws: Sequence[Any], segments: Sequence[Segment | None]) -> list[int]:
        """The codes of `items` on working messages `ws` in `segments`, one by one (a few a call)."""
        if len(self._messages) > _RECENT:  # the parts of messages long gone: looked up once more, then anew
            self._older, self._messages = self._messages, {}
            self._compact()
        messages, its = self._messages, self._items[0]
        out = []
        for item, w, segment in zip(items, ws, segments, strict=True):
            side = W_SIDE(w)
            m = messages.get(side)
            if m is None:
                m = messages[side] = self._older.get(side, -1)
                if m < 0:
                    m = messages[side] = len(self._sources) + len(self._pending)
                    if m > _MESSAGE_MAX:
                        raise AssertionError(f"more than {_MESSAGE_MAX} distinct side parts")
                    self._pending.append(side)
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
_RECENT = 1 << 12  # message parts a table looks up (then once more)


def _added(parts: _Parts, value: Any, most: int) -> int:
    """The number of a value: the one it has in `parts`, else the next one."""
    ids, table = parts
    got = ids.get(value)
    if got is None:
        got = ids[value] = len(table)
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


_ITEM_SIDE = itemgetter(1, 2, 3)  # an Item's tokens, role, breakpoint
W_SIDE = attrgetter("key", "kind", "origin", "file_id", "source_id", "placeholder")
# an item's side: its (tokens, role, breakpoint), its working message's `W_SIDE` and segment
ItemSide = tuple[int, str | None, bool]
Side = tuple[ItemSide, tuple[Any, ...], Segment | None]
