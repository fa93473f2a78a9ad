"""Order and budget: working messages → the assembled context (R-ASM, R-FILE).

Input: `Effective` settings. Output: `Assembly` — the messages in final order
(R-ASM-7), the segment totals, and the decision record (a fate and a rule for
every message). Truncation counts newest-first and stops at the first misfit,
so the dropped part of a long history is never tokenized.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import ROUND_FLOOR, Decimal
from operator import attrgetter

from ctxkit.assembly import project as proj
from ctxkit.assembly import system as sysp
from ctxkit.counting.measure import Meter
from ctxkit.errors import RuleError
from ctxkit.history import convert as conv
from ctxkit.history import tree
from ctxkit.history.working import Fate, Kind, Origin, Record, Segment, Working
from ctxkit.loading.config import Effective
from ctxkit.loading.domain import FileKind, FileRecord
from ctxkit.output import plural


@dataclass(frozen=True, slots=True)
class Fated:
    fate: Fate
    rule: str
    segment: str | None
    notes: tuple[str, ...] = ()


@dataclass(slots=True)
class Assembly:
    eff: Effective
    meter: Meter
    branch: tree.Branch
    converted: conv.Converted
    messages: list[Working]  # final order
    segments: dict[str, list[Working]]
    fates: dict[str, Fated]  # by working-message key
    history_budget: int
    available: int
    reserved: int
    project: proj.ProjectPart
    dropped: list[Working]  # older history left out (truncated or last-n cut)
    forgotten: list[tuple[FileRecord, bool]]  # (file, size known)
    forgotten_left_out: int
    clock_dependent: bool
    record: Record = field(default_factory=Record)

    def tokens(self, segment: str) -> int:
        if segment == Segment.PROJECT_FILES:
            return self.project.tokens(self.meter)
        return sum(self.meter.of(w) for w in self.segments.get(segment, ()))


def floor_ratio(value: int, ratio: Decimal) -> int:
    """floor(value × ratio), exact on the decimal as written (R-ASM-1, R-FIX-3): the one decimal floor."""
    return int((Decimal(value) * ratio).to_integral_value(rounding=ROUND_FLOOR))


def available_tokens(max_input: int, margin: Decimal) -> int:
    """R-ASM-1: floor(max × (1 − margin)), exact on the decimals as written."""
    return floor_ratio(max_input, 1 - margin)


@dataclass(slots=True)
class Shared:
    """Work shared by the calls of one replay (R-RPL-9): branch lookups and each stored
    message's conversion. Without it `assemble` does everything afresh (same result)."""

    paths: tree.Paths = field(default_factory=tree.Paths)
    conversions: conv.Conversions = field(default_factory=conv.Conversions)


def assemble(eff: Effective, *, shared: Shared | None = None) -> Assembly:
    fixture = eff.fixture
    meter = Meter(eff.tokenizer, supports_images=eff.supports_images, templates=eff.templates)
    record = Record()
    branch = tree.select(fixture, eff.leaf, paths=shared.paths if shared else None)
    converted = conv.convert(branch, fixture, eff.templates, memo=shared.conversions if shared else None)
    if converted.last_user is None:
        raise RuleError(f"{fixture.source}: no user message on the branch: nothing to answer (R-ASM-3)")
    turn = sysp.turn_state(fixture)
    now = eff.now
    date = sysp.format_date(now or datetime.now(UTC))

    reserved = sysp.reserved_tokens(eff, meter.text, date)
    project = proj.build(eff, meter, reserved)
    citations = turn.searched or turn.just_ran_web_search or project.cite
    texts = sysp.build(eff, citations=citations, tools=eff.tool_names, date=date)
    clock = texts.clock_dependent
    if clock and now is None:
        record.warn(
            "no `now` in the fixture: the date comes from the real clock, so this output is not reproducible (R-SYS-2)"
        )
    reminder_text = sysp.reminder_text(eff, turn, citations=citations)

    system = _generated("system", Kind.SYSTEM, texts.system, meter, cacheable=True)
    agent = _generated("custom_agent", Kind.USER, texts.agent, meter)
    reminder = None
    if reminder_text is not None:
        reminder = Working(
            "reminder",
            Kind.REMINDER,
            reminder_text,
            meter.text(sysp.wrap_reminder(reminder_text)),
            origin=Origin.REMINDER,
        )

    last_user = converted.last_user
    if project.images:
        last_user = last_user.with_(images=last_user.images + project.images)
    available = available_tokens(eff.max_input_tokens, eff.settings.safety_margin)
    fixed = sum(meter.of(w) for w in (system, agent, reminder) if w) + project.tokens(meter)
    budget = available - fixed
    if budget < 0:
        raise RuleError(
            f"{fixture.source}: not enough tokens for the fixed parts: they need {plural(fixed, 'token')} "
            f"but only {available} are available (R-ASM-2); largest: "
            + _largest({"system": system, "custom agent": agent, "reminder": reminder}, meter, project.tokens(meter))
        )
    fates: dict[str, Fated] = {}
    history = list(converted.history)
    cut = _last_n_cut(history, eff.settings.last_n_user_messages, last_user)
    _fate_all(fates, history[:cut], Fate.LAST_N_CUT, "R-ASM-5")
    history = history[cut:]
    tail = [last_user, *converted.in_turn]
    tail_tokens = sum(meter.of(w) for w in tail)
    if tail_tokens > budget:
        raise RuleError(
            f"{fixture.source}: the last user message and this turn's messages need "
            f"{plural(tail_tokens, 'token')} but the history budget is {budget} (R-ASM-3); "
            f"largest: {_largest_message(tail, meter)}"
        )
    start = _truncate(history, budget - tail_tokens, meter)
    kept, dropped = history[start:], list(converted.history[:cut]) + history[:start]
    _fate_all(fates, history[:start], Fate.TRUNCATED, "R-ASM-4")

    forgotten: list[tuple[FileRecord, bool]] = []
    listing: Working | None = None
    left_out = 0
    if "read_file" in eff.tool_names:
        kept, listing, forgotten, left_out = _forgotten_files(
            eff, meter, converted, kept, dropped, budget - tail_tokens, fates
        )
        if left_out:
            record.warn(
                f"{left_out} forgotten file(s) were left out of the read_file list: "
                "it does not fit the history budget (R-FILE-3)"
            )

    announced: set[str] = set()
    final_kept: list[Working] = []
    final_tail: list[Working] = []
    for group, out in ((kept, final_kept), (tail[1:], final_tail)):
        for w in group:
            if w.kind is Kind.TOOL and w.tool_call_id not in announced:
                fates[w.key] = Fated(Fate.ORPHAN, "R-ASM-8", None, w.notes)
                continue
            announced.update(c.id for c in w.tool_calls)
            out.append(w)
    final_kept = [w.with_(cacheable=True) for w in final_kept]
    for w in final_kept:
        if w.key not in fates:
            fate = Fate.PLACEHOLDER if w.placeholder else Fate.KEPT
            rule = "R-CONV-3" if fate is Fate.PLACEHOLDER else "R-ASM-4"
            fates[w.key] = Fated(fate, rule, Segment.HISTORY, w.notes)
    fates[last_user.key] = Fated(Fate.KEPT, "R-ASM-3", Segment.LAST_USER, last_user.notes)
    for w in final_tail:
        fates[w.key] = Fated(Fate.KEPT, "R-ASM-3", Segment.IN_TURN, w.notes)
    segments: dict[str, list[Working]] = {
        Segment.SYSTEM: [system] if system else [],
        Segment.HISTORY: final_kept,
        Segment.CUSTOM_AGENT: [agent] if agent else [],
        Segment.PROJECT_FILES: [w for w in (project.documents, project.read_file_list) if w],
        Segment.FORGOTTEN_FILES: [listing] if listing else [],
        Segment.LAST_USER: [last_user],
        Segment.IN_TURN: final_tail,
        Segment.REMINDER: [reminder] if reminder else [],
    }
    messages = [w for ws in segments.values() for w in ws]
    return Assembly(
        eff,
        meter,
        branch,
        converted,
        messages,
        segments,
        fates,
        budget,
        available,
        reserved,
        project,
        dropped,
        forgotten,
        left_out,
        clock,
        record,
    )


_KEY, _NOTES = attrgetter("key"), attrgetter("notes")


def _fate_all(fates: dict[str, Fated], ws: list[Working], fate: Fate, rule: str) -> None:
    """The same fate for many messages; one shared (frozen) `Fated` per distinct notes.

    Iterated in C (`map`, `zip`), not per message in Python: replay records the dropped
    history once per call (R-RPL-9)."""
    notes = list(map(_NOTES, ws))
    shared = {n: Fated(fate, rule, None, n) for n in set(notes)}
    fates.update(zip(map(_KEY, ws), map(shared.__getitem__, notes), strict=True))


def _generated(key: str, kind: Kind, text: str | None, meter: Meter, cacheable: bool = False) -> Working | None:
    if text is None:
        return None
    return Working(key, kind, text, meter.text(text), cacheable=cacheable, origin=Origin(key))


def _largest(parts: dict[str, Working | None], meter: Meter, project_tokens: int) -> str:
    sizes = {name: meter.of(w) for name, w in parts.items() if w}
    sizes["project files"] = project_tokens
    name = max(sizes, key=lambda n: sizes[n])
    return f"{name} ({plural(sizes[name], 'token')})"


def _largest_message(messages: list[Working], meter: Meter) -> str:
    w = max(messages, key=meter.of)
    label = "the last user message" if w.origin == Origin.MESSAGE else f"in-flight message {w.key}"
    return f"{label} ({plural(meter.of(w), 'token')})"


def _last_n_cut(history: list[Working], n: int | None, last_user: Working) -> int:
    """R-ASM-5: where the history starts when only the last n user messages count.

    The last user message is the first of the n. The cut falls before the pinned
    files of the n-th user message from the end: they belong to it.
    """
    if not n:
        return 0
    index, owner = len(history), last_user.source_id
    remaining = n - 1
    for i in range(len(history) - 1, -1, -1):
        if remaining == 0:
            break
        w = history[i]
        if w.kind is Kind.USER and w.origin == Origin.MESSAGE:
            remaining -= 1
            index, owner = i, w.source_id
    if remaining:
        return 0
    while index > 0 and history[index - 1].origin == Origin.FILE and history[index - 1].source_id == owner:
        index -= 1
    return index


def _truncate(history: list[Working], room: int, meter: Meter) -> int:
    """R-ASM-4: index of the first kept message; walks newest-first, stops at a misfit."""
    used = 0
    start = len(history)
    for i in range(len(history) - 1, -1, -1):
        cost = meter.of(history[i])
        if used + cost > room:
            break
        used += cost
        start = i
    return start


def _forgotten_files(
    eff: Effective,
    meter: Meter,
    converted: conv.Converted,
    kept: list[Working],
    dropped: list[Working],
    room: int,
    fates: dict[str, Fated],
) -> tuple[list[Working], Working | None, list[tuple[FileRecord, bool]], int]:
    """R-FILE-1…3: list the files no surviving message carries; evict until it fits.

    Linear: the kept cost and the carried files are updated per eviction. A list that
    gains entries never counts fewer tokens, so after an evicted message adds a file
    the last count is a lower bound; the list is rebuilt and re-counted only when even
    that bound fits (one count per fit attempt, not one per evicted file).
    """
    files = {f.id: f for f in eff.fixture.files}
    order = {fid: n for n, fid in enumerate(converted.files_in_order)}
    carried = Counter(w.file_id for w in kept if w.file_id)
    known = {w.file_id for w in dropped if w.file_id}
    kept_cost = sum(meter.of(w) for w in kept)
    start = 0

    def entries() -> list[tuple[FileRecord, bool]]:
        listed = {fid for fid in known if not carried[fid]}
        found = [(files[fid], True) for fid in listed]
        found += [(files[fid], False) for fid in converted.summarized_files if not carried[fid] and fid not in listed]
        found = [(f, k) for f, k in found if f.kind is not FileKind.IMAGE]
        found.sort(key=lambda e: order.get(e[0].id, len(order)))
        return found

    found = entries()
    if not found:
        return kept, None, [], 0
    text = proj.read_file_list(found, eff.templates)
    cost = meter.text(text)
    stale = False  # files joined the list since `cost` was counted: it is a lower bound
    while True:
        if cost + kept_cost <= room:
            if not stale:
                break
            found = entries()  # it may fit now: count the list as it is
            text = proj.read_file_list(found, eff.templates)
            cost, stale = meter.text(text), False
            continue
        if start == len(kept):
            dropped.extend(kept)
            return _partial_list(eff, meter, entries() if stale else found, room)
        w = kept[start]
        start += 1
        kept_cost -= meter.of(w)
        fates[w.key] = Fated(
            Fate.TRUNCATED, "R-FILE-3", None, w.notes + ("evicted to make room for the read_file list",)
        )
        if w.file_id:
            carried[w.file_id] -= 1
            known.add(w.file_id)
            stale = True
    dropped.extend(kept[:start])
    listing = Working("forgotten_files", Kind.USER, text, cost, origin=Origin.FORGOTTEN_FILES)
    return kept[start:], listing, found, 0


def _partial_list(
    eff: Effective,
    meter: Meter,
    found: list[tuple[FileRecord, bool]],
    room: int,
) -> tuple[list[Working], Working | None, list[tuple[FileRecord, bool]], int]:
    """R-FILE-3: no older history left and the list still does not fit: keep a prefix.

    The longest fitting prefix, found by bisection (O(log n) counts, not O(n)): a longer
    list is the shorter one plus a line break and more lines, so it never counts fewer.
    """

    def cost(n: int) -> tuple[str, int]:
        text = proj.read_file_list(found[:n], eff.templates)
        return text, meter.text(text)

    lo, hi = 0, len(found) - 1  # the longest fitting prefix has lo..hi entries; 0 = no list
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if cost(mid)[1] <= room:
            lo = mid
        else:
            hi = mid - 1
    if lo == 0:
        return [], None, [], len(found)
    text, tokens = cost(lo)
    listing = Working("forgotten_files", Kind.USER, text, tokens, origin=Origin.FORGOTTEN_FILES)
    return [], listing, found[:lo], len(found) - lo
