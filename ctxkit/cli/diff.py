"""`ctxkit diff`: two assemblies, chosen by an option given twice or two fixtures.

Input: one or two fixtures and the shared options (each may be given twice).
Output: the alignment and the payload diff; exit 1 with --exit-code when the
payloads differ.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from ctxkit.cli import cli
from ctxkit.cli.options import (
    HELP,
    PROVIDER_TYPE,
    TOKENIZER_TYPE,
    checked_text,
    echo,
    format_option,
    load_options,
    model_per_provider,
    run_pipeline,
)
from ctxkit.errors import ExitStatus, InputError

TWICE = ("provider", "max_input_tokens", "leaf", "tokenizer", "model")
Side = tuple[str, dict[str, Any], str]  # fixture path, options, label


def twice(name: str) -> str:
    """The shared option's help, for diff's variant that may be given twice."""
    extra = " Given once with two --provider: the side whose provider serves it." if name == "model" else ""
    return f"{HELP[name]} Give it twice to compare two values.{extra}"


@cli.command()
@click.argument("fixtures", nargs=-1, required=True)
@click.option("--provider", multiple=True, type=PROVIDER_TYPE, help=twice("provider"))
@click.option("--model", multiple=True, callback=checked_text, help=twice("model"))
@click.option("--max-input-tokens", multiple=True, type=click.IntRange(min=1), help=twice("max_input_tokens"))
@click.option("--leaf", multiple=True, callback=checked_text, help=twice("leaf"))
@click.option("--tokenizer", multiple=True, type=TOKENIZER_TYPE, help=twice("tokenizer"))
@click.option("--now", callback=checked_text, help=HELP["now"])
@click.option(
    "--templates", "templates_file", type=click.Path(dir_okay=False), callback=checked_text, help=HELP["templates_file"]
)
@load_options
@format_option("text", "json")
@click.option("--exit-code", is_flag=True, help="Exit 1 when the payloads differ.")
def diff(fixtures: tuple[str, ...], fmt: str, exit_code: bool, **kw: Any) -> None:
    """Compare two assemblies: give an option twice, or two fixture files.

    \b
    ctxkit diff chat.yaml --provider openai --provider anthropic
    ctxkit diff chat.yaml --max-input-tokens 8000 --max-input-tokens 4000
    ctxkit diff before.yaml after.yaml
    """
    from ctxkit.output import colour_diff, printable, use_colour
    from ctxkit.reports import diff as diffing

    sides = _sides(fixtures, kw)
    results = [run_pipeline(path, side_kw) for path, side_kw, _ in sides]
    d = diffing.compare(results[0], results[1], sides[0][2], sides[1][2])
    if fmt == "json":
        from ctxkit.output import dumps

        echo(dumps(d.as_json()))
    else:
        text = diffing.render(d)
        echo(colour_diff(printable(text), use_colour(sys.stdout)))
    if exit_code and d.differ:
        raise SystemExit(ExitStatus.FAILED)


def _sides(fixtures: tuple[str, ...], kw: dict[str, Any]) -> list[Side]:
    if len(fixtures) > 2:
        raise InputError("diff takes one fixture (with an option given twice) or two fixtures")
    twice = [name for name in TWICE if len(kw[name]) == 2]
    for name in TWICE:
        if len(kw[name]) > 2:
            raise InputError(f"--{name.replace('_', '-')} may be given at most twice")
    if len(fixtures) == 2 and twice:
        raise InputError("give either two fixtures or an option twice, not both")
    if len(fixtures) == 1 and not twice:
        raise InputError(
            "nothing to compare: give a second fixture, or an option twice "
            "(e.g. --provider openai --provider anthropic)"
        )
    sides = []
    for n in (0, 1):
        side = dict(kw)
        labels = []
        for name in TWICE:
            values = kw[name]
            side[name] = values[n] if len(values) == 2 else (values[0] if values else None)
            if len(values) == 2:
                labels.append(f"{name.replace('_', '-')}={values[n]}")
        path = fixtures[n] if len(fixtures) == 2 else fixtures[0]
        label = path + (" " + " ".join(labels) if labels else "")
        sides.append((path, side, label))
    if len(kw["provider"]) == 2 and len(kw["model"]) == 1:
        return _model_for_its_provider(sides, kw["model"][0])
    return sides


def _model_for_its_provider(sides: list[Side], model: str) -> list[Side]:
    """`--provider A --provider B --model X`: X names the model of the side whose provider
    serves it; the other side keeps the fixture's model (see `model_per_provider`)."""
    chosen = model_per_provider([side["provider"] for _, side, _ in sides], [model])
    return [
        (path, {**side, "model": mine}, f"{label} model={model}" if mine and not all(chosen) else label)
        for (path, side, label), mine in zip(sides, chosen, strict=True)
    ]
