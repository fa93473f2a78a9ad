"""R-RPL-9: a replay counts each stored text it sends once, all of them in one pass before its
first call (`Counts.prefill`), and the counts are the ones counting afresh gives."""

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

from .helpers import bench_history, recorded


def _fixture(tmp_path: Path) -> Any:
    path = tmp_path / "h.json"
    path.write_text(json.dumps(bench_history(160)), encoding="utf-8")
    return load_fixture(str(path))


def _counted_texts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the cl100k counter tokenizes from now on, in order."""
    return recorded(monkeypatch, tokens.get_counter("cl100k_base"), "count")


def test_r_rpl_9_stored_texts_are_counted_before_the_first_call_and_never_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fixture = _fixture(tmp_path)
    options = Options(max_input_tokens=3000)
    stored = set(stored_texts(driver._asked(Planner(fixture, options).path)))
    counted = _counted_texts(monkeypatch)
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
    got, want = counts.texts("cl100k_base"), {t: fresh.count(t) for t in texts}
    assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)  # as text: 1 == 1.0 == True
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


def test_r_turn_1_the_answer_after_the_last_question_is_not_prefilled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stored answer after the last user message is never sent (R-TURN-1): its tool results
    are not counted (its text and arguments are, by R-CMP-1's check)."""
    path = tmp_path / "f.yaml"
    path.write_text(
        """ctxkit: 1
model: {provider: openai, name: gpt-4o, max_input_tokens: 128000}
tokenizer: cl100k_base
prompts: {system: "S.", datetime_aware: false}
messages:
  - {id: u1, role: user, text: "Hi"}
  - {id: a1, role: assistant, text: "Hello", tool_calls: [{id: c0, name: f, args: {}, response: "sent result"}]}
  - {id: u2, role: user, text: "Weather?"}
  - id: a2
    role: assistant
    text: "never sent answer"
    tool_calls:
      - {id: c1, name: get_weather, args: {city: Oslo}, response: "never sent result"}
""",
        encoding="utf-8",
    )
    counted = _counted_texts(monkeypatch)
    driver.replay(load_fixture(str(path)))
    assert "sent result" in counted
    assert "never sent result" not in counted
