"""Replay and `compress` decide R-CMP-1 with one function (issue 19 item 10), and the
planner's call count is the number of calls it yields."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings

from ctxkit.compression.compress import plan
from ctxkit.errors import RuleError
from ctxkit.loading.config import resolve
from ctxkit.loading.read import load_fixture
from ctxkit.replay.calls import Asked, Planner

from .conftest import FIXTURES
from .test_replay_properties import conversations

FULL = """\
ctxkit: 1
now: "2026-03-14T09:30:00Z"
model: {provider: openai, name: gpt-4o, max_input_tokens: 300}
tokenizer: approx
messages:
  - {id: u1, role: user, text: "aaaa aaaa aaaa aaaa aaaa aaaa aaaa aaaa"}
  - {id: a1, role: assistant, text: "bbbb bbbb bbbb bbbb bbbb bbbb bbbb bbbb"}
  - {id: u2, role: user, text: "cccc"}
"""


def _due_by_replay_and_by_compress(fixture: Any) -> list[tuple[str, bool, bool]]:
    """For each question on the branch before the last: (id, replay's compression_due on the
    question's last call, compress's should_compress on that call's fixture up to the answer)."""
    planner = Planner(fixture)
    asked = {user.id for user, _, how in planner.questions if how is Asked.ON_BRANCH}  # not the last: in_flight
    last_call = {call.user.id: call for call in planner.calls() if call.user.id in asked}
    found = []
    for user_id, call in last_call.items():
        answer = planner.questions.next_on_branch(call.user)
        upto = answer if answer is not None else call.user
        derived = resolve(replace(call.fixture, leaf=upto.id, in_flight=()), call.options)
        found.append((user_id, call.compression_due, plan(derived).should_compress))
    return found


def test_r_cmp_1_replay_agrees_with_compress_when_the_fixed_parts_fill_the_window(tmp_path: Path) -> None:
    """R-CMP-1: with the worst-case system prompt over the 300-token window (available < 0)
    the threshold is negative; `compress` says not due (a summary cannot make room), and
    replay once said due after u1. Both now ask the same function."""
    path = tmp_path / "full.yaml"
    path.write_text(FULL, encoding="utf-8")
    fixture = load_fixture(str(path))
    compressed = plan(resolve(fixture))
    assert compressed.available_tokens < 0 and not compressed.should_compress
    assert _due_by_replay_and_by_compress(fixture) == [("u1", False, False)]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=conversations())
def test_r_cmp_1_replay_and_compress_agree_on_random_conversations(tmp_path: Path, doc: dict[str, Any]) -> None:
    """R-CMP-1 on generated conversations and windows (150-600 tokens, so some have no room)."""
    path = tmp_path / "random.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    for question, by_replay, by_compress in _due_by_replay_and_by_compress(load_fixture(str(path))):
        assert by_replay == by_compress, question


@pytest.mark.parametrize(
    "path", sorted([*FIXTURES.glob("*.yaml"), *FIXTURES.glob("replay/*.yaml")]), ids=lambda p: p.stem
)
def test_planner_count_is_the_number_of_calls(path: Path) -> None:
    """`count()` (replay's progress total) and `calls()` walk the same questions."""
    fixture = load_fixture(str(path))
    try:
        planner = Planner(fixture)
    except RuleError:  # a gallery fixture without a user message: nothing to replay
        pytest.skip("no user message")
    assert planner.count() == sum(1 for _ in Planner(fixture).calls())
