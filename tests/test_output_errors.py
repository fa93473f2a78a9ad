"""Output that cannot be written is an error, not silence and not a crash (docs/rules.md#exit-codes).

Run in a real process: stdout's file descriptor is what is under test.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from typing import IO

import pytest

from .conftest import FIXTURES

PLAIN = str(FIXTURES / "plain_chat.yaml")
RUN = [sys.executable, "-c", "from ctxkit.cli import main; main()"]


def run(
    args: list[str], stdout: IO[str] | None, preexec_fn: Callable[[], None] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(
        [*RUN, *args], stdout=stdout, stderr=subprocess.PIPE, text=True, env=env, preexec_fn=preexec_fn, check=False
    )


def assert_one_error(result: subprocess.CompletedProcess[str], reason: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert lines == [f"error: cannot write output: {reason}"], result.stderr


@pytest.mark.parametrize("command", [["assemble", PLAIN], ["validate", PLAIN], ["budget", PLAIN], ["templates"]])
def test_output_closed_stdout_is_exit_2_one_line(command):
    """`ctxkit assemble f.yaml >&-` used to exit 0 having written nothing."""
    result = run(command, stdout=None, preexec_fn=lambda: os.close(1))
    assert_one_error(result, "stdout is closed")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("command", [["assemble", PLAIN], ["validate", PLAIN], ["explain", PLAIN]])
def test_output_full_disk_is_exit_2_one_line(command):
    """`> /dev/full` used to be an internal error (exit 3)."""
    with open("/dev/full", "w") as full:
        result = run(command, stdout=full)
    assert_one_error(result, "No space left on device")


def test_output_reader_that_stops_early_is_success():
    """`| head -1`: a closed pipe is not an error."""
    proc = subprocess.Popen([*RUN, "assemble", PLAIN], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait() == 0 and err == ""
