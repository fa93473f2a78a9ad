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
    from ctxkit.loading.catalog import OWN, entries
    from ctxkit.output import dumps

    try:
        when = datetime.fromisoformat(at).replace(tzinfo=UTC) if at else datetime.now(UTC)
    except ValueError:
        raise InputError(f"--at {at!r} is not a date (YYYY-MM-DD)") from None
    rows = entries(when)
    if fmt == "json":
        echo(dumps([row.as_json() for row in rows]))
        return
    header = (
        "provider",
        "model",
        "window",
        "output",
        "images",
        "tokenizer",
        "$/M in",
        "read",
        "write",
        "out",
        "window from",
    )
    table: list[tuple[str, ...]] = [header]
    for r in rows:
        i = r.info
        table.append(
            (
                r.provider,
                r.model,
                f"{i.max_input_tokens:,}",
                f"{i.max_output_tokens:,}",
                "yes" if i.supports_images else "no",
                i.tokenizer,
                *(value or "-" for value in r.prices.values()),
                "genai-prices" if r.window_source != OWN else "ctxkit",
            )
        )
    widths = [max(len(row[c]) for row in table) for c in range(len(header))]
    for row in table:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    package = next((r.price_source.split(" (")[0] for r in rows if r.price_source), "genai-prices")
    click.echo()
    click.echo(f"window from genai-prices: {package}, context_window (gpt-5*: minus the output reserve)")
    click.echo(f"prices: {package}, USD per million tokens (read: cache read, write: cache write; from: tiered)")
    click.echo(f"output, images, tokenizer, the other windows: {OWN}; cache rules: ctxkit/data/cache_rules.json")
