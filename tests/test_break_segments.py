"""R-RPL-6, R-RPL-9: a break names each side's segment, read by position from the assembled list
(the segments' lists one after another), not looked up per message of the window; it is the
segment the message's fate names, or for a message no decision names (the system prompt, the
reminder) the segment listing it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxkit.loading.config import Options
from ctxkit.loading.read import load_fixture
from ctxkit.pipeline import Result
from ctxkit.replay import driver
from ctxkit.replay.breaks import placed_segments

from .helpers import bench_history

DATA = Path(__file__).parent / "data"


def _fated_or_listed(result: Result) -> list[Any]:
    a = result.assembly
    out = []
    for w in a.messages:
        fated = a.fates.get(w.key)
        if fated is not None and fated.segment:
            out.append(fated.segment)
        else:
            out.append(next((s for s, ws in reversed(a.segments.items()) if w in ws), None))
    return out


@pytest.mark.parametrize("budget", [3000, 128000])
def test_r_rpl_9_segments_by_position_are_the_fated_ones(tmp_path: Path, budget: int) -> None:
    path = tmp_path / "h.json"
    path.write_text(json.dumps(bench_history(120)), encoding="utf-8")
    checked = 0

    def check(index: int, call: Any, result: Result) -> None:
        nonlocal checked
        placed = placed_segments(result.assembly)
        assert placed == _fated_or_listed(result), index
        assert len(set(placed)) > 1, index  # more than one segment: the order matters
        checked += 1

    driver.replay(load_fixture(str(path)), Options(max_input_tokens=budget), on_call=check)
    assert checked > 50


def test_r_rpl_9_segments_of_the_spec_example() -> None:
    seen: set[Any] = set()

    def check(index: int, call: Any, result: Result) -> None:
        placed = placed_segments(result.assembly)
        assert placed == _fated_or_listed(result), index
        seen.update(placed)

    driver.replay(load_fixture(str(DATA / "spec_example.yaml")), None, on_call=check)
    assert len(seen) >= 3
