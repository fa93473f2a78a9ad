"""Compression: is a summary due, what would it cover, and the request that writes it.

Input: `Effective` settings (the whole branch up to the leaf, R-CMP-1). Output:
`CompressionPlan` — the trigger arithmetic, the split of the branch into
summarized and kept messages (R-CMP-2/3), the summarization request as
OpenAI-style messages (R-CMP-4) and where the new summary node hangs (R-CMP-5).
`write_back` turns a plan and a summary text into a new fixture file (`with_summary`: its text).
Assembly never imports this module (R-CMP-6): a failure here cannot break it.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from ctxkit.assembly.assemble import floor_ratio, reserved_tokens
from ctxkit.counting.measure import Meter, call_args_text
from ctxkit.errors import InputError, Problem
from ctxkit.history import tree
from ctxkit.history.working import Kind, Segment, Working
from ctxkit.loading.config import Effective
from ctxkit.loading.domain import Fixture, Role, StoredMessage
from ctxkit.loading.templates import Templates, text_warnings
from ctxkit.output import plural
from ctxkit.translate import translate
from ctxkit.translate.common import TranslationInput


class RequestMessage(TypedDict):
    role: str  # system | user | assistant
    content: str


class Mark(enum.StrEnum):
    """How the split treats one branch message (the text report's marker)."""

    SUMMARIZED = "S"
    KEPT = "K"
    SKIPPED = "-"  # empty text: not considered (R-CMP-3)
    ALREADY = "~"  # removed by the summary that already applies (R-TREE-3)


@dataclass(frozen=True, slots=True)
class SplitRow:
    message: StoredMessage
    mark: Mark
    tokens: int | None  # history tokens (R-CMP-1); None for already summarized messages


@dataclass(frozen=True, slots=True)
class CompressionPlan:
    eff: Effective
    branch: tree.Branch
    should_compress: bool
    history_tokens: int
    summary_tokens: int  # of the summary that applies (part of history_tokens)
    reserved_tokens: int
    available_tokens: int
    threshold: int
    tokens_for_recent: int
    rows: tuple[SplitRow, ...]  # one per branch message, root → leaf
    summarized: tuple[StoredMessage, ...]
    kept: tuple[StoredMessage, ...]
    summary_parent: str | None
    summarizes_through: str | None
    request: tuple[RequestMessage, ...] | None
    note: str | None
    warnings: tuple[str, ...] = ()

    @property
    def has_room(self) -> bool:
        """False when the fixed parts alone fill the window: no threshold exists (R-CMP-1)."""
        return self.available_tokens > 0

    @property
    def previous_summary(self) -> StoredMessage | None:
        return self.branch.summary

    @property
    def progressive(self) -> bool:
        return self.branch.summary is not None


@dataclass(frozen=True, slots=True)
class Trigger:
    """R-CMP-1's arithmetic for one history size: the one place it is decided."""

    reserved: int  # the fixed parts: worst-case system prompt and agent message
    available: int  # max_input_tokens − reserved (no safety margin)
    threshold: int  # floor(available × compression_trigger_ratio)
    due: bool  # history > threshold, and only when there is room at all (available > 0)


def trigger(eff: Effective, meter: Meter, history: int, reserved: int | None = None) -> Trigger:
    """R-CMP-1: is a summary due for `history` tokens? Used by `compress` and by replay.

    When the fixed parts alone fill the window (available ≤ 0) the threshold is negative
    and any history exceeds it, but a summary cannot make room: not due. `reserved`:
    `reserved_tokens(eff, meter)` when the caller has it (replay asks once per date)."""
    if reserved is None:
        reserved = reserved_tokens(eff, meter)
    available = eff.max_input_tokens - reserved
    threshold = floor_ratio(available, eff.settings.compression_trigger_ratio)
    return Trigger(reserved, available, threshold, available > 0 and history > threshold)


def plan(eff: Effective) -> CompressionPlan:
    """R-CMP-1..5 for the branch to the leaf: the trigger, the split, the request, the new node's place."""
    meter = Meter(eff.tokenizer, supports_images=eff.supports_images, templates=eff.templates)
    branch = tree.select(eff.fixture, eff.leaf)
    after = branch.after_cutoff
    costs = [message_tokens(m, meter) for m in after]
    summary = branch.summary
    summary_tokens = 0 if summary is None else message_tokens(summary, meter)
    history = summary_tokens + sum(costs)
    decided = trigger(eff, meter, history)
    reserved, available, threshold, due = decided.reserved, decided.available, decided.threshold, decided.due

    considered = [(m, c) for m, c in zip(after, costs, strict=True) if m.text.strip()]
    budget = floor_ratio(history, eff.settings.recent_messages_ratio) if due else 0
    cut, note = split(considered, budget) if due else (0, _not_due(eff, decided, history))
    summarized = tuple(m for m, _ in considered[:cut])
    kept = tuple(m for m, _ in considered[cut:])
    last_user = next((m for m in reversed(branch.path) if m.role is Role.USER), None)
    request = parent = through = None
    if summarized and last_user is not None:
        parent, through = last_user.id, summarized[-1].id
        request = build_request(eff.templates, summarized, kept, summary)
    return CompressionPlan(
        eff=eff,
        branch=branch,
        should_compress=due,
        history_tokens=history,
        summary_tokens=summary_tokens,
        reserved_tokens=reserved,
        available_tokens=available,
        threshold=threshold,
        tokens_for_recent=budget,
        rows=_rows(branch.summarized, after, costs, summarized, kept),
        summarized=summarized,
        kept=kept,
        summary_parent=parent,
        summarizes_through=through,
        request=request,
        note=note,
        warnings=_warnings(eff),
    )


def _warnings(eff: Effective) -> tuple[str, ...]:
    """A clock-dated system prompt makes the reserved tokens unreproducible (R-SYS-2); the
    templates' own warnings (docs/rules.md#templates)."""
    clock = (
        "no `now` in the fixture: the reserved tokens come from a system "
        "prompt dated by the real clock, so this output is not reproducible "
        "(R-SYS-2)"
    )
    return (*([clock] if eff.now is None else []), *text_warnings(eff.templates, eff.fixture.prompts))


def _not_due(eff: Effective, decided: Trigger, history: int) -> str:
    """Why nothing is summarized when no summary is due: no room at all, or within the threshold."""
    if decided.available <= 0:
        return no_room(eff.max_input_tokens, decided.reserved)
    within = f"{plural(history, 'history token')} {'is' if history == 1 else 'are'} within"
    return f"not due: {within} the threshold of {decided.threshold} (R-CMP-1)"


def _rows(
    removed: Sequence[StoredMessage],
    after: Sequence[StoredMessage],
    costs: list[int],
    summarized: tuple[StoredMessage, ...],
    kept: tuple[StoredMessage, ...],
) -> tuple[SplitRow, ...]:
    """Every branch message marked: removed by the summary that applies, then those after its
    cutoff as summarized, kept or skipped (no text), with their history tokens."""
    marks = {m.id: Mark.SUMMARIZED for m in summarized} | {m.id: Mark.KEPT for m in kept}
    return tuple(SplitRow(m, Mark.ALREADY, None) for m in removed) + tuple(
        SplitRow(m, marks.get(m.id, Mark.SKIPPED), c) for m, c in zip(after, costs, strict=True)
    )


def no_room(window: int, reserved: int) -> str:
    """When the fixed parts alone fill the window, say so instead of negative numbers (R-CMP-1)."""
    from ctxkit.output import plural

    return (
        f"no room for any history: the fixed parts alone (worst-case system prompt and agent "
        f"message, {plural(reserved, 'token')}) fill the window of {plural(window, 'token')}, "
        "so there is no threshold and a summary cannot help (R-CMP-1, R-SYS-6)"
    )


def message_tokens(m: StoredMessage, meter: Meter) -> int:
    """R-CMP-1: the message's own text plus its calls' arguments (no files, images, results)."""
    total = m.tokens if m.tokens is not None else meter.text(m.text)
    for c in m.tool_calls:
        total += c.tokens if c.tokens is not None else meter.text(call_args_text(c))
    return total


def split(considered: list[tuple[StoredMessage, int]], budget: int) -> tuple[int, str | None]:
    """R-CMP-3: index of the first kept message among the considered ones, and a note."""
    n = len(considered)
    if not any(m.role is Role.USER for m, _ in considered):
        return 0, ("nothing to compress: no user message with text after the summary's cutoff (R-CMP-3)")
    start, used = n - 1, considered[-1][1]  # the newest is always kept
    for i in range(n - 2, -1, -1):
        if used + considered[i][1] > budget:
            break
        used += considered[i][1]
        start = i
    while start < n and considered[start][0].role is not Role.USER:
        start += 1  # the cut falls right before a user message
    note = None
    if start == n:
        start = max(i for i, (m, _) in enumerate(considered) if m.role is Role.USER)
        note = "the recent budget holds no user message: keeping the last user message and what follows it (R-CMP-3)"
    if start == 0:
        note = "nothing to summarize: every considered message is kept (R-CMP-3)"
    return start, note


def build_request(
    t: Templates, summarized: tuple[StoredMessage, ...], kept: tuple[StoredMessage, ...], previous: StoredMessage | None
) -> tuple[RequestMessage, ...]:
    """R-CMP-4: system, summarized messages, cutoff marker, recent context, instruction."""
    system = t.raw("summary.system")
    if previous is not None:
        system += "\n\n" + t.fill("summary.progressive_block", previous_summary=previous.text)
    instruction = "summary.progressive_instruction" if previous else "summary.instruction"
    return (
        RequestMessage(role="system", content=system),
        *(request_message(m, t) for m in summarized),
        RequestMessage(role="user", content=t.raw("summary.cutoff_marker")),
        *(request_message(m, t) for m in kept),
        RequestMessage(role="user", content=t.raw(instruction)),
    )


def request_message(m: StoredMessage, t: Templates) -> RequestMessage:
    """A stored message as the summarizer sees it: tool calls named, results left out."""
    if m.role is Role.USER or not m.tool_calls:
        return RequestMessage(role=str(m.role), content=m.text)
    names = ", ".join(dict.fromkeys(c.name for c in m.tool_calls))  # unique, in call order
    return RequestMessage(role="assistant", content=t.fill("summary.used_tools", tools=names) + "\n" + m.text)


def provider_body(p: CompressionPlan) -> tuple[dict[str, Any], list[str]] | None:
    """The request as the effective provider's body (and translation's warnings).

    It goes through the normal translators: the request's messages are the whole
    history segment, sent without the fixture's tool definitions.
    """
    if p.request is None:
        return None
    eff = p.eff
    kinds = {"system": Kind.SYSTEM, "user": Kind.USER, "assistant": Kind.ASSISTANT}
    messages = [Working(f"summary_request#{n}", kinds[m["role"]], m["content"], None) for n, m in enumerate(p.request)]
    request = TranslationInput(
        provider=str(eff.provider),
        model=eff.model,
        max_input_tokens=eff.max_input_tokens,
        max_output_tokens=eff.max_output_tokens,
        segments={Segment.HISTORY: messages},
        tools=(),
        settings=eff.settings,
        templates=eff.templates,
        supports_images=eff.supports_images,
        meter=Meter(eff.tokenizer, supports_images=eff.supports_images, templates=eff.templates),
    )
    payload = translate(request)
    return payload.body, list(payload.prepared.warnings)


def write_back(
    fixture: Fixture, p: CompressionPlan, summary_text: str, out_path: str | Path, *, force: bool = False
) -> tuple[str, list[str]]:
    """R-CMP-5: write the fixture with the new summary node; returns (its id, warnings).

    The output is the parsed document plus the node (YAML, or JSON for a `.json`
    name), relative file paths rebased onto the output's folder, written through
    `ctxkit.writing` (atomically; only a regular file replaced, and only with `force`).
    """
    from ctxkit import writing

    out = Path(out_path)
    target = writing.check(out, replace=force, make_folder=True)
    new_id, text, warnings = with_summary(fixture, p, summary_text, out)
    writing.write(target, text.encode("utf-8"), replace=force)
    return new_id, warnings


def with_summary(
    fixture: Fixture, p: CompressionPlan, summary_text: str, out: Path | None
) -> tuple[str, str, list[str]]:
    """R-CMP-5: the fixture's text with the new summary node: (its id, the text, warnings).

    `out` is where it will be written (its suffix picks JSON or YAML, its folder
    the rebased paths); None for stdout (YAML, paths rebased onto the current folder).
    """
    shown = "-" if out is None else str(out)
    if p.summary_parent is None or p.summarizes_through is None:
        why = p.note or "no compression is due"
        raise InputError(Problem(fixture.source, "", f"nothing to write: {why}"))
    if not summary_text.strip():
        raise InputError(Problem(fixture.source, "", "the summary text is empty"))
    try:
        summary_text.encode("utf-8")
    except UnicodeEncodeError as exc:  # bytes that were not UTF-8 arrive as lone surrogates
        bad = ord(summary_text[exc.start])
        what = f"byte 0x{bad - 0xDC00:02x}" if 0xDC80 <= bad <= 0xDCFF else f"U+{bad:04X}"
        raise InputError(Problem("--summary", "", f"not valid UTF-8 text ({what})")) from None
    if not isinstance(fixture.raw, dict):
        raise InputError(Problem(fixture.source, "", "the fixture's document is not available"))
    from ctxkit.loading.write import exact_numbers, json_text, yaml_text

    doc = exact_numbers(fixture.raw, fixture.raw_floats or {})  # a copy, floats as written
    taken = {m.id for m in fixture.messages}
    n = 1
    while f"summary-{n}" in taken:
        n += 1
    new_id = f"summary-{n}"
    doc.setdefault("messages", []).append(
        {
            "id": new_id,
            "role": "summary",
            "parent": p.summary_parent,
            "summarizes_through": p.summarizes_through,
            "text": summary_text,
        }
    )
    out_dir = Path(os.path.realpath("." if out is None else out.parent))
    warnings = [_NO_COMMENTS.format(out=shown)]
    if p.eff.leaf is not None and p.eff.leaf != fixture.leaf:
        doc["leaf"] = p.eff.leaf
        warnings.append(f"leaf set to {p.eff.leaf!r}, the branch that was compressed")
    warnings += _rebase_paths(doc, fixture.base_dir, out_dir)
    as_json = out is not None and out.suffix.lower() == ".json"
    text = json_text(doc, source=shown) if as_json else yaml_text(doc, source=shown)
    return new_id, text, warnings


_NO_COMMENTS = (
    "YAML comments and formatting of the input are not carried over to {out} (it is written from the parsed document)"
)


def _rebase_paths(doc: dict[str, Any], base: Path, out_dir: Path) -> list[str]:
    """Rewrite relative `files[].path` values so they resolve from the output's folder."""
    warnings = []
    for n, f in enumerate(doc.get("files") or []):
        if not isinstance(f, dict) or not isinstance(f.get("path"), str):
            continue
        if Path(f["path"]).is_absolute():
            continue
        moved = Path(os.path.relpath(os.path.normpath(base / f["path"]), out_dir)).as_posix()
        if moved != f["path"] and moved.split("/")[0] == "..":
            warnings.append(
                f"files[{n}].path is now {moved!r}, outside the output's folder: "
                "load the written fixture with --allow-outside-paths"
            )
        f["path"] = moved
    return warnings
