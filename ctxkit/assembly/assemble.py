"""Order and budget: working messages → the assembled context (R-ASM, R-FILE).

Input: `Effective` settings. Output: `Assembly` — the messages in final order
(R-ASM-7), the segment totals, and the decision record (a fate and a rule for
every message). Truncation converts and counts newest-first and stops at the first
misfit, so the dropped part of a long history is never converted nor tokenized: its
fates are worked out when a report asks (see `fates`).
"""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from decimal import ROUND_FLOOR, Decimal
from typing import Protocol

from ctxkit.assembly import project as proj
from ctxkit.assembly import system as sysp
from ctxkit.assembly.fates import DroppedHistory, Fated, Fates, Older, fate_all
from ctxkit.assembly.files import Eviction, forgotten_files
from ctxkit.assembly.truncation import (
    Answered,
    Truncation,
    drop_orphans,
    kept_fates,
    last_n_cut,
    tail_tokens,
    truncate,
)
from ctxkit.counting.measure import Meter, meter_for
from ctxkit.errors import RuleError
from ctxkit.history import convert as conv
from ctxkit.history import tree
from ctxkit.history.working import Fate, Kind, Origin, Record, Segment, Working
from ctxkit.loading.config import Effective
from ctxkit.loading.domain import FileRecord
from ctxkit.output import plural


@dataclass(slots=True)
class Assembly:
    eff: Effective
    meter: Meter
    branch: tree.Branch
    converted: conv.Converted
    messages: list[Working]  # final order
    segments: dict[Segment, list[Working]]
    fates: Fates  # by working-message key
    history_budget: int
    available: int
    reserved: int
    project: proj.ProjectPart
    dropped: Sequence[Working]  # older history left out (last-n cut, truncated or evicted)
    forgotten: list[tuple[FileRecord, bool]]  # (file, size known)
    clock_dependent: bool
    record: Record = field(default_factory=Record)

    def tokens(self, segment: Segment) -> int:
        if segment == Segment.PROJECT_FILES:
            return self.project.tokens(self.meter)
        return sum(self.meter.of(w) for w in self.segments.get(segment, ()))


def floor_ratio(value: int, ratio: Decimal) -> int:
    """floor(value × ratio), exact on the decimal as written (R-ASM-1, R-FIX-3): the one decimal floor."""
    return int((Decimal(value) * ratio).to_integral_value(rounding=ROUND_FLOOR))


def available_tokens(max_input: int, margin: Decimal) -> int:
    """R-ASM-1: floor(max × (1 − margin)), exact on the decimals as written."""
    return floor_ratio(max_input, 1 - margin)


def today(eff: Effective) -> str:
    """R-SYS-2: the date the system prompt shows: the fixture's `now`, else the real clock."""
    return sysp.format_date(eff.now or datetime.now(UTC))


def reserved_tokens(eff: Effective, meter: Meter, date: str | None = None) -> int:
    """R-SYS-6: the worst-case system texts; assembly and compression both reserve this."""
    return sysp.reserved_tokens(eff, meter.text, today(eff) if date is None else date)


class Incremental(Protocol):
    """What replay carries from one call to the next (`replay.state.State`, R-RPL-9): each
    method gives what the plain step named in its docstring gives, from work shared by the
    calls. `assemble` without it runs `Afresh`, the plain steps: the rules as written."""

    def meter(self, eff: Effective) -> Meter:
        """A `Meter` for `eff`."""
        ...

    def branch(self, eff: Effective) -> tree.Branch:
        """`tree.select(eff.fixture, eff.leaf)`."""
        ...

    def converted(self, branch: tree.Branch, eff: Effective) -> conv.Converted:
        """`conv.convert(branch, eff.fixture, eff.templates)`."""
        ...

    def fixed_parts(self, eff: Effective, meter: Meter, record: Record) -> Fixed:
        """`fixed_parts(eff, meter, record)`."""
        ...

    def truncate(self, converted: conv.Converted, first: int, room: int, meter: Meter) -> Truncation:
        """`truncate(converted, first, room, meter)`."""
        ...

    def cacheable(self, ws: list[Working]) -> list[Working]:
        """`[w.with_(cacheable=True) for w in ws]`."""
        ...

    def drop_orphans(self, kept: list[Working], in_turn: list[Working]) -> Answered:
        """`drop_orphans(kept, in_turn)`."""
        ...

    def decided(
        self, head: list[Working], evicted: list[Working], orphans: list[Working], kept: list[Working]
    ) -> MutableMapping[str, Fated]:
        """`decided(head, evicted, orphans, kept_fates(kept))`: a new mapping, in the record's order,
        the caller's to add to."""
        ...


@dataclass(frozen=True, slots=True)
class Fixed:
    """The parts that do not depend on the history (R-ASM-2): generated texts and the project,
    and the history budget they leave of the available tokens."""

    system: Working | None
    agent: Working | None
    reminder: Working | None
    project: proj.ProjectPart
    reserved: int
    clock_dependent: bool
    available: int = 0  # R-ASM-1
    budget: int = 0  # R-ASM-2: what the parts leave of `available`

    def tokens(self, meter: Meter) -> int:
        generated = (self.system, self.agent, self.reminder)
        return sum(meter.of(w) for w in generated if w) + self.project.tokens(meter)


class Afresh:
    """The plain steps, each run for this one assembly: what `assemble` runs without a state."""

    def meter(self, eff: Effective) -> Meter:
        return meter_for(eff)

    def branch(self, eff: Effective) -> tree.Branch:
        return tree.select(eff.fixture, eff.leaf)

    def converted(self, branch: tree.Branch, eff: Effective) -> conv.Converted:
        return conv.convert(branch, eff.fixture, eff.templates)

    def fixed_parts(self, eff: Effective, meter: Meter, record: Record) -> Fixed:
        return fixed_parts(eff, meter, record)

    def truncate(self, converted: conv.Converted, first: int, room: int, meter: Meter) -> Truncation:
        return truncate(converted, first, room, meter)

    def cacheable(self, ws: list[Working]) -> list[Working]:
        return [w.with_(cacheable=True) for w in ws]

    def drop_orphans(self, kept: list[Working], in_turn: list[Working]) -> Answered:
        return drop_orphans(kept, in_turn)

    def decided(
        self, head: list[Working], evicted: list[Working], orphans: list[Working], kept: list[Working]
    ) -> MutableMapping[str, Fated]:
        return decided(head, evicted, orphans, kept_fates(kept))


def assemble(eff: Effective, *, state: Incremental | None = None) -> Assembly:
    """The pipeline of assembly: each step below returns a small value; only this function combines them.

    `state`: a replay's (see `Incremental`); the assembly is the same without it."""
    steps: Incremental = state if state is not None else Afresh()
    meter = steps.meter(eff)
    record = Record()
    branch = steps.branch(eff)
    converted = steps.converted(branch, eff)
    last_user = converted.last_user
    if last_user is None:
        raise RuleError(f"{eff.fixture.source}: no user message on the branch: nothing to answer (R-ASM-3)")
    fixed = steps.fixed_parts(eff, meter, record)
    if fixed.project.images:
        last_user = last_user.with_(images=last_user.images + fixed.project.images)
    first = last_n_cut(converted, eff.settings.last_n_user_messages)
    tail = [last_user, *converted.in_turn]
    room = fixed.budget - tail_tokens(eff, meter, tail, fixed.budget)
    cut = steps.truncate(converted, first, room, meter)
    eviction = _evict_for_files(eff, meter, converted, cut, room, record)
    answered = steps.drop_orphans(eviction.kept, tail[1:])
    kept = steps.cacheable(answered.kept)
    older = Older(converted, cut=first, end=cut.end)
    fates = steps.decided(cut.head, eviction.evicted, answered.orphans, kept)
    fates[last_user.key] = _tail_fate(_LAST_USER, last_user.notes)
    for w in answered.in_turn:
        fates[w.key] = _tail_fate(_IN_TURN, w.notes)
    segments = _segments(fixed, kept, eviction.listing, last_user, answered.in_turn)
    left_out = cut.head + eviction.evicted if eviction.evicted else cut.head  # read, never changed
    return Assembly(
        eff=eff,
        meter=meter,
        branch=branch,
        converted=converted,
        messages=_in_order(segments),
        segments=segments,
        fates=Fates(fates, older, left_out),
        history_budget=fixed.budget,
        available=fixed.available,
        reserved=fixed.reserved,
        project=fixed.project,
        dropped=DroppedHistory(older, left_out),
        forgotten=eviction.found,
        clock_dependent=fixed.clock_dependent,
        record=record,
    )


_LAST_USER = Fated(Fate.KEPT, "R-ASM-3", Segment.LAST_USER)  # R-ASM-3's fates without notes (most): one each
_IN_TURN = Fated(Fate.KEPT, "R-ASM-3", Segment.IN_TURN)


def _tail_fate(shared: Fated, notes: tuple[str, ...]) -> Fated:
    """R-ASM-3's fate of a message of the tail: `shared` (a frozen value) when it has no notes."""
    return shared if not notes else Fated(shared.fate, shared.rule, shared.segment, notes)


def _in_order(segments: dict[Segment, list[Working]]) -> list[Working]:
    """The segments' messages one after another (lists extended in C: cheaper than a chain)."""
    found: list[Working] = []
    for ws in segments.values():
        found += ws
    return found


def _evict_for_files(
    eff: Effective, meter: Meter, converted: conv.Converted, cut: Truncation, room: int, record: Record
) -> Eviction:
    """R-FILE-1…3 when the model has read_file: the list of forgotten files, and the older
    history evicted to make it fit; otherwise the kept history as truncation left it."""
    if "read_file" not in eff.tool_names:
        return Eviction(kept=cut.kept, evicted=[], listing=None, found=[], left_out=0)
    known = converted.file_ids(cut.end) | {w.file_id for w in cut.head if w.file_id}
    eviction = forgotten_files(eff, meter, converted, cut.kept, known, room)
    if eviction.left_out:
        record.warn(
            f"{eviction.left_out} forgotten file(s) were left out of the read_file list: "
            "it does not fit the history budget (R-FILE-3)"
        )
    return eviction


def _segments(
    fixed: Fixed, kept: list[Working], listing: Working | None, last_user: Working, in_turn: list[Working]
) -> dict[Segment, list[Working]]:
    """R-ASM-7: the context's segments in their final order."""
    return {
        Segment.SYSTEM: [fixed.system] if fixed.system else [],
        Segment.HISTORY: kept,
        Segment.CUSTOM_AGENT: [fixed.agent] if fixed.agent else [],
        Segment.PROJECT_FILES: [w for w in (fixed.project.documents, fixed.project.read_file_list) if w],
        Segment.FORGOTTEN_FILES: [listing] if listing else [],
        Segment.LAST_USER: [last_user],
        Segment.IN_TURN: in_turn,
        Segment.REMINDER: [fixed.reminder] if fixed.reminder else [],
    }


def fixed_parts(eff: Effective, meter: Meter, record: Record) -> Fixed:
    """Turn state (R-TURN-2), system texts (R-SYS), the project (R-PROJ) and the reminder (R-REM),
    and the history budget they leave (R-ASM-1, R-ASM-2)."""
    turn = sysp.turn_state(eff.fixture)
    date = today(eff)
    reserved = reserved_tokens(eff, meter, date)
    project = proj.build(eff, meter, reserved)
    citations = turn.searched or turn.just_ran_web_search or project.cite
    texts = sysp.build(eff, citations=citations, tools=eff.tool_names, date=date)
    if texts.clock_dependent and eff.now is None:
        record.warn(
            "no `now` in the fixture: the date comes from the real clock, so this output is not reproducible (R-SYS-2)"
        )
    reminder_text = sysp.reminder_text(eff, turn, citations=citations)
    reminder = None
    if reminder_text is not None:
        wrapped = meter.text(sysp.wrap_reminder(reminder_text))
        reminder = Working("reminder", Kind.REMINDER, reminder_text, wrapped, origin=Origin.REMINDER)
    parts = Fixed(
        system=_generated(Origin.SYSTEM, Kind.SYSTEM, texts.system, meter, cacheable=True),
        agent=_generated(Origin.CUSTOM_AGENT, Kind.USER, texts.agent, meter),
        reminder=reminder,
        project=project,
        reserved=reserved,
        clock_dependent=texts.clock_dependent,
    )
    available = available_tokens(eff.max_input_tokens, eff.settings.safety_margin)
    return replace(parts, available=available, budget=history_budget(eff, meter, parts, available))


def history_budget(eff: Effective, meter: Meter, fixed: Fixed, available: int) -> int:
    """R-ASM-2: what the fixed parts leave of the available tokens; a rule error when they do not fit."""
    need = fixed.tokens(meter)
    if need > available:
        parts = {"system": fixed.system, "custom agent": fixed.agent, "reminder": fixed.reminder}
        raise RuleError(
            f"{eff.fixture.source}: not enough tokens for the fixed parts: they need {plural(need, 'token')} "
            f"but only {available} are available (R-ASM-2); largest: "
            + _largest(parts, meter, fixed.project.tokens(meter))
        )
    return available - need


def decided(
    head: list[Working], evicted: list[Working], orphans: list[Working], kept: dict[str, Fated]
) -> dict[str, Fated]:
    """The fates decided one by one, in history order (the units left out whole are recorded as
    two runs, see `Fates`): the start of the unit where truncation stopped (R-ASM-4), the
    evictions (R-FILE-3), the orphan results (R-ASM-8), then the kept history (`kept`, a dict
    this takes over: most calls leave nothing out one by one)."""
    if not head and not evicted and not orphans:
        return kept
    found: dict[str, Fated] = {}
    fate_all(found, head, Fate.TRUNCATED, "R-ASM-4")
    fate_all(found, evicted, Fate.TRUNCATED, "R-FILE-3", "evicted to make room for the read_file list")
    found.update({w.key: Fated(Fate.ORPHAN, "R-ASM-8", None, w.notes) for w in orphans})
    found.update(kept)
    return found


def _generated(origin: Origin, kind: Kind, text: str | None, meter: Meter, cacheable: bool = False) -> Working | None:
    """A message the assembly makes; its key is what it was made from (`system`, `custom_agent`)."""
    if text is None:
        return None
    return Working(str(origin), kind, text, meter.text(text), cacheable=cacheable, origin=origin)


def _largest(parts: dict[str, Working | None], meter: Meter, project_tokens: int) -> str:
    sizes = {name: meter.of(w) for name, w in parts.items() if w}
    sizes["project files"] = project_tokens
    name = max(sizes, key=lambda n: sizes[n])
    return f"{name} ({plural(sizes[name], 'token')})"
