"""Each replayed call's clock (R-RPL-3) and the warnings about times that go backwards.

Input: the fixture and the replay's `now`. Output: `Clocks.at(loop, live)`, the time a call is
made: its last dated in-flight message, else the last dated message of its live branch, else
`now`; `Clocks.backwards(path)`, one warning per pair of dated messages out of order.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from datetime import datetime

from ctxkit.history.tree import Branch, Stretch
from ctxkit.loading.domain import Fixture, InFlightMessage, StoredMessage


class Clocks:
    """The latest dated message of a live branch read off one array per root path (R-RPL-9):
    `dated[k]`, the position of the latest dated message at or before `k` on the list the
    branch's `Stretch` runs over (-1: none). The list is only appended to (`tree.Paths`), so the
    array is extended as it grows; a branch on another list starts a new one. Eight bytes a
    message of the current path, nothing per message kept beside it."""

    def __init__(self, fixture: Fixture, now: datetime | None) -> None:
        self.fixture, self.now = fixture, now
        self._of: Sequence[StoredMessage] | None = None  # the list `dated` runs over
        self._dated = array("q")

    def at(self, loop: Sequence[InFlightMessage], live: Sequence[StoredMessage]) -> datetime | None:
        """R-RPL-3: the last dated message sent (in flight first, then the live branch), else `now`."""
        return (last_at(loop) if loop else None) or self._last_live_at(live) or self.now

    def on(self, loop: Sequence[InFlightMessage], branch: Branch) -> datetime | None:
        """`at(loop, branch.live)`, read off the branch's path by position (no stretch made)."""
        found = last_at(loop) if loop else None
        if found is None:
            of, start, stop = branch.path.under
            first, end = start + branch.cut, stop if branch.last is None else start + branch.last + 1
            found = self._latest(of, first, max(first, end))  # `branch.live`'s positions
        return found or self.now

    def _last_live_at(self, live: Sequence[StoredMessage]) -> datetime | None:
        """`last_at(live)`, from the array when `live` is a `Stretch`."""
        if not isinstance(live, Stretch):
            return last_at(live)
        return self._latest(*live.under)

    def _latest(self, of: Sequence[StoredMessage], start: int, stop: int) -> datetime | None:
        """`last_at(of[start:stop])`, from the array."""
        if stop <= start:
            return None
        dated = self._dated
        if of is not self._of:
            self._of, dated = of, array("q")
            self._dated = dated
        for k in range(len(dated), stop):
            dated.append(k if of[k].at is not None else dated[k - 1] if k else -1)
        found = dated[stop - 1]
        return of[found].at if found >= start else None

    def backwards(self, path: tuple[StoredMessage, ...]) -> Iterator[str]:
        """R-RPL-3: a warning where a dated message along the branch (then in flight) is older
        than the one before it."""
        dated = [(f"message {m.id!r}", m.at) for m in path if m.at is not None]
        dated += [(f"in-flight item {m.index}", m.at) for m in self.fixture.in_flight if m.at is not None]
        for (before, t0), (after, t1) in zip(dated, dated[1:], strict=False):
            if t1 < t0:
                yield (
                    f"{self.fixture.source}: {after} is dated {t1.isoformat()}, before {before} "
                    f"({t0.isoformat()}): times go backwards along the branch (R-RPL-3)"
                )


def last_at(messages: Sequence[StoredMessage | InFlightMessage]) -> datetime | None:
    return next((m.at for m in reversed(messages) if m.at is not None), None)
