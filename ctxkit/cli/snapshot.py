"""`ctxkit snapshot`: the golden check of payload + budget for each fixture (docs/rules.md#golden-snapshots).

Input: fixture files or folders, a snapshots folder, option sets (`--provider`
and `--max-input-tokens` repeat and name the snapshot; the other shared
overrides apply to every snapshot of the run). Output: one
line per snapshot that did not simply pass (with a unified diff for a mismatch,
coloured only on a terminal), then `N passed, M failed` on stdout. Exit 1 on
any mismatch or missing snapshot, 2 on bad input (a clock-dependent fixture
without `now` included).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from ctxkit.cli import cli
from ctxkit.cli.options import (
    PROVIDER_TYPE,
    WINDOW_TYPE,
    build_options,
    checked_text,
    complete_model,
    echo,
    load,
    load_options,
    model_per_provider,
    overrides,
    warn,
)
from ctxkit.errors import ExitStatus

if TYPE_CHECKING:
    from ctxkit.snapshots.store import SnapshotReport


@cli.command()
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--snapshots",
    "snapshots_dir",
    required=True,
    metavar="DIR",
    type=click.Path(file_okay=False),
    help="Folder holding one JSON snapshot per fixture and option set.",
)
@click.option("--update", is_flag=True, help="Write snapshots that are missing or differ.")
@click.option("--prune", is_flag=True, help="Report snapshots no fixture produces; with --update, delete them.")
@click.option(
    "--replay", "pin_replay", is_flag=True, help="Also pin each replay's cache summary (x.replay.json, R-LOG-5)."
)
@click.option(
    "--provider",
    "providers",
    multiple=True,
    type=PROVIDER_TYPE,
    help="Provider to build for; repeat for one snapshot per provider.",
)
@click.option(
    "--max-input-tokens",
    "windows",
    multiple=True,
    type=WINDOW_TYPE,
    help="The model's input window; repeat for one snapshot per window.",
)
@click.option(
    "--model",
    "models",
    multiple=True,
    callback=checked_text,
    shell_complete=lambda ctx, param, incomplete: complete_model(ctx, incomplete),
    help="Model name; with several --provider, repeat it: each model goes to the provider that serves it.",
)
@overrides("leaf", "tokenizer", "now", "templates_file")
@load_options
def snapshot(
    paths: tuple[str, ...],
    snapshots_dir: str,
    update: bool,
    prune: bool,
    pin_replay: bool,
    providers: tuple[str, ...],
    windows: tuple[int, ...],
    models: tuple[str, ...],
    **kw: Any,
) -> None:
    """Compare payload + budget of each fixture with its stored snapshot."""
    from dataclasses import replace

    from ctxkit.snapshots.store import check

    shared = build_options(kw)  # --leaf, --tokenizer, --now, --templates: the same for every snapshot
    chosen = model_per_provider(providers or (None,), models)  # a model per provider
    options_list = [
        replace(shared, provider=p, model=m, max_input_tokens=w)
        for p, m in zip(providers or (None,), chosen, strict=True)
        for w in (windows or (None,))
    ]
    report = check(
        paths,
        snapshots_dir,
        update=update,
        prune=prune,
        options_list=options_list,
        loader=lambda path: load(path, kw),
        replay=pin_replay,
    )
    for text in report.warnings:
        warn(text)
    _show(report)
    if report.exit_status != ExitStatus.OK:
        raise SystemExit(report.exit_status)


def _show(report: SnapshotReport) -> None:
    """Each snapshot that did not pass, with its diff (coloured on a terminal), then the summary."""
    from ctxkit.output import colour_diff, printable, use_colour

    colour = use_colour(sys.stdout)
    for outcome in report.outcomes:
        if outcome.status == "passed":
            continue
        click.echo(printable(outcome.message()))
        if outcome.diff:
            echo(colour_diff(printable(outcome.diff), colour))
    click.echo(report.summary())
