"""Issue 22 item 5, R-RPL-9: one explicit incremental state, owned by the replay driver.

What replay carries from one call to the next lives in `replay.state.State` alone: assembly,
conversion and counting take it as an argument and hold nothing between calls themselves. The
state's shortcuts must give what the plain steps give (tests/test_replay_sharing.py compares
whole calls; the truncation by bisection is compared here directly, room by room).
"""

from __future__ import annotations

import ast
import inspect
import json
from pathlib import Path
from typing import Any

import pytest

from ctxkit import pipeline
from ctxkit.assembly import assemble, truncation
from ctxkit.counting import measure
from ctxkit.history import convert, tree
from ctxkit.loading.config import Options
from ctxkit.loading.domain import Fixture
from ctxkit.loading.read import load_fixture
from ctxkit.output import dumps
from ctxkit.replay import arrays, driver, state, window

from .conftest import FIXTURES, ctxkit
from .helpers import bench_history

PACKAGE = Path(pipeline.__file__).parent
# The core a single `assemble` runs: it reads as the rules and keeps nothing between calls.
CORE = sorted(
    [*(PACKAGE / "assembly").glob("*.py"), *(PACKAGE / "history").glob("*.py"), *(PACKAGE / "counting").glob("*.py")]
) + [PACKAGE / "pipeline.py"]


@pytest.mark.parametrize("path", CORE, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_core_modules_hold_no_replay_caches(path: Path) -> None:
    """No context variable (the counts every `Meter` used to pick up from one), no memo keyed by
    `id()`, no `global`: whatever a replay shares is handed in (`State`), never found."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) else [])
            assert "contextvars" not in names, f"{path.name}:{node.lineno}"
        assert not isinstance(node, ast.Global | ast.Nonlocal), f"{path.name}:{node.lineno}"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id != "id", f"{path.name}:{node.lineno}: a memo keyed by id()"


def test_assembly_takes_the_state_as_its_only_extra() -> None:
    """`assemble`, `convert` and `run` take the replay's state (or nothing), not one memo each."""
    assert list(inspect.signature(assemble.assemble).parameters) == ["eff", "state"]
    assert list(inspect.signature(pipeline.run).parameters) == ["fixture", "options", "state"]
    assert list(inspect.signature(convert.convert).parameters) == ["branch", "fixture", "templates"]
    assert list(inspect.signature(convert.Converted).parameters) == ["branch", "fixture", "templates"]
    for gone in ("Shared", "Conversions", "shared_counts", "_SHARED"):
        assert not hasattr(assemble, gone) and not hasattr(convert, gone) and not hasattr(measure, gone), gone


def test_the_driver_owns_one_state_and_hands_it_to_every_call(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[state.State] = []
    given: list[Any] = []

    class Counted(state.State):
        def __init__(self) -> None:
            super().__init__()
            made.append(self)

    real_run = pipeline.run

    def run(*args: Any, **kwargs: Any) -> Any:
        given.append(kwargs.get("state"))
        return real_run(*args, **kwargs)

    monkeypatch.setattr(driver, "State", Counted)
    monkeypatch.setattr(driver, "run", run)
    done = driver.replay(load_fixture(str(FIXTURES / "replay" / "long_session.yaml")))
    assert len(made) == 1 and len(given) == len(done.calls) > 10
    assert all(s is made[0] for s in given)


def _truncations(path: Path, options: Options) -> int:
    """Every call's truncation by the state against the walk of `truncation.truncate`, for rooms
    and last-n cuts around the call's own."""
    compared = 0

    def check(index: int, call: Any, result: Any) -> None:
        nonlocal compared
        a = result.assembly
        shared = a.converted
        assert isinstance(shared, window.WindowConversion)
        fresh = convert.convert(a.branch, call.fixture, a.eff.templates)
        total = sum(a.meter.of(w) for w in fresh.history)
        for first in sorted({0, 1, fresh.units // 2, fresh.units - 1}):
            for room in sorted({0, 1, 40, total // 3, total // 2, total - 1, total, total + 5, a.history_budget}):
                got = shared.state.truncate(shared, first, max(room, 0), a.meter)
                assert got == truncation.truncate(fresh, first, max(room, 0), a.meter), (index, first, room)
                compared += 1

    driver.replay(load_fixture(str(path)), options, on_call=check)
    return compared


@pytest.mark.parametrize(
    "name", ["replay/long_session.yaml", "replay/summary.yaml", "summary.yaml", "replay/branch.yaml", "truncation.yaml"]
)
def test_r_asm_4_truncation_by_bisection_equals_the_walk(name: str) -> None:
    """R-ASM-4 from running sums (the state) stops where the newest-first walk stops: the same
    kept messages, the same head of the unit it stopped in, the same unit; summaries included."""
    assert _truncations(FIXTURES / name, Options(max_input_tokens=2_000)) > 20


def test_r_asm_4_truncation_by_bisection_on_a_generated_history(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    path.write_text(json.dumps(bench_history(120)), encoding="utf-8")
    assert _truncations(path, Options(max_input_tokens=3_000)) > 500


def test_cacheable_copies_equal_copying_one_by_one(tmp_path: Path) -> None:
    """The state's copies (slices of the copies made with the window's messages) equal
    `w.with_(cacheable=True)` for any list: the window's run, runs with gaps, other messages
    before, between and after, and an order the window does not have."""
    path = tmp_path / "h.json"
    path.write_text(json.dumps(bench_history(80)), encoding="utf-8")
    checked = 0

    def check(index: int, call: Any, result: Any) -> None:
        nonlocal checked
        a = result.assembly
        shared = a.converted.state
        run = list(a.converted.history)
        other = [w for w in a.messages if not w.key.startswith("m:")]
        shapes = (
            run,
            run[3:],
            run[::2],
            other + run + other,
            run[:5] + other + run[5:],
            run[:1] + other[:1] + run[2:3],
        )
        for ws in (*shapes, run[::-1], []):
            assert shared.cacheable(ws) == [w.with_(cacheable=True) for w in ws], index
            checked += 1

    driver.replay(load_fixture(str(path)), Options(max_input_tokens=3_000), on_call=check)
    assert checked > 100


@pytest.mark.parametrize(("window", "grows"), [(1_500, True), (3_000, False)])
def test_r_rpl_9_the_window_forgets_by_recency_and_makes_again_what_it_reaches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window: int, grows: bool
) -> None:
    """The state forgets the working messages, copies and costs of stored messages far below the
    window (`State._forget`) and makes them again when a window reaches back (`State._refill`:
    a call whose fixed parts shrink, a report reading the whole history). With forgetting after a
    few messages, every call still equals the call assembled afresh, a forgotten message is held
    by no memo, and the whole window made again equals a fresh conversion."""
    monkeypatch.setattr(arrays, "_KEEP", 3)
    monkeypatch.setattr(arrays, "_SWEEP", 2)
    path = tmp_path / "h.json"
    path.write_text(json.dumps(bench_history(300)), encoding="utf-8")
    floors: list[int] = []

    def check(index: int, call: Any, result: Any) -> None:
        fresh = pipeline.run(call.fixture, call.options)
        assert dumps(result.payload.body) == dumps(fresh.payload.body), index
        assert dict(result.assembly.fates.decided()) == dict(fresh.assembly.fates.decided()), index
        s = result.assembly.converted.state
        floors.append(s.floor)
        gone = {m.id for m in s.path[: s.floor]}
        assert not gone & set(s._done), index  # nothing kept of a forgotten message
        assert all(w.key not in s.at and w.key not in s._copies for w in s.works[: s.ends[s.floor]]), index

    driver.replay(load_fixture(str(path)), Options(max_input_tokens=window), on_call=check)
    assert max(floors) > 100  # it forgot
    assert grows == any(b < a for a, b in zip(floors, floors[1:], strict=False))  # made again: a window grew back

    seen: list[Any] = []
    driver.replay(load_fixture(str(path)), Options(max_input_tokens=window), on_call=lambda *a: seen.append(a))
    for index, call, result in seen:  # each result kept while the window moved on, forgot and grew back
        afresh = pipeline.run(call.fixture, call.options).assembly.fates.decided()
        assert repr(list(result.assembly.fates.decided().items())) == repr(list(afresh.items())), index
    _, call, result = seen[-1]
    shared = result.assembly.converted
    assert shared.state.floor > 0
    fresh = convert.convert(result.assembly.branch, call.fixture, result.assembly.eff.templates)
    assert shared.history == fresh.history  # `restore` made the forgotten part again
    assert shared.state.floor == 0


def _edited_history() -> dict[str, Any]:
    """The bench history of 300 messages, each the parent of the next, and an early edit of m6
    (a question and its answer) beside them."""
    history = bench_history(300)
    for k, m in enumerate(history["messages"]):
        m["parent"] = history["messages"][k - 1]["id"] if k else None
    history["messages"] += [
        {"id": "edit", "role": "user", "parent": "m6", "text": "an early edit"},
        {"id": "edit-answer", "role": "assistant", "parent": "edit", "text": "its answer"},
    ]
    return history


def test_r_rpl_9_window_positions_read_off_the_branch_lookups_equal_afresh(tmp_path: Path) -> None:
    """The window keeps no index of its own: a stored message's place (R-ASM-4's units, `unit_of`)
    is read off the branch lookups' positions (`tree.Paths`) while their last path runs along the
    window, and found afresh once an edit's branch was selected that leaves it (the window has not
    followed yet): both equal the plain conversion's, for messages of the call and others."""
    history = _edited_history()
    path = tmp_path / "h.json"
    path.write_text(json.dumps(history), encoding="utf-8")
    fixture = load_fixture(str(path))
    ids = [m["id"] for m in history["messages"]] + ["nowhere"]
    s = state.State()
    leaf = history["messages"][-4]["id"]
    got = pipeline.run(fixture, Options(max_input_tokens=2_000, leaf=leaf), state=s).assembly
    fresh = convert.convert(got.branch, got.eff.fixture, got.eff.templates)
    shared = got.converted
    assert isinstance(shared, window.WindowConversion) and shared.synced()

    def places() -> list[int | None]:
        return [shared.unit_of(i) for i in ids]

    expected = [fresh.unit_of(i) for i in ids]
    assert s.paths.extends(s.path) and places() == expected
    at = s.index("m10")
    assert at is not None and s.path[at].id == "m10" and s.index("edit") is None
    s.select(fixture, "edit")  # the edit's branch leaves the window's path after m6
    assert not s.paths.extends(s.path) and shared.synced()
    assert s.index("m10") is None  # taken as not on the path: a conversion is kept, never misplaced
    assert places() == expected
    assert expected[ids.index("m10")] is not None


def test_r_rpl_9_the_window_reads_a_path_by_its_position_on_the_list_under_it() -> None:
    """`Arrays.sync` reads new stored messages off the list under the path, at the path's own
    offset (`Stretch.under`): a path that starts further along its list gives the same window as
    the plain list (the review found no replay path that starts past 0, so no replay test would
    notice the offset left out)."""
    fixture = load_fixture(str(FIXTURES / "replay" / "branch.yaml"))
    got = pipeline.run(fixture, Options(max_input_tokens=2_000), state=state.State()).assembly
    assert isinstance(got.converted, window.WindowConversion)
    path = list(got.branch.path)
    plain, offset = state.State(), state.State()
    plain.sync(path, len(path), got.converted)
    offset.sync(tree.Stretch([path[-1], path[0], *path], 2), len(path), got.converted)
    assert len(path) > 2 and offset.path == plain.path == path
    assert [w.key for w in offset.works] == [w.key for w in plain.works] and list(offset.ends) == list(plain.ends)


def _forked(tmp_path: Path) -> tuple[dict[str, Any], Fixture]:
    """The edited history with a question after the edit's answer (leaf `edit-2`), loaded."""
    history = _edited_history()
    history["messages"].append({"id": "edit-2", "role": "user", "parent": "edit-answer", "text": "and then?"})
    path = tmp_path / "h.json"
    path.write_text(json.dumps(history), encoding="utf-8")
    return history, load_fixture(str(path))


def test_r_rpl_9_a_kept_conversion_knows_when_the_window_left_its_messages(tmp_path: Path) -> None:
    """A call's converted branch reads the window only while the window runs over its stored
    messages (`WindowConversion.synced`): once a later call on an edit's branch cut the window back
    below them, the kept conversion's history, units and counts equal the plain conversion's."""
    history, fixture = _forked(tmp_path)
    s = state.State()
    leaf = history["messages"][-5]["id"]
    got = pipeline.run(fixture, Options(max_input_tokens=2_000, leaf=leaf), state=s).assembly
    shared = got.converted
    fresh = convert.convert(got.branch, got.eff.fixture, got.eff.templates)
    assert isinstance(shared, window.WindowConversion) and shared.synced()
    pipeline.run(fixture, Options(max_input_tokens=2_000, leaf="edit-2"), state=s)  # the window follows the edit
    assert not shared.synced()
    assert shared.history == fresh.history
    assert shared.count(0, shared.units) == fresh.count(0, fresh.units)
    ids = [m["id"] for m in history["messages"]]
    assert [shared.unit_of(i) for i in ids] == [fresh.unit_of(i) for i in ids]


def test_r_rpl_9_a_kept_conversion_knows_when_a_longer_path_replaced_its_messages(tmp_path: Path) -> None:
    """The other half of `WindowConversion.synced` (the review's finding on cb40eaa): a conversion
    kept on a short edit branch is out of step once a later call's window runs along the longer
    original path, which reaches past the kept end with other messages there; its history and
    counts stay the plain conversion's."""
    history, fixture = _forked(tmp_path)
    s = state.State()
    got = pipeline.run(fixture, Options(max_input_tokens=2_000, leaf="edit-2"), state=s).assembly
    shared = got.converted
    fresh = convert.convert(got.branch, got.eff.fixture, got.eff.templates)
    assert isinstance(shared, window.WindowConversion) and shared.synced()
    longer = history["messages"][-5]["id"]  # on the original path, past the edit branch's end
    pipeline.run(fixture, Options(max_input_tokens=2_000, leaf=longer), state=s)
    assert not shared.synced()
    assert shared.history == fresh.history
    assert shared.count(0, shared.units) == fresh.count(0, fresh.units)


def test_r_rpl_9_an_edit_below_the_forgotten_part_cuts_the_window_back_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call whose path leaves the window's path below its floor (an edit early in the
    conversation) cuts the window back there: the forgotten messages between are made again
    first (their calls and results are taken out of the positions), and the call equals the
    call assembled afresh, as does the next call back on the long path."""
    monkeypatch.setattr(arrays, "_KEEP", 3)
    monkeypatch.setattr(arrays, "_SWEEP", 2)
    history = _edited_history()
    history["messages"].append(
        {"id": "edit-next", "role": "user", "parent": "edit-answer", "text": "the next question"}
    )
    path = tmp_path / "h.json"
    path.write_text(json.dumps(history), encoding="utf-8")
    fixture = load_fixture(str(path))
    made: list[state.State] = []

    class Kept(state.State):
        def __init__(self) -> None:
            super().__init__()
            made.append(self)

    monkeypatch.setattr(driver, "State", Kept)
    last = history["messages"][-4]["id"]
    driver.replay(fixture, Options(max_input_tokens=2_000, leaf=last))
    s = made[0]
    assert s.floor > 50
    for leaf in ("edit-next", last):
        options = Options(max_input_tokens=2_000, leaf=leaf)
        got, fresh = pipeline.run(fixture, options, state=s), pipeline.run(fixture, options)
        assert dumps(got.payload.body) == dumps(fresh.payload.body), leaf
        assert dict(got.assembly.fates.decided()) == dict(fresh.assembly.fates.decided()), leaf
    assert s.floor > 0 and len(s.at) < 300


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "ollama"])
def test_r_rpl_9_forgetting_below_the_window_changes_no_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    """The whole replay report (tokens, cache predictions, breaks, causes, lost tokens, costs) is
    the same with forgetting forced after every message as with no forgetting at all, under each
    provider, on a history with tool loops and an early edit (this round's review: the tests
    above compare bodies and fates under OpenAI only)."""
    history = _edited_history()
    path = tmp_path / "h.json"
    path.write_text(json.dumps(history), encoding="utf-8")
    last = history["messages"][-3]["id"]
    floors: list[int] = []

    class Kept(state.State):
        def __init__(self) -> None:
            super().__init__()
            floors.append(0)

        def _forget(self, k: int) -> None:
            super()._forget(k)
            floors.append(k)

    monkeypatch.setattr(driver, "State", Kept)
    args = ["replay", str(path), "--provider", provider, "--max-input-tokens", "2000", "--format", "json"]
    monkeypatch.setattr(arrays, "_SWEEP", 10**9)
    kept = ctxkit(*args, "--leaf", last).out
    assert max(floors) == 0  # never forgot
    monkeypatch.setattr(arrays, "_KEEP", 0)
    monkeypatch.setattr(arrays, "_SWEEP", 1)
    forgot = ctxkit(*args, "--leaf", last).out
    assert max(floors) > 100  # forgot most of the history
    assert forgot == kept
