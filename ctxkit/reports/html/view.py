"""What the report page shows, as plain values: a pipeline result → header, blocks, tables.

Input: a `pipeline.Result` (or, for a fixture that fails by rule, the resolved
settings and the error). Output: `PageView` — the numbers of `budget` and `explain`
and the payload messages, each payload message tied to its explain row(s) so the
seat map can draw it. Nothing here decides policy: it reads the decision record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxkit import providers
from ctxkit.history.working import Fate, Origin, Row, Segment
from ctxkit.loading.config import Effective
from ctxkit.output import plural
from ctxkit.pipeline import Result
from ctxkit.reports.budget import report as budget_report
from ctxkit.reports.explain import rows as explain_rows

# Image types a browser shows from a data: URL without running anything.
THUMBNAIL_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


@dataclass(frozen=True, slots=True)
class Header:
    name: str
    source: str
    provider: str
    model: str
    window: int
    tokenizer: str
    safety_margin: str
    available: int | None
    clock: str | None
    warnings: tuple[str, ...] = ()
    fixups: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SegmentShare:
    """The share of one segment in a block (a project image rides on the last user message)."""

    segment: str
    tokens: int


@dataclass(frozen=True, slots=True)
class Block:
    """One message as the seat map draws it: in the payload, or left out of it."""

    ident: str | None
    kind: str
    tokens: int
    fate: str
    rule: str
    parts: tuple[SegmentShare, ...]
    notes: tuple[str, ...] = ()
    count: int = 1  # > 1: a run of left-out messages drawn as one block
    last_ident: str | None = None

    @property
    def segment(self) -> str:
        return self.parts[0].segment if self.parts else ""

    @property
    def label(self) -> str:
        if self.count > 1:
            who = f"{plural(self.count, 'message', grouped=True)} {self.ident or '-'} … {self.last_ident or '-'}"
        else:
            who = f"id {self.ident}" if self.ident is not None else "generated"
        where = " + ".join(f"{p.segment} {p.tokens:,}" for p in self.parts) if len(self.parts) > 1 else self.segment
        tokens = plural(self.tokens, "token", grouped=True)
        text = f"{who} · {self.kind} · {where} · {tokens} · {self.fate} · {self.rule}"
        return text + "".join(f" · {n}" for n in self.notes)


@dataclass(frozen=True, slots=True)
class WirePart:
    text: str = ""
    image_url: str | None = None  # a data: URL, only for THUMBNAIL_TYPES
    image_note: str = ""


@dataclass(frozen=True, slots=True)
class WireView:
    index: int
    role: str
    block: Block
    cache: str  # "cache breakpoint" (Anthropic's cache_control), "cache prefix" (cached automatically), or ""
    parts: tuple[WirePart, ...]
    calls: tuple[tuple[str, str, str], ...]  # (id, name, arguments as JSON)
    tool_call_id: str | None


@dataclass(frozen=True, slots=True)
class Fold:
    """The middle of a long run of explain rows with one fate: one table line, the rows as text."""

    fate: str
    rule: str
    rows: tuple[Row, ...]

    @property
    def summary(self) -> str:
        first, last = self.rows[0], self.rows[-1]
        tokens = sum(r.tokens for r in self.rows)
        return (
            f"{len(self.rows):,} more {self.fate} rows ({self.rule}), {first.id or '-'} … {last.id or '-'}, "
            f"{plural(tokens, 'token', grouped=True)}"
        )

    @property
    def text(self) -> str:
        return "\n".join(
            "  ".join((r.id or "-", r.kind, str(r.segment or "-"), f"{r.tokens:,}", "; ".join(r.notes))).rstrip()
            for r in self.rows
        )


@dataclass(frozen=True, slots=True)
class PageView:
    header: Header
    budget: dict[str, Any] | None = None
    blocks: tuple[Block, ...] = ()  # one per payload message, in payload order
    left_out: tuple[Block, ...] = ()
    explain: tuple[Row, ...] = ()
    explain_lines: tuple[Row | Fold, ...] = ()
    payload: tuple[WireView, ...] = ()
    error: str | None = None
    fates: tuple[str, ...] = field(default_factory=lambda: tuple(str(f) for f in Fate))


def header(eff: Effective, *, warnings: list[str], fixups: list[str], available: int | None) -> Header:
    fixture = eff.fixture
    return Header(
        name=fixture.name or Path(fixture.source).name,
        source=fixture.source,
        provider=str(eff.provider),
        model=eff.model,
        window=eff.max_input_tokens,
        tokenizer=eff.tokenizer,
        safety_margin=str(eff.settings.safety_margin),
        available=available,
        clock=eff.now.isoformat().replace("+00:00", "Z") if eff.now else None,
        warnings=tuple(warnings),
        fixups=tuple(fixups),
    )


def build(result: Result, *, warnings: list[str], budget: dict[str, Any] | None = None) -> PageView:
    """The whole page's data for an assembly that succeeded (`budget`: its budget report, when at hand)."""
    data = budget if budget is not None else budget_report(result)
    rows = explain_rows(result)
    blocks = payload_blocks(result)
    fixups = [n for r in rows if r.fate is Fate.FIXUP for n in r.notes]
    head = header(result.assembly.eff, warnings=warnings, fixups=fixups, available=data["available_tokens"])
    return PageView(
        header=head,
        budget=data,
        blocks=tuple(blocks),
        left_out=tuple(left_out(rows)),
        explain=tuple(rows),
        explain_lines=tuple(fold(rows)),
        payload=tuple(wire_views(result, blocks)),
    )


def failed(eff: Effective, error: str, *, warnings: list[str]) -> PageView:
    """A fixture that fails by rule: its header and the error, nothing assembled."""
    from ctxkit.assembly.assemble import available_tokens

    available = available_tokens(eff.max_input_tokens, eff.settings.safety_margin)
    return PageView(header=header(eff, warnings=warnings, fixups=[], available=available), error=error)


def payload_blocks(result: Result) -> list[Block]:
    """One block per payload message, read off the assembly's record (no explain rows: replay
    draws every call this way). A project image on the last user message counts in its own part."""
    from ctxkit.assembly.decisions import generated

    a = result.assembly
    by_key = {w.key: w for w in a.messages}
    segment_of = {w.key: str(name) for name, ws in a.segments.items() for w in ws}
    notices = {r.key: r for r in result.payload.prepared.rows if r.key}
    blocks = []
    for m in result.payload.prepared.messages:
        w = by_key.get(m.key)
        fated = a.fates.get(m.key)
        if w is None:  # made by translation (the image-drop notice), which records its row
            row = notices[m.key]
            seg = str(row.segment or Segment.REMINDER)
            blocks.append(
                Block(None, row.kind, row.tokens, str(row.fate), row.rule, (SegmentShare(seg, row.tokens),), row.notes)
            )
            continue
        parts = [SegmentShare(segment_of.get(w.key, str(Segment.PROJECT_FILES)), a.meter.of(w))]
        if fated is not None:
            parts[0] = SegmentShare(str(fated.segment or parts[0].segment), parts[0].tokens)
        else:
            fated = generated(w)
        fate, rule, notes = str(fated.fate), fated.rule, fated.notes
        project = sum(a.meter.image(i) for i in w.images if i.project)
        if project:
            parts.append(SegmentShare(str(Segment.PROJECT_FILES), project))
        ident = w.file_id if w.origin == Origin.FILE else w.source_id
        kind = "file" if w.origin == Origin.FILE else "summary" if w.origin == Origin.SUMMARY else str(w.kind)
        blocks.append(Block(ident, kind, sum(p.tokens for p in parts), fate, rule, tuple(parts), notes))
    return blocks


FOLD_MIN, FOLD_KEEP = 200, 20  # runs longer than FOLD_MIN show FOLD_KEEP rows at each end


def fold(rows: list[Row]) -> list[Row | Fold]:
    """Explain rows for the table: a long run of one fate keeps its ends and folds its middle.

    Thousands of table rows make a page slow to open (R-HTML-3); a folded run
    still lists every row, as text inside a closed `<details>`."""
    out: list[Row | Fold] = []
    start = 0
    while start < len(rows):
        end = start
        while end < len(rows) and rows[end].fate is rows[start].fate and rows[end].rule == rows[start].rule:
            end += 1
        run = rows[start:end]
        if len(run) > FOLD_MIN:
            middle = tuple(run[FOLD_KEEP:-FOLD_KEEP])
            out += run[:FOLD_KEEP]
            out.append(Fold(str(run[0].fate), run[0].rule, middle))
            out += run[-FOLD_KEEP:]
        else:
            out += run
        start = end
    return out


LEFT_OUT_MAX = 300  # left-out rows drawn one by one up to this many; longer lists are drawn as runs


def left_out(rows: list[Row]) -> list[Block]:
    """Rows not sent (dropped, summarized, capped, …) with tokens, drawn beside the window."""
    out = [r for r in rows if r.segment is None and r.tokens > 0 and r.fate is not Fate.FIXUP]
    blocks = [
        Block(r.id, r.kind, r.tokens, str(r.fate), r.rule, (SegmentShare(_left_segment(r), r.tokens),), r.notes)
        for r in out
    ]
    if len(blocks) <= LEFT_OUT_MAX:
        return blocks
    runs: list[Block] = []
    for b in blocks:
        prev = runs[-1] if runs else None
        if prev is not None and prev.fate == b.fate and prev.rule == b.rule:
            runs[-1] = Block(
                prev.ident,
                "messages",
                prev.tokens + b.tokens,
                prev.fate,
                prev.rule,
                (SegmentShare(prev.segment, prev.tokens + b.tokens),),
                count=prev.count + 1,
                last_ident=b.ident,
            )
        else:
            runs.append(b)
    return runs


def _left_segment(r: Row) -> str:
    return str(Segment.HISTORY if r.kind != "file" else Segment.FORGOTTEN_FILES)


def wire_views(result: Result, blocks: list[Block]) -> list[WireView]:
    import json

    out = []
    prepared = result.payload.prepared
    # R-TR-8: only Anthropic marks a breakpoint (on the prefix's last message); the other
    # providers cache a matching prefix by themselves, so their messages are just in it.
    marks = providers.wire_format(result.payload.provider) == "anthropic"
    breakpoint = prepared.cache_prefix_messages - 1 if marks else -1
    for n, (m, block) in enumerate(zip(prepared.messages, blocks, strict=True)):
        parts = []
        for p in m.parts:
            if p.image is None:
                if p.text:
                    parts.append(WirePart(text=p.text))
                continue
            size = len(p.image.data or b"")
            note = f"image {p.image.file_id} · {p.mime or 'unknown type'} · {size:,} bytes"
            url = None
            if p.image.data is not None and p.mime in THUMBNAIL_TYPES:
                url = p.data_url
            parts.append(WirePart(image_url=url, image_note=note))
        calls = tuple((c.id, c.name, json.dumps(c.args, ensure_ascii=False, indent=2)) for c in m.tool_calls)
        cache = "cache breakpoint" if n == breakpoint else "cache prefix" if m.cacheable else ""
        out.append(WireView(n, m.role, block, cache, tuple(parts), calls, m.tool_call_id))
    return out
