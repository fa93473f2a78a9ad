"""What of the older history reaches the context: R-ASM-3's tail, R-ASM-5's last-n cut, R-ASM-4's
truncation and R-ASM-8's orphan results, each a step `assemble` runs (a replay's state stands
in for `truncate` and `drop_orphans`, giving the same values).

Input: the converted branch, the room the fixed parts and the tail leave, a meter. Output:
`Truncation` (what is kept, where truncation stopped) and `Answered` (the kept messages without
orphan results), and the kept messages' fates.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ctxkit.assembly.fates import Fated
from ctxkit.counting.measure import Meter
from ctxkit.errors import RuleError
from ctxkit.history import convert as conv
from ctxkit.history.working import Fate, Kind, Origin, Segment, Working
from ctxkit.loading.config import Effective
from ctxkit.output import plural


@dataclass(slots=True)  # not frozen: one per assembled call, and a frozen one's fields are set by calls
class Truncation:
    """R-ASM-4's outcome: units before `end` are left out whole; of unit `end`, `head` is."""

    kept: list[Working]  # oldest first
    head: list[Working]  # the start of the unit where truncation stopped, oldest first
    end: int


@dataclass(slots=True)  # not frozen: one per assembled call, and a frozen one's fields are set by calls
class Answered:
    """R-ASM-8's outcome: the kept history and in-turn messages without orphan results."""

    kept: list[Working]
    in_turn: list[Working]
    orphans: list[Working]


def tail_tokens(eff: Effective, meter: Meter, tail: list[Working], budget: int) -> int:
    """R-ASM-3: the cost of the last user message and this turn's messages; a rule error above the budget."""
    cost = sum(map(meter.of, tail))
    if cost > budget:
        raise RuleError(
            f"{eff.fixture.source}: the last user message and this turn's messages need "
            f"{plural(cost, 'token')} but the history budget is {budget} (R-ASM-3); "
            f"largest: {_largest_message(tail, meter)}"
        )
    return cost


def drop_orphans(
    kept: list[Working], in_turn: list[Working], before: Callable[[str | None], bool] | None = None
) -> Answered:
    """R-ASM-8: a tool result whose call is not in the context before it is left out.

    `before`: whether a call was announced ahead of `kept` (the walk's start, when a replay's
    state has walked the messages before them; None: nothing comes before)."""
    announced: set[str] = set()
    out: tuple[list[Working], list[Working]] = ([], [])
    orphans: list[Working] = []
    for group, found in zip((kept, in_turn), out, strict=True):
        for w in group:
            if w.kind is Kind.TOOL and w.tool_call_id not in announced and not (before and before(w.tool_call_id)):
                orphans.append(w)
                continue
            if w.tool_calls:
                announced.update([c.id for c in w.tool_calls])
            found.append(w)
    return Answered(kept=out[0], in_turn=out[1], orphans=orphans)


_KEPT_AS = {False: (Fate.KEPT, "R-ASM-4"), True: (Fate.PLACEHOLDER, "R-CONV-3")}  # by `placeholder`


def kept_fate(w: Working) -> Fated:
    """A kept history message's fate: kept (R-ASM-4), or kept as a placeholder (R-CONV-3)."""
    fate, rule = _KEPT_AS[w.placeholder]
    return Fated(fate, rule, Segment.HISTORY, w.notes)


class SameFate(dict[tuple[str, ...], Fated]):
    """One (frozen) `Fated` per distinct notes, shared by the messages that have them."""

    def __init__(self, fate: Fate, rule: str, segment: Segment | None = Segment.HISTORY) -> None:
        super().__init__()
        self.fate, self.rule, self.segment = fate, rule, segment

    def __missing__(self, notes: tuple[str, ...]) -> Fated:
        found = self[notes] = Fated(self.fate, self.rule, self.segment, notes)
        return found


def kept_as() -> dict[bool, SameFate]:
    """The kept history's fates by `placeholder` (`kept_fate`), one per distinct notes."""
    return {p: SameFate(*_KEPT_AS[p]) for p in (False, True)}


def _largest_message(messages: list[Working], meter: Meter) -> str:
    w = max(messages, key=meter.of)
    label = "the last user message" if w.origin == Origin.MESSAGE else f"in-flight message {w.key}"
    return f"{label} ({plural(meter.of(w), 'token')})"


def last_n_cut(converted: conv.Converted, n: int | None) -> int:
    """R-ASM-5: the first unit of the older history that counts when only the last n user
    messages do (0: no cut), found from the stored roles without converting anything.

    The last user message is the first of the n. The cut falls before the pinned files
    of the n-th user message from the end: they are part of its unit.
    """
    if not n:
        return 0
    if n == 1:
        return converted.units - 1  # the files pinned to the last user message
    for counted, unit in enumerate(converted.user_units(), start=2):
        if counted == n:
            return unit
    return 0


def truncate(converted: conv.Converted, first: int, room: int, meter: Meter) -> Truncation:
    """R-ASM-4: walks the units from the newest back to `first`, converting each as it
    goes, and stops at the first message that does not fit."""
    used = 0
    kept: list[Working] = []
    for u in range(converted.units - 1, first - 1, -1):
        ws = converted.unit(u)
        for j in range(len(ws) - 1, -1, -1):
            cost = meter.of(ws[j])
            if used + cost > room:
                kept.reverse()
                return Truncation(kept=kept, head=list(ws[: j + 1]), end=u)
            used += cost
            kept.append(ws[j])
    kept.reverse()
    return Truncation(kept=kept, head=[], end=first)


def kept_fates(kept: list[Working]) -> dict[str, Fated]:
    """`{w.key: kept_fate(w) for w in kept}`, one shared `Fated` per distinct notes."""
    history = kept_as()
    return {w.key: history[w.placeholder][w.notes] for w in kept}
