"""R-RPL-9: `Payload.runs`, the runs of a replayed request's payload messages that are the very
`Sent` objects of the last request's (what translation carried: `openai.same_runs`), for the item
memo to take instead of finding them again.

Oracle: every run holds the very objects, in order of both lists, against the very list the last
request sent; and on a sliding replay the runs hold every message a one-by-one search finds."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ctxkit.history.working import Kind, Segment, Working
from ctxkit.loading.config import Options
from ctxkit.loading.read import load_fixture
from ctxkit.pipeline import run, translation_input
from ctxkit.replay import driver
from ctxkit.translate import translate
from ctxkit.translate.memo import TranslationMemo
from ctxkit.translate.openai import same_runs

from .helpers import bench_history
from .test_translation_memo import _conversation, _windows

Runs = list[tuple[int, int, int]]


@pytest.fixture(scope="module")
def request_input(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A request's settings, meter and templates (the messages are each test's own)."""
    path = tmp_path_factory.mktemp("runs") / "f.json"
    path.write_text(json.dumps(bench_history(4)), encoding="utf-8")
    return translation_input(run(load_fixture(str(path)), Options()).assembly)


def _valid(runs: Runs, new: Any, old: Any) -> int:
    """How many messages `runs` holds; fails unless each is the very object, in order of both."""
    at = back = 0
    for i, j, k in runs:
        assert k > 0 and i >= at and j >= back, runs
        assert all(new[i + n] is old[j + n] for n in range(k)), (runs, i, j, k)
        at, back = i + k, j + k
    assert at <= len(new) and back <= len(old)
    return sum(k for _, _, k in runs)


def _searched(new: Any, old: Any) -> int:
    """How many of `new`'s messages are, one by one, the very object of a later place of `old`
    than the one before (a greedy search, the most runs in order of both can hold here)."""
    held, back = 0, 0
    for x in new:
        found = next((q for q in range(back, len(old)) if old[q] is x), None)
        if found is not None:
            held, back = held + 1, found + 1
    return held


@pytest.mark.parametrize("provider", ["openai", "ollama"])
def test_r_rpl_9_payload_runs_are_the_last_requests_very_messages(tmp_path: Path, provider: str) -> None:
    last: list[Any] = []
    calls = known = 0

    def check(index: int, call: Any, result: Any) -> None:
        nonlocal calls, known
        payload = result.payload
        if payload.runs is not None:
            assert payload.runs[0] is last[0]  # the very list the last request sent
            held = _valid(payload.runs[1], payload.messages, last[0])
            assert held == _searched(payload.messages, last[0])  # every message carried
            known += 1
        last[:] = [payload.messages]
        calls += 1

    (tmp_path / "h.json").write_text(json.dumps(bench_history(150)), encoding="utf-8")
    fixture = load_fixture(str(tmp_path / "h.json"))
    driver.replay(fixture, Options(max_input_tokens=3_000, provider=provider), on_call=check)
    assert calls > 50 and known == calls - 1  # known from the second call on


@pytest.mark.parametrize("seed", range(6))
def test_r_rpl_9_payload_runs_hold_the_very_messages_on_random_windows(request_input: Any, seed: int) -> None:
    """Windows that slide, jump and shrink, with calls renamed (their results framed again: other
    `Sent`s at places a run of the memo's brings) and rebuilt messages."""
    rng = random.Random(seed)
    pool = _conversation(rng, 80)
    system = Working("system", Kind.SYSTEM, "S", 1)
    memo = TranslationMemo()
    base = replace(request_input, provider="openai", model="m", memo=memo)
    last: Any = None
    for window in _windows(rng, pool, 40):
        if rng.random() < 0.8:
            window = [system, *window]
        payload = translate(replace(base, segments={Segment.HISTORY: window}))
        if last is None:
            assert payload.runs is None or not payload.runs[1]
        else:
            assert payload.runs is not None and payload.runs[0] is last
            _valid(payload.runs[1], payload.messages, last)
        last = payload.messages


def test_r_rpl_9_same_runs_splits_where_a_message_was_made_again() -> None:
    old = [object() for _ in range(8)]
    new = list(old)
    assert same_runs([(0, 0, 8)], {0}, new, old) == [(0, 0, 8)]
    new[3] = object()  # made again (a renamed call's result): not the last one
    assert same_runs([(0, 0, 8)], {0, 3}, new, old) == [(0, 0, 3), (4, 4, 4)]
    new[0] = object()
    assert same_runs([(0, 0, 8)], {0, 3}, new, old) == [(1, 1, 2), (4, 4, 4)]


def test_r_rpl_9_same_runs_goes_on_over_the_very_same_messages() -> None:
    old = [object() for _ in range(8)]
    new = [old[0], *old[3:], object()]  # slid by two; the system text made again but kept
    assert same_runs([(2, 4, 3)], {0}, new, old) == [(0, 0, 1), (1, 3, 5)]
    assert same_runs([], {0}, new, []) == []
