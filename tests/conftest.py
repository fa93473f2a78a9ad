"""Shared test helpers: run the CLI in process and assert on its exit code."""

from __future__ import annotations

import os
import tempfile
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
GALLERY = sorted(p for p in FIXTURES.glob("*.yaml"))

os.environ["COLUMNS"] = "80"
# the parsed-ranks cache of the tests lives in a temporary folder, never in ~/.cache
os.environ.setdefault("CTXKIT_CACHE_DIR", tempfile.mkdtemp(prefix="ctxkit-test-cache-"))
os.environ["NO_COLOR"] = "1"


@dataclass
class Run:
    code: int
    out: str
    err: str

    def __str__(self) -> str:
        return f"exit {self.code}\n--- stdout\n{self.out}\n--- stderr\n{self.err}"


def ctxkit(*args: str, stdin: str | bytes | None = None, expect: int | None = 0) -> Run:
    """Run `ctxkit ARGS` in process; fail with stdout/stderr shown on an unexpected exit."""
    from ctxkit.cli import main

    runner = CliRunner()
    code = 0
    with runner.isolation(input=stdin) as streams:
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        out = streams[0].getvalue().decode()
        err = streams[1].getvalue().decode()
    run = Run(code, out, err)
    if expect is not None:
        assert code == expect, str(run)
    return run


class Blocked(BaseException):
    """Raised by `deadline`; not an OSError (as TimeoutError is), so no `except OSError` hides it."""


@pytest.fixture
def deadline() -> Iterator[None]:
    """Fail (instead of hanging the suite) when the test blocks for more than 10 s (a FIFO)."""
    import signal

    def expired(signum: int, frame: object) -> None:
        raise Blocked("blocked for more than 10 s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(10)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def cli():
    return ctxkit


def peak_bytes(work: Callable[[], object]) -> int:
    """The most memory Python held at once while `work` ran (tracemalloc).

    Unlike a wall-clock limit, this does not depend on how busy the machine is: tests
    that guard against work blowing up (alias bombs) bound memory, and `make bench`
    measures time."""
    tracemalloc.start()
    try:
        work()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak
