"""Which fixtures a snapshot run covers, and the snapshot file each one gets (docs/rules.md#golden-snapshots).

Input: the paths a user gave (files or folders) and the snapshots folder. Output:
each fixture with its key — its stem when given as a file, its path below the
folder without the suffix when found in a folder (`replay/summary`), so that
`fixtures/summary.yaml` and `fixtures/replay/summary.yaml` get `summary.json`
and `replay/summary.json`: the snapshots folder mirrors the fixtures folder.
Option sets add to the name: `summary.anthropic.max8000.json`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from ctxkit import providers
from ctxkit.errors import InputError, Problem

FIXTURE_SUFFIXES = (".yaml", ".yml", ".json")
SNAPSHOT_SUFFIX = ".json"  # every snapshot file, for the CLI and the pytest plugin alike
SNAPSHOTS_DIRNAME = "__snapshots__"  # skipped when folders are expanded (syrupy's name)
_FIXTURE_GLOBS = ", ".join(f"*{s}" for s in FIXTURE_SUFFIXES)
REPLAY_PART = "replay"  # `x.replay.json`: the pinned replay summary (R-LOG-5), an option variant too
_OPTION_PART = re.compile(r"^(?:max\d+|" + REPLAY_PART + ")$")  # or a registered provider's name


def snapshot_name(
    fixture_path: str | Path,
    provider: str | None = None,
    max_input_tokens: int | None = None,
    *,
    key: str | None = None,
    replay: bool = False,
) -> str:
    """`plain_chat.json`, `plain_chat.anthropic.json`, `replay/summary.anthropic.max8000.json`;
    with `replay`, the replay summary's `plain_chat.replay.json` (R-LOG-5).

    `key` is the fixture's name below its folder (`expand_named`); without it, the stem."""
    parts = [key if key is not None else Path(fixture_path).stem]
    if provider:
        parts.append(str(provider))
    if max_input_tokens is not None:
        parts.append(f"max{max_input_tokens}")
    if replay:
        parts.append(REPLAY_PART)
    return ".".join(parts) + SNAPSHOT_SUFFIX


def is_option_variant(name: str) -> bool:
    """Whether a snapshot file name carries an option set (`x.anthropic.json`, `x.max8000.json`) or
    is a replay summary (`x.replay.json`): `ctxkit snapshot --provider/--max-input-tokens/--replay`
    writes those, the `--ctxkit-fixtures` items never (with `--ctxkit-replay`: the replay ones)."""
    parts = Path(name).name.removesuffix(SNAPSHOT_SUFFIX).split(".")
    return len(parts) > 1 and (_OPTION_PART.match(parts[-1]) is not None or parts[-1] in providers.names())


def is_fixture_item_name(name: str, *, replay: bool = False) -> bool:
    """Whether a `--ctxkit-fixtures` item writes this snapshot file: `x.json`, and with `replay`
    (`--ctxkit-replay`) also `x.replay.json`; never the other option variants."""
    base = Path(name).name.removesuffix(SNAPSHOT_SUFFIX)
    if replay and base.endswith("." + REPLAY_PART):
        base = base.removesuffix("." + REPLAY_PART)
    return not is_option_variant(base + SNAPSHOT_SUFFIX)


def snapshot_files_under(folder: Path) -> Iterator[Path]:
    """Every `*.json` file in `folder` and its subfolders (not hidden ones), sorted by path."""
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith(SNAPSHOT_SUFFIX) and not name.startswith("."):
                yield Path(dirpath) / name


def check_folders(
    snapshots: str, where: Path, folders: Iterable[tuple[Path, str]], option: str = "--snapshots"
) -> None:
    """The snapshots folder (`where`, spelled `snapshots`) must not be one of the fixtures
    `folders` (each resolved, and as spelled) nor contain one: it is left out when folders
    are expanded, so it would hide the fixtures and mix files with them."""
    for folder, spelled in folders:
        if folder.is_relative_to(where):
            raise InputError(
                f"{option} {snapshots}: is the fixtures folder {spelled!r} or contains it; keep the "
                f"snapshots in a folder of their own (for example {Path(spelled) / SNAPSHOTS_DIRNAME})"
            )


def expand_named(paths: Iterable[str], *, exclude: Sequence[Path] = ()) -> list[tuple[str, str]]:
    """(fixture, key) for every fixture: files as given (key: the stem); folders → every
    `*.yaml|*.yml|*.json` under them, sorted (key: the path below the folder, no suffix).

    Hidden folders, `__snapshots__` folders and the `exclude` folders (the
    snapshots folder) are skipped. Each file appears once, as first found.
    """
    skip = [p.resolve() for p in exclude]
    found: dict[str, str] = {}
    missing: list[Problem] = []
    for given in paths:
        path = Path(given)
        if given == "-":
            missing.append(Problem(given, "", "snapshots are named after fixture files: stdin cannot be snapshotted"))
        elif path.is_dir():
            under = fixtures_under(path, skip)
            if not under:
                missing.append(Problem(given, "", f"no fixture files ({_FIXTURE_GLOBS}) in this folder"))
            for rel in under:
                found.setdefault(str(path / rel), str(Path(rel).with_suffix("").as_posix()))
        elif path.is_file():
            found.setdefault(given, path.stem)
        else:
            missing.append(Problem(given, "", "no such file or folder"))
    if missing:
        raise InputError(missing)
    return list(found.items())


def expand(paths: Iterable[str], *, exclude: Sequence[Path] = ()) -> list[str]:
    """The fixture files of `expand_named`, in the same order."""
    return [fixture for fixture, _ in expand_named(paths, exclude=exclude)]


def fixtures_under(root: Path, skip: Sequence[Path] = ()) -> list[str]:
    """The fixture files below `root` (relative, sorted), outside hidden, snapshot and `skip`
    folders; logs of recorded traffic kept beside them (`fixtures/logs/`) are not fixtures."""
    rels = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if path.suffix not in FIXTURE_SUFFIXES or not path.is_file():
            continue
        if any(part.startswith(".") or part == SNAPSHOTS_DIRNAME for part in rel.parts):
            continue
        if any(path.resolve().is_relative_to(s) for s in skip) or is_log(path):
            continue
        rels.append(rel.as_posix())
    return sorted(rels)


_CTXKIT_KEY = re.compile(r'^ctxkit\s*:|"ctxkit"\s*:', re.MULTILINE)


def is_log(path: Path) -> bool:
    """Whether a file found in a folder is a log of recorded traffic (what `ctxkit replay`
    reads as one: a cassette, OTLP JSON, JSON records) rather than a fixture. A file with a
    `ctxkit` key in its first 64 KB is always taken as a fixture (and checked as one)."""
    from ctxkit.loading.traffic import sniff

    try:
        with path.open("rb") as handle:  # a regular file (the caller checked), read bounded
            text = handle.read(65536).decode("utf-8", errors="replace")
    except OSError:
        return False
    return sniff(text) is not None and _CTXKIT_KEY.search(text) is None
