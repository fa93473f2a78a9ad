"""Errors that end a run, and the exit codes they map to (docs/rules.md#exit-codes)."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class ExitStatus(enum.IntEnum):
    OK = 0
    FAILED = 1  # the assembly failed by rule, or a diff/snapshot found differences
    BAD_INPUT = 2  # bad input or usage
    INTERNAL = 3  # a bug in ctxkit (the message says to run with --debug)
    INTERRUPTED = 130  # Ctrl-C: 128 + SIGINT, as shells report it


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with an input: where it is and what is wrong."""

    source: str  # file name as the user gave it ("-" for stdin)
    location: str  # "12:5" for YAML syntax, a JSON pointer such as "/messages/3/role", or ""
    message: str

    def render(self) -> str:
        where = ":".join(part for part in (self.source, self.location) if part)
        return f"{where}: {self.message}" if where else self.message


class CtxkitError(Exception):
    """Base class: carries the exit status and one line per problem."""

    status = ExitStatus.BAD_INPUT

    def lines(self) -> list[str]:
        return [str(self)]


class InputError(CtxkitError):
    """The input is invalid (exit 2). Holds every problem found, in a stable order."""

    def __init__(self, problems: list[Problem] | Problem | str) -> None:
        if isinstance(problems, str):
            problems = [Problem("", "", problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        self.problems = problems
        super().__init__("; ".join(p.render() for p in problems))

    def lines(self) -> list[str]:
        return [p.render() for p in self.problems]


class RuleError(CtxkitError):
    """A valid fixture whose assembly fails by rule (R-ASM-2/3): exit 1."""

    status = ExitStatus.FAILED
