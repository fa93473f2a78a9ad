"""Where the lists a replayed call's assembly passes along sit in the window, and the kept fates
by span (R-RPL-9): the window work of `replay.state.State` that reads positions, not messages.

Input: the window's working messages (`works`), lists aligned with them (their cacheable copies,
their fates when kept or truncated) and the lists assembly's steps give one another. Output:
pieces `(i, n, k)` of a list (`runs`, or the ones a step noted: `Noted`), and the fates of a span
of the window (`Spans`), each made from the last call's instead of walking the window.
"""

from __future__ import annotations

from collections.abc import Iterator
from operator import attrgetter, is_

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
        pieces = [(j, -1, 1) for j in range(i)]
        if b > a:
            pieces.append((i, a, b - a))
        pieces += [(j, -1, 1) for j in range(i + b - a, len(ws))]
        self.note(ws, ref, pieces)

    def of(self, ws: list[Working], ref: list[Working]) -> list[Piece] | None:
        made = self._made
        if made is not None and made[0] is ws and made[1] is ref and made[2] == len(ws):
            return made[3]
        return None

    def forget(self) -> None:
        self._made = None


class Spans:
    """The fates of a span of the window by key, truncated at its start (R-ASM-4: the start of
    the unit where truncation stopped) and kept after (R-ASM-4, R-CONV-3), made from the last
    span asked for when the new one starts within it: the messages the window left at its old
    end taken out, the ones whose fate changed given it again (a key keeps its place), the new
    ones added at its end, so the order stays the window's."""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: tuple[int, int, int, dict[str, Fated]] | None = None

    def fates(
        self, works: list[Working], truncated: list[Fated], kept: list[Fated], h: int, a: int, b: int
    ) -> dict[str, Fated]:
        """`works[h:a]` truncated, `works[a:b]` kept: the state's own dict (copy it to change it)."""
        last = self._last
        if last is None or not last[0] <= h <= last[2]:  # nothing to start from in order
            found = dict(zip(map(_KEY, works[h:a]), truncated[h:a], strict=True))
            found.update(zip(map(_KEY, works[a:b]), kept[a:b], strict=True))
        else:
            lh, la, lb, found = last
            for w in works[lh:h]:
                del found[w.key]
            for w in works[b:lb]:
                del found[w.key]
            end = min(b, lb)  # [h, end) are in `found`: truncated before `la`, kept from it
            for start, stop, fates in ((max(h, la), min(a, end), truncated), (max(h, a), min(la, end), kept)):
                if start < stop:
                    found.update(zip(map(_KEY, works[start:stop]), fates[start:stop], strict=True))
            if b > lb:
                mid = min(max(a, lb), b)
                found.update(zip(map(_KEY, works[lb:mid]), truncated[lb:mid], strict=True))
                found.update(zip(map(_KEY, works[mid:b]), kept[mid:b], strict=True))
        self._last = (h, a, b, found)
        return found

    def cut(self, end: int) -> None:
        """The window's messages from `end` on are forgotten."""
        if self._last is not None and self._last[2] > end:
            self._last = None

    def below(self, end: int) -> None:
        """The window's messages before `end` are forgotten (the state's `_GONE`)."""
        if self._last is not None and self._last[0] < end:
            self._last = None
