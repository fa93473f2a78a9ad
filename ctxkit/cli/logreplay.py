"""`ctxkit replay LOG`: recorded traffic replayed as it was sent (R-LOG-1…4).

Input: the file `replay` or `report` was given, its options, `--log-format`, `--skip-bad`.
Output: `read_input` says whether the file is a log (else its bytes go on to the fixture
loader); `run` prints the log replay's table or JSON, `page` makes `report --replay`'s page.
Options that rebuild a window are refused for a log: nothing is reassembled.
"""

from __future__ import annotations

from typing import Any

import click

from ctxkit.cli.options import echo, echo_text, warn
from ctxkit.errors import InputError
from ctxkit.loading.traffic import FORMATS, Log
from ctxkit.replay.logs import LogReplay

# Options of fixture replay that shape a window or a rebuilt payload: meaningless for a log.
WINDOW_OPTIONS = {
    "max_input_tokens": "--max-input-tokens",
    "leaf": "--leaf",
    "now": "--now",
    "templates_file": "--templates",
    "compress_as": "--compress-as",
    "payloads": "--payloads",
    "raw": "--raw",
    "allow_outside_paths": "--allow-outside-paths",
}

log_format_option = click.option(
    "--log-format",
    "log_format",
    type=click.Choice(list(FORMATS)),
    help="Read FILE as this kind of log (default: recognised by its content).",
)
skip_bad_option = click.option(
    "--skip-bad", is_flag=True, help="Logs: skip records that cannot be read (counted in one warning)."
)


def read_input(path: str, kw: dict[str, Any], *, log_format: str | None, skip_bad: bool) -> Log | bytes:
    """The log in the file, or the file's bytes when it is a fixture."""
    from ctxkit.loading.files import DEFAULT_MAX_SIZE_TEXT
    from ctxkit.loading.read import parse_size, read_bytes
    from ctxkit.loading.traffic import load_log

    max_size = parse_size(kw.get("max_size") or DEFAULT_MAX_SIZE_TEXT)
    data = read_bytes(path, max_size)
    log = load_log(path, data, log_format=log_format, skip_bad=skip_bad, max_size=max_size)
    if log is None:
        if skip_bad:
            raise InputError(f"{path}: --skip-bad applies to logs of recorded traffic; this is a fixture")
        return data
    return log


def refuse_window_options(given: dict[str, Any]) -> None:
    for name, flag in WINDOW_OPTIONS.items():
        if given.get(name):
            raise InputError(
                f"{flag} does not apply to a log of recorded traffic: its calls are replayed as they were "
                "sent, nothing is reassembled (R-LOG-4)"
            )


def replayed(log: Log, kw: dict[str, Any], *, skip_bad: bool) -> LogReplay:
    """The log replayed with the options that apply to a body; its warnings printed."""
    from ctxkit.replay.logs import replay_log

    done = replay_log(
        log, provider=kw.get("provider"), tokenizer=kw.get("tokenizer"), model=kw.get("model"), skip_bad=skip_bad
    )
    for w in done.warnings:
        warn(w)
    return done


def run(log: Log, kw: dict[str, Any], *, fmt: str, calls_range: str | None, skip_bad: bool) -> dict[str, Any]:
    """Print the log replay's report; return it (the gate reads its totals, R-LOG-5)."""
    from ctxkit.cli.replay import parse_calls
    from ctxkit.output import dumps
    from ctxkit.reports.logreplay import report, table

    done = replayed(log, kw, skip_bad=skip_bad)
    first, stop = parse_calls(calls_range, len(done.calls)) if done.calls else (0, 0)
    data = report(done, first=first, stop=stop)
    echo(dumps(data)) if fmt == "json" else echo_text(table(data))
    return data


def page(log: Log, kw: dict[str, Any], *, with_replay: bool) -> str:
    """`report LOG --replay`: the log's page (R-LOG-4)."""
    from ctxkit import __version__
    from ctxkit.reports.html.logpage import render
    from ctxkit.reports.logreplay import report

    if not with_replay:
        raise InputError(
            f"{log.source}: a log of recorded traffic has no single call to draw: pass --replay for the page of "
            "all its calls (R-LOG-4)"
        )
    refuse_window_options(kw)
    done = replayed(log, kw, skip_bad=False)
    return render(report(done), version=__version__, warnings=list(done.warnings))
