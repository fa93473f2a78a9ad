"""The syrupy extensions of the pytest plugin: how ctxkit's snapshots are read, compared and written.

Input: syrupy's calls (serialize, match, locate, discover, write). Output: snapshot files
exactly as `ctxkit snapshot` writes them (payload key order kept, the marker, atomic writes),
never written over a file ctxkit did not write. syrupy is an optional dependency, so the
plugin imports this module only when a snapshot is compared (syrupy then imports it again
by the classes' own module and name, to report unused snapshots).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from syrupy.data import SnapshotCollections
from syrupy.extensions.json import JSONSnapshotExtension

from ctxkit.errors import InputError
from ctxkit.snapshots.fixture_items import FixtureItem
from ctxkit.snapshots.names import is_fixture_item_name
from ctxkit.snapshots.store import check_target, render, snapshot_files, unified_diff, write_snapshot


class PayloadSnapshotExtension(JSONSnapshotExtension):
    """Snapshots as `ctxkit snapshot` writes them: payload key order kept, atomic writes."""

    compared: str | None = None  # the stored text of the last comparison (`comparing.compare` reads it)

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
