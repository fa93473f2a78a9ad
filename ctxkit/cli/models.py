"""`ctxkit models`: the model table, each field with its source (genai-prices or ctxkit's own).

Input: `--at` (the date whose prices to show) and `--format`. Output: a table or JSON on stdout.
"""

from __future__ import annotations

from datetime import UTC, datetime

import click

from ctxkit.cli import cli
from ctxkit.cli.options import echo, format_option
from ctxkit.errors import InputError


@cli.command(name="models")
@format_option("text", "json")
@click.option("--at", "at", default=None, metavar="YYYY-MM-DD", help="Show the prices in force on this date [today].")
def models_command(fmt: str, at: str | None) -> None:
    """List the model table: window, output reserve, images, tokenizer, prices, and their sources."""
    from ctxkit.loading.catalog import entries
    from ctxkit.output import dumps
    from ctxkit.reports.models import table

    try:
        when = datetime.fromisoformat(at).replace(tzinfo=UTC) if at else datetime.now(UTC)
    except ValueError:
        raise InputError(f"--at {at!r} is not a date (YYYY-MM-DD)") from None
    rows = entries(when)
    echo(dumps([row.as_json() for row in rows]) if fmt == "json" else table(rows))
