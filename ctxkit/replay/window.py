"""A replayed call's converted branch over the replay state's window (R-RPL-9).

Input: the call's branch and the replay's `State`. Output: `WindowConversion`, a
`convert.Converted` that gives the same values from the state's shared conversions and window
arrays (each stored message converted once per replay; counts and positions read off the
window) as long as the window still runs over the call's stored messages.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import TYPE_CHECKING

from ctxkit.history import convert, tree
from ctxkit.history.working import MessageKey, Working
from ctxkit.loading.domain import FileRecord, Fixture, InFlightMessage, StoredMessage
from ctxkit.loading.templates import Templates

if TYPE_CHECKING:
    from ctxkit.replay.state import State


class WindowConversion(convert.Converted):
    """`Converted` over the state's shared conversions and window (the same values)."""

    __slots__ = ("_last", "base", "end", "head_units", "state")

    def __init__(self, branch: tree.Branch, fixture: Fixture, templates: Templates, state: State) -> None:
        self.state = state
        super().__init__(branch, fixture, templates)
        self.base = branch.cut  # the index of stored[0] on the root path (after what the summary removes)
        self.end = self.base + len(self.stored)  # the index past the last stored message on the root path
        self.head_units = self.units - 1 - (self.end - self.base)  # 1 when a summary applies
        of, _, stop = self.stored.under  # a stretch of the root path (`Converted.stored`)
        self._last = of[stop - 1] if self.end > self.base else None  # the last stored message
        state.sync(branch.path, self.end, self)

    def _file_index(self, fixture: Fixture) -> dict[str, FileRecord]:
        return self.state.files  # made when the files changed (`State.converted`)

    def of(self, m: StoredMessage) -> tuple[Working, ...]:
        return self.state.message(m, self._files, self._fixture, self._templates)

    _of = of

    def _in_flight(self, m: InFlightMessage) -> Working:
        return self.state.in_flight(m)

    def synced(self) -> bool:
        """Whether the state's window still runs over this call's stored messages (a later call
        may have moved it)."""
        path, end = self.state.path, self.end
        return len(path) >= end and (end == self.base or path[end - 1] is self._last)

    def unit_of(self, message_id: str) -> int | None:
        s = self._branch.summary
        if s is not None and message_id == s.id:
            return 0
        if not self.synced() or not self.state.paths.extends(self.state.path):  # an edit moved on: no index
            return super().unit_of(message_id)
        i = self.state.index(message_id)  # the path may run past this call's stored messages
        return self.head_units + i - self.base if i is not None and 0 <= i - self.base < len(self.stored) else None

    def located(self, key: MessageKey, end: int) -> tuple[int, Working] | None:
        """Read off the window: the message's position by key, its stored message's by the ends
        (no stored message converted, no id parsed), while the window runs over this call's."""
        state = self.state
        n = state.at.get(key)
        if n is None or not self.synced() or not state.paths.extends(state.path):
            return super().located(key, end)  # forgotten, or an edit moved on
        i = bisect_right(state.ends, n, self.base, self.base + len(self.stored) + 1) - 1
        unit = self.head_units + i - self.base
        return (unit, state.works[n]) if self.base <= i < self.base + len(self.stored) and unit < end else None

    def _count_stored(self, first: int, last: int) -> int:
        if not self.synced():
            return super()._count_stored(first, last)
        return self.state.ends[self.base + last] - self.state.ends[self.base + first]

    @property
    def history(self) -> tuple[Working, ...]:
        if self._history is None:
            if not self.synced():
                return super().history
            ends, base = self.state.ends, self.base
            self.state.restore(base)  # a report reads the whole history: made again where forgotten
            older = self.state.works[ends[base] : ends[base + len(self.stored)]]
            self._history = (*self._head, *older, *self.pinned)
        return self._history
