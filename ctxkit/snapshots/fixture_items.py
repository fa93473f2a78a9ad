"""`--ctxkit-fixtures DIR`: every fixture file under DIR as a pytest item compared with its snapshot.

Input: the fixture folders and the snapshot folder the plugin checked at configure time.
Output: one `FixtureItem` per fixture (two with `--ctxkit-replay`), its snapshot at
`<snapshots>/<path below the folder>.json`, the layout `ctxkit snapshot` writes. Imports
nothing heavy: syrupy and the pipeline load when an item runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxkit.errors import InputError
from ctxkit.snapshots.comparing import assembled, compare, shown


def fixture_items(session: pytest.Session, root: Path, store: Path, owners: dict[Path, Path]) -> Iterator[FixtureItem]:
    """One item per fixture under `root`; its snapshot mirrors its place below `root`
    (`fixtures/replay/summary.yaml` → `<store>/replay/summary.json`), as `ctxkit snapshot` names it.
    `owners` maps each snapshot file to the fixture that claimed it first, across folders."""
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
        from ctxkit.snapshots.syrupy_extensions import FixtureSnapshotExtension

        if self.clash is not None:
            root = self.config.rootpath
            pytest.fail(
                f"{shown(self.path, root)} and {shown(self.clash, root)} both need "
                f"the snapshot {self.snapshot_path.name}: rename one",
                pytrace=False,
            )
        opt = self.config.option
        assertion = SnapshotAssertion(
            session=syrupy_session(self.config),
            extension_class=FixtureSnapshotExtension,
            test_location=PyTestLocation(self),
            update_snapshots=opt.update_snapshots,
            update_new_snapshots_only=opt.update_new_snapshots_only,
        )
        try:
            text = assembled(self.path, python_options(), replay=self.replay)
        except InputError as exc:
            pytest.fail("\n".join(exc.lines()), pytrace=False)
        compare(self, assertion, text, self.nodeid.partition("::")[0])  # fails in pytest_runtest_call

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"ctxkit snapshot of {self.name}"


def syrupy_session(config: pytest.Config) -> Any:
    """syrupy's session object. It has no public accessor (syrupy keeps it on the config as
    `_syrupy`), which is why the supported syrupy range is pinned and checked at start."""
    return config._syrupy  # type: ignore[attr-defined]
