"""Keep the README's examples true: re-run every console block, check every other block.

    python scripts/readme.py --write   # refresh the outputs in README.md
    python scripts/readme.py --check   # exit 1 when an output is stale or a block is unchecked (the tests)

Every fenced block of README.md is one of:

* a ```console block: lines starting `$ ` are commands, each followed by its
  stdout and then its stderr. `$ ctxkit ARGS` runs ctxkit in process; any other
  command (`sed -i …`, to edit a fixture) runs as a program. All console blocks
  run in README order in one scratch folder holding copies of `fixtures/` and
  `tests/data/`, with NO_COLOR=1 and COLUMNS=80, so a block may build on the one
  before it (write snapshots, edit a fixture, check again) and nothing in the
  repository is touched;
* a block right after `<!-- fixture -->`: a complete fixture, which must pass
  `ctxkit validate` (each file it names by `path:` is given a stand-in text);
* a block right after `<!-- illustrative: why -->`: not run (a set-up step, a
  config file for another tool, a synopsis); the comment says why.

A block that is none of these fails the check.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
COPIED = ("fixtures", "tests/data")
FENCE = re.compile(r"(?:^<!-- (illustrative|fixture)\b[^\n]*-->\n)?^```(\w*)\n(.*?)^```$", re.S | re.M)


def run(command: str) -> str:
    """stdout then stderr of one `$` command, run in the current folder."""
    args = shlex.split(command)
    if args[0] == "ctxkit":
        from click.testing import CliRunner

        from ctxkit.cli import main

        with CliRunner().isolation() as streams:
            with contextlib.suppress(SystemExit):
                main(args[1:])
            out = streams[0].getvalue().decode() + streams[1].getvalue().decode()
    else:
        proc = subprocess.run(args, capture_output=True, text=True)
        out = proc.stdout + proc.stderr
    return out if out.endswith("\n") or not out else out + "\n"


def rerun_console(body: str) -> str:
    commands = [line[2:] for line in body.splitlines() if line.startswith("$ ")]
    return "".join(f"$ {command}\n{run(command)}" for command in commands)


def check_fixture(body: str, index: int) -> list[str]:
    """Validate the example in a folder of its own, with a stand-in text for each `path:` it names."""
    import yaml

    folder = Path(f"readme-fixture-{index}")
    folder.mkdir()
    for name in _paths(yaml.safe_load(body)):
        (folder / name).write_text("(text of the example's file)\n", encoding="utf-8")
    path = folder / "example.yaml"
    path.write_text(body, encoding="utf-8")
    out = run(f"ctxkit validate {path}")
    return [] if out == f"ok: {path}\n" else [f"the fixture example #{index} does not validate:\n{out}"]


def _paths(node: object) -> list[str]:
    if isinstance(node, dict):
        own = [node["path"]] if isinstance(node.get("path"), str) else []
        return own + [p for value in node.values() for p in _paths(value)]
    if isinstance(node, list):
        return [p for item in node for p in _paths(item)]
    return []


def refresh(text: str) -> tuple[str, list[str]]:
    """The README with every console block re-run, and the problems of the other blocks."""
    problems: list[str] = []
    count = 0

    def sub(m: re.Match[str]) -> str:
        nonlocal count
        count += 1
        marker, lang, body = m.group(1), m.group(2), m.group(3)
        if marker == "fixture":
            problems.extend(check_fixture(body, count))
        elif marker is None and lang == "console":
            return m.group(0).replace(body, rerun_console(body), 1) if body else m.group(0)
        elif marker is None:
            line = text.count("\n", 0, m.start()) + 1
            problems.append(
                f"README.md:{line}: a ```{lang} block that is neither run nor marked: make it a console block, "
                "or put <!-- illustrative: why --> (or <!-- fixture -->) on the line before it"
            )
        return m.group(0)

    with tempfile.TemporaryDirectory(prefix="ctxkit-readme-") as scratch:
        for name in COPIED:
            shutil.copytree(ROOT / name, Path(scratch) / name)
        here = os.getcwd()
        os.chdir(scratch)
        try:
            new = FENCE.sub(sub, text)
        finally:
            os.chdir(here)
    return new, problems


def main() -> int:
    os.environ["NO_COLOR"] = "1"
    os.environ["COLUMNS"] = "80"
    text = README.read_text(encoding="utf-8")
    new, problems = refresh(text)
    if "--write" in sys.argv:
        README.write_text(new, encoding="utf-8")
    elif new != text:
        import difflib

        sys.stdout.writelines(
            difflib.unified_diff(text.splitlines(True), new.splitlines(True), "README.md", "README.md (re-run)")
        )
        problems.append("README.md is stale: run `python scripts/readme.py --write` and review the diff")
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
