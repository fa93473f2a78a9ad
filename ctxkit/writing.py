"""Every file ctxkit writes goes through here: checked first, then written atomically.

Input: the path a user named and whether an existing file there may be replaced.
Output: the file, or `InputError` (exit 2, one line) before anything was written.
The policy (docs/architecture.md#writing-files):

* Only a regular file is ever replaced, or a new one created. A symbolic link, a
  folder, a FIFO, a device or a socket in the way is refused, even with `--force`:
  nothing is written through a link or into a device.
* `-`, `/dev/stdout`, `/dev/fd/1` and `/proc/self/fd/1` name stdout; the command
  decides what that means (`means_stdout`).
* Names too long for the file system, missing or read-only folders and a file in
  the place of a folder are found by `check`, before any byte is written.
* A file is written to a temporary file beside it (`.ctxkit-PID-XXXXXXXX.tmp`),
  flushed, then renamed over the target: a reader sees the old file or the new
  one. A temporary file left behind by a killed run carries its process id, and
  the next write into that folder removes it once that process is gone.
* A replaced file keeps its permission bits; a new one gets the umask's.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ctxkit.errors import InputError

STDOUT_NAMES = frozenset({"-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"})
TEMP_NAME = re.compile(r"^\.ctxkit-(\d+)-[0-9a-f]{8}\.tmp$")
EXISTS = "already exists: pass --force to overwrite it"
STALE_SECONDS = 60  # a temporary file this old whose process is gone is a leftover
_NAME_MAX = 255  # when the file system does not say
_PATH_MAX = 4096
_cleaned: set[str] = set()  # folders whose leftovers this process already removed


def means_stdout(spelled: str) -> bool:
    """Whether an output path as typed names stdout (`-`, `/dev/stdout`, ...)."""
    return spelled in STDOUT_NAMES


def kind(mode: int) -> str:
    """What a non-regular file is, in words, for the refusal."""
    for test, words in (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return words
    return "not a regular file"


@dataclass(frozen=True, slots=True)
class Target:
    """A path `check` accepted: `existing` is the mode of the regular file there, if any."""

    path: Path
    existing: int | None = None
    make_folder: bool = False  # the folder is missing and `check` was told to create it

    @property
    def exists(self) -> bool:
        return self.existing is not None


def refuse(path: Path | str, reason: str) -> InputError:
    return InputError(f"{path}: {reason}")


def check(
    path: Path | str,
    *,
    replace: bool | Callable[[Path], bool] = False,
    make_folder: bool = False,
    exists: str = EXISTS,
) -> Target:
    """Whether `path` may be written; raises `InputError` saying why not.

    `replace` says whether an existing regular file may be replaced (a callable
    is asked only once one is known to be there); if not, `exists` is the refusal. `make_folder` allows a missing
    folder, created by `write`.
    """
    path = Path(path)
    check_name(path)
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):  # (a file in the folder's place: said below)
        info = None
    except OSError as exc:
        raise refused(path, exc) from None
    if info is not None:
        if not stat.S_ISREG(info.st_mode):
            what = kind(info.st_mode)
            raise refuse(path, f"is {what}, not a regular file: ctxkit writes only regular files")
        if not (replace(path) if callable(replace) else replace):
            raise refuse(path, exists)
    missing = _check_folder(path, make_folder)
    return Target(path, None if info is None else stat.S_IMODE(info.st_mode), missing)


def check_name(path: Path) -> None:
    """The name itself: UTF-8 text, no part longer than the file system allows, not too long."""
    _check_text(path)
    _check_length(path)


def _check_text(path: Path) -> None:
    """A name must be text: bytes that are not UTF-8 (they arrive as lone surrogates) could
    not be printed in the lines that name the file, nor stored in a snapshot's report."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = ord(str(path)[exc.start])
        what = f"byte 0x{bad - 0xDC00:02x}" if 0xDC80 <= bad <= 0xDCFF else f"U+{bad:04X}"
        raise refuse(path, f"the name is not valid UTF-8 ({what})") from None


def _check_length(path: Path) -> None:
    ancestor = _existing_ancestor(path.parent)
    name_max = _pathconf(ancestor, "PC_NAME_MAX", _NAME_MAX)
    for part in path.parts:
        size = len(os.fsencode(part))
        if size > name_max and part != path.anchor:
            raise refuse(path, f"file name too long ({size} bytes; this file system allows {name_max})")
    size = len(os.fsencode(os.path.abspath(path)))
    path_max = _pathconf(ancestor, "PC_PATH_MAX", _PATH_MAX)
    if size >= path_max:
        raise refuse(path, f"path too long ({size} bytes; this system allows {path_max - 1})")


def _existing_ancestor(folder: Path) -> Path:
    for candidate in (folder, *folder.parents):
        if os.path.isdir(candidate):
            return candidate
    return Path(folder.anchor or ".")


def _pathconf(folder: Path, name: str, default: int) -> int:
    try:
        value = os.pathconf(folder, name)
    except (OSError, ValueError):
        return default
    return value if value > 0 else default


def _check_folder(path: Path, make: bool) -> bool:
    """The folder must be a writable folder; a missing one only with `make`. True when missing."""
    folder = path.parent
    try:
        info = os.stat(folder)
    except FileNotFoundError:
        if not make:
            raise refuse(path, f"the folder {str(folder)!r} does not exist") from None
        ancestor = _existing_ancestor(folder)
        first = ancestor / folder.relative_to(ancestor).parts[0]
        if os.path.lexists(first):  # a file (or a dangling link) where a folder would go
            raise refuse(path, f"{str(first)!r} is not a folder") from None
        _check_writable(path, ancestor)
        return True
    except NotADirectoryError:
        blocker = next((p for p in reversed((folder, *folder.parents)) if os.path.isfile(p)), folder)
        raise refuse(path, f"{str(blocker)!r} is not a folder") from None
    except OSError as exc:
        raise refused(path, exc) from None
    if not stat.S_ISDIR(info.st_mode):
        raise refuse(path, f"{str(folder)!r} is not a folder")
    _check_writable(path, folder)
    return False


def _check_writable(path: Path, folder: Path) -> None:
    # os.access knows read-only file systems; for root the permission bits do not count.
    if not os.access(folder, os.W_OK | os.X_OK):
        reason = "a read-only file system" if _read_only_fs(folder) else "permission denied"
        raise refuse(path, f"cannot write in the folder {str(folder)!r}: {reason}")


def _read_only_fs(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def refused(path: Path, exc: OSError) -> InputError:
    if exc.errno == errno.ENAMETOOLONG:
        return refuse(path, "file name too long")
    return refuse(path, f"cannot write: {exc.strerror or exc}")


# --- writing ---------------------------------------------------------------------


def write(target: Target, data: bytes | Iterable[bytes], *, replace: bool = True) -> None:
    """Write `data` to a target `check` accepted, atomically (see the module docstring).

    With `replace=False` a file that appeared since the check is not replaced
    (`InputError`). Every failure is an `InputError`; no temporary file stays.
    """
    with Batch() as batch:
        batch.add(target, data)
        batch.commit(replace=replace)


@dataclass
class Batch:
    """Several files written together: each to its temporary file as it comes
    (`add`), then all renamed into place by `commit`. Leaving the `with` block
    without a commit (an error, Ctrl-C) removes the temporary files."""

    _pending: list[tuple[Path, Target]] = field(default_factory=list)

    def __enter__(self) -> Batch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.discard()

    def add(self, target: Target, data: bytes | Iterable[bytes]) -> None:
        folder = target.path.parent
        if target.make_folder:
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise refused(folder, exc) from None
        clean_leftovers(folder)
        tmp = _temp_file(target, data)
        self._pending.append((tmp, target))

    def commit(self, *, replace: bool = True) -> None:
        for n, (tmp, target) in enumerate(self._pending):
            try:
                _move(tmp, target, replace=replace)
            except BaseException:
                del self._pending[: n + 1]
                raise
        self._pending.clear()

    def discard(self) -> None:
        for tmp, _ in self._pending:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        self._pending.clear()


def _temp_file(target: Target, data: bytes | Iterable[bytes]) -> Path:
    umask = os.umask(0)
    os.umask(umask)
    mode = target.existing if target.existing is not None else 0o666 & ~umask
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = target.path.parent / f".ctxkit-{os.getpid()}-{secrets.token_hex(4)}.tmp"
        try:
            fd = os.open(tmp, flags, 0o600)
            break
        except FileExistsError:
            continue
        except OSError as exc:
            raise refused(target.path, exc) from None
    else:
        raise refuse(target.path, "cannot write: no free temporary file name")
    try:
        with os.fdopen(fd, "wb") as handle:
            for chunk in [data] if isinstance(data, bytes) else data:
                handle.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise refused(target.path, exc) from None
        raise
    return tmp


def _move(tmp: Path, target: Target, *, replace: bool) -> None:
    path = target.path
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise refused(path, exc) from None
    if info is not None and not stat.S_ISREG(info.st_mode):  # appeared since the check
        raise refuse(path, f"is {kind(info.st_mode)}, not a regular file: ctxkit writes only regular files")
    try:
        if replace:
            os.replace(tmp, path)
            return
        try:
            os.link(tmp, path)  # never replaces a file that appeared meanwhile
        except FileExistsError:
            raise refuse(path, EXISTS) from None
        except OSError:  # no hard links on this file system: check, then move
            if os.path.lexists(path):
                raise refuse(path, EXISTS) from None
            os.replace(tmp, path)
    except OSError as exc:
        raise refused(path, exc) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def clean_leftovers(folder: Path) -> list[Path]:
    """Remove ctxkit's temporary files in `folder` whose process is gone (once per folder and run)."""
    key = os.path.abspath(folder)
    if key in _cleaned:
        return []
    _cleaned.add(key)
    removed = []
    for path in _leftovers(folder):
        with contextlib.suppress(OSError):
            os.unlink(path)
            removed.append(path)
    return removed


def _leftovers(folder: Path) -> Iterator[Path]:
    import time

    try:
        names = os.listdir(folder)
    except OSError:
        return
    now = time.time()
    for name in sorted(names):
        m = TEMP_NAME.match(name)
        if m is None or _alive(int(m.group(1))):
            continue
        path = folder / name
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and now - info.st_mtime > STALE_SECONDS:
            yield path


def _alive(pid: int) -> bool:
    if pid == os.getpid() or os.name == "nt":  # (Windows has no signal 0: never guess there)
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # someone else's process, or unknowable: leave its file alone
    return True
