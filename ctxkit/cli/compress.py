"""`ctxkit compress`: the compression decision, the split and the summarization request.

Input: a fixture and the shared options. Output: the report (text or JSON); with
`--provider` the report shows the request as that provider's body; with
`--summary TEXT --write OUT` a new fixture holding the summary node (R-CMP-5);
`--write -` (or `/dev/stdout`) prints that fixture on stdout instead of the report.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from ctxkit.cli import cli
from ctxkit.cli.options import assembly_options, build_options, echo, echo_text, format_option, load, warn
from ctxkit.errors import InputError, Problem

if TYPE_CHECKING:
    from ctxkit.compression.compress import CompressionPlan

PREVIEW_CHARS = 60
LEGEND = "split (S summarized, K kept, - skipped: no text, ~ already summarized, = the summary that applies):"


@cli.command()
@click.argument("fixture")
@assembly_options
@format_option("text", "json")
@click.option("--summary", "summary_text", metavar="TEXT", help="The summary's text, for --write.")
@click.option(
    "--write",
    "write_path",
    metavar="OUT.yaml",
    type=click.Path(dir_okay=False),
    help="Write the fixture with the new summary node added (needs --summary); '-' for stdout.",
)
@click.option("--force", is_flag=True, help="Let --write overwrite an existing file.")
def compress(fixture: str, fmt: str, summary_text: str | None, write_path: str | None, force: bool, **kw: Any) -> None:
    """Is a summary due, what would it cover, and the exact summarization request.

    With --provider the report shows the request as that provider's request body.
    """
    from ctxkit.compression.compress import plan, report, with_summary, write_back
    from ctxkit.loading.config import resolve
    from ctxkit.writing import means_stdout

    if write_path is not None and summary_text is None:
        raise click.UsageError("--write needs --summary TEXT (the summary to add)")
    if summary_text is not None and write_path is None:
        raise click.UsageError("--summary needs --write OUT.yaml (where to write the fixture)")
    loaded = load(fixture, kw)
    p = plan(resolve(loaded, build_options(kw)))
    for w in p.warnings:
        warn(w)
    if write_path is not None and summary_text is not None:
        if not p.should_compress or p.summary_parent is None:
            raise InputError(
                Problem(fixture, "", "--write: no summary can be added: " + (p.note or "no compression is due"))
            )
        to_stdout = means_stdout(write_path)
        if to_stdout:
            new_id, text, notes = with_summary(loaded, p, summary_text, None)
        else:
            new_id, notes = write_back(loaded, p, summary_text, write_path, force=force)
        for note in notes:
            warn(note)
        click.echo(
            f"wrote {'the fixture to stdout' if to_stdout else write_path}: summary node {new_id!r} "
            f"(parent {p.summary_parent!r}, summarizes_through {p.summarizes_through!r})",
            err=True,
        )
        if to_stdout:
            echo(text)  # the fixture is the output: no report beside it
            return
    provider_request = None
    if kw.get("provider"):
        provider_request = _provider_request(p)
    if fmt == "json":
        from ctxkit.loading.write import json_text

        data = report(p)
        if kw.get("provider"):
            data["provider_request"] = provider_request
        echo(json_text(data))
    else:
        echo_text(render(p, provider_request))


def _provider_request(p: CompressionPlan) -> dict[str, Any] | None:
    """`--provider`: the request as that provider's body, shown inside the report."""
    from ctxkit.compression.compress import provider_body

    built = provider_body(p)
    if built is None:
        return None
    body, translation_warnings = built
    for w in translation_warnings:
        warn(w)
    return {"provider": str(p.eff.provider), "body": body}


def render(p: CompressionPlan, provider_request: dict[str, Any] | None = None) -> str:
    """The readable report: the numbers, the split drawn over the branch, the request."""
    from ctxkit.compression.compress import Mark, request_message
    from ctxkit.output import plural

    eff, s = p.eff, p.eff.settings
    title = eff.fixture.name or eff.fixture.source
    lines = [f"# {title}", _verdict(p), ""]
    lines.append(_number("max_input_tokens", eff.max_input_tokens, "the model's window"))
    lines.append(_number("reserved", p.reserved_tokens, "worst-case system prompt + agent message (R-SYS-6)"))
    if p.has_room:
        lines += [
            _number("available", p.available_tokens, "max_input_tokens - reserved"),
            _number("threshold", p.threshold, f"floor(available x {s.compression_trigger_ratio}) (R-CMP-1)"),
        ]
    else:
        lines += [
            _words("available", "none", "the reserved tokens fill the window"),
            _words("threshold", "none", "no room for history, so nothing to compare with"),
        ]
    lines += [
        _number("history", p.history_tokens, "summary + texts and call arguments after its cutoff"),
        _number(
            "recent budget",
            p.tokens_for_recent,
            f"floor(history x {s.recent_messages_ratio}) (R-CMP-2)" if p.should_compress else "0: not due (R-CMP-4)",
        ),
        "",
    ]
    previous = p.previous_summary
    mode = f"progressive (folds in summary {previous.id!r})" if previous else "fresh"
    lines.append(f"mode: {mode}")
    if p.summary_parent is not None:
        lines.append(
            f"new summary node: parent {p.summary_parent!r}, summarizes_through {p.summarizes_through!r} (R-CMP-5)"
        )
    if p.note:
        lines.append(f"note: {p.note}")
    lines += ["", LEGEND]
    rows = [
        (Mark.ALREADY.value, r.message.id, str(r.message.role), "", r.message.text)
        for r in p.rows
        if r.mark is Mark.ALREADY
    ]
    if previous is not None:
        rows.append(("=", previous.id, "summary", str(p.summary_tokens), previous.text))
    rows += [
        (
            r.mark.value,
            r.message.id,
            str(r.message.role),
            str(r.tokens),
            request_message(r.message, eff.templates)["content"],
        )
        for r in p.rows
        if r.mark is not Mark.ALREADY
    ]
    width = max([len(r[1]) for r in rows] + [2])
    for mark, ident, role, tokens, text in rows:
        lines.append(f"  {mark} {ident:<{width}} {role:<9} {tokens:>6}  {_preview(text)}")
    lines.append("")
    if p.request is None:
        lines.append("summarization request: none")
    elif provider_request is not None:
        from ctxkit.output import dumps

        lines.append(f"summarization request as the {provider_request['provider']} request body:")
        lines.append(dumps(provider_request["body"]).rstrip("\n"))
    else:
        lines.append(
            f"summarization request ({plural(len(p.request), 'message')}, OpenAI-style; "
            "--provider P for a provider's body):"
        )
        for n, m in enumerate(p.request):
            lines.append(f"--- [{n}] {m['role']} ---")
            lines.append(m["content"])
    return "\n".join(lines) + "\n"


def _verdict(p: CompressionPlan) -> str:
    if not p.has_room:
        from ctxkit.output import plural

        return (
            f"compression due: no: the fixed parts alone ({plural(p.reserved_tokens, 'token')}) fill the "
            f"window of {p.eff.max_input_tokens}; no history fits, with or without a summary"
        )
    if p.should_compress:
        return f"compression due: yes (history {p.history_tokens} > threshold {p.threshold})"
    return f"compression due: no (history {p.history_tokens} <= threshold {p.threshold})"


def _number(label: str, value: int, how: str) -> str:
    return _words(label, str(value), how)


def _words(label: str, value: str, how: str) -> str:
    return f"  {label:<18} {value:>8}   {how}"


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "\u2026"
