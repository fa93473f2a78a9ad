"""`ctxkit replay`: every model call of the conversation, its cache hit, break, cause and cost.

Input: a fixture and the common options, `--calls A:B`, `--compress-as TOKENS`, `--payloads DIR`,
the gate (`--check` and its thresholds, R-LOG-5).
Output: the table or JSON report on stdout; with `--payloads`, each call's body as `DIR/NNNN.json`
(every target checked before the replay starts, each body written to its temporary file as
its call is made, all renamed into place once the replay is done: see `ctxkit.writing`); with
`--check`, exit 1 and one `error: check: …` line per threshold missed, after the report.
A log of recorded traffic instead of a fixture goes to `cli/logreplay.py` (R-LOG); the gate is the same.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ctxkit.cli import cli, logreplay
from ctxkit.cli.logreplay import log_format_option, skip_bad_option
from ctxkit.cli.options import (
    apply_gate,
    assembly_options,
    build_options,
    check_options,
    echo,
    echo_text,
    format_option,
    gate,
    load,
    warn,
)
from ctxkit.cli.progress import progress
from ctxkit.errors import InputError
from ctxkit.loading.traffic import Log

if TYPE_CHECKING:
    from ctxkit.loading.config import Options
    from ctxkit.loading.domain import Fixture
    from ctxkit.replay.driver import Replay
    from ctxkit.writing import Target

SLICE = re.compile(r"^\s*(-?\d+)?\s*:\s*(-?\d+)?\s*$")


def parse_calls(text: str | None, total: int) -> tuple[int, int]:
    """`--calls A:B`: a Python slice over the calls (0-based, half-open); malformed or empty is an error."""
    if text is None:
        return 0, total
    m = SLICE.match(text)
    if m is None:
        raise InputError(f"--calls {text!r}: expected a range A:B (0-based, half-open, either end optional)")
    first, stop, _ = slice(*(int(g) if g is not None else None for g in m.groups())).indices(total)
    if stop <= first:
        raise InputError(f"--calls {text!r}: selects no call (this replay has {total} calls, 0 to {total - 1})")
    return first, stop


def parse_compress_as(text: str | None) -> int | None:
    if text is None:
        return None
    value = text.strip()
    if not (value.isascii() and value.isdigit()) or int(value) <= 0:  # "²".isdigit() is true, int("²") fails
        raise InputError(f"--compress-as {text!r}: expected a positive integer (the simulated summary's tokens)")
    return int(value)


@cli.command()
@click.argument("fixture")
@assembly_options
@format_option("table", "json")
@click.option("--calls", "calls_range", metavar="A:B", help="Print only these calls (a 0-based Python slice).")
@click.option("--compress-as", "compress_as", metavar="TOKENS", help="Simulate compression (summary size).")
@click.option("--payloads", type=click.Path(file_okay=False), help="Write each call's body as DIR/NNNN.json.")
@click.option("--raw", is_flag=True, help="With --payloads: image bytes in full.")
@log_format_option
@skip_bad_option
@check_options
def replay(
    fixture: str,
    fmt: str,
    calls_range: str | None,
    compress_as: str | None,
    payloads: str | None,
    raw: bool,
    log_format: str | None,
    skip_bad: bool,
    **kw: Any,
) -> None:
    """Rebuild every model call of the conversation and predict its prompt-cache hits.

    FIXTURE may also be a log of recorded traffic (JSON lines, a cassette, OTLP JSON; .gz
    accepted): its calls are replayed as they were sent, beside the provider's own numbers."""
    thresholds = gate(kw)
    found = logreplay.read_input(fixture, kw, log_format=log_format, skip_bad=skip_bad)
    if isinstance(found, Log):
        logreplay.refuse_window_options({**kw, "compress_as": compress_as, "payloads": payloads, "raw": raw})
        data = logreplay.run(found, kw, fmt=fmt, calls_range=calls_range, skip_bad=skip_bad)
    else:
        data = _replay_fixture(fixture, found, kw, fmt, calls_range, parse_compress_as(compress_as), payloads, raw)
    apply_gate(data, thresholds)


def _replay_fixture(
    fixture: str,
    found: Any,
    kw: dict[str, Any],
    fmt: str,
    calls_range: str | None,
    compress_as: int | None,
    payloads: str | None,
    raw: bool,
) -> dict[str, Any]:
    """A fixture's replay: every target checked, the calls replayed and their bodies written,
    the warnings, then the report of the selected calls (returned for the gate)."""
    from ctxkit.output import dumps
    from ctxkit.replay.driver import count_calls
    from ctxkit.reports.replay import report, table

    if payloads is not None:
        _check_folder(payloads)
    loaded = load(fixture, kw, data=found)
    options = build_options(kw)
    total = count_calls(loaded, options)
    first, stop = parse_calls(calls_range, total)
    targets = [] if payloads is None else payload_targets(Path(payloads), total)
    done = _run_with_payloads(loaded, options, compress_as, targets, raw=raw, total=total)
    for w in done.warnings:
        warn(w)
    data = report(done, first=first, stop=stop)
    echo(dumps(data)) if fmt == "json" else echo_text(table(data))
    return data


def _run_with_payloads(
    loaded: Fixture, options: Options, compress_as: int | None, targets: list[Target], *, raw: bool, total: int
) -> Replay:
    """The replay, with a progress bar; each call's body goes to its target as it is made, and
    all of them are renamed into place once the replay is done."""
    from ctxkit import writing
    from ctxkit.output import dumps, shorten_images
    from ctxkit.replay.driver import replay as run_replay

    with writing.Batch() as batch, progress(total, "replay") as step:

        def on_call(index: int, call: Any, result: Any) -> None:
            if targets:
                body = result.payload.body
                text = dumps(body if raw else shorten_images(body, result.payload.prepared.image_b64))
                batch.add(targets[index], text.encode("utf-8"))
            step()

        done = run_replay(loaded, options, compress_as=compress_as, on_call=on_call)
        batch.commit()
    return done


def _check_folder(payloads: str) -> None:
    """`--payloads DIR` names a folder (made when missing), never stdout or a file."""
    import os
    import stat

    from ctxkit.writing import means_stdout

    if means_stdout(payloads):
        raise InputError(f"--payloads {payloads!r}: needs a folder (each call is its own file)")
    try:
        info = os.stat(payloads)
    except OSError:
        return  # missing (or unreachable): each target's check says what is wrong
    if not stat.S_ISDIR(info.st_mode):
        raise InputError(f"--payloads {payloads!r}: exists and is not a folder")


def payload_targets(folder: Path, total: int) -> list[Target]:
    """`DIR/NNNN.json` for every call, each checked before anything is written: an existing
    regular file of that name is replaced, anything else in the way is bad input."""
    from ctxkit import writing

    return [writing.check(folder / f"{index:04d}.json", replace=True, make_folder=True) for index in range(total)]
