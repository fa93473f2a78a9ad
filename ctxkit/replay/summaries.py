"""Summaries in time (R-RPL-2): which summary nodes a replayed call sees, and whether compression
is due after a question (R-CMP-1), with `--compress-as` a simulated summary node added then.

Input: the fixture, its branch, `compress_as`. Output: `Summaries.visible(user)` (the stored
messages a call answering `user` is assembled from) and `Summaries.due(user, upto, ...)`.
"""

from __future__ import annotations

from array import array
from dataclasses import replace
from datetime import datetime

from ctxkit.assembly.assemble import reserved_tokens
from ctxkit.assembly.system import format_date
from ctxkit.compression.compress import Trigger, message_tokens, trigger
from ctxkit.compression.compress import plan as compression_plan
from ctxkit.counting.measure import Counts, Meter, meter_for
from ctxkit.history import tree
from ctxkit.loading.config import Effective, Options, resolve
from ctxkit.loading.domain import Fixture, Role, StoredMessage
from ctxkit.output import plural

SYNTHETIC_PREFIX = "~synthetic-summary-"


class Summaries:
    def __init__(
        self,
        fixture: Fixture,
        path: tuple[StoredMessage, ...],
        compress_as: int | None,
        counts: Counts | None,
        position: tree.OnPath | None = None,
    ) -> None:
        """`position`: each message's index on `path` when the caller has it (the planner's)."""
        self.fixture, self.path, self.compress_as = fixture, path, compress_as
        self.position = position if position is not None else tree.OnPath(path, tree.indexes(fixture))
        self.hanging = {m.parent for m in fixture.messages if m.role is Role.SUMMARY}
        self.synthetic: list[StoredMessage] = []
        self.messages = fixture.messages  # the fixture's + the synthetic summaries so far
        self._counts = counts
        self._meter: Meter | None = None  # R-CMP-1 counts, shared by every question's check
        self._running = array("q")  # running message tokens along `path` (R-CMP-1), 8 bytes a message
        self._settings: dict[str, tuple[Effective, int]] = {}  # by the system prompt's date: see `_settings_of`
        self._dated: tuple[datetime | None, str] = (None, "")  # the last clock and its date (shared by a question)
        self._trigger: tuple[Effective | None, Trigger | None] = (None, None)  # R-CMP-1's numbers of the last settings

    def visible(self, user: StoredMessage) -> tuple[StoredMessage, ...]:
        """The stored messages of a call answering `user`: a summary written after its turn does
        not apply yet."""
        if user.id not in self.hanging:
            return self.messages
        return tuple(m for m in self.messages if not (m.role is Role.SUMMARY and m.parent == user.id))

    def due(
        self,
        user: StoredMessage,
        upto: StoredMessage,
        clock: datetime | None,
        fixture: Fixture,
        options: Options,
        summary: StoredMessage | None,
    ) -> bool:
        """R-CMP-1 on the branch up to `upto` (U's answer, else U) for the question's last call (its
        clock, fixture, options and summary); with --compress-as, a simulated summary node."""
        if not self._due(*self._settings_of(clock, fixture, options), summary, upto):
            return False
        if self.compress_as is None:
            return True
        decision = compression_plan(resolve(replace(fixture, leaf=upto.id, in_flight=()), options))
        if decision.summarizes_through is None:
            return True
        here = self.position[user.id]
        if any(
            m.role is Role.SUMMARY and m.parent in self.position and self.position[m.parent] >= here
            for m in self.fixture.messages
        ):
            return True
        taken = {m.id for m in self.fixture.messages}
        n = len(self.synthetic) + 1
        while f"{SYNTHETIC_PREFIX}{n}" in taken:
            n += 1
        self.synthetic.append(
            StoredMessage(
                id=f"{SYNTHETIC_PREFIX}{n}",
                role=Role.SUMMARY,
                parent=user.id,
                index=len(self.fixture.messages) + len(self.synthetic),
                text=f"[summary of {plural(len(decision.summarized), 'message')}]",
                tokens=self.compress_as,
                summarizes_through=decision.summarizes_through,
            )
        )
        self.messages = self.fixture.messages + tuple(self.synthetic)
        return True

    def _settings_of(self, clock: datetime | None, fixture: Fixture, options: Options) -> tuple[Effective, int | None]:
        """The settings R-CMP-1's trigger reads (the window, the ratio, the worst-case system prompt
        of the call's date, and the tokens it reserves), resolved once per date rather than once
        per question: they are the same for every call of a replay but for the date the system
        prompt shows."""
        if clock is None:  # the real clock's date: resolved afresh
            return resolve(fixture, options), None
        if clock is not self._dated[0]:
            self._dated = (clock, format_date(clock))
        date = self._dated[1]
        found = self._settings.get(date)
        if found is None:
            eff = resolve(fixture, options)
            found = self._settings[date] = (eff, reserved_tokens(eff, self._meter_of(eff)))
        return found

    def _meter_of(self, eff: Effective) -> Meter:
        if self._meter is None:
            self._meter = meter_for(eff, self._counts)
        return self._meter

    def _due(self, eff: Effective, reserved: int | None, summary: StoredMessage | None, leaf: StoredMessage) -> bool:
        """R-CMP-1, as `compression.compress.plan` decides it, from running sums over the branch.

        The full plan walks the whole branch; replay asks after every question, so the message
        tokens are summed once along the branch and each question reads two of the sums."""
        meter = self._meter_of(eff)
        if not self._running:
            running, total = self._running, 0
            running.append(0)
            for m in self.path:
                total += message_tokens(m, meter)
                running.append(total)
        cutoff = 0
        if summary is not None and summary.summarizes_through in self.position:
            cutoff = self.position[summary.summarizes_through] + 1
        end = self.position[leaf.id] + 1
        history = self._running[end] - self._running[cutoff]
        if summary is not None:
            history += message_tokens(summary, meter)
        return self._decide(eff, meter, reserved, history)

    def _decide(self, eff: Effective, meter: Meter, reserved: int | None, history: int) -> bool:
        """`trigger(eff, meter, history, reserved).due` (R-CMP-1): the reserve, what is available and
        the threshold do not depend on the history, so they are worked out once per settings (one
        object per date, `_settings_of`) and each question compares its history with them."""
        last, base = self._trigger
        if last is not eff or base is None:
            base = trigger(eff, meter, 0, reserved)
            self._trigger = (eff, base)
        return base.available > 0 and history > base.threshold
