"""R-RPL-9: what the replay's state reuses from one call to the next gives what the step gives afresh.

Each reused step of assembly (`assemble.Incremental`) is checked call by call against the plain
step, on replays whose windows slide (truncation), shrink and grow (tool turns, a new question),
switch branch (edited questions) and change date (a conversation across midnight); the
fixed parts also for settings the replay never gives (no `now`, another window).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ctxkit.assembly import assemble
from ctxkit.errors import CtxkitError
from ctxkit.history.working import Record
from ctxkit.loading.config import Options
from ctxkit.loading.read import load_fixture
from ctxkit.replay import driver

from .conftest import FIXTURES
from .helpers import bench_history

REPLAYS = [
    FIXTURES / "replay" / name
    for name in ("system_date.yaml", "branch.yaml", "tools.yaml", "long_session.yaml", "summary.yaml")
] + [FIXTURES / "tool_loop_in_flight.yaml", FIXTURES / "replaced_system_prompt.yaml"]


def _replay(path: Path, options: Options, check: Any) -> int:
    calls = 0

    def each(index: int, call: Any, result: Any) -> None:
        nonlocal calls
        check(index, result.assembly)
        calls += 1

    try:
        driver.replay(load_fixture(str(path)), options, on_call=each)
    except CtxkitError:
        pytest.skip("fails by rule")
    return calls


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("reuse") / "h.json"
    path.write_text(json.dumps(bench_history(150)), encoding="utf-8")
    return path


def _fixed_equal(a: Any) -> object:
    """The state's fixed parts for this call and for variants of it equal `fixed_parts` afresh,
    warnings included; returns the state's value for the call itself."""
    state = a.converted.state
    got = None
    variants = (a.eff, replace(a.eff, now=None), replace(a.eff, max_input_tokens=a.eff.max_input_tokens + 1))
    for eff in variants:
        mine, theirs = Record(), Record()
        fixed = state.fixed_parts(eff, a.meter, mine)
        assert fixed == assemble.fixed_parts(eff, a.meter, theirs)
        assert mine.warnings == theirs.warnings
        got = fixed if got is None else got
    assert state.fixed_parts(a.eff, a.meter, Record()) is got  # the same call's parts are reused
    return got


@pytest.mark.parametrize("path", REPLAYS, ids=lambda p: p.name)
def test_fixed_parts_reused_equal_afresh(path: Path) -> None:
    assert _replay(path, Options(max_input_tokens=2_000), lambda i, a: _fixed_equal(a)) >= 1


def test_fixed_parts_reused_across_the_date_change() -> None:
    """Across midnight the system prompt shows another date: the parts are made again."""
    systems: list[str] = []

    def check(index: int, a: Any) -> None:
        fixed = _fixed_equal(a)
        systems.append(fixed.system.text)  # type: ignore[attr-defined]

    _replay(FIXTURES / "replay" / "system_date.yaml", Options(), check)
    assert len(set(systems)) == 2


def test_fixed_parts_reused_on_a_sliding_window(generated: Path) -> None:
    made: set[int] = set()

    def check(index: int, a: Any) -> None:
        made.add(id(_fixed_equal(a)))

    calls = _replay(generated, Options(max_input_tokens=3_000), check)
    assert calls > 50 and len(made) < calls // 4  # reused, yet right for every call
