"""`compress`: the compression plan as the report's values and as text.

Input: a `CompressionPlan` (ctxkit/compression/compress.py) and, with `--provider`, the
summarization request as that provider's body. Output: `report` — the JSON report of
docs/rules.md#report-keys plus the numbers behind the decision; `text` — the readable
report: the numbers, the split drawn over the branch, the request. Nothing is decided here.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ctxkit.compression.compress import CompressionPlan, Mark, provider_body, request_message
from ctxkit.output import dumps, plural

PREVIEW_CHARS = 60
LEGEND = "split (S summarized, K kept, - skipped: no text, ~ already summarized, = the summary that applies):"


class ProviderRequest(NamedTuple):
    """`--provider`: the summarization request as that provider's body."""

    provider: str
    body: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        return {"provider": self.provider, "body": self.body}


def provider_request(p: CompressionPlan) -> tuple[ProviderRequest | None, list[str]]:
    """The request as the effective provider's body (None when there is no request), and
    translation's warnings."""
    built = provider_body(p)
    if built is None:
        return None, []
    body, warnings = built
    return ProviderRequest(str(p.eff.provider), body), warnings


def report(p: CompressionPlan) -> dict[str, Any]:
    """The `compress` report (docs/rules.md#report-keys), plus the numbers behind the decision."""
    s = p.eff.settings
    previous = p.previous_summary
    return {
        "should_compress": p.should_compress,
        "history_tokens": p.history_tokens,
        "summary_tokens": p.summary_tokens,
        "max_input_tokens": p.eff.max_input_tokens,
        "reserved_tokens": p.reserved_tokens,
        "available_tokens": p.available_tokens,
        "trigger_ratio": s.compression_trigger_ratio,  # a JSON number, digits as written
        "threshold": p.threshold if p.has_room else None,
        "recent_messages_ratio": s.recent_messages_ratio,
        "tokens_for_recent": p.tokens_for_recent,
        "summarized": [m.id for m in p.summarized],
        "kept": [m.id for m in p.kept],
        "skipped": [r.message.id for r in p.rows if r.mark is Mark.SKIPPED],
        "summary_parent": p.summary_parent,
        "summarizes_through": p.summarizes_through,
        "progressive": p.progressive,
        "previous_summary": previous.id if previous else None,
        "request": [dict(m) for m in p.request] if p.request is not None else None,
        "note": p.note,
    }


class WorkedNumber(NamedTuple):
    """One line of the arithmetic: a label, its value and how it was worked out."""

    label: str
    value: str
    how: str


class SplitLine(NamedTuple):
    """One branch message in the split: its mark, id, role, history tokens and text."""

    mark: str
    id: str
    role: str
    tokens: str
    text: str


def verdict(p: CompressionPlan) -> str:
    """Is a summary due, with the comparison that says so (R-CMP-1)."""
    if not p.has_room:
        return (
            f"compression due: no: the fixed parts alone ({plural(p.reserved_tokens, 'token')}) fill the "
            f"window of {p.eff.max_input_tokens}; no history fits, with or without a summary"
        )
    if p.should_compress:
        return f"compression due: yes (history {p.history_tokens} > threshold {p.threshold})"
    return f"compression due: no (history {p.history_tokens} <= threshold {p.threshold})"


def numbers(p: CompressionPlan) -> list[WorkedNumber]:
    """The trigger arithmetic (R-CMP-1) and the recent budget (R-CMP-2), each with its formula."""
    eff, s = p.eff, p.eff.settings
    found = [
        WorkedNumber("max_input_tokens", str(eff.max_input_tokens), "the model's window"),
        WorkedNumber("reserved", str(p.reserved_tokens), "worst-case system prompt + agent message (R-SYS-6)"),
    ]
    if p.has_room:
        found += [
            WorkedNumber("available", str(p.available_tokens), "max_input_tokens - reserved"),
            WorkedNumber("threshold", str(p.threshold), f"floor(available x {s.compression_trigger_ratio}) (R-CMP-1)"),
        ]
    else:
        found += [
            WorkedNumber("available", "none", "the reserved tokens fill the window"),
            WorkedNumber("threshold", "none", "no room for history, so nothing to compare with"),
        ]
    recent = f"floor(history x {s.recent_messages_ratio}) (R-CMP-2)" if p.should_compress else "0: not due (R-CMP-4)"
    return [
        *found,
        WorkedNumber("history", str(p.history_tokens), "summary + texts and call arguments after its cutoff"),
        WorkedNumber("recent budget", str(p.tokens_for_recent), recent),
    ]


def mode_lines(p: CompressionPlan) -> list[str]:
    """Fresh or progressive (R-CMP-4), where the new summary node would hang (R-CMP-5), the note."""
    previous = p.previous_summary
    lines = [f"mode: {f'progressive (folds in summary {previous.id!r})' if previous else 'fresh'}"]
    if p.summary_parent is not None:
        lines.append(
            f"new summary node: parent {p.summary_parent!r}, summarizes_through {p.summarizes_through!r} (R-CMP-5)"
        )
    if p.note:
        lines.append(f"note: {p.note}")
    return lines


def split_lines(p: CompressionPlan) -> list[SplitLine]:
    """The branch in order: what the applying summary already removed, that summary, then the
    messages after its cutoff as the summarizer would see them."""
    already = [
        SplitLine(Mark.ALREADY.value, r.message.id, str(r.message.role), "", r.message.text)
        for r in p.rows
        if r.mark is Mark.ALREADY
    ]
    previous = p.previous_summary
    applying = (
        [] if previous is None else [SplitLine("=", previous.id, "summary", str(p.summary_tokens), previous.text)]
    )
    after = [
        SplitLine(
            r.mark.value,
            r.message.id,
            str(r.message.role),
            str(r.tokens),
            request_message(r.message, p.eff.templates)["content"],
        )
        for r in p.rows
        if r.mark is not Mark.ALREADY
    ]
    return already + applying + after


def request_lines(p: CompressionPlan, request: ProviderRequest | None) -> list[str]:
    """The summarization request (R-CMP-4): as the provider's body, or as OpenAI-style messages."""
    if p.request is None:
        return ["summarization request: none"]
    if request is not None:
        return [f"summarization request as the {request.provider} request body:", dumps(request.body).rstrip("\n")]
    lines = [
        f"summarization request ({plural(len(p.request), 'message')}, OpenAI-style; "
        "--provider P for a provider's body):"
    ]
    for n, m in enumerate(p.request):
        lines += [f"--- [{n}] {m['role']} ---", m["content"]]
    return lines


def text(p: CompressionPlan, request: ProviderRequest | None = None) -> str:
    """The readable report: title and verdict, the numbers, the mode, the split, the request."""
    title = p.eff.fixture.name or p.eff.fixture.source
    lines = [f"# {title}", verdict(p), ""]
    lines += [f"  {n.label:<18} {n.value:>8}   {n.how}" for n in numbers(p)]
    lines += ["", *mode_lines(p), "", LEGEND]
    split = split_lines(p)
    width = max([len(s.id) for s in split] + [2])
    lines += [f"  {s.mark} {s.id:<{width}} {s.role:<9} {s.tokens:>6}  {_preview(s.text)}" for s in split]
    lines += ["", *request_lines(p, request)]
    return "\n".join(lines) + "\n"


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "\u2026"
