"""R-RPL-9: what a replayed call's translation takes from the last call equals a fresh translation.

The `TranslationMemo` carries the last window's wire messages (and, where a run of messages kept
its place, their payload messages) as slices, and the `ItemMemo` the items of the payload
messages that came back unchanged; only the window-wide rules run again. These tests drive
windows that slide, shrink, grow, change branch and hit the image cap, for every provider, and
compare every call with the same call assembled and translated afresh: its body, its rows and
warnings, and the items the replay counted (taken from the last call) with the items read back
from the fresh body.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxkit import providers
from ctxkit.errors import RuleError
from ctxkit.loading.config import Options
from ctxkit.loading.read import load_fixture
from ctxkit.translate.itemmemo import runs
from ctxkit.translate.memo import _common

from .helpers import replay_against_fresh, tool_calls

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="
WORDS = st.text(alphabet="abcdefgh ", min_size=1, max_size=200).map(lambda s: s.strip() or "x")


@st.composite
def conversations(draw: Any) -> dict[str, Any]:
    """A long enough conversation for a small window to slide: texts of any length, pictures,
    tool loops and an edited-away question (a branch change)."""
    messages: list[dict[str, Any]] = []
    parent: str | None = None
    call_n = 0
    for i in range(draw(st.integers(3, 9))):
        user: dict[str, Any] = {"id": f"u{i}", "role": "user", "text": draw(WORDS), "at": f"2026-03-14T09:{i:02d}:00Z"}
        if draw(st.integers(0, 3)) == 0:
            user["files"] = draw(st.lists(st.sampled_from(["img-1", "img-2"]), min_size=1, max_size=2, unique=True))
        if parent is not None:
            user["parent"] = parent
            if draw(st.integers(0, 5)) == 0:  # an edit: the later calls leave this question's branch
                messages.append({**user, "id": f"e{i}", "text": draw(WORDS)})
                messages.append({"id": f"ea{i}", "role": "assistant", "parent": f"e{i}", "text": draw(WORDS)})
        messages.append(user)
        answer: dict[str, Any] = {"id": f"a{i}", "role": "assistant", "parent": f"u{i}", "text": draw(WORDS)}
        if draw(st.booleans()):
            answer["tool_calls"] = draw(tool_calls(call_n, ["lookup", "get_x"], WORDS))
            call_n += len(answer["tool_calls"])
        messages.append(answer)
        parent = f"a{i}"
    messages.append({"id": "last", "role": "user", "parent": parent, "text": draw(WORDS)})
    return {
        "ctxkit": 1,
        "now": "2026-03-14T10:00:00Z",
        "model": {"provider": draw(st.sampled_from(providers.names())), "name": "m", "max_input_tokens": 100_000},
        "tokenizer": "approx",
        "settings": {"image_cap": draw(st.sampled_from([None, 1, 2]))},
        "prompts": {"system": "S", "datetime_aware": False},
        "files": [{"id": f"img-{n}", "name": f"p{n}.png", "kind": "image", "tokens": 85, "data": PNG} for n in (1, 2)],
        "messages": messages,
    }


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=conversations(), window=st.sampled_from([300, 450, 700, 1_200, 100_000]))
def test_r_rpl_9_carried_translation_equals_a_fresh_one(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, doc: dict[str, Any], window: int
) -> None:
    path = tmp_path / "reuse.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    try:
        assert replay_against_fresh(load_fixture(str(path)), Options(max_input_tokens=window), monkeypatch) > 0
    except RuleError:
        pass  # a window too small for a call's fixed parts (R-ASM-2/3): nothing to compare


class _Keyed:
    """A message as `memo._common` reads one: its key, equal only to itself."""

    __slots__ = ("key",)

    def __init__(self) -> None:
        self.key = str(id(self))


def test_r_rpl_9_runs_are_the_same_objects_in_order() -> None:
    """The runs the memo carries (`itemmemo.runs`, extended while the messages are equal:
    `memo._common`): a window that slid, grew, lost a message in the middle and got fresh ones at
    both ends; a message far past the last run is made afresh."""

    def memo_runs(new: list[_Keyed], old: list[_Keyed]) -> list[tuple[int, int, int]]:
        return runs(new, old, _common)  # type: ignore[arg-type]

    old = [_Keyed() for _ in range(10)]
    new = [_Keyed(), *old[2:5], *old[6:9], _Keyed(), _Keyed()]
    assert memo_runs(new, old) == [(1, 2, 3), (4, 6, 3)]
    assert memo_runs(old, old) == [(0, 0, 10)]
    assert memo_runs([], old) == [] and memo_runs(old, []) == []
    far = [_Keyed() for _ in range(300)]
    assert memo_runs(far[100:], far) == [(0, 100, 200)]
    assert memo_runs(far[280:], far) == []
