"""The core commands: validate, schema, templates, assemble, budget, explain.

Input: arguments. Output: the payload or report on stdout.
"""

from __future__ import annotations

from typing import Any

import click

from ctxkit.cli import cli
from ctxkit.cli.options import (
    assembly_options,
    build_options,
    echo,
    echo_text,
    format_option,
    load,
    load_options,
    run_pipeline,
)
from ctxkit.errors import ExitStatus, InputError, RuleError


@cli.command()
@click.argument("fixtures", nargs=-1, required=True)
@load_options
def validate(fixtures: tuple[str, ...], **kw: Any) -> None:
    """Check fixtures: schema, references, and that they assemble (R-ASM-2/3)."""
    from ctxkit.output import printable
    from ctxkit.pipeline import run

    status = ExitStatus.OK
    for path in fixtures:
        try:
            run(load(path, kw))
        except (InputError, RuleError) as exc:
            status = max(status, exc.status)
            for line in exc.lines():
                click.echo(f"error: {printable(line)}", err=True)
            continue
        click.echo(f"ok: {path}")
    if status:
        raise SystemExit(status)


@cli.command()
def schema() -> None:
    """Print the fixture format's JSON Schema."""
    from ctxkit.loading.read import load_schema
    from ctxkit.output import dumps

    echo(dumps(load_schema()))


@cli.command()
@format_option("text", "json")
def templates(fmt: str) -> None:
    """List the built-in texts by name, with their slots (`system_prompt`: its placeholders)."""
    from ctxkit.loading.templates import BUILTIN, SYSTEM_PLACEHOLDERS
    from ctxkit.output import dumps

    def placeholders(name: str) -> list[str]:
        return ["{{" + p + "}}" for p in SYSTEM_PLACEHOLDERS] if name == "system_prompt" else []

    if fmt == "json":
        echo(
            dumps(
                {
                    name: {"text": text, "slots": list(slots)}
                    | ({"placeholders": found} if (found := placeholders(name)) else {})
                    for name, (text, slots) in BUILTIN.items()
                }
            )
        )
        return
    for name, (text, slots) in BUILTIN.items():
        shown = ", ".join("{" + s + "}" for s in slots) or "no slots"
        if found := placeholders(name):
            shown = "placeholders " + ", ".join(found)
        click.echo(f"== {name} ({shown})")
        click.echo(text)
        click.echo()


@cli.command()
@click.argument("fixture")
@assembly_options
@format_option("json", "yaml", "text")
@click.option("--raw", is_flag=True, help="Print image bytes in full.")
@click.option("--check", is_flag=True, help="Exit 1 when the request as sent exceeds the window (R-ASM-9).")
def assemble(fixture: str, fmt: str, raw: bool, check: bool, **kw: Any) -> None:
    """Print the provider request body the fixture assembles to."""
    from ctxkit.output import dumps, dumps_yaml, shorten_images

    result = run_pipeline(fixture, kw)
    if fmt == "text":
        from ctxkit.reports.transcript import render

        echo_text(render(result, raw=raw))
    else:
        body = result.payload.body
        if not raw:
            body = shorten_images(body, result.payload.prepared.image_b64)
        echo(dumps(body) if fmt == "json" else dumps_yaml(body))
    if check and result.over_window_tokens():
        raise SystemExit(ExitStatus.FAILED)


@cli.command()
@click.argument("fixture")
@assembly_options
@format_option("table", "json")
def budget(fixture: str, fmt: str, **kw: Any) -> None:
    """Show where the window's tokens went, segment by segment."""
    from ctxkit.output import dumps
    from ctxkit.reports.budget import report, table

    data = report(run_pipeline(fixture, kw))
    echo(dumps(data)) if fmt == "json" else echo_text(table(data))


@cli.command()
@click.argument("fixture")
@assembly_options
@format_option("table", "json")
def explain(fixture: str, fmt: str, **kw: Any) -> None:
    """One row per message and file: its fate and the rule behind it."""
    from ctxkit.output import dumps
    from ctxkit.reports.explain import rows as explain_rows

    try:
        rows = explain_rows(run_pipeline(fixture, kw))
    except RuleError:
        _explain_unassembled(fixture, fmt, kw)
        raise
    if fmt == "json":
        echo(dumps([r.as_json() for r in rows]))
        return
    from ctxkit.reports.explain import table

    echo_text(table(rows))


def _explain_unassembled(fixture: str, fmt: str, kw: dict[str, Any]) -> None:
    """The rows that can be computed without the assembly; the caller then reports its error."""
    from ctxkit.loading.config import resolve
    from ctxkit.output import dumps
    from ctxkit.reports import unassembled

    found = unassembled.rows(resolve(load(fixture, kw), build_options(kw)))
    echo(dumps([r.as_json() for r in found])) if fmt == "json" else echo_text(unassembled.table(found))
