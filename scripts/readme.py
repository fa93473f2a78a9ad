"""Keep the README's examples true: re-run every `$ ctxkit ...` console block.

    python scripts/readme.py --write   # refresh the outputs in README.md
    python scripts/readme.py --check   # exit 1 when an output is stale (used by the tests)

A block is a ```console fence whose first line is `$ ctxkit ARGS`; everything
after that line is the command's stdout followed by its stderr, run from the
repository root with NO_COLOR=1 and COLUMNS=80.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BLOCK = re.compile(r"```console\n\$ (ctxkit [^\n]*)\n(.*?)```", re.S)


def run(command: str) -> str:
    from click.testing import CliRunner

    from ctxkit.cli import main

    args = shlex.split(command)[1:]
    runner = CliRunner()
    with runner.isolation() as streams:
        with contextlib.suppress(SystemExit):
            main(args)
        out = streams[0].getvalue().decode() + streams[1].getvalue().decode()
    return out if out.endswith("\n") or not out else out + "\n"


def refresh(text: str) -> str:
    def sub(m: re.Match[str]) -> str:
        return f"```console\n$ {m.group(1)}\n{run(m.group(1))}```"

    return BLOCK.sub(sub, text)


def main() -> int:
    os.chdir(ROOT)
    os.environ["NO_COLOR"] = "1"
    os.environ["COLUMNS"] = "80"
    text = README.read_text(encoding="utf-8")
    new = refresh(text)
    if "--write" in sys.argv:
        README.write_text(new, encoding="utf-8")
        return 0
    if new != text:
        import difflib

        sys.stdout.writelines(
            difflib.unified_diff(text.splitlines(True), new.splitlines(True), "README.md", "README.md (re-run)")
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
