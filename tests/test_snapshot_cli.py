"""`ctxkit snapshot` (docs/rules.md#golden-snapshots): golden files of payload + budget per fixture and option set."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ctxkit.loading.config import Options
from ctxkit.loading.read import load_fixture
from ctxkit.output import colour_diff
from ctxkit.snapshots import names
from ctxkit.snapshots import store as core

from .conftest import FIXTURES, ctxkit

QUESTION = "And why does it matter for long chats?"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """tmp/fx/{plain_chat,truncation}.yaml, run from tmp so paths print relative."""
    fx = tmp_path / "fx"
    fx.mkdir()
    for name in ("plain_chat.yaml", "truncation.yaml"):
        shutil.copy(FIXTURES / name, fx / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def edit_question(path: Path, new: str = "And why?") -> None:
    path.write_text(path.read_text(encoding="utf-8").replace(QUESTION, new), encoding="utf-8")


def files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_missing_snapshots_fail_and_say_to_update(project):
    r = ctxkit("snapshot", "fx", "--snapshots", "snaps", expect=1)
    assert r.out == (
        "missing: snaps/plain_chat.json (fx/plain_chat.yaml): no snapshot stored; "
        "run with --update to write it\n"
        "missing: snaps/truncation.json (fx/truncation.yaml): no snapshot stored; "
        "run with --update to write it\n"
        "0 passed, 2 failed\n"
    )
    assert not (project / "snaps").exists()


def test_update_writes_readable_json_then_passes(project):
    r = ctxkit("snapshot", "fx", "--snapshots", "snaps", "--update")
    assert r.out.splitlines() == [
        "written: snaps/plain_chat.json (fx/plain_chat.yaml): new",
        "written: snaps/truncation.json (fx/truncation.yaml): new",
        "0 passed, 0 failed, 2 written",
    ]
    text = (project / "snaps" / "plain_chat.json").read_text(encoding="utf-8")
    doc = json.loads(text)
    assert list(doc) == ["ctxkit_snapshot", "payload", "budget"]
    assert doc["ctxkit_snapshot"] == 1  # the marker that makes the file ours
    assert list(doc["payload"]["messages"][0])[:2] == ["role", "content"]  # not sorted
    assert text.startswith('{\n  "ctxkit_snapshot": 1,\n  "payload": {\n') and text.endswith("}\n")
    assert doc["budget"]["max_input_tokens"] == 128000
    assert text == core.render(doc)
    assert ctxkit("snapshot", "fx", "--snapshots", "snaps").out == "2 passed, 0 failed\n"


def test_mismatch_prints_a_unified_diff_and_exits_1(project):
    ctxkit("snapshot", "fx", "--snapshots", "snaps", "--update")
    before = (project / "snaps" / "plain_chat.json").read_text(encoding="utf-8")
    edit_question(project / "fx" / "plain_chat.yaml")
    r = ctxkit("snapshot", "fx", "--snapshots", "snaps", expect=1)
    lines = r.out.splitlines()
    assert lines[0] == "failed: snaps/plain_chat.json (fx/plain_chat.yaml): the assembly differs from the snapshot"
    assert lines[1] == "--- snaps/plain_chat.json (stored)"
    assert lines[2] == "+++ snaps/plain_chat.json (assembled from fx/plain_chat.yaml)"
    assert f'-        "content": "{QUESTION}"' in lines
    assert '+        "content": "And why?"' in lines
    assert any(line.startswith('-    "used_tokens"') for line in lines)  # the budget moved too
    assert lines[-1] == "1 passed, 1 failed"
    assert "\x1b[" not in r.out  # not a terminal (and NO_COLOR)
    assert (project / "snaps" / "plain_chat.json").read_text(encoding="utf-8") == before
    # --update accepts it
    r = ctxkit("snapshot", "fx", "--snapshots", "snaps", "--update")
    assert "written: snaps/plain_chat.json (fx/plain_chat.yaml): updated" in r.out
    assert ctxkit("snapshot", "fx", "--snapshots", "snaps").out == "2 passed, 0 failed\n"


def test_diff_colour_is_added_after_the_plain_diff():
    diff = "--- a\n+++ b\n@@ -1 +1 @@\n-old\n+new\n same\n"
    assert colour_diff(diff, False) == diff
    coloured = colour_diff(diff, True)
    assert "\x1b[31m-old\x1b[0m" in coloured and "\x1b[32m+new\x1b[0m" in coloured
    assert "\x1b[1m--- a\x1b[0m" in coloured and "\n same\n" in coloured
    # the message lines of `ctxkit diff`'s summary are coloured by the same function
    summary = colour_diff("messages: 2 present in only one context\n  - m1 user\n  + m2 user\n", True)
    assert summary.splitlines()[1:] == ["\x1b[31m  - m1 user\x1b[0m", "\x1b[32m  + m2 user\x1b[0m"]


def test_rule_failure_is_pinned_as_an_error_snapshot(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(FIXTURES / "budget_exhaustion.yaml", tmp_path / "budget_exhaustion.yaml")
    ctxkit("snapshot", "budget_exhaustion.yaml", "--snapshots", "snaps", "--update")
    doc = json.loads((tmp_path / "snaps" / "budget_exhaustion.json").read_text(encoding="utf-8"))
    assert list(doc) == ["ctxkit_snapshot", "error"]
    assert "(R-ASM-3)" in doc["error"]
    assert not doc["error"].startswith("budget_exhaustion.yaml")  # no path: same from any cwd
    r = ctxkit("snapshot", "budget_exhaustion.yaml", "--snapshots", "snaps")
    assert r.out == "1 passed, 0 failed\n"


def test_update_never_deletes_snapshots_it_did_not_produce(project):
    snaps = project / "snaps"
    ctxkit("snapshot", "fx", "--snapshots", "snaps", "--update")
    shutil.copy(snaps / "truncation.json", snaps / "old_fixture.json")  # one of ours, orphaned
    (snaps / "notes.json").write_text('{"mine": true}\n', encoding="utf-8")  # not ours
    (snaps / "README.md").write_text("hand-written\n", encoding="utf-8")
    edit_question(project / "fx" / "plain_chat.yaml")
    ctxkit("snapshot", "fx", "--snapshots", "snaps", "--update")
    assert files(snaps) == ["README.md", "notes.json", "old_fixture.json", "plain_chat.json", "truncation.json"]


def test_prune_reports_then_deletes_only_our_orphaned_files(project):
    snaps = project / "snaps"
    ctxkit("snapshot", "fx", "--snapshots", "snaps", "--update")
    shutil.copy(snaps / "truncation.json", snaps / "old_fixture.json")
    (snaps / "notes.json").write_text('{"mine": true}\n', encoding="utf-8")
    (snaps / "broken.json").write_text("{not json", encoding="utf-8")
    r = ctxkit("snapshot", "fx", "--snapshots", "snaps", "--prune", expect=1)
    assert r.out == (
        "unused: snaps/old_fixture.json: no fixture produces it; "
        "run with --update --prune to delete it\n"
        "2 passed, 1 failed\n"
    )
    r = ctxkit("snapshot", "fx", "--snapshots", "snaps", "--prune", "--update")
    assert r.out == ("deleted: snaps/old_fixture.json: no fixture produces it\n2 passed, 0 failed, 1 deleted\n")
    assert files(snaps) == ["broken.json", "notes.json", "plain_chat.json", "truncation.json"]


def test_prune_never_deletes_a_json_file_without_the_marker(project):
    """Issue 11.2: a user's `{"error": ...}` notes look like an old error snapshot; only the marker counts."""
    snaps = project / "snaps"
    ctxkit("snapshot", "fx", "--snapshots", "snaps", "--update")
    notes = '{"error": "my notes about errors"}\n'
    (snaps / "my_notes.json").write_text(notes, encoding="utf-8")
    (snaps / "unmarked.json").write_text('{"payload": {}, "budget": {}}\n', encoding="utf-8")
    (snaps / "wrong_version.json").write_text('{"ctxkit_snapshot": true, "error": "x"}\n', encoding="utf-8")
    assert ctxkit("snapshot", "fx", "--snapshots", "snaps", "--prune").out == "2 passed, 0 failed\n"
    ctxkit("snapshot", "fx", "--snapshots", "snaps", "--prune", "--update")
    assert (snaps / "my_notes.json").read_text(encoding="utf-8") == notes
    kept = ["my_notes.json", "plain_chat.json", "truncation.json", "unmarked.json", "wrong_version.json"]
    assert files(snaps) == kept


def test_update_never_overwrites_the_fixture_it_snapshots(tmp_path, monkeypatch):
    """Issue 11.1: `cp a.json self.json; ctxkit snapshot self.json --snapshots . --update`."""
    monkeypatch.chdir(tmp_path)
    fixture = json.dumps(yaml.safe_load((FIXTURES / "plain_chat.yaml").read_text(encoding="utf-8")))
    (tmp_path / "self.json").write_text(fixture, encoding="utf-8")
    r = ctxkit("snapshot", "self.json", "--snapshots", ".", "--update", expect=2)
    assert r.err == "error: self.json: is a fixture of this run: keep the snapshots in a folder of their own\n"
    assert (tmp_path / "self.json").read_text(encoding="utf-8") == fixture
    ctxkit("snapshot", "self.json", "--snapshots", ".", expect=2)  # not even compared with itself


def test_update_never_overwrites_a_file_it_did_not_write_as_a_snapshot(tmp_path, monkeypatch):
    """Issue 11.1: proj/a.yaml snapshotted into proj would have replaced the fixture proj/a.json."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "proj").mkdir()
    shutil.copy(FIXTURES / "plain_chat.yaml", tmp_path / "proj" / "a.yaml")
    other = json.dumps(yaml.safe_load((FIXTURES / "truncation.yaml").read_text(encoding="utf-8")))
    (tmp_path / "proj" / "a.json").write_text(other, encoding="utf-8")
    r = ctxkit("snapshot", "proj/a.yaml", "--snapshots", "proj", "--update", expect=2)
    assert r.err.startswith("error: proj/a.json: exists and is not a ctxkit snapshot (no 'ctxkit_snapshot' marker)")
    assert (tmp_path / "proj" / "a.json").read_text(encoding="utf-8") == other
    # a link is not ours either, even to a snapshot: the write would not go where the user thinks
    ctxkit("snapshot", "proj/a.yaml", "--snapshots", "snaps", "--update")
    (tmp_path / "links").mkdir()
    (tmp_path / "links" / "a.json").symlink_to(tmp_path / "snaps" / "a.json")
    r = ctxkit("snapshot", "proj/a.yaml", "--snapshots", "links", "--update", "--max-input-tokens", "500", expect=0)
    assert "links/a.max500.json" in r.out
    r = ctxkit("snapshot", "proj/a.yaml", "--snapshots", "links", "--update", expect=2)
    assert r.err == "error: links/a.json: is not a regular file: a snapshot is never written through it\n"


def test_update_writes_nothing_when_any_input_is_bad(tmp_path, monkeypatch):
    """Issue 11.4: three fixtures, the second unwritable (a lone surrogate): no file is written."""
    monkeypatch.chdir(tmp_path)
    doc = yaml.safe_load((FIXTURES / "plain_chat.yaml").read_text(encoding="utf-8"))
    for name in ("a", "c"):
        (tmp_path / f"{name}.json").write_text(json.dumps(doc), encoding="utf-8")
    (tmp_path / "b.json").write_text(json.dumps(doc).replace("And why", "And \\ud800 why"), encoding="utf-8")
    r = ctxkit("snapshot", "a.json", "b.json", "c.json", "--snapshots", "snaps", "--update", expect=2)
    assert r.out == "" and r.err.startswith("error: b.json") and len(r.err.splitlines()) == 1
    assert not (tmp_path / "snaps").exists()


def test_prune_keeps_snapshots_of_every_requested_option_set(project):
    snaps = project / "snaps"
    args = ("snapshot", "fx/plain_chat.yaml", "--snapshots", "snaps", "--update", "--prune")
    ctxkit(*args, "--provider", "openai", "--provider", "azure")
    ctxkit(*args, "--provider", "openai", "--provider", "azure")
    assert files(snaps) == ["plain_chat.azure.json", "plain_chat.openai.json"]
    r = ctxkit(*args, "--provider", "azure")
    assert "deleted: snaps/plain_chat.openai.json" in r.out
    assert files(snaps) == ["plain_chat.azure.json"]


def test_r_sys_2_snapshot_refuses_clock_dependent_fixture_without_now(project):
    text = (project / "fx" / "plain_chat.yaml").read_text(encoding="utf-8")
    (project / "fx" / "clock.yaml").write_text(
        "".join(line for line in text.splitlines(keepends=True) if not line.startswith("now:")), encoding="utf-8"
    )
    r = ctxkit("snapshot", "fx", "--snapshots", "snaps", "--update", expect=2)
    assert r.out == ""
    assert r.err.splitlines() == [
        "error: fx/clock.yaml:/now: the output depends on the clock and the fixture has no "
        "`now`: add `now:` so the snapshot is reproducible (R-SYS-2)"
    ]
    assert not (project / "snaps").exists()  # bad input: nothing written, not even the others


def test_clock_independent_fixture_without_now_is_accepted(project):
    path = project / "fx" / "truncation.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace('now: "2026-03-14T09:30:00Z"\n', ""), encoding="utf-8")
    ctxkit("snapshot", "fx/truncation.yaml", "--snapshots", "snaps", "--update")


@pytest.mark.parametrize("fail_at", ["replace", "fsync"])
@pytest.mark.parametrize("target", ["existing", "new"])
def test_interrupted_write_leaves_no_partial_file(project, monkeypatch, fail_at, target):
    snaps = project / "snaps"
    ctxkit("snapshot", "fx", "--snapshots", "snaps", "--update")
    before = (snaps / "plain_chat.json").read_bytes()
    if target == "existing":
        edit_question(project / "fx" / "plain_chat.yaml")
    else:
        (snaps / "plain_chat.json").unlink()

    def interrupted(*args, **kwargs):
        if fail_at == "replace":
            raise KeyboardInterrupt
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, fail_at, interrupted)
    r = ctxkit("snapshot", "fx", "--snapshots", "snaps", "--update", expect=130 if fail_at == "replace" else 2)
    if fail_at == "replace":  # Ctrl-C
        assert r.err.splitlines()[-1] == "error: interrupted"
    else:
        assert r.err == "error: snaps/plain_chat.json: cannot write: No space left on device\n"
    if target == "existing":  # the old file intact, no temporary file beside it
        assert files(snaps) == ["plain_chat.json", "truncation.json"]
        assert (snaps / "plain_chat.json").read_bytes() == before
    else:  # no half-written new file
        assert files(snaps) == ["truncation.json"]


def test_multiple_providers_and_windows_make_one_snapshot_each(project):
    r = ctxkit(
        "snapshot",
        "fx/plain_chat.yaml",
        "--snapshots",
        "snaps",
        "--update",
        "--provider",
        "openai",
        "--provider",
        "azure",
        "--max-input-tokens",
        "4000",
    )
    assert r.out.splitlines() == [
        "written: snaps/plain_chat.openai.max4000.json (fx/plain_chat.yaml): new",
        "written: snaps/plain_chat.azure.max4000.json (fx/plain_chat.yaml): new",
        "0 passed, 0 failed, 2 written",
    ]
    doc = json.loads((project / "snaps" / "plain_chat.azure.max4000.json").read_text("utf-8"))
    assert doc["budget"]["max_input_tokens"] == 4000
    r = ctxkit("snapshot", "fx/plain_chat.yaml", "--snapshots", "snaps", "--provider", "azure", expect=1)
    assert "missing: snaps/plain_chat.azure.json" in r.out


def test_snapshot_takes_model_leaf_tokenizer_now_like_every_assembling_command(project):
    """Issue 11.19: the shared overrides apply to every snapshot of the run (and are not in its name)."""
    r = ctxkit(
        "snapshot", "fx/plain_chat.yaml", "--snapshots", "snaps", "--update",
        "--model", "gpt-4.1", "--leaf", "1", "--tokenizer", "approx", "--now", "2026-01-02T03:04:05Z",
    )  # fmt: skip
    assert r.out.splitlines()[0] == "written: snaps/plain_chat.json (fx/plain_chat.yaml): new"
    doc = json.loads((project / "snaps" / "plain_chat.json").read_text(encoding="utf-8"))
    assert doc["payload"]["model"] == "gpt-4.1"
    assert doc["budget"]["tokenizer"] == "approx"
    assert doc["budget"]["max_input_tokens"] == 1_000_000  # gpt-4.1's window: genai-prices' context_window
    assert doc["payload"]["messages"][-1] == {"role": "user", "content": "What is a context window?"}  # leaf 1
    assert "January 2, 2026" in doc["payload"]["messages"][0]["content"]
    r = ctxkit("snapshot", "fx/plain_chat.yaml", "--snapshots", "snaps", "--leaf", "nope", expect=2)
    assert r.err == "error: fx/plain_chat.yaml: --leaf 'nope': no such message\n"
    r = ctxkit("snapshot", "fx/plain_chat.yaml", "--snapshots", "snaps", "--tokenizer", "gpt2", expect=2)
    assert r.err.startswith("error: Invalid value for '--tokenizer': 'gpt2' is not one of")


def test_snapshot_warns_when_the_provider_would_send_another_providers_model(project):
    """Issue 11.19: `--provider anthropic` on a gpt-4o-mini fixture says the payload names an OpenAI model."""
    r = ctxkit("snapshot", "fx/plain_chat.yaml", "--snapshots", "snaps", "--update", "--provider", "anthropic")
    assert r.err == (
        "warning: fx/plain_chat.yaml: model 'gpt-4o-mini' belongs to openai, but the request is built for "
        "anthropic: the payload names it anyway (pass --model to name a model anthropic serves)\n"
    )
    r = ctxkit(
        "snapshot", "fx/plain_chat.yaml", "--snapshots", "snaps", "--update", "--provider", "anthropic",
        "--model", "claude-sonnet-4-5",
    )  # fmt: skip
    assert r.err == ""


def test_snapshot_name_follows_the_fixture_and_option_set():
    assert names.snapshot_name("fixtures/plain_chat.yaml") == "plain_chat.json"
    assert names.snapshot_name("plain_chat.yaml", "anthropic") == "plain_chat.anthropic.json"
    assert names.snapshot_name("a/b.yml", "azure", 8000) == "b.azure.max8000.json"
    assert names.snapshot_name("b.json", None, 8000) == "b.max8000.json"


def test_folders_expand_to_every_fixture_sorted_skipping_snapshot_folders(project):
    fx = project / "fx"
    doc = yaml.safe_load((fx / "plain_chat.yaml").read_text(encoding="utf-8"))
    (fx / "deeper").mkdir()
    (fx / "deeper" / "as_json.json").write_text(json.dumps(doc), encoding="utf-8")
    shutil.copy(fx / "truncation.yaml", fx / "deeper" / "short.yml")
    (fx / ".hidden").mkdir()
    (fx / ".hidden" / "x.yaml").write_text("not: a fixture\n", encoding="utf-8")
    r = ctxkit("snapshot", "fx", "--snapshots", "fx/__snapshots__", "--update")
    assert [line.split()[1] for line in r.out.splitlines()[:-1]] == [
        "fx/__snapshots__/deeper/as_json.json",  # the snapshots mirror the fixtures' folders
        "fx/__snapshots__/deeper/short.json",
        "fx/__snapshots__/plain_chat.json",
        "fx/__snapshots__/truncation.json",
    ]
    # the snapshots inside the fixture folder are not taken for fixtures
    assert ctxkit("snapshot", "fx", "--snapshots", "fx/__snapshots__").out == "4 passed, 0 failed\n"
    assert names.expand(["fx", "fx/plain_chat.yaml"], exclude=[Path("fx/__snapshots__")]) == [
        "fx/deeper/as_json.json",
        "fx/deeper/short.yml",
        "fx/plain_chat.yaml",
        "fx/truncation.yaml",
    ]


def test_same_stem_in_different_folders_gets_its_own_snapshot(project):
    """Issue 19 item 4: `fixtures/summary.yaml` and `fixtures/replay/summary.yaml` both wanted
    `summary.json`; the snapshots folder now mirrors the fixtures folder."""
    (project / "fx" / "other").mkdir()
    shutil.copy(project / "fx" / "truncation.yaml", project / "fx" / "other" / "plain_chat.yaml")
    r = ctxkit("snapshot", "fx", "--snapshots", "snaps", "--update")
    assert r.out.splitlines()[:2] == [
        "written: snaps/other/plain_chat.json (fx/other/plain_chat.yaml): new",
        "written: snaps/plain_chat.json (fx/plain_chat.yaml): new",
    ]
    other = json.loads((project / "snaps" / "other" / "plain_chat.json").read_text(encoding="utf-8"))
    assert other == json.loads(core.snapshot_text(load_fixture("fx/truncation.yaml"), Options())[0])
    assert ctxkit("snapshot", "fx", "--snapshots", "snaps", "--prune").out == "3 passed, 0 failed\n"


def test_two_fixtures_with_one_snapshot_name_are_bad_input(project):
    (project / "a").mkdir()
    shutil.copy(project / "fx" / "plain_chat.yaml", project / "a" / "plain_chat.yaml")
    r = ctxkit("snapshot", "fx", "a", "--snapshots", "snaps", "--update", expect=2)
    assert r.err == (
        "error: a/plain_chat.yaml: produces the same snapshot name "
        "'plain_chat.json' as fx/plain_chat.yaml; rename one of them\n"
    )
    assert not (project / "snaps").exists()


@pytest.mark.parametrize("snapshots", ["fx", ".", "fx/.."])
def test_snapshots_folder_equal_to_or_above_the_fixtures_is_bad_input(project, snapshots):
    r = ctxkit("snapshot", "fx", "--snapshots", snapshots, "--update", expect=2)
    assert r.err == (
        f"error: --snapshots {snapshots}: is the fixtures folder 'fx' or contains it; keep the snapshots "
        "in a folder of their own (for example fx/__snapshots__)\n"
    )


def test_bad_paths_and_usage_exit_2(project):
    r = ctxkit("snapshot", "nowhere", "fx/nope.yaml", "--snapshots", "snaps", expect=2)
    assert r.err == "error: nowhere: no such file or folder\nerror: fx/nope.yaml: no such file or folder\n"
    ctxkit("snapshot", "fx", expect=2)  # --snapshots is required
    (project / "empty").mkdir()
    r = ctxkit("snapshot", "empty", "--snapshots", "snaps", expect=2)
    assert r.err == "error: empty: no fixture files (*.yaml, *.yml, *.json) in this folder\n"
    r = ctxkit("snapshot", "-", "--snapshots", "snaps", stdin="ctxkit: 1\n", expect=2)
    assert "stdin cannot be snapshotted" in r.err
    (project / "fx" / "broken.yaml").write_text("ctxkit: 1\nmodel: [\n", encoding="utf-8")
    r = ctxkit("snapshot", "fx", "--snapshots", "snaps", "--update", expect=2)
    assert r.err.startswith("error: fx/broken.yaml:")
    assert not (project / "snaps").exists()


def test_help_lists_the_options():
    out = ctxkit("snapshot", "--help").out
    for option in ("--snapshots", "--update", "--prune", "--provider", "--max-input-tokens"):
        assert option in out


def test_snapshot_core_never_imports_click():
    code = "import sys, ctxkit.snapshots.store; print('click' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    ).stdout
    assert out.strip() == "False"


def test_logs_of_recorded_traffic_in_a_fixtures_folder_are_not_fixtures(project):
    """The gallery keeps logs in `fixtures/logs/`: a folder of fixtures may hold logs, which
    `ctxkit replay` reads as logs; they are left out, and JSON fixtures stay in."""
    logs = project / "fx" / "logs"
    logs.mkdir()
    shutil.copy(FIXTURES / "logs" / "bodies.json", logs / "bodies.json")
    shutil.copy(FIXTURES / "logs" / "cassette.yaml", logs / "cassette.yaml")
    doc = yaml.safe_load((project / "fx" / "plain_chat.yaml").read_text(encoding="utf-8"))
    (logs / "as_json.json").write_text(json.dumps(doc, indent=2), encoding="utf-8")
    assert names.expand(["fx"]) == ["fx/logs/as_json.json", "fx/plain_chat.yaml", "fx/truncation.yaml"]
    assert names.expand(["fx/logs/bodies.json"]) == ["fx/logs/bodies.json"]  # named: checked (and refused)
