"""Edge cases of replay shortcuts the other oracle tests did not reach (review of f3d8174, 7e3eb36)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxkit import pipeline
from ctxkit.history import tree
from ctxkit.loading.config import Options
from ctxkit.loading.read import load_fixture
from ctxkit.replay import driver
from ctxkit.replay.calls import Planner
from ctxkit.replay.summaries import Summaries
from ctxkit.replay.warned import Warned

from .conftest import FIXTURES
from .helpers import bench_history


def test_r_asm_9_a_call_exactly_at_the_window_is_not_over(tmp_path: Path) -> None:
    """R-ASM-9 (R-RPL-9, f3d8174's driver shortcut): a request whose wire tokens equal the window
    fits; the replay notes no over-window warning for it. At 4,057 tokens call 69 of the bench
    history's first 150 messages sends exactly 4,057 tokens (other calls are over the window): the
    replay's warnings equal every call's typed warnings given one by one."""
    history = tmp_path / "h.json"
    history.write_text(json.dumps(bench_history(150)), encoding="utf-8")
    window = 4_057
    fixture, options = load_fixture(str(history)), Options(max_input_tokens=window)
    expected = Warned(Planner(fixture, options).warnings())

    def seen(index: int, call: Any, result: pipeline.Result) -> None:
        for w in result.typed_warnings():
            over = result.over_window_tokens() if w.kind is pipeline.WarningKind.OVER_WINDOW else 0
            expected.add(index, call.label, w, over)

    replayed = driver.replay(fixture, options, on_call=seen)
    assert any(c.prompt_tokens == window for c in replayed.calls)  # the case this test is about
    assert any(c.prompt_tokens > window for c in replayed.calls)
    texts = expected.texts()
    assert replayed.warnings[: len(texts)] == texts


CMP_CASES = [
    ("compress_progressive.yaml", 800, None),
    ("compress_two_branches.yaml", 600, None),
    ("compress_just_above.yaml", 400, None),
    ("compress_progressive.yaml", 1_000, 60),
    ("replay/long_session.yaml", 1_000, 60),
    ("bench", 1_500, None),
    ("bench", 1_500, 150),
    ("bench", 3_000, 400),
]


@pytest.mark.parametrize(("name", "window", "compress_as"), CMP_CASES)
def test_r_cmp_1_each_questions_last_call_is_due_as_its_own_fields_say(
    tmp_path: Path, name: str, window: int, compress_as: int | None
) -> None:
    """R-CMP-1 (R-RPL-9, f3d8174's planner shortcut: the question's last call made once with its
    `compression_due`): each on-branch question's last call is due exactly when a fresh
    `Summaries`, asked in the same order, finds R-CMP-1 due on the branch up to the question's
    stored answer (else the question) with that call's own clock, fixture, options and summary;
    every other call is not due."""
    if name == "bench":
        path = tmp_path / "h.json"
        path.write_text(json.dumps(bench_history(150)), encoding="utf-8")
    else:
        path = FIXTURES / name
    fixture, options = load_fixture(str(path)), Options(max_input_tokens=window)
    planner = Planner(fixture, options, compress_as=compress_as)
    answers = {u.id: a for u, a, _ in planner.questions}
    calls = list(planner.calls())
    fresh = Summaries(fixture, planner.path, compress_as, None, planner.questions.position)
    due = 0
    for k, c in enumerate(calls):
        last_of_question = k + 1 == len(calls) or calls[k + 1].user is not c.user
        expected = False
        if c.on_branch and not c.last and last_of_question:
            answer = answers[c.user.id]
            upto = answer if answer is not None else c.user
            expected = fresh.due(c.user, upto, c.clock, c.fixture, c.options, c.summary)
        assert c.compression_due is expected, (name, k, c.label)
        due += expected
    assert due > 0


def test_r_turn_1_a_branchs_last_user_is_read_at_the_paths_own_offset() -> None:
    """R-TURN-1 (7e3eb36: `Branch.last_user` reads the list under the path by position): a branch
    whose path starts further along its list (a `tree.Stretch` at offset 2) names the same last
    user message as one on the plain list. Replay's root paths start at 0, so no replay test
    notices the offset left out."""
    fixture = load_fixture(str(FIXTURES / "replay" / "branch.yaml"))
    plain = tree.select(fixture, None)
    path = list(plain.path)
    assert plain.last is not None and plain.last_user is path[plain.last]
    other = [m for m in path if m is not path[plain.last]]
    shifted = tree.Branch(tree.Stretch([other[0], other[-1], *path], 2), plain.summary, plain.cut, plain.last)
    assert shifted.last_user is plain.last_user
