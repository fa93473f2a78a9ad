"""The pytest plugin (docs/rules.md#golden-snapshots): `ctxkit_snapshot` and `--ctxkit-fixtures`.

Each test builds a small user project with pytester and runs pytest on it in
process (syrupy's session global is restored afterwards).
"""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import subprocess
import sys

import pytest

from .conftest import FIXTURES, ctxkit

pytest_plugins = ["pytester"]

UNRELATED_PLUGINS = ("hypothesispytest", "anyio", "langsmith_plugin")  # slow to re-import
QUESTION = "And why does it matter for long chats?"
TEST_FILE = """\
def test_plain(ctxkit_snapshot):
    ctxkit_snapshot("fixtures/plain_chat.yaml")
    ctxkit_snapshot("fixtures/plain_chat.yaml", provider="azure", max_input_tokens=4000)
"""


@pytest.fixture(scope="module", autouse=True)
def _warm_imports():
    """Import the pipeline here first: the in-process runs drop modules they import, and a
    re-imported PyYAML no longer matches its C loader."""
    from ctxkit.loading.config import Options
    from ctxkit.loading.read import load_fixture
    from ctxkit.snapshots.store import snapshot_text

    for name, options in (
        ("plain_chat", Options()),
        ("plain_chat", Options(provider="azure")),
        ("budget_exhaustion", Options()),
    ):
        snapshot_text(load_fixture(str(FIXTURES / f"{name}.yaml")), options)


@pytest.fixture
def project(pytester, monkeypatch):
    import syrupy

    monkeypatch.setattr(syrupy, "_syrupy", syrupy._syrupy)  # the inner runs replace it
    fixtures = pytester.path / "fixtures"
    fixtures.mkdir()
    for name in ("plain_chat.yaml", "truncation.yaml", "budget_exhaustion.yaml"):
        shutil.copy(FIXTURES / name, fixtures / name)
    pytester.makepyfile(test_golden=TEST_FILE)
    pytester.makeini("[pytest]\n")  # the project's own rootdir
    return pytester


def run(pytester, *args):
    """pytest in process, as a user project with only ctxkit and syrupy would run it.

    (The rewrite warning only happens in process: ctxkit is imported before the inner run.)
    """
    others = [arg for name in UNRELATED_PLUGINS for arg in ("-p", f"no:{name}")]
    return pytester.runpytest(
        "-p", "no:cacheprovider", *others, "-W", "ignore::pytest.PytestAssertRewriteWarning", *args
    )


def edit_question(pytester, new="And why?"):
    path = pytester.path / "fixtures" / "plain_chat.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace(QUESTION, new), encoding="utf-8")


def test_plugin_is_registered_through_the_entry_point():
    points = importlib.metadata.entry_points(group="pytest11")
    assert any(p.name == "ctxkit" and p.value == "ctxkit.snapshots.pytest_plugin" for p in points)


def test_plugin_imports_nothing_heavy():
    code = (
        "import sys, ctxkit.snapshots.pytest_plugin\n"
        "heavy = ('ctxkit.pipeline', 'ctxkit.loading.read', 'ctxkit.snapshots.store', 'tiktoken', 'yaml',"
        " 'jsonschema', 'click', 'syrupy')\n"
        "print([m for m in heavy if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_syrupy_extensions_are_defined_as_written_and_importable_by_name():
    """The extension classes are module-level classes of their own module (no longer built into
    the plugin's globals on first use); syrupy imports them back by `module.qualname` to
    report unused snapshots."""
    import ast
    import inspect

    from syrupy.utils import import_module_member

    from ctxkit.snapshots import syrupy_extensions

    written = {n.name for n in ast.parse(inspect.getsource(syrupy_extensions)).body if isinstance(n, ast.ClassDef)}
    for cls in (syrupy_extensions.PayloadSnapshotExtension, syrupy_extensions.FixtureSnapshotExtension):
        assert cls.__name__ in written
        assert import_module_member(f"{cls.__module__}.{cls.__qualname__}") is cls


def test_ctxkit_snapshot_writes_readable_json_then_passes(project):
    result = run(project, "--snapshot-update")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*2 snapshots generated.*"])
    folder = project.path / "__snapshots__" / "test_golden"
    assert sorted(p.name for p in folder.iterdir()) == [
        "test_plain[plain_chat.azure.max4000].json",
        "test_plain[plain_chat].json",
    ]
    text = (folder / "test_plain[plain_chat].json").read_text(encoding="utf-8")
    doc = json.loads(text)
    assert list(doc) == ["ctxkit_snapshot", "payload", "budget"]
    assert list(doc["payload"]["messages"][0])[:2] == ["role", "content"]  # payload order kept
    azure = json.loads((folder / "test_plain[plain_chat.azure.max4000].json").read_text("utf-8"))
    assert azure["budget"]["max_input_tokens"] == 4000
    result = run(project)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*2 snapshots passed.*"])


def test_missing_snapshot_fails_and_says_how_to_write_it(project):
    result = run(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "no ctxkit snapshot __snapshots__/test_golden/test_plain[[]plain_chat[]].json for "
            "fixtures/plain_chat.yaml: run pytest --snapshot-update to write it"
        ]
    )


def test_mismatch_fails_with_a_unified_diff_and_update_accepts_it(project):
    run(project, "--snapshot-update").assert_outcomes(passed=1)
    edit_question(project)
    result = run(project)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert (
        "ctxkit snapshot __snapshots__/test_golden/test_plain[plain_chat].json differs for "
        "fixtures/plain_chat.yaml (pytest --snapshot-update accepts it):" in out
    )
    assert "--- __snapshots__/test_golden/test_plain[plain_chat].json (stored)" in out
    assert f'-        "content": "{QUESTION}"' in out.splitlines()
    assert '+        "content": "And why?"' in out.splitlines()
    assert "Traceback" not in out and "\x1b[" not in out

    result = run(project, "--snapshot-update")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*2 snapshots updated.*"])
    run(project).assert_outcomes(passed=1)


def test_bad_input_fails_the_test_with_one_line(project):
    project.makepyfile(
        test_golden="""\
def test_missing(ctxkit_snapshot):
    ctxkit_snapshot("fixtures/nope.yaml")
"""
    )
    result = run(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["fixtures/nope.yaml: *"])
    assert "Traceback" not in result.stdout.str()


def test_ctxkit_snapshot_checks_its_options_with_the_command_lines_rules(project):
    """Issue 11.9: the values the command line refuses are refused, with its messages; none is pinned."""
    project.makepyfile(
        test_golden="""\
import pytest

@pytest.mark.parametrize("kw", [
    {"max_input_tokens": 0}, {"max_input_tokens": -5}, {"max_input_tokens": 1.5},
    {"max_input_tokens": True}, {"provider": "openia"},
])
def test_bad(ctxkit_snapshot, kw):
    ctxkit_snapshot("fixtures/plain_chat.yaml", **kw)

def test_text_window_as_typed(ctxkit_snapshot):
    ctxkit_snapshot("fixtures/plain_chat.yaml", max_input_tokens="4000")
"""
    )
    result = run(project, "--snapshot-update")
    result.assert_outcomes(failed=5, passed=1)
    bad = "fixtures/plain_chat.yaml {}: not compared: Invalid value for {}"
    result.stdout.fnmatch_lines_random(
        [
            bad.format("max_input_tokens=0", "'--max-input-tokens': 0 is not in the range x>=1."),
            bad.format("max_input_tokens=-5", "'--max-input-tokens': -5 is not in the range x>=1."),
            bad.format("max_input_tokens=1.5", "'--max-input-tokens': '1.5' is not a valid integer range."),
            bad.format("max_input_tokens=True", "'--max-input-tokens': 'True' is not a valid integer range."),
            bad.format("provider='openia'", "'--provider': 'openia' is not one of 'openai', 'azure', *"),
        ]
    )
    assert "Traceback" not in result.stdout.str()
    written = sorted(p.name for p in (project.path / "__snapshots__" / "test_golden").iterdir())
    assert written == ["test_text_window_as_typed[plain_chat.max4000].json"]  # "4000" as the command line takes it


def test_after_a_mismatch_the_other_snapshots_are_still_compared(project):
    """Issue 11.20: the first difference no longer stops the test, so syrupy never calls the rest unused."""
    project.makepyfile(
        test_golden="""\
def test_plain(ctxkit_snapshot):
    ctxkit_snapshot("fixtures/plain_chat.yaml")
    ctxkit_snapshot("fixtures/truncation.yaml")
    ctxkit_snapshot("fixtures/plain_chat.yaml", provider="anthropic")
"""
    )
    run(project, "--snapshot-update").assert_outcomes(passed=1)
    edit_question(project)
    result = run(project)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "unused" not in out
    result.stdout.fnmatch_lines(["*2 snapshots failed. 1 snapshot passed.*"])
    assert "test_plain[plain_chat].json differs for fixtures/plain_chat.yaml " in out
    assert "test_plain[plain_chat.anthropic].json differs for fixtures/plain_chat.yaml provider='anthropic' " in out


def test_a_plain_assertion_failure_still_shows_the_snapshot_differences(project):
    project.makepyfile(
        test_golden="""\
def test_plain(ctxkit_snapshot):
    ctxkit_snapshot("fixtures/plain_chat.yaml")
    assert 1 == 2
"""
    )
    run(project, "--snapshot-update").assert_outcomes(failed=1)
    edit_question(project)
    result = run(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*assert 1 == 2*", "*- Captured ctxkit snapshots call -*", "ctxkit snapshot *differs*"]
    )


def test_without_syrupy_the_error_names_the_pytest_extra(project):
    """Issue 11.20 / 12.9: not pytest's "fixture 'snapshot' not found", but which extra to install."""
    result = run(project, "-p", "no:syrupy")
    result.assert_outcomes(errors=1)  # at the fixture's set-up
    out = result.stdout.str()
    assert "the ctxkit_snapshot fixture needs syrupy: install the pytest extra, pip install 'ctxkit-cli[pytest]'" in out
    assert "fixture 'snapshot' not found" not in out
    result = run(project, "-p", "no:syrupy", "--ctxkit-fixtures", "fixtures")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--ctxkit-fixtures needs syrupy: install the pytest extra*"])


def test_syrupy_range_is_pinned_and_its_bounds_checked():
    """Issue 12.9: the plugin uses syrupy's session (no public accessor), so the tested range is pinned."""
    import tomllib

    from ctxkit.snapshots import pytest_plugin as plugin

    pyproject = tomllib.loads((FIXTURES.parent / "pyproject.toml").read_text(encoding="utf-8"))
    (low, high) = (".".join(map(str, v)) for v in plugin.SYRUPY_TESTED)
    assert f"syrupy>={low},<{high}" in pyproject["project"]["optional-dependencies"]["pytest"]
    assert plugin.syrupy_supported(importlib.metadata.version("syrupy"))  # what the tests ran with
    assert plugin.syrupy_supported(low + ".0") and not plugin.syrupy_supported(high + ".0")
    below = f"{plugin.SYRUPY_TESTED[0][0]}.{plugin.SYRUPY_TESTED[0][1] - 1}" if plugin.SYRUPY_TESTED[0][1] else "6.99"
    assert not plugin.syrupy_supported(below)


def test_ctxkit_fixtures_collects_one_item_per_fixture(project):
    result = run(project, "--ctxkit-fixtures", "fixtures", "--collect-only", "-q")
    result.stdout.fnmatch_lines(
        [
            "test_golden.py::test_plain",
            "fixtures/budget_exhaustion.yaml::budget_exhaustion",
            "fixtures/plain_chat.yaml::plain_chat",
            "fixtures/truncation.yaml::truncation",
        ]
    )
    result = run(project, "--ctxkit-fixtures", "fixtures", "-k", "fixtures")
    result.assert_outcomes(failed=3, deselected=1)
    result.stdout.fnmatch_lines(["no ctxkit snapshot fixtures/__snapshots__/plain_chat.json *"])


def test_ctxkit_fixtures_share_the_ctxkit_snapshot_files(project, monkeypatch):
    run(project, "--ctxkit-fixtures", "fixtures", "--snapshot-update").assert_outcomes(passed=4)
    store = project.path / "fixtures" / "__snapshots__"
    assert sorted(p.name for p in store.iterdir()) == ["budget_exhaustion.json", "plain_chat.json", "truncation.json"]
    error = json.loads((store / "budget_exhaustion.json").read_text(encoding="utf-8"))
    assert list(error) == ["ctxkit_snapshot", "error"] and "(R-ASM-3)" in error["error"]
    result = run(project, "--ctxkit-fixtures", "fixtures")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*5 snapshots passed.*"])
    # the same files pass `ctxkit snapshot`, and the other way round
    monkeypatch.chdir(project.path)
    assert ctxkit("snapshot", "fixtures", "--snapshots", "fixtures/__snapshots__").out == "3 passed, 0 failed\n"
    edit_question(project)
    result = run(project, "--ctxkit-fixtures", "fixtures", "-k", "fixtures")
    result.assert_outcomes(passed=2, failed=1, deselected=1)
    result.stdout.fnmatch_lines(
        ["*ctxkit snapshot fixtures/__snapshots__/plain_chat.json differs*", '*+        "content": "And why?"']
    )


def test_ctxkit_fixtures_report_then_delete_unused_snapshots(project):
    run(project, "--ctxkit-fixtures", "fixtures", "--snapshot-update").assert_outcomes(passed=4)
    store = project.path / "fixtures" / "__snapshots__"
    (store / "notes.json").write_text('{"mine": true}\n', encoding="utf-8")  # not a snapshot
    (project.path / "fixtures" / "truncation.yaml").unlink()
    for args in ((), ("test_golden.py",)):  # with and without explicit paths
        result = run(project, "--ctxkit-fixtures", "fixtures", *args)
        result.assert_outcomes(passed=3)
        assert result.ret != 0
        result.stdout.fnmatch_lines(["*1 snapshot unused.*", "Re-run pytest with --snapshot-update to delete *"])
    result = run(project, "--ctxkit-fixtures", "fixtures", "--snapshot-update")
    result.stdout.fnmatch_lines(
        ["*1 unused snapshot deleted.*", "Deleted truncation (fixtures/__snapshots__/truncation.json)"]
    )
    assert sorted(p.name for p in store.iterdir()) == ["budget_exhaustion.json", "notes.json", "plain_chat.json"]
    assert run(project, "--ctxkit-fixtures", "fixtures").ret == 0


def test_snapshot_update_never_overwrites_a_file_ctxkit_did_not_write(project):
    """Issue 11.1 for the plugin: a user's file where a snapshot would go is left alone and named."""
    store = project.path / "fixtures" / "__snapshots__"
    store.mkdir()
    (store / "plain_chat.json").write_text('{"mine": 1}\n', encoding="utf-8")
    result = run(project, "--ctxkit-fixtures", "fixtures", "--snapshot-update", "-k", "fixtures and plain")
    result.assert_outcomes(failed=1, deselected=3)
    result.stdout.fnmatch_lines(
        [
            "ctxkit snapshot fixtures/__snapshots__/plain_chat.json for fixtures/plain_chat.yaml: not compared: "
            "exists and is not a ctxkit snapshot (no 'ctxkit_snapshot' marker): refusing to overwrite it*"
        ]
    )
    assert (store / "plain_chat.json").read_text(encoding="utf-8") == '{"mine": 1}\n'


def test_ctxkit_snapshots_option_moves_the_store(project):
    args = ("--ctxkit-fixtures", "fixtures", "--ctxkit-snapshots", "golden", "-k", "fixtures")
    run(project, *args, "--snapshot-update").assert_outcomes(passed=3, deselected=1)
    assert sorted(p.name for p in (project.path / "golden").iterdir()) == [
        "budget_exhaustion.json",
        "plain_chat.json",
        "truncation.json",
    ]
    assert not (project.path / "fixtures" / "__snapshots__").exists()
    run(project, *args).assert_outcomes(passed=3, deselected=1)


def test_r_sys_2_clock_dependent_fixture_item_fails(project):
    path = project.path / "fixtures" / "plain_chat.yaml"
    path.write_text(
        "".join(line for line in path.read_text("utf-8").splitlines(True) if not line.startswith("now:")),
        encoding="utf-8",
    )
    result = run(project, "--ctxkit-fixtures", "fixtures", "--snapshot-update", "-k", "fixtures and plain")
    result.assert_outcomes(failed=1, deselected=3)
    result.stdout.fnmatch_lines(["fixtures/plain_chat.yaml:/now: the output depends on the clock*"])
    assert not (project.path / "fixtures" / "__snapshots__" / "plain_chat.json").exists()


def test_ctxkit_fixtures_usage_errors(project):
    result = run(project, "--ctxkit-fixtures", "nowhere")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--ctxkit-fixtures nowhere: no such folder*"])
    (project.path / "empty").mkdir()
    result = run(project, "--ctxkit-fixtures", "empty")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--ctxkit-fixtures empty: no fixture files in this folder*"])
    # snapshots are not fixtures: the same files `ctxkit snapshot` would expand decide it
    (project.path / "only_snapshots" / "__snapshots__").mkdir(parents=True)
    (project.path / "only_snapshots" / "__snapshots__" / "plain_chat.json").write_text("{}\n")
    result = run(project, "--ctxkit-fixtures", "only_snapshots")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--ctxkit-fixtures only_snapshots: no fixture files in this folder*"])
    result = run(project, "--help")
    result.stdout.fnmatch_lines(["*--ctxkit-fixtures=DIR*", "*--ctxkit-snapshots=DIR*"])


def test_snapshot_update_keeps_the_commands_option_variants(project, monkeypatch):
    """Issue 19 item 4: `pytest --ctxkit-fixtures fixtures --snapshot-update` deleted the
    `ctxkit snapshot --provider …` variants stored beside its own snapshots."""
    monkeypatch.chdir(project.path)
    store = project.path / "fixtures" / "__snapshots__"
    args = ("--snapshots", "fixtures/__snapshots__", "--update")
    ctxkit("snapshot", "fixtures", *args, "--provider", "anthropic", "--provider", "gemini")
    ctxkit("snapshot", "fixtures", *args, "--max-input-tokens", "8000")
    variants = sorted(p.name for p in store.iterdir())
    assert len(variants) == 9
    result = run(project, "--ctxkit-fixtures", "fixtures", "--snapshot-update")
    result.assert_outcomes(passed=4)
    assert "deleted" not in result.stdout.str().lower()
    assert sorted(p.name for p in store.iterdir()) == sorted(
        [*variants, "budget_exhaustion.json", "plain_chat.json", "truncation.json"]
    )
    assert ctxkit("snapshot", "fixtures", "--snapshots", "fixtures/__snapshots__", "--provider", "gemini").code == 0


def test_same_stem_in_nested_fixture_folders_does_not_collide(project, monkeypatch):
    """Issue 19 item 4: `fixtures/summary.yaml` and `fixtures/replay/summary.yaml` shared one
    snapshot; both tools now mirror the folders (`__snapshots__/replay/…`) and agree."""
    nested = project.path / "fixtures" / "replay"
    nested.mkdir()
    shutil.copy(FIXTURES / "replay" / "summary.yaml", nested / "plain_chat.yaml")
    run(project, "--ctxkit-fixtures", "fixtures", "--snapshot-update").assert_outcomes(passed=5)
    store = project.path / "fixtures" / "__snapshots__"
    assert (store / "replay" / "plain_chat.json").is_file() and (store / "plain_chat.json").is_file()
    monkeypatch.chdir(project.path)
    assert ctxkit("snapshot", "fixtures", "--snapshots", "fixtures/__snapshots__").out == "4 passed, 0 failed\n"
    (nested / "plain_chat.yaml").unlink()
    result = run(project, "--ctxkit-fixtures", "fixtures", "--snapshot-update")
    result.stdout.fnmatch_lines(["Deleted plain_chat (fixtures/__snapshots__/replay/plain_chat.json)"])
    assert (store / "plain_chat.json").is_file()


@pytest.mark.parametrize("snapshots", ["fixtures", "."])
def test_ctxkit_snapshots_at_or_above_the_fixtures_is_a_usage_error(project, snapshots):
    """Issue 19 item 4: it was an INTERNALERROR with a traceback."""
    result = run(project, "--ctxkit-fixtures", "fixtures", "--ctxkit-snapshots", snapshots)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"*--ctxkit-snapshots {snapshots}: is the fixtures folder * or contains it; keep the snapshots in a folder*"]
    )
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_the_gallery_can_be_snapshotted_as_a_folder(tmp_path):
    """Issue 19 item 4: every gallery fixture, nested ones included, gets a snapshot of its own;
    the logs of recorded traffic in `fixtures/logs/` are not fixtures and are left out."""
    store = tmp_path / "snaps"
    run_ = ctxkit("snapshot", str(FIXTURES), "--snapshots", str(store), "--update")
    written = sorted(p.relative_to(store).as_posix() for p in store.rglob("*.json"))
    expected = sorted(
        p.relative_to(FIXTURES).with_suffix(".json").as_posix()
        for p in FIXTURES.rglob("*.yaml")
        if p.parent.name != "logs"
    )
    assert written == expected and len(written) > 40
    assert run_.out.endswith(f"0 passed, 0 failed, {len(expected)} written\n")


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("provider", "openia"),
        ("provider", "anthropic"),
        ("provider", 5),
        ("max_input_tokens", 0),
        ("max_input_tokens", -5),
        ("max_input_tokens", 1.5),
        ("max_input_tokens", True),
        ("max_input_tokens", "4000"),
        ("max_input_tokens", " 12 "),
        ("max_input_tokens", "x"),
        ("max_input_tokens", 7),
    ],
)
def test_plugin_options_are_checked_without_click_as_click_checks_them(option, value):
    """Issue 22 item 4: the plugin no longer imports click, yet accepts and refuses each value
    as the command line does, with click's own message."""
    import click

    from ctxkit.cli.options import PROVIDER_TYPE, WINDOW_TYPE
    from ctxkit.errors import InputError
    from ctxkit.loading.config import python_options

    flag, param_type = {
        "provider": ("--provider", PROVIDER_TYPE),
        "max_input_tokens": ("--max-input-tokens", WINDOW_TYPE),
    }[option]
    text = value if isinstance(value, str) else str(value)
    try:
        expected: object = param_type.convert(text, click.Option([flag], type=param_type), None)
    except click.BadParameter as exc:
        expected = exc.format_message()
    try:
        got: object = getattr(python_options(**{option: value}), option)
    except InputError as exc:
        got = "\n".join(exc.lines())
    assert got == expected
