"""The calls of a conversation (R-RPL-1), their summaries (R-RPL-2) and clocks (R-RPL-3).

Input: a loaded fixture and the command-line options. Output: `ReplayCall`s in replay order, each a
derived fixture (branch ending at its user message, its in-flight loop, its summaries and clock)
that the ordinary pipeline assembles; the last one is the fixture itself (unless `--compress-as`
added a simulated summary). Also the warnings about times that go backwards.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from ctxkit.counting.measure import Counts, Meter, meter_for
from ctxkit.errors import RuleError
from ctxkit.history import tree
from ctxkit.loading.config import Effective, Options, resolve
from ctxkit.loading.domain import (
    Fixture,
    InFlightCall,
    InFlightMessage,
    Role,
    StoredMessage,
    ToolCall,
    TurnOverrides,
)
from ctxkit.output import plural

Output = tuple[ToolCall, ...] | StoredMessage | InFlightMessage | None  # what the model produced next


@dataclass(frozen=True, slots=True)
class ReplayCall:
    user: StoredMessage  # the user message it answers
    step: int  # t: how many tool turns of this answer came before it
    on_branch: bool
    last: bool  # the fixture's own call
    fixture: Fixture  # what the pipeline assembles for it
    options: Options
    clock: datetime | None
    output: Output
    summary: StoredMessage | None  # the summary node that applies (R-RPL-2)
    compression_due: bool = False

    @property
    def label(self) -> str:
        return self.user.id if self.step == 0 else f"{self.user.id}·{self.step}"

    @property
    def synthetic(self) -> bool:
        return self.summary is not None and self.summary.id.startswith(SYNTHETIC_PREFIX)


SYNTHETIC_PREFIX = "~synthetic-summary-"


class Asked(enum.Enum):
    """Where a replayed question sits (R-RPL-1)."""

    EDITED = "edited"  # an earlier user sibling of a branch question: its own calls, off the branch
    ON_BRANCH = "on_branch"  # answered by the next stored message on the branch
    LAST = "last"  # the fixture's own question, answered by `in_flight`


class Planner:
    """`count()` the calls, `calls()` yields them in order (lazily: each holds a derived fixture)."""

    def __init__(
        self,
        fixture: Fixture,
        options: Options | None = None,
        *,
        compress_as: int | None = None,
        paths: tree.Paths | None = None,
        counts: Counts | None = None,
    ) -> None:
        """`paths`, `counts`: the branch lookups and token counts the replay's assembly shares."""
        options = options or Options()
        self.fixture = fixture
        self.options = options
        self.compress_as = compress_as
        eff = resolve(fixture, options)
        leaf = eff.leaf if eff.leaf is not None else tree.default_leaf(fixture)
        self.path = tree.path_to(fixture, leaf)
        self.position = {m.id: i for i, m in enumerate(self.path)}
        self.paths = paths or tree.Paths()  # each call's branch extends the previous one's (R-RPL-9)
        self.children: dict[str | None, list[StoredMessage]] = {}
        for m in fixture.messages:
            if m.role is not Role.SUMMARY:
                self.children.setdefault(m.parent, []).append(m)
        self.now = options.now or fixture.now
        self.synthetic: list[StoredMessage] = []
        self._meter: Meter | None = None  # R-CMP-1 counts, shared by every question's check
        self._counts = counts
        self._running: list[int] = []
        self.hanging = {m.parent for m in fixture.messages if m.role is Role.SUMMARY}
        self._base = fixture.messages  # fixture.messages + the synthetic summaries so far
        self._by_id = {m.id: m for m in fixture.messages}
        self._dated: dict[str, tuple[StoredMessage | None, int]] = {}  # see `_dated_above`
        self._depth: dict[str, int] = {}
        self.users = [m for m in self.path if m.role is Role.USER]
        if not self.users:
            raise RuleError(f"{fixture.source}: no user message on the branch: nothing to answer (R-ASM-3)")

    def questions(self) -> Iterator[tuple[StoredMessage, StoredMessage | None, Asked]]:
        """Each question replay asks, in order, with its stored answer: the questions the user
        edited away, then the one on the branch; the last one is answered by `in_flight`."""
        for u in self.users:
            for s in self._edited(u):
                yield s, self._answer_of(s), Asked.EDITED
            if u is self.users[-1]:
                yield u, None, Asked.LAST
            else:
                yield u, self._next_on_branch(u), Asked.ON_BRANCH

    def count(self) -> int:
        """How many calls `calls()` yields: one per question and one after each tool turn."""
        in_flight = sum(1 for m in self.fixture.in_flight if m.role == "assistant")
        return sum(1 + (in_flight if asked is Asked.LAST else _turns(answer)) for _, answer, asked in self.questions())

    def calls(self) -> Iterator[ReplayCall]:
        for u, answer, asked in self.questions():
            if asked is Asked.EDITED:
                yield from self._stored(u, answer, on_branch=False)
            elif asked is Asked.LAST:
                yield from self._in_flight(u)
            else:
                mine = list(self._stored(u, answer, on_branch=True))
                due = self._compression(u, answer, mine[-1])
                mine[-1] = replace(mine[-1], compression_due=due)
                yield from mine

    def warnings(self) -> list[str]:
        return list(self._backwards())

    def _edited(self, user: StoredMessage) -> list[StoredMessage]:
        """The questions the user edited away: earlier user siblings, in file order (R-RPL-1)."""
        return [s for s in self.children.get(user.parent, ()) if s.role is Role.USER and s.index < user.index]

    # --- which calls ---------------------------------------------------------------------

    def _answer_of(self, user: StoredMessage) -> StoredMessage | None:
        """An edited-away question's stored answer: its latest non-summary child (R-TREE-2)."""
        kids = self.children.get(user.id, [])
        return kids[-1] if kids and kids[-1].role is Role.ASSISTANT else None

    def _next_on_branch(self, user: StoredMessage) -> StoredMessage | None:
        i = self.position[user.id] + 1
        nxt = self.path[i] if i < len(self.path) else None
        return nxt if nxt is not None and nxt.role is Role.ASSISTANT else None

    def _stored(self, user: StoredMessage, answer: StoredMessage | None, *, on_branch: bool) -> Iterator[ReplayCall]:
        """(U, 0) and one call after each tool turn of the stored answer (R-RPL-1)."""
        calls = answer.tool_calls if answer is not None else ()
        turns = sorted({c.turn for c in calls})
        loop: list[InFlightMessage] = []
        for t, turn in enumerate(turns):
            group = tuple(c for c in calls if c.turn == turn)
            yield self._derived(user, t, on_branch, tuple(loop), group)
            announced = tuple(InFlightCall(c.id, c.name, c.args, c.tokens) for c in group)
            loop.append(InFlightMessage("assistant", len(loop), tool_calls=announced))
            base = len(loop)
            loop.extend(InFlightMessage("tool", base + k, c.response or "", (), c.id) for k, c in enumerate(group))
        yield self._derived(user, len(turns), on_branch, tuple(loop), answer)

    def _in_flight(self, user: StoredMessage) -> Iterator[ReplayCall]:
        """The last question: (U, 0), one call after each in-flight answer and its results, the fixture's call."""
        loop = self.fixture.in_flight
        starts = [i for i, m in enumerate(loop) if m.role == "assistant"]
        for t, start in enumerate(starts):
            yield self._derived(user, t, True, loop[:start], loop[start])
        fixture = self.fixture
        if self.synthetic:
            fixture = replace(fixture, messages=fixture.messages + tuple(self.synthetic))
        summary = tree.select(fixture, self.options.leaf or fixture.leaf).summary
        yield ReplayCall(user, len(starts), True, True, fixture, self.options, self.now, None, summary)

    def _derived(
        self, user: StoredMessage, step: int, on_branch: bool, loop: tuple[InFlightMessage, ...], output: Output
    ) -> ReplayCall:
        """A fixture whose branch ends at `user`, with `loop` in flight and the summaries of its time."""
        messages = self._base
        if user.id in self.hanging:  # a summary written after this turn does not apply yet
            messages = tuple(m for m in messages if not (m.role is Role.SUMMARY and m.parent == user.id))
        fixture = replace(self.fixture, messages=messages, leaf=user.id, in_flight=loop, turn=TurnOverrides())
        branch = tree.select(fixture, user.id, paths=self.paths)
        clock = _last_at(loop) or self._last_live_at(branch.live) or self.now  # R-RPL-3: the last dated message sent
        fixture = replace(fixture, now=clock)
        options = replace(self.options, leaf=None, now=None)
        return ReplayCall(user, step, on_branch, False, fixture, options, clock, output, branch.summary)

    def _last_live_at(self, live: tuple[StoredMessage, ...]) -> datetime | None:
        """`_last_at(live)` without walking back over a long undated history on every call.

        `live` is a stretch of one root path; per stored message, the latest dated message at or
        above it on its path and the depth of both are found once (R-RPL-9)."""
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

    # --- compression in time (R-RPL-2) ---------------------------------------------------

    def _compression(self, user: StoredMessage, answer: StoredMessage | None, last: ReplayCall) -> bool:
        """R-CMP-1 on the branch up to U's answer; with --compress-as, a simulated summary node."""
        from ctxkit.compression.compress import plan as compression_plan

        upto = answer if answer is not None else user
        fixture = replace(last.fixture, leaf=upto.id, in_flight=())
        eff = resolve(fixture, last.options)
        if not self._due(eff, last.summary, upto):
            return False
        if self.compress_as is None:
            return True
        decision = compression_plan(eff)
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
        self._base = self.fixture.messages + tuple(self.synthetic)
        return True

    def _due(self, eff: Effective, summary: StoredMessage | None, leaf: StoredMessage) -> bool:
        """R-CMP-1, as `compression.compress.plan` decides it, from running sums over the branch.

        The full plan walks the whole branch; replay asks after every question, so the message
        tokens are summed once along the branch and each question reads two of the sums."""
        from ctxkit.compression.compress import message_tokens, trigger

        if self._meter is None:
            self._meter = meter_for(eff, self._counts)
            running = [0]
            for m in self.path:
                running.append(running[-1] + message_tokens(m, self._meter))
            self._running = running
        meter = self._meter
        cutoff = 0
        if summary is not None and summary.summarizes_through in self.position:
            cutoff = self.position[summary.summarizes_through] + 1
        end = self.position[leaf.id] + 1
        history = self._running[end] - self._running[cutoff]
        if summary is not None:
            history += message_tokens(summary, meter)
        return trigger(eff, meter, history).due

    # --- times going backwards -----------------------------------------------------------

    def _backwards(self) -> Iterator[str]:
        dated = [(f"message {m.id!r}", m.at) for m in self.path if m.at is not None]
        dated += [(f"in-flight item {m.index}", m.at) for m in self.fixture.in_flight if m.at is not None]
        for (before, t0), (after, t1) in zip(dated, dated[1:], strict=False):
            if t1 < t0:
                yield (
                    f"{self.fixture.source}: {after} is dated {t1.isoformat()}, before {before} "
                    f"({t0.isoformat()}): times go backwards along the branch (R-RPL-3)"
                )


def _last_at(messages: Sequence[StoredMessage | InFlightMessage]) -> datetime | None:
    return next((m.at for m in reversed(messages) if m.at is not None), None)


def _turns(answer: StoredMessage | None) -> int:
    return len({c.turn for c in answer.tool_calls}) if answer is not None else 0
