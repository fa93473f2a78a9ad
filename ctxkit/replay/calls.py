"""The calls of a conversation (R-RPL-1), each a derived fixture the ordinary pipeline assembles.

Input: a loaded fixture and the command-line options. Output: `ReplayCall`s in replay order, each a
derived fixture (branch ending at its user message, its in-flight loop, its summaries and clock);
the last one is the fixture itself (unless `--compress-as` added a simulated summary). Which
questions are asked is `Questions`; the summaries a call sees and compression in time are
`replay.summaries` (R-RPL-2); clocks and the warnings about times going backwards are
`replay.clocks` (R-RPL-3).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial

from ctxkit.counting.measure import Counts
from ctxkit.errors import RuleError
from ctxkit.history import tree
from ctxkit.history.working import Copier
from ctxkit.loading.config import Options, resolve
from ctxkit.loading.domain import (
    Fixture,
    InFlightCall,
    InFlightMessage,
    Role,
    StoredMessage,
    ToolCall,
    TurnOverrides,
)
from ctxkit.replay.clocks import Clocks
from ctxkit.replay.summaries import SYNTHETIC_PREFIX, Summaries

Output = tuple[ToolCall, ...] | StoredMessage | InFlightMessage | None  # what the model produced next


@dataclass(slots=True, unsafe_hash=True)  # hashed as a frozen one is, never changed once made (one per call)
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
        return label(self.user.id, self.step)

    @property
    def synthetic(self) -> bool:
        return self.summary is not None and self.summary.id.startswith(SYNTHETIC_PREFIX)


def label(user_id: str, step: int) -> str:
    """A call's label: `m7` for a question's first call, `m7·2` after its second tool turn."""
    return user_id if step == 0 else f"{user_id}·{step}"


class Asked(enum.Enum):
    """Where a replayed question sits (R-RPL-1)."""

    EDITED = "edited"  # an earlier user sibling of a branch question: its own calls, off the branch
    ON_BRANCH = "on_branch"  # answered by the next stored message on the branch
    LAST = "last"  # the fixture's own question, answered by `in_flight`


class Questions:
    """Which questions replay asks (R-RPL-1), in order, each with its stored answer: the questions
    the user edited away (earlier user siblings, off the branch), then the one on the branch; the
    last one is answered by `in_flight`."""

    def __init__(self, fixture: Fixture, path: tuple[StoredMessage, ...], ids: dict[str, int] | None = None) -> None:
        """`ids`: `tree.indexes(fixture)`, when the caller has it."""
        self.fixture, self.path = fixture, path
        self.ids = ids = tree.indexes(fixture) if ids is None else ids
        self.position = tree.OnPath(path, ids)  # shared with `Summaries`
        # Each message's non-summary children, by the message's index (the roots' under -1): the
        # child itself when it is the only one (most are), a list from the second on (no list, and
        # no dict entry, per message of a long linear history: one list slot).
        self.children: list[StoredMessage | list[StoredMessage] | None] = [None] * (max(ids.values(), default=-1) + 2)
        children = self.children
        for m in fixture.messages:
            if m.role is not Role.SUMMARY:
                at = ids[m.parent] if m.parent is not None else -1
                found = children[at]
                if found is None:
                    children[at] = m
                elif isinstance(found, list):
                    found.append(m)
                else:
                    children[at] = [found, m]
        self.users = [m for m in path if m.role is Role.USER]
        if not self.users:
            raise RuleError(f"{fixture.source}: no user message on the branch: nothing to answer (R-ASM-3)")

    def __iter__(self) -> Iterator[tuple[StoredMessage, StoredMessage | None, Asked]]:
        for u in self.users:
            for s in self.edited(u):
                yield s, self.answer_of(s), Asked.EDITED
            if u is self.users[-1]:
                yield u, None, Asked.LAST
            else:
                yield u, self.next_on_branch(u), Asked.ON_BRANCH

    def count(self) -> int:
        """How many calls they make: one per question and one after each tool turn."""
        in_flight = sum(1 for m in self.fixture.in_flight if m.role == "assistant")
        return sum(1 + (in_flight if asked is Asked.LAST else _turns(answer)) for _, answer, asked in self)

    def edited(self, user: StoredMessage) -> list[StoredMessage]:
        """The questions the user edited away: earlier user siblings, in file order (R-RPL-1)."""
        found = self._children(user.parent)
        if not isinstance(found, list):  # `user` is its parent's only child (most are): no sibling
            return []
        return [s for s in found if s.role is Role.USER and s.index < user.index]

    def answer_of(self, user: StoredMessage) -> StoredMessage | None:
        """An edited-away question's stored answer: its latest non-summary child (R-TREE-2)."""
        kids = self._kids(user.id)
        return kids[-1] if kids and kids[-1].role is Role.ASSISTANT else None

    def _children(self, parent: str | None) -> StoredMessage | list[StoredMessage] | None:
        if parent is None:
            return self.children[-1]
        at = self.ids.get(parent)
        return self.children[at] if at is not None else None

    def _kids(self, parent: str | None) -> list[StoredMessage]:
        found = self._children(parent)
        return [] if found is None else found if isinstance(found, list) else [found]

    def next_on_branch(self, user: StoredMessage) -> StoredMessage | None:
        i = self.position[user.id] + 1
        nxt = self.path[i] if i < len(self.path) else None
        return nxt if nxt is not None and nxt.role is Role.ASSISTANT else None


class Planner:
    """`count()` the calls, `calls()` yields them in order (lazily: each holds a derived fixture)."""

    def __init__(
        self,
        fixture: Fixture,
        options: Options | None = None,
        *,
        compress_as: int | None = None,
        select: Callable[[Fixture, str | None], tree.Branch] | None = None,
        counts: Counts | None = None,
    ) -> None:
        """`select`, `counts`: the branch lookup (`tree.select`) and token counts the replay's
        assembly shares."""
        options = options or Options()
        self.fixture, self.options = fixture, options
        eff = resolve(fixture, options)
        leaf = eff.leaf if eff.leaf is not None else tree.default_leaf(fixture)
        self.path = tree.path_to(fixture, leaf)
        self.ids = tree.indexes(fixture)  # the one id index of the replay's per-message arrays (`Ancestry` too)
        self.questions = Questions(fixture, self.path, self.ids)
        self.summaries = Summaries(fixture, self.path, compress_as, counts, self.questions.position)
        self.clocks = Clocks(fixture, options.now or fixture.now)
        self.select = select or partial(tree.select, paths=tree.Paths())  # each path extends the last
        self._options = replace(options, leaf=None, now=None)  # every derived call's

    def count(self) -> int:
        return self.questions.count()

    def calls(self) -> Iterator[ReplayCall]:
        for u, answer, asked in self.questions:
            if asked is Asked.EDITED:
                yield from self._stored(u, answer, on_branch=False)
            elif asked is Asked.LAST:
                yield from self._in_flight(u)
            else:
                yield from self._stored(u, answer, on_branch=True)

    def warnings(self) -> list[str]:
        return list(self.clocks.backwards(self.path))

    def _stored(self, user: StoredMessage, answer: StoredMessage | None, *, on_branch: bool) -> Iterator[ReplayCall]:
        """(U, 0) and one call after each tool turn of the stored answer (R-RPL-1)."""
        calls = answer.tool_calls if answer is not None else ()
        turns = sorted({c.turn for c in calls}) if calls else ()  # a plain answer (most): no tool turn
        loop: list[InFlightMessage] = []
        for t, turn in enumerate(turns):
            group = tuple(c for c in calls if c.turn == turn)
            yield self._derived(user, t, on_branch, tuple(loop), group)
            announced = tuple(InFlightCall(c.id, c.name, c.args, c.tokens) for c in group)
            loop.append(InFlightMessage("assistant", len(loop), tool_calls=announced))
            base = len(loop)
            loop.extend(InFlightMessage("tool", base + k, c.response or "", (), c.id) for k, c in enumerate(group))
        yield self._derived(user, len(turns), on_branch, tuple(loop), answer, due=on_branch)

    def _in_flight(self, user: StoredMessage) -> Iterator[ReplayCall]:
        """The last question: (U, 0), one call after each in-flight answer and its results, the fixture's call."""
        loop = self.fixture.in_flight
        starts = [i for i, m in enumerate(loop) if m.role == "assistant"]
        for t, start in enumerate(starts):
            yield self._derived(user, t, True, loop[:start], loop[start])
        fixture = self.fixture
        if self.summaries.synthetic:
            fixture = replace(fixture, messages=self.summaries.messages)
        summary = self.select(fixture, self.options.leaf or fixture.leaf).summary  # the branch assembly selects
        yield ReplayCall(user, len(starts), True, True, fixture, self.options, self.clocks.now, None, summary)

    def _derived(
        self,
        user: StoredMessage,
        step: int,
        on_branch: bool,
        loop: tuple[InFlightMessage, ...],
        output: Output,
        *,
        due: bool = False,
    ) -> ReplayCall:
        """A fixture whose branch ends at `user`, with `loop` in flight and the summaries of its time;
        `due`: the question's last call on the branch, after which R-CMP-1 is checked (the call is
        made once, with its `compression_due`, not copied to set it)."""
        messages = self.summaries.visible(user)
        seen = self.fixture if messages is self.fixture.messages else _with_messages(self.fixture, messages)
        branch = self.select(seen, user.id)
        clock = self.clocks.on(loop, branch)  # R-RPL-3: `clocks.at(loop, branch.live)`
        fixture = _derive_fixture(self.fixture, messages, user.id, loop, _NO_OVERRIDES, clock)
        if due:  # R-CMP-1 after the question's answer
            upto = output if isinstance(output, StoredMessage) else user
            due = self.summaries.due(user, upto, clock, fixture, self._options, branch.summary)
        return _new_call(user, step, on_branch, False, fixture, self._options, clock, output, branch.summary, due)


_new_call = Copier(ReplayCall).new  # one per call: each field stored once
_with_messages = Copier(Fixture).changing("messages")
_derive_fixture = Copier(Fixture).changing("messages", "leaf", "in_flight", "turn", "now")  # per call: see `changing`
_NO_OVERRIDES = TurnOverrides()


def _turns(answer: StoredMessage | None) -> int:
    return len({c.turn for c in answer.tool_calls}) if answer is not None else 0
