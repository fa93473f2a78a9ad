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
from collections.abc import Callable, Iterable
from itertools import chain, islice, repeat
from operator import add, attrgetter, is_

from ctxkit.history.working import Call, Kind, Working
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
        self.calling_results = 0  # the window's tool results that hold calls (their names are not `called`)
        self.held: object = None  # more of the translator's own


def state(memo: TranslationMemo, odd: Callable[[Working], bool]) -> Turns:
    """The memo's `Turns` (new after a change of context), its `odd` count and `called` (the
    names of the calls of messages other than tool results, in first-call order) brought up to
    date: made again from the whole window only when a call left it or one entered before a
    message that stayed (R-RPL-9)."""
    found = memo.format if isinstance(memo.format, Turns) else Turns()
    memo.format = found
    found.odd += sum(map(odd, memo.entered)) - sum(map(odd, memo.left))
    added = [(p, w) for p, w in zip(memo.fresh, memo.entered, strict=True) if w.tool_calls]
    left = [w for w in memo.left if w.tool_calls]
    if not added and not left:
        return found
    found.calling_results += sum(w.kind is Kind.TOOL for _, w in added) - sum(w.kind is Kind.TOOL for w in left)
    last = memo.runs[-1] if memo.runs else (0, 0, 0)
    if left or added[0][0] < last[0] + last[2]:
        calls: Iterable[Call]
        if found.calling_results:
            calls = (c for w in memo.window if w.kind is not Kind.TOOL for c in w.tool_calls)
        else:  # no result holds calls: every call of the window, in C
            calls = chain.from_iterable(map(_CALLS, memo.window))
        found.called = list(dict.fromkeys(map(_NAME, calls)))
        return found
    # calls only entered, after every message the last window brought (appended): its names then theirs
    names = dict.fromkeys(found.called)
    for _, w in added:
        if w.kind is not Kind.TOOL:
            names.update(dict.fromkeys(c.name for c in w.tool_calls))
    found.called = list(names)
    return found


_CALLS, _NAME, _ID = attrgetter("tool_calls"), attrgetter("name"), attrgetter("id")

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
        self.todo: list[int] = []  # the turns `fill` makes (pushed: their `sents` None), in order

    def keep(self, state: Turns) -> None:
        """This call's turns as the next call's last ones."""
        state.starts, state.ends, state.roles, state.sents, state.flags = (
            self.starts,
            self.ends,
            self.roles,
            self.sents,  # not changed after `fill`: the payload is built from copies
            self.flags,
        )

    def push(self, role: str, start: int, end: int) -> None:
        """A stretch of one role to make: it joins the last turn when that one has its role and ends here."""
        if self.roles and self.roles[-1] == role and self.ends[-1] == start:
            self.ends[-1], self.sents[-1] = end, None
            last = len(self.sents) - 1
            if not self.todo or self.todo[-1] != last:
                self.todo.append(last)
            return
        self.todo.append(len(self.sents))
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
        if t < end and d == 0:  # in place: the last call's turns as slices
            self.starts += old.starts[t:end]
            self.ends += old.ends[t:end]
            self.roles += old.roles[t:end]
            self.flags += old.flags[t:end]
            self.sents += old.sents[t:end]
        elif t < end:
            self.starts += map(add, old.starts[t:end], repeat(d))
            self.ends += map(add, old.ends[t:end], repeat(d))
            self.roles += old.roles[t:end]
            self.flags += old.flags[t:end]
            self.sents += moved(old.sents[t:end], d)
        if end <= last:  # clipped at the run's end
            self.push(old.roles[last], old.starts[last] + d, ob + d)

    def fill(self) -> list[Sent]:
        """Every turn made (those pushed, not the ones a run took); the turns in order."""
        sents, flags, make = self.sents, self.flags, self.make
        for q in self.todo:
            if sents[q] is None:
                sents[q], flags[q] = make(self.roles[q], self.starts[q], self.ends[q])
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
            answers = w.tool_call_id
            if answers is not None and answers not in seen:
                return False
            if w.tool_calls:  # their ids in C, no generator per message
                seen.update(map(_ID, w.tool_calls))
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
    out: list[Sent | None] = []
    for s in sents:  # every turn of the last call was made, and holds its origins
        o: tuple[int, ...] = s.origins  # type: ignore[union-attr,assignment]
        out.append(Sent(s.role, s.parts, (o[0] + d,) if len(o) == 1 else tuple([x + d for x in o]), s.known, s.frame))  # type: ignore[union-attr]
    return out
