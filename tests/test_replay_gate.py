"""R-LOG-5: the replay gate, `replay --check` with `--min-hit-rate`, `--fail-on` and `--max-lost-tokens`.

The gate reads a replay report's `totals` only (the keys a replay of a log reports too), so
the unit tests give it totals written by hand; the command-line tests run it on the
gallery's replay fixtures, where each threshold must pass exactly at the replay's own
figure and fail just past it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxkit.replay import breaks, logbreaks
from ctxkit.replay.causes import Cause
from ctxkit.replay.gate import CAUSES, Thresholds, missed, thresholds

from .conftest import FIXTURES, ROOT, ctxkit

REPLAY = sorted((FIXTURES / "replay").glob("*.yaml"))
LOGS = sorted(p for p in (FIXTURES / "logs").iterdir() if p.suffix != ".md")  # recorded traffic (R-LOG-1)


@pytest.fixture(autouse=True)
def _in_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # reports name fixtures by their relative paths


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _totals(prompt: int, cached: int, *causes: tuple[str, int, int]) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "cached_tokens": cached,
        "causes": [{"cause": c, "calls": n, "lost_tokens": lost} for c, n, lost in causes],
    }


# --- the gate on totals -------------------------------------------------------------------


def test_r_log_5_each_missed_threshold_is_one_line_in_option_order() -> None:
    totals = _totals(1000, 250, ("truncation", 2, 300), ("drift", 1, 40), ("first_call", 1, 0))
    gate = Thresholds(min_hit_rate=0.6, fail_on=(Cause.DRIFT, Cause.TRUNCATION, Cause.TOOLS), max_lost_tokens=339)
    assert missed(totals, gate) == [
        "check: hit rate 25% (250 of 1,000 prompt tokens cached) is below --min-hit-rate 60%",
        "check: 1 call broke the cache by drift (40 tokens lost; --fail-on drift)",
        "check: 2 calls broke the cache by truncation (300 tokens lost; --fail-on truncation)",
        "check: 340 tokens lost, more than --max-lost-tokens 339",
    ]


def test_r_log_5_thresholds_met_exactly_pass() -> None:
    totals = _totals(1000, 600, ("append", 3, 0), ("drift", 1, 40))
    assert missed(totals, Thresholds(min_hit_rate=0.6, fail_on=(Cause.TOOLS,), max_lost_tokens=40)) == []


def test_r_log_5_a_rate_just_below_the_threshold_never_reads_as_the_threshold() -> None:
    (line,) = missed(_totals(100_000, 49_999), Thresholds(min_hit_rate=0.5))
    assert "hit rate 49.99% " in line and line.endswith("--min-hit-rate 50%")


def test_r_log_5_no_prompt_tokens_is_a_hit_rate_of_0() -> None:
    assert missed(_totals(0, 0), Thresholds(min_hit_rate=0.0)) == []
    assert len(missed(_totals(0, 0), Thresholds(min_hit_rate=0.01))) == 1


def test_r_log_5_fail_on_takes_the_causes_of_a_log_replay_too() -> None:
    """The causes only a replay of recorded traffic reports (R-LOG-2) are gated like fixture replay's."""
    assert set(CAUSES) == set(breaks.CAUSE_RULES) | set(logbreaks.CAUSE_RULES)
    assert {"model", "parameters", "edit", "head_dropped"} <= set(CAUSES)
    totals = _totals(500, 0, ("head_dropped", 1, 120))
    assert missed(totals, thresholds(True, None, "head_dropped", None) or Thresholds()) == [
        "check: 1 call broke the cache by head_dropped (120 tokens lost; --fail-on head_dropped)"
    ]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (("0.6", None, None), Thresholds(min_hit_rate=0.6)),
        (("60%", None, None), Thresholds(min_hit_rate=0.6)),
        ((" 1 ", None, None), Thresholds(min_hit_rate=1.0)),
        (("0", None, None), Thresholds(min_hit_rate=0.0)),
        ((None, "drift, truncation,drift", None), Thresholds(fail_on=(Cause.DRIFT, Cause.TRUNCATION))),
        ((None, None, "0"), Thresholds(max_lost_tokens=0)),
    ],
)
def test_r_log_5_threshold_values(given: tuple[str | None, ...], expected: Thresholds) -> None:
    assert thresholds(True, *given) == expected


def test_r_log_5_no_gate_without_check() -> None:
    assert thresholds(False, None, None, None) is None


# --- the command on the gallery --------------------------------------------------------------


def _replay_json(path: Path) -> dict[str, Any]:
    return json.loads(ctxkit("replay", _rel(path), "--format", "json").out)  # type: ignore[no-any-return]


@pytest.mark.parametrize("path", REPLAY + LOGS, ids=[p.parent.name + "/" + p.name for p in REPLAY + LOGS])
def test_r_log_5_gallery_passes_at_its_own_figures_and_fails_past_them(path: Path) -> None:
    """Each threshold passes at the replay's own figure (exit 0, the same report) and fails just past
    it, for every replay fixture and every log of the gallery."""
    plain = ctxkit("replay", _rel(path))
    totals = _replay_json(path)["totals"]
    lost = sum(c["lost_tokens"] for c in totals["causes"])
    causes = [c["cause"] for c in totals["causes"]]
    absent = [c for c in CAUSES if c not in causes]
    rate = totals["cached_tokens"] / totals["prompt_tokens"]
    met = ("--min-hit-rate", f"{rate!r}", "--max-lost-tokens", str(lost), "--fail-on", ",".join(absent))
    passed = ctxkit("replay", _rel(path), "--check", *met)
    assert (passed.out, passed.code) == (plain.out, 0)
    failing: list[tuple[str, ...]] = [("--fail-on", ",".join(causes))]
    if rate < 1:
        failing.append(("--min-hit-rate", f"{min(1.0, rate + 0.0001)!r}"))
    if lost:
        failing.append(("--max-lost-tokens", str(lost - 1)))
    for args in failing:
        r = ctxkit("replay", _rel(path), "--check", *args, expect=1)
        assert r.out == plain.out, args  # the whole report first
        lines = r.err.splitlines()[-(len(causes) if args[0] == "--fail-on" else 1) :]
        assert all(line.startswith("error: check: ") and args[0] in line for line in lines), r.err


def test_r_log_5_missed_thresholds_named_on_stderr_after_the_report() -> None:
    """The midnight conversation: 0 of 291 prompt tokens cached, 11 lost to the date line."""
    path = _rel(FIXTURES / "replay" / "system_date.yaml")
    plain = ctxkit("replay", path, "--format", "json")
    r = ctxkit(
        "replay",
        path,
        "--format",
        "json",
        "--check",
        "--min-hit-rate",
        "50%",
        "--fail-on",
        "system_date,tools",
        "--max-lost-tokens",
        "10",
        expect=1,
    )
    assert r.out == plain.out
    assert r.err.splitlines() == [
        "error: check: hit rate 0% (0 of 291 prompt tokens cached) is below --min-hit-rate 50%",
        "error: check: 1 call broke the cache by system_date (11 tokens lost; --fail-on system_date)",
        "error: check: 11 tokens lost, more than --max-lost-tokens 10",
    ]


def test_r_log_5_a_log_replay_is_gated_by_its_own_causes() -> None:
    """fixtures/logs/causes.jsonl: one call per cause a body can show; the gate names the log's causes."""
    path = _rel(FIXTURES / "logs" / "causes.jsonl")
    plain = ctxkit("replay", path)
    lost = {c["cause"]: c["lost_tokens"] for c in _replay_json(FIXTURES / "logs" / "causes.jsonl")["totals"]["causes"]}
    r = ctxkit("replay", path, "--check", "--fail-on", "head_dropped,edit", expect=1)
    assert r.out == plain.out
    assert r.err.splitlines() == [
        f"error: check: 1 call broke the cache by {cause} ({lost[cause]} tokens lost; --fail-on {cause})"
        for cause in ("head_dropped", "edit")
    ]


def test_r_log_5_gate_reads_every_call_whatever_calls_prints() -> None:
    """`--calls 0:1` prints the first call only; the gate still sees the truncation of call 3."""
    path = _rel(FIXTURES / "replay" / "truncation.yaml")
    r = ctxkit("replay", path, "--calls", "0:1", "--check", "--fail-on", "truncation", expect=1)
    assert r.err.splitlines()[-1].startswith("error: check: 1 call broke the cache by truncation")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--check",), "--check needs at least one threshold: --min-hit-rate, --fail-on, --max-lost-tokens"),
        (("--min-hit-rate", "0.5"), "--min-hit-rate is a threshold of the gate: add --check to apply it"),
        (("--fail-on", "drift"), "--fail-on is a threshold of the gate: add --check to apply it"),
        (("--check", "--min-hit-rate", "1.5"), "--min-hit-rate '1.5': expected a hit rate from 0 to 1"),
        (("--check", "--min-hit-rate", "101%"), "--min-hit-rate '101%': expected a hit rate from 0 to 1"),
        (("--check", "--min-hit-rate", "nan"), "--min-hit-rate 'nan': expected a hit rate from 0 to 1"),
        (("--check", "--min-hit-rate", "-0.1"), "--min-hit-rate '-0.1': expected a hit rate from 0 to 1"),
        (("--check", "--fail-on", "sytem_date"), "--fail-on 'sytem_date': unknown cause 'sytem_date'; the causes"),
        (("--check", "--fail-on", "drift,"), "--fail-on 'drift,': expected causes separated by commas"),
        (("--check", "--max-lost-tokens", "-1"), "--max-lost-tokens '-1': expected a whole number of tokens"),
        (("--check", "--max-lost-tokens", "1e3"), "--max-lost-tokens '1e3': expected a whole number of tokens"),
        (("--check", "--max-lost-tokens", "\u0663"), "expected a whole number of tokens"),
    ],
)
def test_r_log_5_bad_threshold_values_exit_2_before_any_work(args: tuple[str, ...], message: str) -> None:
    r = ctxkit("replay", _rel(FIXTURES / "replay" / "append.yaml"), *args, expect=2)
    assert r.out == ""
    assert r.err.count("\n") == 1 and r.err.startswith("error: ") and message in r.err, r.err


def test_r_log_5_every_bad_threshold_is_named_at_once() -> None:
    args = ("--check", "--min-hit-rate", "2", "--fail-on", "nope", "--max-lost-tokens", "x")
    r = ctxkit("replay", _rel(FIXTURES / "replay" / "append.yaml"), *args, expect=2)
    assert [line.split(" ", 2)[1] for line in r.err.splitlines()] == [
        "--min-hit-rate",
        "--fail-on",
        "--max-lost-tokens",
    ]
