"""One pytest snapshot comparison: the text assembled, compared on syrupy's session, a mismatch noted.

Input: a fixture path and options (`assembled`), then a syrupy assertion and that text
(`compare`). Output: nothing when the snapshot matches; otherwise a message stashed on the
test item (`note`), which the plugin's `pytest_runtest_call` turns into one failure listing
every difference once the test's body is done. Imports nothing heavy: the pipeline and the
store load on the first comparison.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import pytest

MISMATCHES = pytest.StashKey[list[str]]()


def assembled(path: Path, options: Any, *, replay: bool = False) -> str:
    """The snapshot text (with `replay`, the replay summary's, R-LOG-5); bad input is an
    InputError naming the fixture as the command line would."""
    from ctxkit.loading.read import load_fixture
    from ctxkit.snapshots.replays import replay_text
    from ctxkit.snapshots.store import snapshot_text

    try:
        shown_path = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        shown_path = str(path)
    return (replay_text if replay else snapshot_text)(load_fixture(shown_path), options)[0]


def compare(node: pytest.Item, assertion: Any, text: str, label: str) -> None:
    """Let syrupy compare (and record, and write on --snapshot-update); note a diff on mismatch.

    Only syrupy's public API is used: the assertion's `==`, its extension's
    `get_location`, and our extension's record of the stored text it compared.
    """
    from ctxkit.snapshots.store import check_target

    extension = assertion.extension
    location = Path(extension.get_location(test_location=assertion.test_location, index=assertion.index))
    where = shown(location, node.config.rootpath)
    problem = check_target(location, update=bool(node.config.option.update_snapshots))
    if problem is not None:  # a file ctxkit did not write (or a link): never compared with, never replaced
        note(node, f"ctxkit snapshot {where} for {label}: not compared: {problem.message}")
        return
    extension.compared = None
    if assertion == text:
        return
    note(node, _mismatch(where, label, extension.compared, text))


def _mismatch(where: Path, label: str, stored: str | None, text: str) -> str:
    """A missing snapshot says how to write it; a different one shows the unified diff."""
    from ctxkit.snapshots.store import unified_diff

    if stored is None:
        return f"no ctxkit snapshot {where} for {label}: run pytest --snapshot-update to write it"
    diff = unified_diff(
        stored, text, stored_label=f"{where} (stored)", assembled_label=f"{where} (assembled from {label})"
    )
    return f"ctxkit snapshot {where} differs for {label} (pytest --snapshot-update accepts it):\n{diff}"


def note(node: pytest.Item, message: str) -> None:
    """Fail the test at its end (`pytest_runtest_call`), so its other snapshots are still compared."""
    node.stash.setdefault(MISMATCHES, []).append(message)


def shown(path: Path, root: Path) -> Path:
    """A path as messages show it: below pytest's rootdir when it is there."""
    with contextlib.suppress(ValueError):
        return path.relative_to(root)
    return path
