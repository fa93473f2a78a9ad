"""The replay gate (R-LOG-5): thresholds a replay must meet, and the ones it missed.

Input: the option texts (`--min-hit-rate`, `--fail-on`, `--max-lost-tokens`) and a replay
report's `totals` (`reports.replay.report`; a replay of a log reports the same keys), so
one gate serves every kind of replay. Output: `Thresholds` (bad values are an
`InputError`, exit 2) and `missed`: one line per threshold the replay did not meet,
which the command reports as `GateError` (exit 1) after printing the report.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ctxkit.errors import CtxkitError, ExitStatus, InputError, Problem
from ctxkit.output import plural
from ctxkit.replay import breaks, logbreaks
from ctxkit.replay.causes import Cause

# `--fail-on` accepts every cause a replay can report, of a fixture (R-RPL-6) or of a log (R-LOG-2),
# and refuses any other name, so a misspelt cause can never make the gate pass silently.
CAUSES = tuple(dict.fromkeys((*breaks.CAUSE_RULES, *logbreaks.CAUSE_RULES)))
THRESHOLD_OPTIONS = ("--min-hit-rate", "--fail-on", "--max-lost-tokens")
_RATE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(%?)\s*$", re.ASCII)
_COUNT = re.compile(r"^\s*\d+\s*$", re.ASCII)
T = TypeVar("T")


class GateError(CtxkitError):
    """A replay missed one or more thresholds of `--check` (exit 1), one line each."""

    status = ExitStatus.FAILED

    def __init__(self, lines: Sequence[str]) -> None:
        self._lines = list(lines)
        super().__init__("; ".join(self._lines))

    def lines(self) -> list[str]:
        return list(self._lines)


@dataclass(frozen=True, slots=True)
class Thresholds:
    min_hit_rate: float | None = None  # a fraction, 0 to 1
    fail_on: tuple[Cause, ...] = ()  # in the order given
    max_lost_tokens: int | None = None

    @property
    def empty(self) -> bool:
        return self.min_hit_rate is None and not self.fail_on and self.max_lost_tokens is None


def thresholds(
    check: bool, min_hit_rate: str | None, fail_on: str | None, max_lost_tokens: str | None
) -> Thresholds | None:
    """The gate asked for on the command line, or None without `--check`; every bad value is an InputError."""
    given = [
        name
        for name, v in zip(THRESHOLD_OPTIONS, (min_hit_rate, fail_on, max_lost_tokens), strict=True)
        if v is not None
    ]
    if not check:
        if given:
            raise InputError(f"{given[0]} is a threshold of the gate: add --check to apply it")
        return None
    problems: list[str] = []
    rate = _parse(parse_rate, min_hit_rate, problems)
    causes = _parse(parse_causes, fail_on, problems) or ()
    lost = _parse(parse_count, max_lost_tokens, problems)
    if problems:
        raise InputError([Problem("", "", p) for p in problems])
    if not given:
        raise InputError("--check needs at least one threshold: " + ", ".join(THRESHOLD_OPTIONS))
    return Thresholds(rate, causes, lost)


def _parse(parser: Callable[[str], T], text: str | None, problems: list[str]) -> T | None:
    if text is None:
        return None
    try:
        return parser(text)
    except InputError as exc:
        problems.extend(exc.lines())
        return None


def parse_rate(text: str) -> float:
    """`--min-hit-rate`: a fraction from 0 to 1 (`0.6`) or a percentage from 0 to 100 (`60%`)."""
    m = _RATE.match(text)
    value = float(m.group(1)) / (100 if m.group(2) else 1) if m else math.nan
    if not 0 <= value <= 1:
        raise InputError(
            f"--min-hit-rate {text!r}: expected a hit rate from 0 to 1 (e.g. 0.6) or a percentage (e.g. 60%)"
        )
    return value


def parse_causes(text: str) -> tuple[Cause, ...]:
    """`--fail-on`: causes separated by commas, each one a replay can report."""
    names = [part.strip() for part in text.split(",")]
    if not all(names):
        raise InputError(f"--fail-on {text!r}: expected causes separated by commas (no empty names)")
    unknown = [n for n in names if n not in CAUSES]
    if unknown:
        raise InputError(f"--fail-on {text!r}: unknown cause {unknown[0]!r}; the causes are " + ", ".join(CAUSES))
    return tuple(dict.fromkeys(map(Cause, names)))


def parse_count(text: str) -> int:
    """`--max-lost-tokens`: a whole number of tokens, 0 or more."""
    if not _COUNT.match(text):
        raise InputError(f"--max-lost-tokens {text!r}: expected a whole number of tokens (0 or more)")
    return int(text)


def missed(totals: Mapping[str, Any], gate: Thresholds) -> list[str]:
    """One line per threshold the replay did not meet, in the order of the options; [] when it passed.

    The hit rate is the replay's predicted one (cached ÷ prompt tokens, R-RPL-8); the lost
    tokens are those of every call (R-RPL-6), whatever `--calls` prints.
    """
    lines = []
    prompt, cached = int(totals["prompt_tokens"]), int(totals["cached_tokens"])
    rate = cached / prompt if prompt else 0.0
    if gate.min_hit_rate is not None and rate < gate.min_hit_rate:
        lines.append(
            f"check: hit rate {_percent(rate, down=True)} ({cached:,} of {prompt:,} prompt tokens cached) "
            f"is below --min-hit-rate {_percent(gate.min_hit_rate)}"
        )
    by_cause = {c["cause"]: c for c in totals["causes"]}
    for cause in gate.fail_on:
        if cause in by_cause:
            n, lost = by_cause[cause]["calls"], by_cause[cause]["lost_tokens"]
            calls, tokens = plural(n, "call", grouped=True), plural(lost, "token", grouped=True)
            lines.append(f"check: {calls} broke the cache by {cause} ({tokens} lost; --fail-on {cause})")
    total_lost = sum(int(c["lost_tokens"]) for c in totals["causes"])
    if gate.max_lost_tokens is not None and total_lost > gate.max_lost_tokens:
        tokens = plural(total_lost, "token", grouped=True)
        lines.append(f"check: {tokens} lost, more than --max-lost-tokens {gate.max_lost_tokens:,}")
    return lines


def _percent(value: float, *, down: bool = False) -> str:
    """A rate as a percentage to two decimals at most (60%, 12.5%, 33.33%); `down` rounds
    towards 0, so a rate just below a threshold never reads as the threshold itself."""
    hundredths = math.floor(value * 10_000) if down else round(value * 10_000)
    text = f"{hundredths / 100:.2f}".rstrip("0").rstrip(".")
    return f"{text}%"


def enforce(totals: Mapping[str, Any], gate: Thresholds | None) -> None:
    """Raise `GateError` naming every missed threshold; nothing without a gate."""
    if gate is not None and (lines := missed(totals, gate)):
        raise GateError(lines)
