"""Each replayed call's clock (R-RPL-3) and the warnings about times that go backwards.

Input: the fixture and the replay's `now`. Output: `Clocks.at(loop, live)`, the time a call is
made: its last dated in-flight message, else the last dated message of its live branch, else
`now`; `Clocks.backwards(path)`, one warning per pair of dated messages out of order.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime

from ctxkit.loading.domain import Fixture, InFlightMessage, StoredMessage


class Clocks:
    """Per stored message, the latest dated message at or above it on its root path and the
    depth of both, found once (R-RPL-9): a call's clock never walks back over a long undated
    history."""

    def __init__(self, fixture: Fixture, now: datetime | None) -> None:
        self.fixture, self.now = fixture, now
        self._by_id = {m.id: m for m in fixture.messages}
        self._dated: dict[str, tuple[StoredMessage | None, int]] = {}  # see `_dated_above`
        self._depth: dict[str, int] = {}

    def at(self, loop: Sequence[InFlightMessage], live: Sequence[StoredMessage]) -> datetime | None:
        """R-RPL-3: the last dated message sent (in flight first, then the live branch), else `now`."""
        return last_at(loop) or self._last_live_at(live) or self.now

    def _last_live_at(self, live: Sequence[StoredMessage]) -> datetime | None:
        """`last_at(live)`: `live` is a stretch of one root path."""
        if not live:
            return None
        dated, depth = self._dated_above(live[-1])
        return dated.at if dated is not None and depth >= self._depth[live[0].id] else None

    def _dated_above(self, m: StoredMessage) -> tuple[StoredMessage | None, int]:
        """(the latest dated message at or above `m` on its root path, its depth)."""
        climbed: list[StoredMessage] = []
        node: StoredMessage | None = m
        while node is not None and node.id not in self._dated:
            climbed.append(node)
            node = self._by_id[node.parent] if node.parent is not None else None
        found, depth = self._dated[node.id] if node is not None else (None, -1)
        base = self._depth[node.id] if node is not None else -1
        for n in reversed(climbed):
            base += 1
            self._depth[n.id] = base
            if n.at is not None:
                found, depth = n, base
            self._dated[n.id] = (found, depth)
        return self._dated[m.id]

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
