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
    from ctxkit.loading.domain import Fixture


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
    from ctxkit.compression.compress import plan
    from ctxkit.loading.config import resolve
    from ctxkit.reports import compression

    if write_path is not None and summary_text is None:
        raise click.UsageError("--write needs --summary TEXT (the summary to add)")
    if summary_text is not None and write_path is None:
        raise click.UsageError("--summary needs --write OUT.yaml (where to write the fixture)")
    loaded = load(fixture, kw)
    p = plan(resolve(loaded, build_options(kw)))
    for w in p.warnings:
        warn(w)
    if write_path is not None and summary_text is not None:
        fixture_text = _write_summary(fixture, loaded, p, summary_text, write_path, force=force)
        if fixture_text is not None:
            echo(fixture_text)  # the fixture is the output: no report beside it
            return
    request = None
    if kw.get("provider"):
        request, translation_warnings = compression.provider_request(p)
        for w in translation_warnings:
            warn(w)
    if fmt == "json":
        from ctxkit.loading.write import json_text

        data = compression.report(p)
        if kw.get("provider"):
            data["provider_request"] = request.as_json() if request is not None else None
        echo(json_text(data))
    else:
        echo_text(compression.text(p, request))


def _write_summary(
    fixture: str, loaded: Fixture, p: CompressionPlan, summary_text: str, write_path: str, *, force: bool
) -> str | None:
    """R-CMP-5: add the summary node and write the fixture; its text when it goes to stdout."""
    from ctxkit.compression.compress import with_summary, write_back
    from ctxkit.writing import means_stdout

    if not p.should_compress or p.summary_parent is None:
        raise InputError(
            Problem(fixture, "", "--write: no summary can be added: " + (p.note or "no compression is due"))
        )
    text = None
    if means_stdout(write_path):
        new_id, text, notes = with_summary(loaded, p, summary_text, None)
    else:
        new_id, notes = write_back(loaded, p, summary_text, write_path, force=force)
    for note in notes:
        warn(note)
    where = "the fixture to stdout" if text is not None else write_path
    click.echo(
        f"wrote {where}: summary node {new_id!r} (parent {p.summary_parent!r}, "
        f"summarizes_through {p.summarizes_through!r})",
        err=True,
    )
    return text
