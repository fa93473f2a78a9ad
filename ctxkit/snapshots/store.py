"""Golden snapshots: fixtures × option sets → stored JSON files, compared or written (docs/rules.md#golden-snapshots).

Input: fixture paths (files or folders), a snapshots folder, option sets. Output:
a `SnapshotReport` with one `Outcome` per fixture and option set (plus pruned
files). A snapshot is `{"ctxkit_snapshot": 1, "payload", "budget"}` (or
`{"ctxkit_snapshot": 1, "error"}` when the assembly fails by rule) written by
`output.dumps`; one file per fixture and option set, named by `snapshot_name`.
The `ctxkit_snapshot` marker is what makes a file ours: only a marked file is
ever overwritten or pruned. Never prints; writes only with `update`
(atomically), and only after every fixture was assembled and every target
checked.
"""

from __future__ import annotations

import difflib
import enum
import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxkit.errors import ExitStatus, InputError, Problem, RuleError
from ctxkit.loading.config import Options
from ctxkit.loading.domain import Fixture
from ctxkit.output import dumps, shorten_images
from ctxkit.pipeline import Result, run
from ctxkit.reports.budget import report as budget_report
from ctxkit.snapshots.names import SNAPSHOT_SUFFIX, check_folders, expand_named, snapshot_files_under, snapshot_name

MARKER = "ctxkit_snapshot"  # first key of every snapshot file; the value is the format version
MARKER_VERSION = 1
CLOCK_PROBLEM = (
    "the output depends on the clock and the fixture has no `now`: add `now:` so the snapshot is reproducible (R-SYS-2)"
)

Loader = Callable[[str], Fixture]


class Status(enum.StrEnum):
    PASSED = "passed"
    FAILED = "failed"  # differs from the stored file; `diff` says how
    MISSING = "missing"  # no stored file and no --update: a failure
    WRITTEN = "written"  # created or updated by --update
    UNUSED = "unused"  # --prune without --update: stored, but nothing produces it (a failure)
    DELETED = "deleted"  # --prune --update removed it


FAILURES = frozenset({Status.FAILED, Status.MISSING, Status.UNUSED})


@dataclass(frozen=True, slots=True)
class Outcome:
    snapshot: str  # the snapshot file, spelled from the snapshots folder as given
    status: Status
    fixture: str | None = None  # None for unused/deleted files
    diff: str = ""  # unified diff, stored (-) → assembled (+), plain text
    created: bool = False  # WRITTEN: there was no file before

    @property
    def failed(self) -> bool:
        return self.status in FAILURES

    def message(self) -> str:
        """One plain line: status, snapshot, fixture, and what to do about it."""
        source = f" ({self.fixture})" if self.fixture else ""
        detail = {
            Status.PASSED: "",
            Status.FAILED: ": the assembly differs from the snapshot",
            Status.MISSING: ": no snapshot stored; run with --update to write it",
            Status.WRITTEN: ": new" if self.created else ": updated",
            Status.UNUSED: ": no fixture produces it; run with --update --prune to delete it",
            Status.DELETED: ": no fixture produces it",
        }[self.status]
        return f"{self.status}: {self.snapshot}{source}{detail}"


@dataclass(frozen=True, slots=True)
class SnapshotReport:
    outcomes: tuple[Outcome, ...]
    warnings: tuple[str, ...] = ()

    def count(self, *statuses: Status) -> int:
        return sum(o.status in statuses for o in self.outcomes)

    @property
    def failed(self) -> int:
        return self.count(*FAILURES)

    @property
    def exit_status(self) -> ExitStatus:
        return ExitStatus.FAILED if self.failed else ExitStatus.OK

    def summary(self) -> str:
        """`N passed, M failed`, then the files written or deleted when there are any."""
        parts = [f"{self.count(Status.PASSED)} passed", f"{self.failed} failed"]
        for status in (Status.WRITTEN, Status.DELETED):
            if n := self.count(status):
                parts.append(f"{n} {status}")
        return ", ".join(parts)


# --- naming and rendering ------------------------------------------------------


def options_name(fixture_path: str | Path, options: Options, key: str | None = None, replay: bool = False) -> str:
    return snapshot_name(fixture_path, options.provider, options.max_input_tokens, key=key, replay=replay)


def snapshot_document(result: Result) -> dict[str, Any]:
    body = shorten_images(result.payload.body, result.payload.prepared.image_b64)
    return {MARKER: MARKER_VERSION, "payload": body, "budget": budget_report(result)}


def error_document(message: str) -> dict[str, Any]:
    return {MARKER: MARKER_VERSION, "error": message}


def render(document: dict[str, Any]) -> str:
    return dumps(document)


def snapshot_text(fixture: Fixture, options: Options) -> tuple[str, list[str]]:
    """The snapshot text for one fixture and option set, and the run's warnings.

    A rule failure (exit 1 elsewhere) is pinned as `{"error": ...}`; a fixture
    whose output depends on the real clock is refused with an InputError.
    """
    try:
        result = run(fixture, options)
    except RuleError as exc:
        message = str(exc).removeprefix(f"{fixture.source}: ")
        return render(error_document(message)), []
    if result.assembly.clock_dependent and result.assembly.eff.now is None:
        raise InputError(Problem(fixture.source, "/now", CLOCK_PROBLEM))
    return render(snapshot_document(result)), result.warnings


def snapshot_files(folder: Path) -> list[Path]:
    """The snapshot files ctxkit wrote in `folder` and the folders below it (the mirror of the
    fixtures' folders), sorted by path."""
    return [p for p in snapshot_files_under(folder) if is_snapshot_file(p)]


def is_snapshot_file(path: Path) -> bool:
    """True only for a regular `*.json` file (not a link) that ctxkit wrote as a snapshot.

    The proof is the marker, `"ctxkit_snapshot": 1` at the top level; nothing is
    guessed from the other keys, so a user's `{"error": "..."}` notes are not ours.
    """
    if path.suffix != SNAPSHOT_SUFFIX or path.name.startswith(".") or path.is_symlink() or not path.is_file():
        return False
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return False
    return isinstance(doc, dict) and type(doc.get(MARKER)) is int and doc[MARKER] == MARKER_VERSION


def check_target(path: Path, *, fixtures: Iterable[str | Path] = (), update: bool = False) -> Problem | None:
    """Why `path` may not be used as a snapshot file, or None when it may.

    A fixture of the run is never a snapshot; an existing target must be a regular
    file, and `update` overwrites it only when ctxkit wrote it (the marker).
    """
    from ctxkit import writing

    try:
        writing.check_name(path)  # printable, not too long: also when only compared
        resolved = path.resolve()
        there = os.path.lexists(path)
    except InputError as exc:
        return exc.problems[0]
    except OSError as exc:  # a loop of links
        return writing.refused(path, exc).problems[0]
    if any(resolved == Path(f).resolve() for f in fixtures):
        return Problem(str(path), "", "is a fixture of this run: keep the snapshots in a folder of their own")
    if there and (path.is_symlink() or not path.is_file()):
        return Problem(str(path), "", "is not a regular file: a snapshot is never written through it")
    if update:
        try:  # names too long, a file in the folder's place, a read-only folder
            writing.check(path, replace=True, make_folder=True)
        except InputError as exc:
            return exc.problems[0]
    if update and there and not is_snapshot_file(path):
        return Problem(
            str(path),
            "",
            f"exists and is not a ctxkit snapshot (no {MARKER!r} marker): refusing to overwrite it; "
            "move it away or choose another snapshots folder",
        )
    return None


def unified_diff(stored: str, assembled: str, *, stored_label: str, assembled_label: str) -> str:
    lines = difflib.unified_diff(
        stored.splitlines(keepends=True),
        assembled.splitlines(keepends=True),
        fromfile=stored_label,
        tofile=assembled_label,
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


# --- the store -------------------------------------------------------------------


def read_stored(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")  # universal newlines: CRLF checkouts compare equal
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(Problem(str(path), "", f"cannot read the snapshot: {exc}")) from None


def write_snapshot(path: Path, text: str) -> None:
    """Write one snapshot through `ctxkit.writing` (atomically; a replaced file keeps its mode).

    `check_target` has already decided that an existing file there is ours to replace."""
    from ctxkit import writing

    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(Problem(str(path), "", f"cannot write the snapshot: {exc.reason}")) from None
    writing.write(writing.check(path, replace=True, make_folder=True), data)


# --- the check -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Job:
    fixture: str
    name: str
    text: str


def check(
    paths: Iterable[str],
    snapshots_dir: str | Path,
    *,
    update: bool = False,
    prune: bool = False,
    options_list: Sequence[Options] = (),
    loader: Loader | None = None,
    replay: bool = False,
) -> SnapshotReport:
    """Compare every fixture × option set with its stored snapshot; write with `update`.

    Every fixture is assembled and every target checked before anything is
    written, so bad input (exit 2, all problems listed) never leaves a
    half-updated snapshot folder, and no file ctxkit did not write as a snapshot
    (a fixture, a note) is overwritten. `prune` reports (with `update`: deletes)
    snapshot files no current job produces; only marked files are considered.
    `replay` pins each replay's cache summary too (`x.replay.json`, R-LOG-5).
    """
    folder = Path(snapshots_dir)
    paths = list(paths)
    check_folders(str(snapshots_dir), folder.resolve(), [(Path(p).resolve(), p) for p in paths if Path(p).is_dir()])
    named = expand_named(paths, exclude=[folder])
    fixtures = [fixture for fixture, _ in named]
    options_list = list(dict.fromkeys(options_list)) or [Options()]
    jobs, warnings = _assemble_all(named, options_list, loader or _default_loader, replay)
    problems = [p for job in jobs if (p := check_target(folder / job.name, fixtures=fixtures, update=update))]
    if problems:
        raise InputError(problems)
    outcomes = [_compare(folder, job, update) for job in jobs]
    if prune:
        produced = {job.name for job in jobs}
        outcomes.extend(_prune(folder, produced, update))
    return SnapshotReport(tuple(outcomes), tuple(dict.fromkeys(warnings)))


def _default_loader(path: str) -> Fixture:
    from ctxkit.loading.read import load_fixture

    return load_fixture(path)


def _assemble_all(
    fixtures: Sequence[tuple[str, str]], options_list: Sequence[Options], loader: Loader, replay: bool = False
) -> tuple[list[_Job], list[str]]:
    from ctxkit.snapshots.replays import replay_text

    jobs: list[_Job] = []
    warnings: list[str] = []
    problems: list[Problem] = []
    owners: dict[str, str] = {}
    for path, key in fixtures:
        try:
            fixture = loader(path)
        except InputError as exc:
            problems.extend(exc.problems)
            continue
        for options, pin in ((o, r) for o in options_list for r in (False, True)[: 1 + replay]):
            name = options_name(path, options, key, pin)
            if owners.setdefault(name, path) != path:
                problems.append(
                    Problem(path, "", f"produces the same snapshot name {name!r} as {owners[name]}; rename one of them")
                )
                continue
            try:
                text, run_warnings = (replay_text if pin else snapshot_text)(fixture, options)
                text.encode("utf-8")
            except InputError as exc:
                problems.extend(exc.problems)
                continue
            except UnicodeEncodeError as exc:
                problems.append(Problem(path, "", f"the snapshot text cannot be written as UTF-8: {exc.reason}"))
                continue
            jobs.append(_Job(path, name, text))
            warnings.extend(f"{path}: {w}" for w in run_warnings)
    if problems:
        raise InputError(problems)
    return jobs, warnings


def _compare(folder: Path, job: _Job, update: bool) -> Outcome:
    path = folder / job.name
    shown = str(path)
    stored = read_stored(path)
    if stored == job.text:
        return Outcome(shown, Status.PASSED, job.fixture)
    if update:
        write_snapshot(path, job.text)
        return Outcome(shown, Status.WRITTEN, job.fixture, created=stored is None)
    if stored is None:
        return Outcome(shown, Status.MISSING, job.fixture)
    diff = unified_diff(
        stored, job.text, stored_label=f"{shown} (stored)", assembled_label=f"{shown} (assembled from {job.fixture})"
    )
    return Outcome(shown, Status.FAILED, job.fixture, diff=diff)


def _prune(folder: Path, produced: set[str], update: bool) -> list[Outcome]:
    if not folder.is_dir():
        return []
    outcomes = []
    for path in snapshot_files(folder):
        if path.relative_to(folder).as_posix() in produced:
            continue
        if not update:
            outcomes.append(Outcome(str(path), Status.UNUSED))
            continue
        try:
            path.unlink()
        except OSError as exc:
            raise InputError(Problem(str(path), "", f"cannot delete: {exc}")) from None
        outcomes.append(Outcome(str(path), Status.DELETED))
    return outcomes
