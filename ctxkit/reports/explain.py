"""`explain`: one row per branch message, working message, file and in-flight message.

Input: a pipeline `Result` (its `Assembly` and `Payload`). Output: the rows of
docs/rules.md#report-keys, in context order, read off the decision record.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ctxkit import collector
from ctxkit.assembly.assemble import Assembly
from ctxkit.assembly.fates import Fated
from ctxkit.history.working import Fate, Origin, Row, Segment, Working, message_key
from ctxkit.loading.domain import FileKind, StoredMessage
from ctxkit.output import printable
from ctxkit.translate import Payload

if TYPE_CHECKING:
    from ctxkit.pipeline import Result

# The rule behind each message the assembly generates, by what it was made from.
GENERATED_RULES: dict[str, str] = {
    Origin.SYSTEM: "R-SYS-1",
    Origin.CUSTOM_AGENT: "R-SYS-5",
    Origin.DOCUMENTS: "R-PROJ-2",
    Origin.PROJECT_READ_FILE: "R-PROJ-1",
    Origin.FORGOTTEN_FILES: "R-FILE-2",
    Origin.REMINDER: "R-REM-1",
}


def rows(result: Result) -> list[Row]:
    with collector.paused():
        return list(_rows(result.assembly, result.payload))


def _rows(a: Assembly, payload: Payload) -> Iterator[Row]:
    image_rows = {r.key: r for r in payload.prepared.rows if r.key}
    forgotten = {f.id for f, _ in a.forgotten}
    files = {f.id: f for f in a.eff.fixture.files}
    for w in a.segments[Segment.SYSTEM]:
        yield _generated(a, w, Segment.SYSTEM)
    for m in a.branch.summarized:
        yield _left_out(a, m, Fate.SUMMARIZED, "R-TREE-3")
        for fid in m.files:
            f = files[fid]
            if fid in forgotten:
                yield Row(
                    fid,
                    "file",
                    Segment.FORGOTTEN_FILES,
                    0,
                    Fate.FORGOTTEN,
                    "R-FILE-1",
                    ("attached to a summarized message (R-TREE-3)",),
                    key=message_key(m.id, f":{fid}"),
                )
            else:
                yield Row(fid, "file", None, 0, Fate.SUMMARIZED, "R-TREE-3", key=message_key(m.id, f":{fid}"))
    for w in a.converted.history:
        yield from _history_row(a, w, forgotten, image_rows)
    produced = {w.source_id for w in a.converted.history}
    for m in a.branch.live:
        if m.id not in produced and m is not a.branch.last_user:
            yield Row(
                m.id,
                str(m.role),
                None,
                0,
                Fate.FIXUP,
                "R-CONV-2",
                ("empty assistant message omitted: providers reject it",),
                key=message_key(m.id),
            )
    for w in a.segments[Segment.CUSTOM_AGENT]:
        yield _generated(a, w, Segment.CUSTOM_AGENT)
    if a.project.documents:
        yield _generated(a, a.project.documents, Segment.PROJECT_FILES)
    for f, fate, rule, segment in a.project.fates:
        if f.kind is FileKind.IMAGE and a.project.fits:
            continue  # listed with the last user message, where it travels
        tokens = f.tokens if f.tokens is not None else 0
        yield Row(
            f.id,
            "file",
            segment if fate is not Fate.SEARCH_FILTER else None,
            tokens,
            fate,
            rule,
            ("project file",),
            key=f"project:{f.id}",
        )
    if a.project.read_file_list:
        yield _generated(a, a.project.read_file_list, Segment.PROJECT_FILES)
    for w in a.segments[Segment.FORGOTTEN_FILES]:
        yield _generated(a, w, Segment.FORGOTTEN_FILES)
    lu = a.segments[Segment.LAST_USER][0]
    yield from _history_row(a, lu, forgotten, image_rows)
    for w in a.converted.in_turn:
        yield _row(a, w, None, str(w.kind))
    for w in a.segments[Segment.REMINDER]:
        yield _generated(a, w, Segment.REMINDER)
    for m in a.branch.after_last_user:
        yield _left_out(a, m, Fate.AFTER_LAST_USER, "R-TURN-1")
    yield from (r for r in payload.prepared.rows if not r.key or r.key == "image_drop_notice")


def _stored_tokens(a: Assembly, text: str, tokens: int | None) -> int:
    return tokens if tokens is not None else a.meter.text(text)


def _generated(a: Assembly, w: Working, segment: Segment) -> Row:
    return Row(
        None,
        str(w.kind),
        segment,
        a.meter.of(w),
        Fate.GENERATED,
        GENERATED_RULES[w.origin],
        w.notes,
        key=w.key,
        text=w.text,
    )


def _row(a: Assembly, w: Working, ident: str | None, kind: str) -> Row:
    fated = a.fates.get(w.key) or Fated(Fate.KEPT, "R-ASM-4", Segment.HISTORY)
    return Row(
        ident,
        kind,
        fated.segment,
        a.meter.of(w),
        fated.fate,
        fated.rule,
        tuple(n for n in fated.notes),
        key=w.key,
        text=w.text,
    )


def _history_row(a: Assembly, w: Working, forgotten: set[str], image_rows: dict[str, Row]) -> Iterator[Row]:
    if w.origin == Origin.FILE:
        row = _row(a, w, w.file_id, "file")
        if w.file_id in forgotten and row.segment is None:
            row = Row(
                row.id,
                row.kind,
                Segment.FORGOTTEN_FILES,
                row.tokens,
                Fate.FORGOTTEN,
                "R-FILE-1",
                row.notes + (f"{row.fate} ({row.rule})",),
                key=row.key,
                text=row.text,
            )
        yield row
        return
    kind = "summary" if w.origin == Origin.SUMMARY else str(w.kind)
    row = _row(a, w, w.source_id, kind)
    yield row
    for n, img in enumerate(w.images):
        key = f"{w.key}#img{n}"
        if key in image_rows:
            yield image_rows[key]
        elif not img.project:
            yield Row(
                img.file_id,
                "file",
                None,
                a.meter.image(img),
                row.fate,
                row.rule,
                ("image on a message left out",),
                key=key,
            )


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


def _left_out(a: Assembly, m: StoredMessage, fate: Fate, rule: str) -> Row:
    """The row of a stored message that is not in the payload (no segment)."""
    return Row(
        m.id,
        str(m.role),
        None,
        _stored_tokens(a, m.text, m.tokens),
        fate,
        rule,
        key=message_key(m.id),
        text=m.text,
    )
