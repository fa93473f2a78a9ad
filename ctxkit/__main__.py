"""`ctxkit` (the console script) and `python -m ctxkit`: start the command line.

Importing the command line (click and every command) is most of start-up; Ctrl-C
during it would print a traceback from the import machinery. This module imports
nothing of ctxkit's until inside the guard, so an interrupt at any point of start-up
or of the run ends in one `error: interrupted` line and exit 130, as shells expect.
"""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from ctxkit.cli import main as run

        run()
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        raise SystemExit(130) from None  # ExitStatus.INTERRUPTED (not imported: this module imports nothing first)


if __name__ == "__main__":
    main()
