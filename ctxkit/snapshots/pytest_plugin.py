"""pytest plugin (entry point `pytest11: ctxkit`): golden snapshots of ctxkit fixtures.

Input: fixtures named by tests through the `ctxkit_snapshot` fixture, or every
fixture file under `--ctxkit-fixtures DIR` (one test item each). Output: syrupy
comparisons of `{"payload", "budget"}` as readable JSON files, a unified diff on
mismatch; `pytest --snapshot-update` accepts changes, syrupy reports unused ones.

pytest loads this module in every run, so it imports nothing heavy: the
pipeline, syrupy's extension classes and `ctxkit.snapshots.store` load on first use.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxkit.errors import InputError

EXTENSIONS = ("PayloadSnapshotExtension", "FixtureSnapshotExtension")
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
        items.extend(_fixture_items(session, root, store, owners))
    if config.option.file_or_dir:
        # Paths were given: tell syrupy the snapshot folders were selected too, so it
        # reports (and with --snapshot-update deletes) snapshots of deleted fixtures.
        config.option.file_or_dir = [*config.option.file_or_dir, *map(str, stores)]


def _fixture_items(session: pytest.Session, root: Path, store: Path, owners: dict[Path, Path]) -> Iterator[FixtureItem]:
    """One item per fixture under `root`; its snapshot mirrors its place below `root`
    (`fixtures/replay/summary.yaml` → `<store>/replay/summary.json`), as `ctxkit snapshot` names it."""
    from ctxkit.snapshots.names import expand_named, snapshot_name

    pins = (False, True) if session.config.getoption("ctxkit_replay") else (False,)
    for text, key in expand_named([str(root)], exclude=[store]):
        path = Path(text)
        file = FixtureFile.from_parent(session, path=path)
        for replay in pins:  # R-LOG-5: the replay summary is an item of its own
            location = store / snapshot_name(path, key=key, replay=replay)
            clash = owners.setdefault(location, path)
            name = path.stem + (".replay" if replay else "")
            item = FixtureItem.from_parent(
                file, name=name, snapshot_path=location, store=store, clash=None if clash == path else clash
            )
            item.replay = replay
            session.ihook.pytest_collectreport(report=pytest.CollectReport(file.nodeid, "passed", None, [item]))
            yield item


class FixtureFile(pytest.File):
    """A fixture file found under --ctxkit-fixtures; its one item is made directly."""

    def collect(self) -> Iterator[pytest.Item]:
        return iter(())


def _fixture_snapshot() -> None:
    """Stand-in for `item.obj`, which syrupy reads to name the test."""


class FixtureItem(pytest.Item):
    """One fixture compared with `<snapshots>/<path below the folder>.json` (the `ctxkit snapshot` layout).

    Not a test function, so syrupy's `snapshot` fixture (which would also bring
    syrupy's default extension into the snapshots folder, where it claims every
    file it does not know) is not used: the assertion is made on syrupy's session.
    """

    def __init__(self, *, snapshot_path: Path, store: Path, clash: Path | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.snapshot_path = snapshot_path
        self.store = store  # the snapshots folder: discovery looks at all of it
        self.clash = clash
        self.replay = False  # the replay summary (`x.replay.json`) rather than payload + budget
        self.obj = _fixture_snapshot

    def runtest(self) -> None:
        from syrupy.assertion import SnapshotAssertion
        from syrupy.location import PyTestLocation

        from ctxkit.loading.config import python_options

        if self.clash is not None:
            root = self.config.rootpath
            pytest.fail(
                f"{_shown(self.path, root)} and {_shown(self.clash, root)} both need "
                f"the snapshot {self.snapshot_path.name}: rename one",
                pytrace=False,
            )
        opt = self.config.option
        assertion = SnapshotAssertion(
            session=_syrupy_session(self.config),
            extension_class=_extension(EXTENSIONS[1]),
            test_location=PyTestLocation(self),
            update_snapshots=opt.update_snapshots,
            update_new_snapshots_only=opt.update_new_snapshots_only,
        )
        try:
            text = _assembled(self.path, python_options(), replay=self.replay)
        except InputError as exc:
            pytest.fail("\n".join(exc.lines()), pytrace=False)
        _compare(self, assertion, text, self.nodeid.partition("::")[0])  # fails in pytest_runtest_call

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"ctxkit snapshot of {self.name}"


SYRUPY_TESTED = ((7, 0), (8, 0))  # the syrupy versions this plugin was tested with: [low, high)


def syrupy_supported(version: str) -> bool:
    parts = tuple(int(p) for p in version.split(".")[:2] if p.isdigit())
    return SYRUPY_TESTED[0] <= parts < SYRUPY_TESTED[1]


def _syrupy_session(config: pytest.Config) -> Any:
    """syrupy's session object. It has no public accessor (syrupy keeps it on the config as
    `_syrupy`), which is why the supported syrupy range is pinned and checked at start."""
    return config._syrupy  # type: ignore[attr-defined]


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
    assertion = _syrupy_snapshot(request, "the ctxkit_snapshot fixture").use_extension(_extension(EXTENSIONS[0]))
    root = request.config.rootpath

    def check(
        fixture: str | Path, *, provider: str | None = None, max_input_tokens: int | None = None, replay: bool = False
    ) -> None:
        from ctxkit.loading.config import python_options
        from ctxkit.snapshots.names import SNAPSHOT_SUFFIX, snapshot_name

        label = (
            f"{fixture}"
            + "".join(
                f" {k}={v!r}"
                for k, v in (("provider", provider), ("max_input_tokens", max_input_tokens))
                if v is not None
            )
            + (" replay=True" if replay else "")
        )
        try:
            options = python_options(provider=provider, max_input_tokens=max_input_tokens)
            path = Path(fixture) if Path(fixture).is_absolute() else root / fixture
            text = _assembled(path, options, replay=replay)
        except InputError as exc:
            _note(request.node, f"{label}: not compared: " + "\n".join(exc.lines()))
            return
        name = snapshot_name(path, options.provider, options.max_input_tokens, replay=replay)
        name = name.removesuffix(SNAPSHOT_SUFFIX)
        _compare(request.node, assertion(name=name), text, label)

    return check


def _assembled(path: Path, options: Any, *, replay: bool = False) -> str:
    """The snapshot text (with `replay`, the replay summary's, R-LOG-5); bad input is an
    InputError naming the fixture as the command line would."""
    from ctxkit.loading.read import load_fixture
    from ctxkit.snapshots.replays import replay_text
    from ctxkit.snapshots.store import snapshot_text

    try:
        shown = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        shown = str(path)
    return (replay_text if replay else snapshot_text)(load_fixture(shown), options)[0]


_MISMATCHES = pytest.StashKey[list[str]]()


def _compare(node: pytest.Item, assertion: Any, text: str, label: str) -> None:
    """Let syrupy compare (and record, and write on --snapshot-update); note a diff on mismatch.

    Only syrupy's public API is used: the assertion's `==`, its extension's
    `get_location`, and our extension's record of the stored text it compared.
    """
    from ctxkit.snapshots.store import check_target, unified_diff

    extension = assertion.extension
    location = Path(extension.get_location(test_location=assertion.test_location, index=assertion.index))
    problem = check_target(location, update=bool(node.config.option.update_snapshots))
    if problem is not None:  # a file ctxkit did not write (or a link): never compared with, never replaced
        where = _shown(location, node.config.rootpath)
        _note(node, f"ctxkit snapshot {where} for {label}: not compared: {problem.message}")
        return
    extension.compared = None
    if assertion == text:
        return
    where = _shown(location, node.config.rootpath)
    stored = extension.compared
    if stored is None:
        message = f"no ctxkit snapshot {where} for {label}: run pytest --snapshot-update to write it"
    else:
        diff = unified_diff(
            stored, text, stored_label=f"{where} (stored)", assembled_label=f"{where} (assembled from {label})"
        )
        message = f"ctxkit snapshot {where} differs for {label} (pytest --snapshot-update accepts it):\n{diff}"
    _note(node, message)


def _note(node: pytest.Item, message: str) -> None:
    """Fail the test at its end (`pytest_runtest_call`), so its other snapshots are still compared."""
    node.stash.setdefault(_MISMATCHES, []).append(message)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Fail a test after its body when any of its ctxkit snapshots differed (all of them listed)."""
    try:
        result = yield
    except BaseException:
        if mismatches := item.stash.get(_MISMATCHES, None):
            item.add_report_section("call", "ctxkit snapshots", "\n\n".join(mismatches))
        raise
    if mismatches := item.stash.get(_MISMATCHES, None):
        pytest.fail("\n\n".join(mismatches), pytrace=False)
    return result


def _shown(path: Path, root: Path) -> Path:
    with contextlib.suppress(ValueError):
        return path.relative_to(root)
    return path


# --- syrupy extensions, built on first use (syrupy may not be installed) -------------


def __getattr__(name: str) -> Any:  # PEP 562: `ctxkit.snapshots.pytest_plugin.<Extension>` for syrupy
    if name in EXTENSIONS:
        return _extension(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _extension(name: str) -> Any:
    cached = globals().get(f"_{name}")
    if cached is None:
        for cls in _build_extensions():
            globals()[f"_{cls.__name__}"] = cls
        cached = globals()[f"_{name}"]
    return cached


def _build_extensions() -> tuple[type, type]:
    from syrupy.data import SnapshotCollections
    from syrupy.extensions.json import JSONSnapshotExtension

    from ctxkit.snapshots.names import is_fixture_item_name
    from ctxkit.snapshots.store import check_target, render, snapshot_files, unified_diff, write_snapshot

    class PayloadSnapshotExtension(JSONSnapshotExtension):
        """Snapshots as `ctxkit snapshot` writes them: payload key order kept, atomic writes."""

        compared: str | None = None  # the stored text of the last comparison (`_compare` reads it)

        def serialize(self, data: Any, **kw: Any) -> str:
            return data if isinstance(data, str) else render(data)

        def matches(self, *, serialized_data: Any, snapshot_data: Any) -> bool:
            self.compared = str(snapshot_data)
            return bool(super().matches(serialized_data=serialized_data, snapshot_data=snapshot_data))

        def diff_lines(self, serialized_data: Any, snapshot_data: Any) -> Iterator[str]:
            diff = unified_diff(
                str(snapshot_data), str(serialized_data), stored_label="stored", assembled_label="assembled"
            )
            yield from diff.splitlines()

        @classmethod
        def write_snapshot_collection(cls, *, snapshot_collection: Any, name_order: Any = None) -> None:
            data = next(iter(snapshot_collection)).data
            path = Path(snapshot_collection.location)
            problem = check_target(path, update=True)  # never over a file ctxkit did not write
            if problem is not None:
                raise InputError(problem)
            write_snapshot(path, str(data))

    class FixtureSnapshotExtension(PayloadSnapshotExtension):
        """`<snapshots>/<fixture stem>.json`, only for `FixtureItem`s; claims only its own files."""

        @classmethod
        def dirname(cls, *, test_location: Any) -> str:
            item = test_location.item
            if isinstance(item, FixtureItem):
                return str(item.snapshot_path.parent)
            return str(super().dirname(test_location=test_location))

        @classmethod
        def discovery_dirname(cls, *, test_location: Any) -> str:
            item = test_location.item
            if isinstance(item, FixtureItem):
                return str(item.store)
            return cls.dirname(test_location=test_location)

        @classmethod
        def get_snapshot_name(cls, *, test_location: Any, index: Any = 0) -> str:
            item = test_location.item
            if isinstance(item, FixtureItem):
                return item.snapshot_path.stem
            return str(super().get_snapshot_name(test_location=test_location, index=index))

        @classmethod
        def matches_test_location(cls, *, test_location: Any, snapshot_location: str) -> bool:
            item = test_location.item
            return isinstance(item, FixtureItem) and Path(snapshot_location) == item.snapshot_path

        def discover_snapshots(self, *, test_location: Any, ignore_extensions: list[str] | None = None) -> Any:
            """The snapshots these items own: marked files anywhere in the snapshots folder, except
            the option variants (`x.anthropic.json`, `x.max8000.json`, `x.replay.json` without
            --ctxkit-replay) that only `ctxkit snapshot` writes; syrupy reports (and with
            --snapshot-update deletes) the unused ones."""
            found = SnapshotCollections()
            if isinstance(test_location.item, FixtureItem):
                replay = bool(test_location.item.config.getoption("ctxkit_replay"))
                for path in snapshot_files(test_location.item.store):
                    if is_fixture_item_name(path.name, replay=replay):
                        found.add(self.read_snapshot_collection(snapshot_location=str(path)))
            return found

    for cls in (PayloadSnapshotExtension, FixtureSnapshotExtension):
        cls.__module__ = __name__
        cls.__qualname__ = cls.__name__
    return PayloadSnapshotExtension, FixtureSnapshotExtension
