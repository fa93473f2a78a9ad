"""The decision record by working key: `Fated` and `Fates` (the `fates` of an `Assembly`).

Input: the fates assembly decides one by one (for the messages it converted), and the
older history with the units where the last-n cut (R-ASM-5) and truncation (R-ASM-4)
end. Output: a read-only mapping, key → `Fated`, equal to (and iterated in the order of)
the dict that records every message one by one, and `DroppedHistory`, the messages left
out.

Most of a long history is dropped whole and never converted (see `convert.Converted`):
the dropped part is kept as two runs of units, `[0, cut)` and `[cut, end)`, and a
message's `Fated` is made when it is looked up, converting only its stored message. So
recording costs nothing per dropped message. Reading every fate (a report listing every
message) builds the whole record once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from ctxkit.history import convert as conv
from ctxkit.history.working import Fate, MessageKey, Segment, Working

_KEY, _NOTES = attrgetter("key"), attrgetter("notes")


@dataclass(frozen=True, slots=True)
class Fated:
    fate: Fate
    rule: str
    segment: Segment | None
    notes: tuple[str, ...] = ()


def fate_all(fates: dict[str, Fated], ws: Sequence[Working], fate: Fate, rule: str, *extra: str) -> None:
    """The same fate for many messages (their notes, then `extra`); one shared (frozen) `Fated`
    per distinct notes, iterated in C (`map`, `zip`)."""
    notes = list(map(_NOTES, ws))
    shared = {n: Fated(fate, rule, None, n + extra) for n in set(notes)}
    fates.update(zip(map(_KEY, ws), map(shared.__getitem__, notes), strict=True))


class Older:
    """Units [0, end) of the older history, left out whole: [0, cut) by the last-n cut
    (R-ASM-5), [cut, end) by truncation (R-ASM-4). Converted only when asked."""

    __slots__ = ("_converted", "_cut", "_end", "_runs")

    def __init__(self, converted: conv.Converted, *, cut: int, end: int) -> None:
        self._converted, self._cut, self._end = converted, min(cut, end), end
        self._runs: tuple[list[Working], list[Working]] | None = None

    def __bool__(self) -> bool:
        """Whether any working message is left out, converting newest first until one is found."""
        return any(self._converted.unit(u) for u in range(self._end - 1, -1, -1))

    def runs(self) -> tuple[list[Working], list[Working]]:
        """The working messages of the two runs, oldest first (everything converted)."""
        if self._runs is None:
            unit = self._converted.unit
            cut = [w for u in range(self._cut) for w in unit(u)]
            self._runs = cut, [w for u in range(self._cut, self._end) for w in unit(u)]
        return self._runs

    def counts(self) -> tuple[int, int]:
        """How many working messages each run holds (`Converted.count`)."""
        count = self._converted.count
        return count(0, self._cut), count(self._cut, self._end)

    def fates(self) -> dict[str, Fated]:
        cut, truncated = self.runs()
        found: dict[str, Fated] = {}
        fate_all(found, cut, Fate.LAST_N_CUT, "R-ASM-5")
        fate_all(found, truncated, Fate.TRUNCATED, "R-ASM-4")
        return found

    def find(self, key: MessageKey) -> Fated | None:
        """The fate of one left-out working message: its stored message alone is converted."""
        found = self._converted.located(key, self._end)
        if found is None:
            return None
        unit, w = found
        if unit < self._cut:
            return Fated(Fate.LAST_N_CUT, "R-ASM-5", None, w.notes)
        return Fated(Fate.TRUNCATED, "R-ASM-4", None, w.notes)


class Fates(Mapping[str, Fated]):
    """`own` (key → fate, decided one by one) over the runs of the older history left out.

    `dropped_own` are the messages assembly converted and then left out (the start of the
    unit where truncation stopped, R-FILE-3's evictions): their fates are in `own`. Looking
    up an older key converts its stored message alone (`Older.find`); iterating builds the
    whole record once.
    """

    __slots__ = ("_all", "_dropped_own", "_older", "_own")

    def __init__(self, own: Mapping[str, Fated], older: Older, dropped_own: Sequence[Working]) -> None:
        self._own, self._older, self._dropped_own = own, older, dropped_own
        self._all: dict[str, Fated] | None = None

    def _every(self) -> dict[str, Fated]:
        if self._all is None:
            found = self._older.fates()  # oldest first, as the history runs
            found.update(self._own.items())
            self._all = found
        return self._all

    def get(self, key: str, default: Any = None) -> Any:  # without raising: replay asks per message
        found = self._own.get(key)
        if found is None and isinstance(key, MessageKey):  # generated messages have no fate
            found = self._older.find(key)
        return default if found is None else found

    def decided(self) -> Mapping[str, Fated]:  # the fates decided one by one (replay looks them up in C)
        return self._own

    def __getitem__(self, key: str) -> Fated:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found  # type: ignore[no-any-return]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._every())

    def __len__(self) -> int:
        return len(self._every())

    def __repr__(self) -> str:
        return f"Fates({self._every()!r})"

    def dropped(self) -> Counter[str]:
        """The fates of the dropped messages (the runs, then the ones in `own`), counted by name."""
        cut, truncated = self._older.counts()
        counts: Counter[str] = Counter()
        if cut:
            counts[str(Fate.LAST_N_CUT)] = cut
        if truncated:
            counts[str(Fate.TRUNCATED)] = truncated
        counts.update(str(self._own[w.key].fate) for w in self._dropped_own)
        return counts


class DroppedHistory(Sequence[Working]):
    """The older history left out, oldest first: the runs never converted, then the
    converted messages truncation or eviction dropped (`rest`)."""

    __slots__ = ("_all", "_older", "_rest")

    def __init__(self, older: Older, rest: list[Working]) -> None:
        self._older, self._rest = older, rest
        self._all: list[Working] | None = None

    def _every(self) -> list[Working]:
        if self._all is None:
            cut, truncated = self._older.runs()
            self._all = cut + truncated + self._rest
        return self._all

    def __bool__(self) -> bool:
        return bool(self._rest) or bool(self._older)

    def __len__(self) -> int:
        return len(self._every())

    def __getitem__(self, index: Any) -> Any:
        return self._every()[index]

    def __iter__(self) -> Iterator[Working]:
        return iter(self._every())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return self._every() == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"DroppedHistory({self._every()!r})"
