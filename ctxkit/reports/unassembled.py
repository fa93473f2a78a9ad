"""`explain` for a fixture whose assembly fails by rule (R-ASM-2/3): what can still be shown.

Input: `Effective` settings. Output: one row per branch message, attached file
and in-flight message with its segment and tokens — the numbers the failure is
about. Fates that only the assembly decides are left empty (null in JSON): it
stopped before deciding them. Fates settled before assembly (a summary's removal,
R-TREE-3; messages after the last user message, R-TURN-1) are given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ctxkit.assembly.decisions import AFTER_LAST_USER, SUMMARIZED
from ctxkit.counting.measure import Meter
from ctxkit.history import convert as conv
from ctxkit.history import tree
from ctxkit.history.working import Origin, Segment, Working
from ctxkit.loading.config import Effective
from ctxkit.output import printable

NOT_DECIDED = "not assembled: the assembly failed by rule"


@dataclass(frozen=True, slots=True)
class PartialRow:
    id: str | None
    kind: str
    segment: str | None
    tokens: int
    fate: str | None
    rule: str | None

    def as_json(self) -> dict[str, Any]:
        notes = [] if self.fate else [NOT_DECIDED]
        return {
            "id": self.id,
            "kind": self.kind,
            "segment": self.segment,
            "tokens": self.tokens,
            "fate": self.fate,
            "rule": self.rule,
            "notes": notes,
        }


def rows(eff: Effective) -> list[PartialRow]:
    meter = Meter(eff.tokenizer, supports_images=eff.supports_images, templates=eff.templates)
    branch = tree.select(eff.fixture, eff.leaf)
    converted = conv.convert(branch, eff.fixture, eff.templates)
    found = [
        PartialRow(m.id, str(m.role), None, _stored(meter, m.text, m.tokens), SUMMARIZED.fate, SUMMARIZED.rule)
        for m in branch.summarized
    ]
    found += [_working(meter, w, Segment.HISTORY) for w in converted.history]
    if converted.last_user is not None:
        found.append(_working(meter, converted.last_user, Segment.LAST_USER))
    found += [_working(meter, w, Segment.IN_TURN) for w in converted.in_turn]
    found += [
        PartialRow(
            m.id, str(m.role), None, _stored(meter, m.text, m.tokens), AFTER_LAST_USER.fate, AFTER_LAST_USER.rule
        )
        for m in branch.after_last_user
    ]
    return found


def _stored(meter: Meter, text: str, tokens: int | None) -> int:
    return tokens if tokens is not None else meter.text(text)


def _working(meter: Meter, w: Working, segment: Segment) -> PartialRow:
    if w.origin == Origin.FILE:
        return PartialRow(w.file_id, "file", segment, meter.of(w), None, None)
    kind = "summary" if w.origin == Origin.SUMMARY else str(w.kind)
    return PartialRow(w.source_id, kind, segment, meter.of(w), None, None)


def table(found: list[PartialRow]) -> str:
    from tabulate import tabulate

    body = [
        [r.id if r.id is not None else "-", r.kind, r.segment or "-", f"{r.tokens:,}", r.fate or "?", r.rule or "-"]
        for r in found
    ]
    return (
        tabulate(
            [[printable(cell) for cell in row] for row in body],  # escaped before columns are measured
            headers=["id", "kind", "segment", "tokens", "fate", "rule"],
            tablefmt="simple",
            disable_numparse=True,
            colalign=("left", "left", "left", "right", "left", "left"),
        )
        + f"\n(? = {NOT_DECIDED}; see the error)\n"
    )
