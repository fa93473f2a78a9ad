"""Replay snapshots (R-LOG-5): `ctxkit snapshot --replay`, `--ctxkit-replay` and
`ctxkit_snapshot(..., replay=True)` pin a replay's cache summary, so a change's effect
on the cache shows in review as a snapshot diff naming the call.

The pinned numbers were checked by hand against `ctxkit replay fixtures/replay/append.yaml`
(README, "Fail CI when a change breaks the cache"): prompts 44, 88, 130; cached 0, 41, 85.
"""

from __future__ import annotations

import json
import re
import shutil

import pytest

from ctxkit.errors import InputError
from ctxkit.loading.config import Options
from ctxkit.loading.read import load_fixture
from ctxkit.snapshots.names import is_fixture_item_name, is_option_variant, snapshot_name
from ctxkit.snapshots.replays import replay_text

from .conftest import FIXTURES, ctxkit

pytest_plugins = ["pytester"]

PERSONA = "datetime_aware: false, custom_agent: Answer as a mechanic."
UNRELATED_PLUGINS = ("hypothesispytest", "anyio", "langsmith_plugin")


@pytest.fixture
def shop(tmp_path, monkeypatch):
    """A project with the bicycle shop's conversation in `fx/`; snapshots go to `snaps/`."""
    (tmp_path / "fx").mkdir()
    shutil.copy(FIXTURES / "replay" / "append.yaml", tmp_path / "fx" / "append.yaml")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def add_persona(path):
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("datetime_aware: false", PERSONA), encoding="utf-8")


def test_r_log_5_replay_snapshot_name_is_an_option_variant():
    assert snapshot_name("fx/append.yaml", replay=True) == "append.replay.json"
    assert snapshot_name("a.yaml", "anthropic", 8000, replay=True) == "a.anthropic.max8000.replay.json"
    assert is_option_variant("append.replay.json") and not is_option_variant("replay.json")
    assert is_fixture_item_name("append.replay.json", replay=True)
    assert not is_fixture_item_name("append.replay.json") and not is_fixture_item_name(
        "a.openai.replay.json", replay=True
    )


def test_r_log_5_snapshot_replay_pins_the_summary_and_passes_unchanged(shop):
    r = ctxkit("snapshot", "fx", "--snapshots", "snaps", "--replay", "--update")
    assert "written: snaps/append.replay.json (fx/append.yaml): new" in r.out
    doc = json.loads((shop / "snaps" / "append.replay.json").read_text(encoding="utf-8"))
    assert list(doc) == ["ctxkit_snapshot", "replay"]
    assert doc["replay"]["calls"] == [
        {"label": "u1", "prompt_tokens": 44, "cached_tokens": 0, "cause": "first_call", "limit": None},
        {"label": "u2", "prompt_tokens": 88, "cached_tokens": 41, "cause": "append", "limit": None},
        {"label": "u3", "prompt_tokens": 130, "cached_tokens": 85, "cause": "append", "limit": None},
    ]
    totals = doc["replay"]["totals"]
    assert (totals["calls"], totals["prompt_tokens"], totals["cached_tokens"], totals["hit_rate"]) == (
        3,
        262,
        126,
        0.4809,
    )
    assert "cost" not in json.dumps(doc)  # costs follow the price data, not the change
    r = ctxkit("snapshot", "fx", "--snapshots", "snaps", "--replay", "--prune")
    assert r.out == "2 passed, 0 failed\n"


def test_r_log_5_a_change_that_breaks_the_cache_is_a_mismatch_naming_the_call(shop):
    ctxkit("snapshot", "fx", "--snapshots", "snaps", "--replay", "--update")
    add_persona(shop / "fx" / "append.yaml")
    r = ctxkit("snapshot", "fx", "--snapshots", "snaps", "--replay", expect=1)
    assert "failed: snaps/append.replay.json (fx/append.yaml): the assembly differs from the snapshot" in r.out
    hunk = r.out[r.out.index("+++ snaps/append.replay.json") :]
    assert '         "label": "u2",\n-        "prompt_tokens": 88,\n' in hunk
    assert '-        "cached_tokens": 41,\n-        "cause": "append",\n' in hunk
    assert '+        "cached_tokens": 0,\n+        "cause": "drift",\n' in hunk
    assert r.out.endswith("0 passed, 2 failed\n")


def test_r_log_5_prune_keeps_replay_snapshots_only_when_they_are_pinned(shop):
    ctxkit("snapshot", "fx", "--snapshots", "snaps", "--replay", "--update")
    assert ctxkit("snapshot", "fx", "--snapshots", "snaps", "--replay", "--update", "--prune").out == (
        "2 passed, 0 failed\n"
    )
    r = ctxkit("snapshot", "fx", "--snapshots", "snaps", "--prune", expect=1)
    assert "unused: snaps/append.replay.json: no fixture produces it" in r.out


def test_r_log_5_replay_rule_failure_is_pinned_as_an_error():
    text, _ = replay_text(load_fixture(str(FIXTURES / "budget_exhaustion.yaml")), Options())
    doc = json.loads(text)
    assert list(doc) == ["ctxkit_snapshot", "error"]
    assert doc["error"].startswith("call 1 (q2): the last user message and this turn's messages need 5000 tokens")
    assert "(R-ASM-3)" in doc["error"] and "budget_exhaustion" not in doc["error"]


def test_r_log_5_clock_dependent_replay_is_refused(tmp_path):
    text = (FIXTURES / "replay" / "append.yaml").read_text(encoding="utf-8")
    text = re.sub(r', at: "[^"]*"', "", text).replace("datetime_aware: false", "datetime_aware: true")
    path = tmp_path / "clock.yaml"
    path.write_text("".join(line for line in text.splitlines(keepends=True) if not line.startswith("now:")))
    with pytest.raises(InputError, match=r"/now: the output depends on the clock"):
        replay_text(load_fixture(str(path)), Options())


# --- the pytest plugin -------------------------------------------------------------


@pytest.fixture
def project(pytester, monkeypatch):
    import syrupy

    monkeypatch.setattr(syrupy, "_syrupy", syrupy._syrupy)  # the inner runs replace it
    (pytester.path / "fixtures").mkdir()
    shutil.copy(FIXTURES / "replay" / "append.yaml", pytester.path / "fixtures" / "append.yaml")
    pytester.makeini("[pytest]\n")
    monkeypatch.chdir(pytester.path)
    return pytester


def run(pytester, *args):
    others = [arg for name in UNRELATED_PLUGINS for arg in ("-p", f"no:{name}")]
    return pytester.runpytest(
        "-p", "no:cacheprovider", *others, "-W", "ignore::pytest.PytestAssertRewriteWarning", *args
    )


def test_r_log_5_snapshot_update_keeps_the_cli_replay_snapshots(project):
    """`x.replay.json` is an option variant: without --ctxkit-replay the plugin's
    --snapshot-update must neither report it unused nor delete it."""
    ctxkit("snapshot", "fixtures", "--snapshots", "fixtures/__snapshots__", "--replay", "--update")
    result = run(project, "--ctxkit-fixtures", "fixtures", "--snapshot-update")
    result.assert_outcomes(passed=1)
    assert "deleted" not in result.stdout.str().lower()
    store = project.path / "fixtures" / "__snapshots__"
    assert sorted(p.name for p in store.iterdir()) == ["append.json", "append.replay.json"]
    assert ctxkit("snapshot", "fixtures", "--snapshots", "fixtures/__snapshots__", "--replay").out == (
        "2 passed, 0 failed\n"
    )


def test_r_log_5_plugin_and_cli_read_each_others_replay_snapshots(project):
    args = ("snapshot", "fixtures", "--snapshots", "fixtures/__snapshots__", "--replay")
    ctxkit(*args, "--update")
    run(project, "--ctxkit-fixtures", "fixtures", "--ctxkit-replay").assert_outcomes(passed=2)
    shutil.rmtree(project.path / "fixtures" / "__snapshots__")
    run(project, "--ctxkit-fixtures", "fixtures", "--ctxkit-replay", "--snapshot-update").assert_outcomes(passed=2)
    assert ctxkit(*args).out == "2 passed, 0 failed\n"
    add_persona(project.path / "fixtures" / "append.yaml")
    result = run(project, "--ctxkit-fixtures", "fixtures", "--ctxkit-replay", "-k", "replay")
    result.assert_outcomes(failed=1, deselected=1)
    result.stdout.fnmatch_lines(
        ["*ctxkit snapshot fixtures/__snapshots__/append.replay.json differs*", '*+        "cause": "drift",']
    )


def test_r_log_5_ctxkit_snapshot_fixture_pins_a_replay(project):
    project.makepyfile(
        test_cache='def test_cache(ctxkit_snapshot):\n    ctxkit_snapshot("fixtures/append.yaml", replay=True)\n'
    )
    run(project, "--snapshot-update").assert_outcomes(passed=1)
    written = project.path / "__snapshots__" / "test_cache" / "test_cache[append.replay].json"
    assert json.loads(written.read_text(encoding="utf-8"))["replay"]["totals"]["cached_tokens"] == 126
    run(project).assert_outcomes(passed=1)
    add_persona(project.path / "fixtures" / "append.yaml")
    result = run(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_cache*append.replay*differs for fixtures/append.yaml replay=True*"])
