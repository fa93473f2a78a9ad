"""`ctxkit import`: a logged request body or message list → a fixture (YAML on stdout).

Input: a JSON file (or `-`) and, optionally, its format (else recognised).
Output: the fixture on stdout (written so it loads back exactly), warnings on
stderr counting everything that could not be carried over.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from ctxkit.cli import cli
from ctxkit.cli.options import checked_text, echo, warn
from ctxkit.errors import InputError
from ctxkit.loading.files import DEFAULT_MAX_SIZE_TEXT


@cli.command("import")
@click.argument("file")
@click.option(
    "--from",
    "dialect",
    type=click.Choice(["openai", "anthropic"]),
    help="The format of the log (default: recognised from the log itself).",
)
@click.option("--model", callback=checked_text, help="Model name for the fixture (else the log's).")
@click.option(
    "--max-input-tokens",
    type=click.IntRange(min=1),
    help="The window, needed when the model table does not know the model.",
)
@click.option(
    "--max-size",
    callback=checked_text,
    default=DEFAULT_MAX_SIZE_TEXT,
    show_default=True,
    help="Largest log accepted, and fixture written (bytes, K/M/G suffixes).",
)
def import_(file: str, dialect: str | None, model: str | None, max_input_tokens: int | None, max_size: str) -> None:
    """Turn a logged OpenAI or Anthropic request into a fixture."""
    from ctxkit.loading.importer import build
    from ctxkit.loading.read import parse_size
    from ctxkit.loading.write import exact_numbers, yaml_text

    limit = parse_size(max_size)
    floats: dict[int, tuple[float, str]] = {}
    doc = _read_json(file, floats, limit)
    try:
        imported = build(doc, dialect, model=model, max_input_tokens=max_input_tokens)
    except InputError as exc:
        where = str(exc)
        raise InputError(f"{file}:{where}" if where.startswith("/") else f"{file}: {where}") from None
    text = yaml_text(exact_numbers(imported.document, floats), source=file)
    _check_loads(file, text, limit)
    for w in imported.warnings:
        warn(w)
    echo((imported.comment + "\n" if imported.comment else "") + text)


def _read_json(file: str, floats: dict[int, tuple[float, str]], limit: int) -> Any:
    """Strict JSON (no YAML fallback: a trailing comma or single quotes are errors); duplicate
    keys, NaN, bad UTF-8 and runaway nesting are errors with a location."""
    from ctxkit.loading.files import Unreadable, read_bounded, read_regular_file
    from ctxkit.loading.read import parse_json

    try:
        if file == "-":
            raw = read_bounded(sys.stdin.buffer, limit)
        else:
            raw = read_regular_file(file, limit)
        text = raw.decode("utf-8-sig")
    except Unreadable as exc:
        raise InputError(f"{file}: cannot read: {exc.args[0]}") from None
    except OSError as exc:
        raise InputError(f"{file}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{file}: not JSON: not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})"
        ) from None
    if not text.lstrip().startswith(("{", "[")):
        raise InputError(f"{file}: not JSON: expected a request body (an object) or a message list")
    return parse_json(file, text, floats)


def _check_loads(file: str, text: str, limit: int) -> None:
    """What import writes must load as a fixture; if not, that is an error here, not later."""
    import io

    from ctxkit.loading.read import load_fixture

    try:
        load_fixture("-", stdin=io.BytesIO(text.encode("utf-8")), max_size=limit)
    except InputError as exc:
        raise InputError(
            f"{file}: the imported fixture would not validate: {exc.lines()[0].removeprefix('-:').lstrip()}"
        ) from None
