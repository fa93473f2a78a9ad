"""Which tool results of replay's window have their call before them (R-ASM-8), kept with the window.

Input: the window's working messages as `replay.state.State` appends them (and cuts them back).
Output: `Announcements.orphans(a, b, ...)`: the tool results of the run `works[a:b]` whose call no
message of the run (nor one before it) announces — what `truncation.drop_orphans` finds walking the
run, from positions recorded once per message instead of a walk per call.

A result at `n` is answered within a run starting at `a` exactly when the latest announcement of
its call before `n` is at `a` or later (`since[n] >= a`). Results are near their calls: one within
`SPAN` positions can be an orphan only for a run starting less than `SPAN` before it, so a call looks
at the first `SPAN` positions of its run and at the few results far from their calls (`far`).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Set

from ctxkit.history.working import Kind, Working

SPAN = 32  # a result this close to its call is looked at only near the run's start


class Announcements:
    """The window's tool results and tool calls by position (see the module docstring)."""

    def __init__(self) -> None:
        self.tools = array("q")  # positions of tool results, ascending
        self.since = array("q")  # for each: the latest position before it announcing its call, or -1
        self.far = array("q")  # the tool results more than SPAN after that (or with none), ascending
        # call id → the position announcing it, or the positions, ascending, when more than one do
        # (most calls are announced once: an int, not a list per call of the history)
        self.by_call: dict[str | None, int | list[int]] = {}
        self.odd = 0  # tool results that announce calls themselves: then the plain walk decides

    def append(self, n: int, w: Working) -> None:
        """Record `w`, the window's message at position `n` (after every earlier one)."""
        by_call = self.by_call
        if w.kind is Kind.TOOL:
            found = by_call.get(w.tool_call_id)
            since = -1 if found is None else found if isinstance(found, int) else found[-1]
            self.tools.append(n)
            self.since.append(since)
            if since < 0 or n - since > SPAN:
                self.far.append(n)
            if w.tool_calls:
                self.odd += 1
        for c in w.tool_calls:
            found = by_call.get(c.id)
            if found is None:
                by_call[c.id] = n
            elif isinstance(found, int):
                by_call[c.id] = [found, n]
            else:
                found.append(n)

    def cut(self, end: int, removed: list[Working]) -> None:
        """Forget positions from `end` on (`removed`: the messages that held them)."""
        k = bisect_left(self.tools, end)
        del self.tools[k:]
        del self.since[k:]
        del self.far[bisect_left(self.far, end) :]
        for w in removed:
            if w.kind is Kind.TOOL and w.tool_calls:
                self.odd -= 1
            for c in w.tool_calls:
                found = self.by_call.get(c.id)
                if isinstance(found, list):
                    while found and found[-1] >= end:
                        found.pop()
                    if len(found) == 1:
                        self.by_call[c.id] = found[0]
                    elif not found:
                        del self.by_call[c.id]
                elif found is not None and found >= end:
                    del self.by_call[c.id]

    def orphans(self, a: int, b: int, works: list[Working], before: Set[str | None]) -> list[int]:
        """The positions in [a, b) of tool results no message of `works[a:n]` announces, nor
        `before` (the calls announced ahead of the run), ascending."""
        tools, since = self.tools, self.since
        lo = bisect_left(tools, a)
        near = []
        for j in range(lo, min(bisect_left(tools, min(b, a + SPAN)), len(tools))):
            if since[j] < a:
                near.append(tools[j])
        far = self.far
        found = set(near)
        for j in range(bisect_left(far, a + SPAN), bisect_left(far, b)):
            n = far[j]
            if since[bisect_left(tools, n)] < a:
                found.add(n)
        orphans = sorted(found)
        if before:
            orphans = [n for n in orphans if works[n].tool_call_id not in before]
        return orphans

    def announced(self, call: str | None, a: int, b: int) -> bool:
        """Whether a message in [a, b) announces `call`."""
        found = self.by_call.get(call)
        if found is None:
            return False
        if isinstance(found, int):
            return a <= found < b
        i = bisect_left(found, a)
        return i < len(found) and found[i] < b
