"""pytest plugin (entry point `pytest11: ctxkit`): golden snapshots of ctxkit fixtures.

Input: fixtures named by tests through the `ctxkit_snapshot` fixture, or every
fixture file under `--ctxkit-fixtures DIR` (one test item each, `fixture_items.py`).
Output: syrupy comparisons of `{"payload", "budget"}` as readable JSON files
(`syrupy_extensions.py`), a unified diff on mismatch (`comparing.py`); `pytest
--snapshot-update` accepts changes, syrupy reports unused ones.

pytest loads this module in every run, so it imports nothing heavy: the pipeline,
syrupy (an optional dependency) and `ctxkit.snapshots.store` load on first use.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxkit.errors import InputError
from ctxkit.snapshots.comparing import MISMATCHES, assembled, compare, note
from ctxkit.snapshots.fixture_items import fixture_items

INSTALL_HINT = "install the pytest extra, pip install 'ctxkit-cli[pytest]'"
_SNAPSHOT_DIR = pytest.StashKey[Path | None]()
_FIXTURE_DIRS = pytest.StashKey[tuple[Path, ...]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ctxkit", "ctxkit golden snapshots")
    group.addoption(
        "--ctxkit-fixtures",
        action="append",
        default=[],
        metavar="DIR",
        help="Collect every ctxkit fixture file under DIR as a snapshot test.",
    )
    group.addoption(
        "--ctxkit-snapshots",
        default=None,
        metavar="DIR",
        help="Where those snapshots live (default: DIR/__snapshots__).",
    )
    group.addoption(
        "--ctxkit-replay",
        action="store_true",
        help="Also pin each fixture's replay summary (x.replay.json, as `ctxkit snapshot --replay`).",
    )


def pytest_configure(config: pytest.Config) -> None:
    given = config.getoption("ctxkit_fixtures") or []
    if not given:
        return
    if not config.pluginmanager.hasplugin("syrupy"):
        raise pytest.UsageError(f"--ctxkit-fixtures needs syrupy: {INSTALL_HINT}")
    _check_syrupy_version()
    from ctxkit.snapshots.names import fixtures_under

    base = config.invocation_params.dir
    dirs = tuple((base / d).resolve() for d in given)
    for d, text in zip(dirs, given, strict=True):
        if not d.is_dir():
            raise pytest.UsageError(f"--ctxkit-fixtures {text}: no such folder")
        if not fixtures_under(d):
            raise pytest.UsageError(f"--ctxkit-fixtures {text}: no fixture files in this folder")
    config.stash[_FIXTURE_DIRS] = dirs
    snapshots = config.getoption("ctxkit_snapshots")
    config.stash[_SNAPSHOT_DIR] = (base / snapshots).resolve() if snapshots else None
    if snapshots:  # not a fixtures folder nor above one: it would hide the fixtures
        from ctxkit.snapshots.names import check_folders

        try:
            check_folders(snapshots, (base / snapshots).resolve(), zip(dirs, given, strict=True), "--ctxkit-snapshots")
        except InputError as exc:
            raise pytest.UsageError(str(exc)) from None


@pytest.hookimpl(tryfirst=True)  # before -k/-m deselection and syrupy's own bookkeeping
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    dirs = config.stash.get(_FIXTURE_DIRS, ())
    if not dirs:
        return
    from ctxkit.snapshots.names import SNAPSHOTS_DIRNAME

    snapshots = config.stash.get(_SNAPSHOT_DIR, None)
    stores = [snapshots or root / SNAPSHOTS_DIRNAME for root in dirs]
    owners: dict[Path, Path] = {}  # snapshot file → the fixture that claimed it first
    for root, store in zip(dirs, stores, strict=True):
        items.extend(fixture_items(session, root, store, owners))
    if config.option.file_or_dir:
        # Paths were given: tell syrupy the snapshot folders were selected too, so it
        # reports (and with --snapshot-update deletes) snapshots of deleted fixtures.
        config.option.file_or_dir = [*config.option.file_or_dir, *map(str, stores)]


SYRUPY_TESTED = ((7, 0), (8, 0))  # the syrupy versions this plugin was tested with: [low, high)


def syrupy_supported(version: str) -> bool:
    parts = tuple(int(p) for p in version.split(".")[:2] if p.isdigit())
    return SYRUPY_TESTED[0] <= parts < SYRUPY_TESTED[1]


def _check_syrupy_version() -> None:
    from importlib.metadata import version

    found = version("syrupy")
    if not syrupy_supported(found):
        low, high = (".".join(map(str, v)) for v in SYRUPY_TESTED)
        raise pytest.UsageError(
            f"--ctxkit-fixtures was tested with syrupy >={low},<{high}, not {found}: {INSTALL_HINT}"
        )


def _syrupy_snapshot(request: pytest.FixtureRequest, what: str) -> Any:
    """syrupy's `snapshot` fixture, or a failure naming the extra that brings syrupy."""
    if not request.config.pluginmanager.hasplugin("syrupy"):
        pytest.fail(f"{what} needs syrupy: {INSTALL_HINT}", pytrace=False)
    return request.getfixturevalue("snapshot")


@pytest.fixture
def ctxkit_snapshot(request: pytest.FixtureRequest) -> Callable[..., None]:
    """`ctxkit_snapshot("fixtures/a.yaml", provider="anthropic")`: assemble and compare.

    Relative paths resolve from pytest's rootdir. One snapshot per fixture and
    option set, named `<test>[<stem>.<provider>.max<N>].json` under syrupy's
    `__snapshots__/<test module>/`. Options are checked as the command line
    checks them. A mismatch does not stop the test: every call is compared, and
    the test fails at its end with every difference.
    """
    snapshot = _syrupy_snapshot(request, "the ctxkit_snapshot fixture")
    from ctxkit.snapshots.syrupy_extensions import PayloadSnapshotExtension  # syrupy is there: load it

    assertion = snapshot.use_extension(PayloadSnapshotExtension)
    root = request.config.rootpath

    def check(
        fixture: str | Path, *, provider: str | None = None, max_input_tokens: int | None = None, replay: bool = False
    ) -> None:
        from ctxkit.loading.config import python_options
        from ctxkit.snapshots.names import SNAPSHOT_SUFFIX, snapshot_name

        label = _label(fixture, provider=provider, max_input_tokens=max_input_tokens, replay=replay)
        try:
            options = python_options(provider=provider, max_input_tokens=max_input_tokens)
            path = Path(fixture) if Path(fixture).is_absolute() else root / fixture
            text = assembled(path, options, replay=replay)
        except InputError as exc:
            note(request.node, f"{label}: not compared: " + "\n".join(exc.lines()))
            return
        name = snapshot_name(path, options.provider, options.max_input_tokens, replay=replay)
        name = name.removesuffix(SNAPSHOT_SUFFIX)
        compare(request.node, assertion(name=name), text, label)

    return check


def _label(fixture: str | Path, *, provider: str | None, max_input_tokens: int | None, replay: bool) -> str:
    """A `ctxkit_snapshot` call as its messages name it: the fixture and the options given."""
    given = (("provider", provider), ("max_input_tokens", max_input_tokens), ("replay", True if replay else None))
    return f"{fixture}" + "".join(f" {k}={v!r}" for k, v in given if v is not None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Fail a test after its body when any of its ctxkit snapshots differed (all of them listed)."""
    try:
        result = yield
    except BaseException:
        if mismatches := item.stash.get(MISMATCHES, None):
            item.add_report_section("call", "ctxkit snapshots", "\n\n".join(mismatches))
        raise
    if mismatches := item.stash.get(MISMATCHES, None):
        pytest.fail("\n\n".join(mismatches), pytrace=False)
    return result
