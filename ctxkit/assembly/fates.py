"""The decision record by working key: `Fated` and `Fates` (the `fates` of an `Assembly`).

Input: the fates assembly decides one by one, and the older history with where the last-n
cut (R-ASM-5) and truncation (R-ASM-4) end. Output: a read-only mapping, key → `Fated`,
equal to (and iterated in the order of) the dict that records every message one by one.

Most of a long history is dropped whole, so the dropped part is kept as two runs of the
older history, `[0, cut)` and `[cut, start)`, and a message's `Fated` is made when it is
looked up: recording costs nothing per dropped message, and replay's calls do not each pay
for the whole history (R-RPL-9). A key is found in the runs through a key → position index
of the older history (`Positions`, shared by the calls of a replay, or built on first use).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter

from ctxkit.history.working import Fate, Working

_KEY = attrgetter("key")


@dataclass(frozen=True, slots=True)
class Fated:
    fate: Fate
    rule: str
    segment: str | None
    notes: tuple[str, ...] = ()


class Positions:
    """Key → position in the older history, kept from call to call of one replay.

    A call's older history usually extends the previous one's (the same path, longer), so
    only the new end is indexed. On any other history a new index starts: a `Fates` made
    earlier keeps the one it was given, and checks every position against its own history.
    """

    def __init__(self) -> None:
        self._older: Sequence[Working] = ()
        self._index: dict[str, int] = {}

    def of(self, older: Sequence[Working]) -> dict[str, int]:
        prev, n = self._older, len(self._older)
        extends = n <= len(older) and (n == 0 or (older[0].key == prev[0].key and older[n - 1] is prev[n - 1]))
        if not extends:
            self._index, n = {}, 0
        self._index.update(zip(map(_KEY, older[n:]), range(n, len(older)), strict=True))
        self._older = older
        return self._index


class Fates(Mapping[str, Fated]):
    """`own` (key → fate, decided one by one) over the runs of the dropped older history."""

    __slots__ = ("_cut", "_evicted", "_index", "_older", "_own", "_start")

    def __init__(
        self,
        own: dict[str, Fated],
        older: Sequence[Working],
        cut: int,
        start: int,
        evicted: Sequence[Working],
        index: dict[str, int] | None = None,
    ) -> None:
        self._own, self._older, self._cut, self._start = own, older, cut, start
        self._evicted = evicted  # R-FILE-3: dropped after the runs; their fates are in `own`
        self._index = index

    def _run(self, key: str) -> Fated | None:
        if self._index is None:
            self._index = dict(zip(map(_KEY, self._older[: self._start]), range(self._start), strict=True))
        at = self._index.get(key)
        if at is None or at >= self._start or self._older[at].key != key:
            return None
        notes = self._older[at].notes
        if at < self._cut:
            return Fated(Fate.LAST_N_CUT, "R-ASM-5", None, notes)
        return Fated(Fate.TRUNCATED, "R-ASM-4", None, notes)

    def get(self, key: str, default: Fated | None = None) -> Fated | None:  # type: ignore[override]
        found = self._own.get(key)
        if found is None:
            found = self._run(key)
        return default if found is None else found

    def __getitem__(self, key: str) -> Fated:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def __iter__(self) -> Iterator[str]:
        seen: set[str] = set()
        for w in self._older[: self._start]:
            if w.key not in seen:
                seen.add(w.key)
                yield w.key
        yield from (k for k in self._own if k not in seen)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def dropped(self) -> Counter[str]:
        """The fates of the dropped messages (the runs, then the evicted), counted by name."""
        counts: Counter[str] = Counter()
        if self._cut:
            counts[str(Fate.LAST_N_CUT)] = self._cut
        if self._start > self._cut:
            counts[str(Fate.TRUNCATED)] = self._start - self._cut
        counts.update(str(self._own[w.key].fate) for w in self._evicted)
        return counts
