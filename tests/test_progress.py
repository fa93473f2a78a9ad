"""Long commands show progress on stderr only when stderr is a terminal (R-RPL-8, issue 19 item 8).

A pseudo-terminal stands in for the user's: the bar is drawn there; through a pipe (and in every
other test's captured output) stderr carries the warnings alone.
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import FIXTURES, ctxkit

SESSION = FIXTURES / "replay" / "long_session.yaml"
COMMANDS = [["replay", str(SESSION)], ["report", str(SESSION), "--replay", "-o", "{out}"]]


def _stderr_on_a_terminal(args: list[str]) -> str:
    """Run ctxkit with stdout piped and stderr on a pseudo-terminal; what the terminal showed."""
    leader, follower = pty.openpty()
    code = "import sys; from ctxkit.cli import main; main(sys.argv[1:])"
    proc = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the other side closed: the command ended
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    proc.communicate()
    assert proc.returncode == 0
    return shown.decode("utf-8", "replace")


@pytest.mark.parametrize("args", COMMANDS, ids=["replay", "report-replay"])
def test_r_rpl_8_long_commands_show_progress_on_a_terminal_only(args: list[str], tmp_path: Path) -> None:
    args = [a.replace("{out}", str(tmp_path / "page.html")) for a in args]
    shown = _stderr_on_a_terminal(args)
    assert "replay" in shown and "100%" in shown
    captured = ctxkit(*args).err
    assert "%" not in captured and "replay  [" not in captured
