"""Where the lists a replayed call's assembly passes along sit in the window, and the kept fates
by span (R-RPL-9): the window work of `replay.state.State` that reads positions, not messages.

Input: the window's working messages (`works`), lists aligned with them (their cacheable copies,
their fates when kept or truncated) and the lists assembly's steps give one another. Output:
pieces `(i, n, k)` of a list (`runs`, or the ones a step noted: `Noted`), and the fates of a span
of the window (`Span`), read off the window's arrays by position instead of walking the window.
"""

from __future__ import annotations

from collections.abc import Callable, ItemsView, Iterator, KeysView, MutableMapping, ValuesView
from operator import attrgetter, is_
from typing import Any

from ctxkit.assembly.fates import Fated
from ctxkit.history.working import Working

Piece = tuple[int, int, int]  # (i, n, k): ws[i : i + k] is ref[n : n + k]; n = -1: ws[i] is not the window's
_KEY = attrgetter("key")


def runs(ws: list[Working], ref: list[Working], at: dict[str, int]) -> Iterator[Piece]:
    """`ws` in pieces, found by comparing it with `ref` (aligned with the window; `at`: a window
    message's key → its position)."""
    i = 0
    while i < len(ws):
        w = ws[i]
        n = at.get(w.key, -1)
        if n < 0 or ref[n] is not w:
            yield i, -1, 1
            i += 1
            continue
        k = min(len(ws) - i, len(ref) - n)
        while ws[i + k - 1] is not ref[n + k - 1]:  # the run ends where the window's messages do
            k -= 1
        if not all(map(is_, ws[i : i + k], ref[n : n + k])):  # not one run after all
            k = 1
        yield i, n, k
        i += k


class Noted:
    """The last list a step gave (truncation's kept history, R-ASM-8's, their copies) with its
    pieces, noted as it was made: it is the next step's input, which reads the pieces instead of
    comparing the list with the window (the very list, of the same length)."""

    __slots__ = ("_made",)

    def __init__(self) -> None:
        self._made: tuple[list[Working], list[Working], int, list[Piece]] | None = None

    def note(self, ws: list[Working], ref: list[Working], pieces: list[Piece]) -> None:
        self._made = (ws, ref, len(ws), pieces)

    def note_run(self, ws: list[Working], ref: list[Working], i: int, a: int, b: int) -> None:
        """`ws[i : i + b - a]` is `ref[a:b]`; the rest of `ws` is not the window's."""
        pieces = [(j, -1, 1) for j in range(i)] if i else []
        if b > a:
            pieces.append((i, a, b - a))
        if i + b - a < len(ws):  # the last user message's files (a few calls)
            pieces += [(j, -1, 1) for j in range(i + b - a, len(ws))]
        self._made = (ws, ref, len(ws), pieces)

    def of(self, ws: list[Working], ref: list[Working]) -> list[Piece] | None:
        made = self._made
        if made is not None and made[0] is ws and made[1] is ref and made[2] == len(ws):
            return made[3]
        return None

    def forget(self) -> None:
        self._made = None


class Span(MutableMapping[str, Fated]):
    """A call's fates decided one by one (`assemble.decided`), read off the window's arrays by
    position instead of made into a dict per call: in `works[h:b]`, `works[h:a]` are truncated
    (R-ASM-4: the start of the unit where truncation stopped) and the rest kept (R-ASM-4,
    R-CONV-3), but for the few fates in `extra` (the messages the window does not hold, evicted
    and orphan ones: R-FILE-3, R-ASM-8), which come first. The fates set after it (R-ASM-3's, by
    the assembly) are kept beside them, as a dict takes them. A call looks up a few (a break's
    cause); iterating makes the dict in the record's order (`make`, then the ones set after) and
    the span holds it from then on (`detach`), which the window's owner also asks for before it
    changes the arrays under a span still in use."""

    __slots__ = (
        "__weakref__",
        "_a",
        "_at",
        "_b",
        "_extra",
        "_fated",
        "_h",
        "_late",
        "_make",
        "_own",
        "_truncated",
    )

    def __init__(
        self,
        arrays: tuple[list[Fated], list[Fated], dict[str, int]],
        h: int,
        a: int,
        b: int,
        extra: dict[str, Fated],
        make: Callable[[], dict[str, Fated]],
    ) -> None:
        """`arrays`: the window's fates when truncated and when kept, by position, and each
        message's position by key; `make`: the record as a dict, made while the arrays hold."""
        self._truncated, self._fated, self._at = arrays
        self._h, self._a, self._b = h, a, b
        self._extra, self._make = extra, make
        self._late: dict[str, Fated] = {}  # set after the span was made, until it has its own dict
        self._own: dict[str, Fated] | None = None  # every entry, once made (`detach`)

    def detach(self) -> None:
        """The entries as a dict of the span's own: the window's arrays may change after this."""
        if self._own is None:
            own = self._make()
            own.update(self._late)
            self._own, self._late, self._extra = own, {}, {}
            self._truncated, self._fated, self._at = [], [], {}  # the window is not held
            self._make = dict

    def _entries(self) -> dict[str, Fated]:
        self.detach()
        assert self._own is not None
        return self._own

    def _find(self, key: str) -> Fated | None:
        own = self._own
        if own is not None:
            return own.get(key)
        found = self._late.get(key) or self._extra.get(key)
        if found is not None:
            return found
        n = self._at.get(key)
        if n is None or not self._h <= n < self._b:
            return None
        return self._truncated[n] if n < self._a else self._fated[n]

    def get(self, key: str, default: Any = None) -> Any:
        found = self._find(key)
        return default if found is None else found

    def __getitem__(self, key: str) -> Fated:
        found = self._find(key)
        if found is None:
            raise KeyError(key)
        return found

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._find(key) is not None

    def __setitem__(self, key: str, value: Fated) -> None:
        if self._own is not None:
            self._own[key] = value
        else:
            self._late[key] = value

    def __delitem__(self, key: str) -> None:
        del self._entries()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries())

    def __len__(self) -> int:
        return len(self._entries())

    def keys(self) -> KeysView[str]:
        return self._entries().keys()

    def items(self) -> ItemsView[str, Fated]:
        return self._entries().items()

    def values(self) -> ValuesView[Fated]:
        return self._entries().values()

    def __repr__(self) -> str:
        return f"Span({self._entries()!r})"
