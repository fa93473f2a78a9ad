"""R-RPL-9: a replay counts each stored text once, all of them in one pass before its first call
(`Counts.prefill`), and the counts are the ones counting afresh gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxkit.counting import tokens
from ctxkit.counting.measure import Counts, stored_texts
from ctxkit.loading.config import Options
from ctxkit.loading.read import load_fixture
from ctxkit.replay import driver
from ctxkit.replay.calls import Planner

from .helpers import bench_history


def _fixture(tmp_path: Path) -> Any:
    path = tmp_path / "h.json"
    path.write_text(json.dumps(bench_history(160)), encoding="utf-8")
    return load_fixture(str(path))


def test_r_rpl_9_stored_texts_are_counted_before_the_first_call_and_never_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fixture = _fixture(tmp_path)
    options = Options(max_input_tokens=3000)
    stored = set(stored_texts(Planner(fixture, options).path))
    counter = tokens.get_counter("cl100k_base")
    counted: list[str] = []
    real = counter.count

    def spy(text: str) -> int:
        counted.append(text)
        return real(text)

    monkeypatch.setattr(counter, "count", spy)
    done = driver.replay(fixture, options)
    before_first_call = set(counted[: len(stored)])
    assert len(done.calls) > 50
    assert before_first_call == stored  # the prefill counted exactly the branch's stored texts
    assert len(counted) == len(set(counted))  # and nothing is counted twice within a replay
    assert not stored & set(counted[len(stored) :])


def test_r_rpl_9_prefilled_counts_are_the_fresh_counts(tmp_path: Path) -> None:
    fixture = _fixture(tmp_path)
    texts = [t for t in stored_texts(fixture.messages) if t]
    counts = Counts()
    counts.prefill("cl100k_base", texts)
    fresh = tokens.get_counter("cl100k_base")
    assert counts.texts("cl100k_base") == {t: fresh.count(t) for t in texts}
    assert counts.texts("o200k_base") == {}


def test_stored_texts_skips_stored_counts() -> None:
    from ctxkit.loading.domain import Role, StoredMessage, ToolCall

    m = StoredMessage(
        id="a",
        role=Role.ASSISTANT,
        parent=None,
        index=0,
        text="kept count",
        tokens=3,
        tool_calls=(
            ToolCall(id="c1", name="f", args={"x": 1}, tokens=4, response="ok"),
            ToolCall(id="c2", name="f", args={"y": 2}, response=None),
        ),
    )
    assert list(stored_texts([m])) == ["ok", '{"y": 2}']
