"""The decision record as rows: every fate and rule id a report shows is decided here.

Input: an `Assembly` and the rows translation decided (image caps and markers, by key).
Output: `rows`, one `Row` per branch message, working message, file and in-flight message
in context order (docs/rules.md#report-keys), and the fates decided by what a message is
rather than by budget: `SUMMARIZED` (R-TREE-3), `AFTER_LAST_USER` (R-TURN-1),
`EMPTY_OMITTED` (R-CONV-2), a summarized message's forgotten file (R-FILE-1) and each
generated message's rule (`generated`). Reports (`explain`, `budget`, `diff`, the page)
render these rows and never decide a fate or a rule themselves.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from ctxkit.assembly.assemble import Assembly
from ctxkit.assembly.fates import Fated
from ctxkit.history.working import Fate, MessageKey, Origin, Row, Segment, Working, image_key, project_file_key
from ctxkit.loading.domain import FileKind, StoredMessage

# The rule behind each message the assembly generates, by what it was made from.
GENERATED_RULES: dict[str, str] = {
    Origin.SYSTEM: "R-SYS-1",
    Origin.CUSTOM_AGENT: "R-SYS-5",
    Origin.DOCUMENTS: "R-PROJ-2",
    Origin.PROJECT_READ_FILE: "R-PROJ-1",
    Origin.FORGOTTEN_FILES: "R-FILE-2",
    Origin.REMINDER: "R-REM-1",
}
SUMMARIZED = Fated(Fate.SUMMARIZED, "R-TREE-3", None)
AFTER_LAST_USER = Fated(Fate.AFTER_LAST_USER, "R-TURN-1", None)
EMPTY_OMITTED = Fated(Fate.FIXUP, "R-CONV-2", None, ("empty assistant message omitted: providers reject it",))
SUMMARIZED_FILE_FORGOTTEN = Fated(
    Fate.FORGOTTEN, "R-FILE-1", Segment.FORGOTTEN_FILES, ("attached to a summarized message (R-TREE-3)",)
)
KEPT = Fated(Fate.KEPT, "R-ASM-4", Segment.HISTORY)


def generated(w: Working, segment: Segment | None = None) -> Fated:
    """A message the assembly made (system prompt, project parts, forgotten-files list, reminder)."""
    return Fated(Fate.GENERATED, GENERATED_RULES.get(w.origin, ""), segment, w.notes)


def decided(a: Assembly, w: Working) -> Fated:
    """The fate of a message taken from the conversation: the record's, else kept (R-ASM-4)."""
    fated: Fated | None = a.fates.get(w.key)
    return fated or KEPT


def rows(a: Assembly, translated: Mapping[str, Row]) -> Iterator[Row]:
    """Every row but the ones translation adds after the messages (`translated`: its rows by key,
    which replace an image's row where translation decided the image's fate)."""
    forgotten = {f.id for f, _ in a.forgotten}
    for w in a.segments[Segment.SYSTEM]:
        yield _generated(a, w, Segment.SYSTEM)
    for m in a.branch.summarized:
        yield _left_out(a, m, SUMMARIZED)
        for fid in m.files:
            fated = SUMMARIZED_FILE_FORGOTTEN if fid in forgotten else SUMMARIZED
            yield _fated_row(fid, "file", 0, fated, key=MessageKey(m.id, f":{fid}"))
    for w in a.converted.history:
        yield from _history_row(a, w, forgotten, translated)
    produced = {w.source_id for w in a.converted.history}
    for m in a.branch.live:
        if m.id not in produced and m is not a.branch.last_user:
            yield _fated_row(m.id, str(m.role), 0, EMPTY_OMITTED, key=MessageKey(m.id))
    for w in a.segments[Segment.CUSTOM_AGENT]:
        yield _generated(a, w, Segment.CUSTOM_AGENT)
    if a.project.documents:
        yield _generated(a, a.project.documents, Segment.PROJECT_FILES)
    for f, fate, rule, segment in a.project.fates:
        if f.kind is FileKind.IMAGE and a.project.fits:
            continue  # listed with the last user message, where it travels
        tokens = f.tokens if f.tokens is not None else 0
        shown = segment if fate is not Fate.SEARCH_FILTER else None
        yield Row(f.id, "file", shown, tokens, fate, rule, ("project file",), key=project_file_key(f.id))
    if a.project.read_file_list:
        yield _generated(a, a.project.read_file_list, Segment.PROJECT_FILES)
    for w in a.segments[Segment.FORGOTTEN_FILES]:
        yield _generated(a, w, Segment.FORGOTTEN_FILES)
    lu = a.segments[Segment.LAST_USER][0]
    yield from _history_row(a, lu, forgotten, translated)
    for w in a.converted.in_turn:
        yield _row(a, w, None, str(w.kind))
    for w in a.segments[Segment.REMINDER]:
        yield _generated(a, w, Segment.REMINDER)
    for m in a.branch.after_last_user:
        yield _left_out(a, m, AFTER_LAST_USER)


def _fated_row(ident: str | None, kind: str, tokens: int, fated: Fated, *, key: str, text: str = "") -> Row:
    return Row(ident, kind, fated.segment, tokens, fated.fate, fated.rule, fated.notes, key=key, text=text)


def _generated(a: Assembly, w: Working, segment: Segment) -> Row:
    return _fated_row(None, str(w.kind), a.meter.of(w), generated(w, segment), key=w.key, text=w.text)


def _row(a: Assembly, w: Working, ident: str | None, kind: str) -> Row:
    return _fated_row(ident, kind, a.meter.of(w), decided(a, w), key=w.key, text=w.text)


def _left_out(a: Assembly, m: StoredMessage, fated: Fated) -> Row:
    """The row of a stored message that is not in the payload (no segment)."""
    tokens = m.tokens if m.tokens is not None else a.meter.text(m.text)
    return _fated_row(m.id, str(m.role), tokens, fated, key=MessageKey(m.id), text=m.text)


def _history_row(a: Assembly, w: Working, forgotten: set[str], translated: Mapping[str, Row]) -> Iterator[Row]:
    if w.origin == Origin.FILE:
        row = _row(a, w, w.file_id, "file")
        if w.file_id in forgotten and row.segment is None:  # R-FILE-1: its message was left out
            notes = row.notes + (f"{row.fate} ({row.rule})",)
            row = Row(
                row.id,
                row.kind,
                Segment.FORGOTTEN_FILES,
                row.tokens,
                Fate.FORGOTTEN,
                "R-FILE-1",
                notes,
                key=row.key,
                text=row.text,
            )
        yield row
        return
    kind = "summary" if w.origin == Origin.SUMMARY else str(w.kind)
    row = _row(a, w, w.source_id, kind)
    yield row
    for n, img in enumerate(w.images):
        key = image_key(w.key, n)
        if key in translated:
            yield translated[key]
        elif not img.project:
            notes = ("image on a message left out",)
            tokens = a.meter.image(img)
            yield Row(img.file_id, "file", None, tokens, row.fate, row.rule, notes, key=key, attached_to=w.key)
