"""`ctxkit report`: one self-contained HTML page (R-HTML-1…4).

Input: a fixture (or, with `--replay`, a log of recorded traffic) and the common options.
Output: the page, written to a file through `ctxkit.writing` (missing folders created) or
to stdout with `-o -` (or `-o /dev/stdout`). An existing regular file is replaced only
when it is an earlier ctxkit report, or with `--force`; nothing else is ever replaced.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ctxkit import __version__
from ctxkit.cli import cli, logreplay
from ctxkit.cli.options import assembly_options, build_options, echo, load, warn
from ctxkit.errors import InputError, RuleError
from ctxkit.loading.traffic import Log

if TYPE_CHECKING:
    from ctxkit.writing import Target

HEAD_BYTES = 4096  # the generator <meta> sits in the first lines of a report


@cli.command()
@click.argument("fixture")
@click.option(
    "-o", "--output", metavar="FILE", help="Where to write the page ('-' for stdout). Default: STEM.html here."
)
@click.option("--force", is_flag=True, help="Overwrite an existing file that is not a ctxkit report.")
@click.option("--replay", "with_replay", is_flag=True, help="Add every call of the conversation and its cache (R-RPL).")
@assembly_options
def report(fixture: str, output: str | None, force: bool, with_replay: bool, **kw: Any) -> None:
    """Write one self-contained HTML page: seat map, budget, fates, payload.

    With --replay, FIXTURE may also be a log of recorded traffic: the page of its calls."""
    from ctxkit import writing

    path = _target(fixture, output)
    target = None if path is None else _check_target(path, force)
    found = logreplay.read_input(fixture, kw, log_format=None, skip_bad=False)
    if isinstance(found, Log):
        page, failure = logreplay.page(found, kw, with_replay=with_replay), None
    else:
        page, failure = _page(fixture, kw, with_replay=with_replay, read=found)
    if target is None:
        echo(page)
    else:
        data = page.encode("utf-8")
        writing.write(target, data)
        click.echo(f"wrote {target.path} ({len(data):,} bytes)", err=True)
    if failure is not None:
        raise failure


def _page(
    fixture: str, kw: dict[str, Any], *, with_replay: bool, read: bytes | None = None
) -> tuple[str, RuleError | None]:
    from ctxkit.loading.config import resolve
    from ctxkit.pipeline import run
    from ctxkit.reports.budget import report as budget_report
    from ctxkit.reports.html import render, view

    loaded = load(fixture, kw, data=read)
    options = build_options(kw)
    try:
        result = run(loaded, options)
    except RuleError as exc:
        eff = resolve(loaded, options)
        return render(view.failed(eff, str(exc), warnings=[]), version=__version__), exc
    warnings = list(result.warnings)  # R-ASM-9's warning included
    data = budget_report(result)
    calls, failure = None, None
    if with_replay:
        try:
            calls = _replay(loaded, options, warnings)
        except RuleError as exc:
            failure = exc
            warnings.append(f"the replay failed by rule: {exc}")
    for w in warnings:
        warn(w)
    page = render(view.build(result, warnings=warnings, budget=data), version=__version__, calls=calls)
    return page, failure


def _replay(loaded: Any, options: Any, warnings: list[str]) -> Any:
    """Every call of the conversation (R-RPL), with each call's blocks for its seat map."""
    from ctxkit.cli.progress import progress
    from ctxkit.replay.driver import count_calls, replay
    from ctxkit.reports.html import calls
    from ctxkit.reports.replay import report as replay_report

    total = count_calls(loaded, options)
    collected = calls.Collector(total)
    with progress(total, "replay") as step:

        def on_call(index: int, call: Any, result: Any) -> None:
            collected(index, call, result)
            step()

        done = replay(loaded, options, on_call=on_call)
    warnings.extend(w for w in done.warnings if w not in warnings)
    return calls.build(replay_report(done), collected)


def _target(fixture: str, output: str | None) -> Path | None:
    from ctxkit.writing import means_stdout

    if output is not None and means_stdout(output):
        return None
    if output is None:
        if fixture == "-":
            raise InputError("a fixture read from stdin needs -o FILE (or -o - for stdout)")
        return Path(Path(fixture).stem + ".html")
    return Path(output)


def _check_target(path: Path, force: bool) -> Target:
    """R-HTML-1: only a regular file that is an earlier ctxkit report is replaced without --force."""
    from ctxkit import writing

    exists = "exists and is not a ctxkit report; pass --force to overwrite it"
    return writing.check(path, replace=force or _is_report, make_folder=True, exists=exists)


def _is_report(path: Path) -> bool:
    """Whether the regular file at `path` is an earlier ctxkit report (read bounded, never blocking)."""
    from ctxkit.loading.files import Unreadable, read_head
    from ctxkit.reports.html import is_report

    try:
        return is_report(read_head(path, HEAD_BYTES))
    except Unreadable as exc:
        raise InputError(f"{path}: cannot read the existing file: {exc.args[0]}") from None
