"""The README's examples are real: every `$ ctxkit ...` block matches a fresh run."""

from __future__ import annotations

import subprocess
import sys

from .conftest import ROOT


def test_readme_examples_are_current():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "readme.py"), "--check"], capture_output=True, text=True, cwd=ROOT
    )
    assert proc.returncode == 0, (
        "README.md is stale; run `python scripts/readme.py --write` and review:\n"
        + proc.stdout[-4000:]
        + proc.stderr[-2000:]
    )


def test_every_command_has_help():
    from click.testing import CliRunner

    from ctxkit.cli import cli

    for name, command in cli.commands.items():
        result = CliRunner().invoke(cli, [name, "--help"])
        assert result.exit_code == 0, name
        assert command.help, f"{name} has no help text"
        assert f"`ctxkit {name}" in (ROOT / "README.md").read_text(encoding="utf-8") or name in (
            "schema",
            "templates",
        ), f"README does not document {name}"
