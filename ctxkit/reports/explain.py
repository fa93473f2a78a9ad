"""`explain`: one row per branch message, working message, file and in-flight message.

Input: a pipeline `Result` (its `Assembly` and `Payload`). Output: the rows of
docs/rules.md#report-keys, in context order, read off the decision record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctxkit import collector
from ctxkit.assembly import decisions
from ctxkit.history.working import Row
from ctxkit.output import printable

if TYPE_CHECKING:
    from ctxkit.pipeline import Result


def rows(result: Result) -> list[Row]:
    """The assembly's decision record as rows, with translation's own rows (image caps and
    markers, the image-drop notice) in their places: nothing is decided here."""
    prepared = result.payload.prepared.rows
    with collector.paused():
        found = list(decisions.rows(result.assembly, {r.key: r for r in prepared if r.key}))
    return found + [r for r in prepared if r.attached_to is None]  # the rows about no image: fix-ups, the notice


def table(rows: list[Row]) -> str:
    from tabulate import tabulate

    body = [
        [
            r.id if r.id is not None else "-",
            r.kind,
            r.segment or "-",
            f"{r.tokens:,}",
            str(r.fate),
            r.rule,
            "; ".join(r.notes),
        ]
        for r in rows
    ]
    return (
        tabulate(
            [[printable(cell) for cell in row] for row in body],  # escaped before columns are measured
            headers=["id", "kind", "segment", "tokens", "fate", "rule", "notes"],
            tablefmt="simple",
            disable_numparse=True,
            colalign=("left", "left", "left", "right", "left", "left", "left"),
        )
        + "\n"
    )
