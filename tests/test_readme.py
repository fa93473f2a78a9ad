"""The README's examples are real: every console block matches a fresh run, every other block is checked or marked."""

from __future__ import annotations

import subprocess
import sys

import click

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

    from ctxkit.cli import all_commands, cli

    for name, command in all_commands().items():
        result = CliRunner().invoke(cli, [name, "--help"])
        assert result.exit_code == 0, name
        assert command.help, f"{name} has no help text"
        assert f"`ctxkit {name}" in (ROOT / "README.md").read_text(encoding="utf-8") or name in (
            "schema",
            "templates",
        ), f"README does not document {name}"


def _readme_script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("readme_script", ROOT / "scripts" / "readme.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_readme_block_is_run_checked_or_marked_illustrative():
    """Issue 11.17: a block that is neither run nor marked fails the README check."""
    script = _readme_script()
    text = "intro\n\n```text\n$ ctxkit snapshot fixtures --snapshots x\n27 passed, 0 failed\n```\n"
    _, problems = script.refresh(text)
    assert problems and problems[0].startswith("README.md:3: a ```text block that is neither run nor marked")
    marked = "<!-- illustrative: a synopsis -->\n```sh\nctxkit snapshot PATH...\n```\n"
    assert script.refresh(marked) == (marked, [])
    bad_fixture = "<!-- fixture -->\n```yaml\nctxkit: 1\nmodel: {provider: openai}\n```\n"
    (problem,) = script.refresh(bad_fixture)[1]
    assert problem.startswith("the fixture example #1 does not validate:")


def test_readme_console_sessions_run_in_a_scratch_copy():
    """Issue 11.17: the snapshot example works on a fresh clone (no stored snapshots) and its edit
    of a fixture happens in a scratch copy, never in the repository."""
    script = _readme_script()
    before = (ROOT / "fixtures" / "plain_chat.yaml").read_bytes()
    text = (
        "```console\n$ ctxkit snapshot fixtures/plain_chat.yaml --snapshots golden --update\n```\n"
        "```console\n$ sed -i 's/long chats/short chats/' fixtures/plain_chat.yaml\n"
        "$ ctxkit snapshot fixtures/plain_chat.yaml --snapshots golden\n```\n"
    )
    new, problems = script.refresh(text)
    assert problems == []
    assert "written: golden/plain_chat.json (fixtures/plain_chat.yaml): new\n" in new
    assert '+        "content": "And why does it matter for short chats?"\n' in new
    assert new.endswith("0 passed, 1 failed\n```\n")
    assert (ROOT / "fixtures" / "plain_chat.yaml").read_bytes() == before
    assert not (ROOT / "golden").exists()


def test_every_option_of_every_command_has_help():
    """Issue 19 item 17: `diff --help` listed its shared options without a word."""
    from ctxkit.cli import all_commands

    missing = [
        f"{name} {param.opts[0]}"
        for name, command in all_commands().items()
        for param in command.params
        if isinstance(param, click.Option) and not param.help and param.opts[0] not in ("--help", "-h")
    ]
    assert not missing, missing
