"""Payload turns carried from one replayed call to the next (R-RPL-9): what Anthropic's turns
(`anthropic_turns`) and Gemini's contents (`gemini`) share.

Input: a request's wire messages and its replay's `TranslationMemo` (the runs this window shares
with the last one, the messages that entered and left it). Output: the request's turns, each a
`Sent`, made again only where the window changed.

A turn is a longest stretch of messages of one role, every message giving it at least one
part. A turn of the last call whose messages all came back in one run, with neighbours of other
roles, is the same turn: it is taken as it was (re-indexed when the run moved, the inner turns of
a run as slices), and only the turns at the runs' edges and over new messages are made. A
translator takes this way only windows in which it changes nothing but the merges: `Turns.odd`
counts the messages that break that, kept up to date from what entered and left the window, and
`Results` follows the calls and results by id (Gemini sends a result only after its call).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from itertools import islice, repeat
from operator import add, is_

from ctxkit.history.working import Kind, Working
from ctxkit.translate.common import Sent, WireMessage
from ctxkit.translate.memo import TranslationMemo


class Turns:
    """A translator's state across a replay's calls: the last call's turns (positions `starts`/
    `ends` in its wire messages, `roles`, `sents` as made, `flags`: whether a turn had to be
    reordered), the window's `odd` count and tools `called` in first-call order. `starts` is
    None when the last call was translated whole."""

    def __init__(self) -> None:
        self.odd = 0
        self.starts: list[int] | None = None
        self.ends: list[int] = []
        self.roles: list[str] = []
        self.sents: list[Sent | None] = []
        self.flags: list[bool] = []
        self.called: list[str] = []
        self.held: object = None  # more of the translator's own


def state(memo: TranslationMemo, odd: Callable[[Working], bool]) -> Turns:
    """The memo's `Turns` (new after a change of context), its `odd` count and `called` (the
    names of the calls of messages other than tool results) brought up to date."""
    found = memo.format if isinstance(memo.format, Turns) else Turns()
    memo.format = found
    found.odd += sum(map(odd, memo.entered)) - sum(map(odd, memo.left))
    if any(w.tool_calls for w in memo.entered) or any(w.tool_calls for w in memo.left):
        calls = (c.name for w in memo.window if w.kind is not Kind.TOOL for c in w.tool_calls)
        found.called = list(dict.fromkeys(calls))
    return found


Make = Callable[[str, int, int], tuple[Sent, bool]]  # (role, start, end) -> a turn, reordered or not


class Carry:
    """This call's turns, as spans of its wire messages; a span with no `Sent` yet is made by
    `make` in `fill`."""

    def __init__(self, wires: list[WireMessage], role_of: Callable[[WireMessage], str], make: Make) -> None:
        self.wires, self.role_of, self.make = wires, role_of, make
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.roles: list[str] = []
        self.sents: list[Sent | None] = []
        self.flags: list[bool] = []

    def keep(self, state: Turns) -> None:
        """This call's turns as the next call's last ones."""
        state.starts, state.ends, state.roles, state.sents, state.flags = (
            self.starts,
            self.ends,
            self.roles,
            list(self.sents),
            self.flags,
        )

    def push(self, role: str, start: int, end: int) -> None:
        """A stretch of one role to make: it joins the last turn when that one has its role and ends here."""
        if self.roles and self.roles[-1] == role and self.ends[-1] == start:
            self.ends[-1], self.sents[-1] = end, None
            return
        self.starts.append(start)
        self.ends.append(end)
        self.roles.append(role)
        self.sents.append(None)
        self.flags.append(False)

    def each(self, start: int, end: int) -> None:
        for p in range(start, end):
            self.push(self.role_of(self.wires[p]), p, p + 1)

    def spans(self, runs: list[tuple[int, int, int]], first: int, old: Turns) -> None:
        """The turns from position `first` on, run by run: new messages one by one, a run's inner
        turns as slices of the last call's."""
        at = first
        for i, j, k in runs:
            a, b = max(i, first), i + k
            if a >= b:
                continue
            self.each(at, a)
            at = b
            if not old.starts or a - (i - j) < old.starts[0]:
                self.each(a, b)
            else:
                self.run(old, a, b, i - j)
        self.each(at, len(self.wires))

    def run(self, old: Turns, a: int, b: int, d: int) -> None:
        """New positions [a, b), the last call's [a - d, b - d): its turns clipped to the run, the
        whole ones taken as they were (moved by d)."""
        assert old.starts is not None
        oa, ob = a - d, b - d
        t, last = bisect_right(old.starts, oa) - 1, bisect_right(old.starts, ob - 1) - 1
        if old.starts[t] < oa or old.ends[t] > ob:  # clipped at the run's start (or both ends)
            self.push(old.roles[t], oa + d, min(old.ends[t], ob) + d)
            t += 1
        end = last if last >= t and old.ends[last] > ob else last + 1
        if t < end and self.roles and self.roles[-1] == old.roles[t] and self.ends[-1] == old.starts[t] + d:
            self.push(old.roles[t], old.starts[t] + d, old.ends[t] + d)
            t += 1
        if t < end:
            self.starts += map(add, old.starts[t:end], repeat(d))
            self.ends += map(add, old.ends[t:end], repeat(d))
            self.roles += old.roles[t:end]
            self.flags += old.flags[t:end]
            self.sents += old.sents[t:end] if d == 0 else moved(old.sents[t:end], d)
        if end <= last:  # clipped at the run's end
            self.push(old.roles[last], old.starts[last] + d, ob + d)

    def fill(self) -> list[Sent]:
        """Every turn made; the turns in order."""
        for q, sent in enumerate(self.sents):
            if sent is None:
                self.sents[q], self.flags[q] = self.make(self.roles[q], self.starts[q], self.ends[q])
        made: list[Sent] = self.sents  # type: ignore[assignment]  # every one made above
        return made


class Results:
    """The window's tool results and calls by id, kept up to date from what entered and left
    (`update`), and whether every result after the window's lead followed its call (`good`)."""

    def __init__(self) -> None:
        self.results: dict[str, list[Working]] = {}
        self.calls: dict[str, list[Working]] = {}
        self.good = False  # every result of the last window after the lead came after its call
        self.led = False  # the last window had a lead (see `_carried`)

    def update(self, entered: list[Working], left: list[Working]) -> None:
        for w in left:
            if w.tool_call_id is not None:
                _drop(self.results, w.tool_call_id, w)
            for c in w.tool_calls:
                _drop(self.calls, c.id, w)
        for w in entered:
            if w.tool_call_id is not None:
                self.results.setdefault(w.tool_call_id, []).append(w)
            for c in w.tool_calls:
                self.calls.setdefault(c.id, []).append(w)


def _drop(by_id: dict[str, list[Working]], key: str, w: Working) -> None:
    found = by_id[key]
    found.remove(w)
    if not found:
        del by_id[key]


def ordered(fresh: list[int], window: list[Working], ids: Results, renamed: set[str], user: int, led: bool) -> bool:
    """Every result from position `user` on after its call there (each id called once) and framed
    under the name it had in the last window. When the last window was so and neither had a
    lead, only the new messages are looked at: a call and a result that both came back keep
    their order."""
    lead = {id(w) for w in window[:user]} | {id(window[p]) for p in fresh}
    if any(id(r) not in lead for i in renamed for r in ids.results.get(i, ())):
        return False  # a result of the last window whose call is another now
    if led or not ids.good:
        seen: set[str] = set()
        for w in islice(window, user, None):
            if w.tool_call_id is not None and w.tool_call_id not in seen:
                return False
            seen.update(c.id for c in w.tool_calls)
        return True
    if not ids.calls.keys() >= ids.results.keys():
        return False
    at = {id(window[p]): p for p in fresh}
    for p in fresh:
        w = window[p]
        if w.tool_call_id is not None and not _before(window, at, ids.calls[w.tool_call_id][0], p):
            return False
        for c in w.tool_calls:
            if any(not _before(window, at, p, r) for r in ids.results.get(c.id, ())):
                return False
    return True


def _before(window: list[Working], at: dict[int, int], first: Working | int, then: Working | int) -> bool:
    """Whether `first` stands before `then` in the window (each a position or a message)."""
    a = first if isinstance(first, int) else at.get(id(first))
    b = then if isinstance(then, int) else at.get(id(then))
    if a is not None and b is not None:
        return a < b
    if a is None and b is not None:  # a message of the last window, looked for before `then`
        return any(map(is_, islice(window, 0, b), repeat(first)))
    assert a is not None
    return any(map(is_, islice(window, a + 1, None), repeat(then)))


def moved(sents: list[Sent | None], d: int) -> list[Sent | None]:
    """Turns taken `d` places further (their origins shifted: a turn's `Sent` holds them)."""
    return [Sent(s.role, s.parts, tuple(map(add, s.origins, repeat(d))), s.known, s.frame) for s in sents]  # type: ignore[union-attr,arg-type]  # every turn made
