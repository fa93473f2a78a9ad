"""The command line: argv → options → pipeline → render → echo.

Input: arguments. Output: stdout (payload or report only), stderr (`warning:`
and `error:` lines), and the exit code, decided in one place (`main`).
The core never imports click; only this package does.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import click

from ctxkit import __version__
from ctxkit.cli import stdout
from ctxkit.errors import CtxkitError, ExitStatus

# Each command → the module that defines it. A run imports only its command's module (start-up
# is mostly imports: `assemble` need not load replay, logs or the HTML report); listing the
# commands (`--help`, completion, an unknown name) imports them all.
COMMANDS = {
    "validate": "core",
    "schema": "core",
    "templates": "core",
    "assemble": "core",
    "budget": "core",
    "explain": "core",
    "compress": "compress",
    "diff": "diff",
    "snapshot": "snapshot",
    "import": "importer",
    "report": "report",
    "replay": "replay",
    "models": "models",
}
COMMAND_MODULES = tuple(dict.fromkeys(COMMANDS.values()))
COMPLETE_VAR = "_CTXKIT_COMPLETE"  # click's shell completion: `_CTXKIT_COMPLETE=bash_source ctxkit`


class _Commands(click.Group):
    """A group whose commands are imported when first named (click's lazy subcommands)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        _register()
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            module = COMMANDS.get(cmd_name)
            if module is None:
                _register()  # not a known name: whatever is registered decides, as before
            else:
                _import(module)
        return super().get_command(ctx, cmd_name)


def all_commands() -> dict[str, click.Command]:
    """Every command by name, their modules imported (for tests and documentation)."""
    _register()
    return dict(sorted(cli.commands.items()))


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ctxkit")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
def cli(debug: bool) -> None:
    """See exactly what an LLM chat application sends to its model."""
    # --debug is read from the arguments by `main`, which handles the errors.


def _register() -> None:
    """Import each command module (each adds its commands to `cli`); a missing one fails loudly."""
    for name in COMMAND_MODULES:
        _import(name)


def _import(module: str) -> None:
    import importlib

    importlib.import_module(f".{module}", __name__)
    for name, command in cli.commands.items():
        if COMMANDS.get(name) == module:
            _complete_arguments_as_files(command)


def _complete_arguments_as_files(command: click.Command) -> None:
    """Every positional argument of ctxkit is a file or folder (or `-`): let the shell complete
    it as one. `click.Path` with no checks converts exactly as the plain string type does."""
    for param in command.params:
        if isinstance(param, click.Argument) and param.type is click.STRING:
            param.type = click.Path(allow_dash=True)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; map every error to one `error:` line and its exit code."""
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args
    if not args and COMPLETE_VAR not in os.environ:  # (a completion request has no arguments either)
        with click.Context(cli, info_name="ctxkit") as ctx:
            click.echo(cli.get_help(ctx))
        sys.exit(ExitStatus.OK)
    stdout.guard()
    try:
        cli.main(args=args, prog_name="ctxkit", standalone_mode=False)
        stdout.finish()
    except CtxkitError as exc:
        if debug:
            _traceback()
        from ctxkit.output import printable

        for line in exc.lines():
            click.echo(f"error: {printable(line)}", err=True)
        sys.exit(exc.status)
    except click.exceptions.Abort as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):
            _interrupted()
        click.echo("error: aborted", err=True)
        sys.exit(ExitStatus.BAD_INPUT)
    except KeyboardInterrupt:
        _interrupted()
    except click.ClickException as exc:
        click.echo(f"error: {exc.format_message()}", err=True)
        sys.exit(ExitStatus.BAD_INPUT)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        sys.exit(ExitStatus.OK)
    except SystemExit:
        raise
    except Exception as exc:  # a bug: still one line, with a traceback before it under --debug
        if debug:
            _traceback()
        click.echo(f"error: internal error: {type(exc).__name__}: {exc} (run with --debug for a traceback)", err=True)
        sys.exit(ExitStatus.INTERNAL)
    sys.exit(ExitStatus.OK)


def _traceback() -> None:
    """--debug: the traceback of the error being handled; the exit code stays the error's."""
    import traceback

    traceback.print_exc()


def _interrupted() -> NoReturn:
    """Ctrl-C: one line and 128 + SIGINT, as shells expect (not the bad-input code)."""
    click.echo("error: interrupted", err=True)
    sys.exit(ExitStatus.INTERRUPTED)
