"""`ctxkit import`: a logged request body or message list → a fixture (YAML on stdout).

Input: a JSON file (or `-`) and its dialect. Output: the fixture on stdout,
warnings on stderr.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from ctxkit.cli import cli
from ctxkit.cli.options import checked_text, echo, warn
from ctxkit.errors import InputError


@cli.command("import")
@click.argument("file")
@click.option(
    "--from", "dialect", type=click.Choice(["openai", "anthropic"]), required=True, help="The format of the log."
)
@click.option("--model", callback=checked_text, help="Model name for the fixture (else the log's).")
@click.option(
    "--max-input-tokens",
    type=click.IntRange(min=1),
    help="The window, needed when the model table does not know the model.",
)
def import_(file: str, dialect: str, model: str | None, max_input_tokens: int | None) -> None:
    """Turn a logged OpenAI or Anthropic request into a fixture."""
    from ctxkit.loading.importer import build
    from ctxkit.output import dumps_yaml

    try:
        if file == "-":
            raw = sys.stdin.buffer.read()
        else:
            with open(file, "rb") as fh:
                raw = fh.read()
        doc: Any = json.loads(raw)
    except OSError as exc:
        raise InputError(f"{file}: cannot read: {exc.strerror}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"{file}: not JSON: {exc}") from None
    try:
        imported = build(doc, dialect, model=model, max_input_tokens=max_input_tokens)
    except InputError as exc:
        raise InputError(f"{file}: {exc}") from None
    for w in imported.warnings:
        warn(w)
    text = dumps_yaml(imported.document)
    echo((imported.comment + "\n" if imported.comment else "") + text)
