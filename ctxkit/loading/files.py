"""Bytes from the file system for the loader: regular files only, every read bounded.

Input: a path and a size limit. Output: the file's bytes, or `Unreadable` saying why
not. `stat()` reports 0 bytes for devices and FIFOs, so the size is checked while
reading as well: at most limit + 1 bytes are ever read, and a FIFO, device or
directory is refused before a single byte is read from it (opened non-blocking, so
a FIFO without a writer cannot hang the run).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from typing import IO

_CHUNK = 1024 * 1024
DEFAULT_MAX_SIZE_TEXT = "64M"  # the --max-size default as typed; `read.DEFAULT_MAX_SIZE` is its value in bytes


class Unreadable(Exception):
    """Why a file cannot be read; `args[0]` is the message (without the file name)."""


class Missing(Unreadable):
    """There is no file by that name."""


class TooBig(Unreadable):
    """The file (or stream) has more bytes than the limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"larger than the size limit of {format_limit(limit)} (see --max-size)")


def read_regular_file(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of a regular file of at most `limit` bytes (symlinks followed)."""
    with _open_regular(path, follow=True) as (handle, info):
        if info.st_size > limit:
            raise TooBig(limit)
        try:
            return read_bounded(handle, limit, expected=info.st_size)
        except OSError as exc:
            raise Unreadable(exc.strerror or str(exc)) from None


def read_head(path: str | os.PathLike[str], size: int) -> bytes:
    """At most the first `size` bytes of a regular file, never through a link: a FIFO,
    device or link is refused without blocking (an output target, before it is replaced)."""
    with _open_regular(path, follow=False) as (handle, _):
        try:
            return handle.read(size) or b""
        except OSError as exc:
            raise Unreadable(exc.strerror or str(exc)) from None


@contextlib.contextmanager
def _open_regular(path: str | os.PathLike[str], *, follow: bool) -> Iterator[tuple[IO[bytes], os.stat_result]]:
    """A regular file opened for reading: devices are refused without even opening them,
    a FIFO is opened non-blocking, and what was opened is checked again (`fstat`)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        mode = (os.stat if follow else os.lstat)(path).st_mode
        if stat.S_ISLNK(mode):
            raise Unreadable("is a symbolic link")
        _check_kind(mode)
        fd = os.open(path, flags if follow else flags | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError as exc:
        raise Missing(exc.strerror or str(exc)) from None
    except OSError as exc:
        raise Unreadable(exc.strerror or str(exc)) from None
    with os.fdopen(fd, "rb", buffering=0) as handle:
        try:
            info = os.fstat(fd)
        except OSError as exc:
            raise Unreadable(exc.strerror or str(exc)) from None
        _check_kind(info.st_mode)  # what was opened, not what the name pointed to before
        yield handle, info


def read_bounded(stream: IO[bytes], limit: int, *, expected: int = 0) -> bytes:
    """Read a stream to its end, refusing it as soon as it passes `limit` bytes.

    `expected`: the size `stat()` reported. The first read asks for one byte more, so a file
    that did not change is read in one piece (no chunks to join: a 12 MB fixture was copied
    once more and its pages touched twice, ~7 ms); a file that grew reads on in chunks.
    """
    chunks: list[bytes] = []
    total = 0
    size = min(expected, limit) + 1 if expected > 0 else _CHUNK
    while True:
        chunk = stream.read(min(size, limit + 1 - total))
        size = _CHUNK
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise TooBig(limit)


def format_limit(limit: int) -> str:
    """A size in one binary unit that --max-size also accepts: `64 MiB`, `512 KiB`, `1000 bytes`."""
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if limit % factor == 0:
            return f"{limit // factor} {unit}"
    return f"{limit} bytes"


def _check_kind(mode: int) -> None:
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise Unreadable("is a directory")
    if stat.S_ISFIFO(mode):
        raise Unreadable("not a regular file (a FIFO)")
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        raise Unreadable("not a regular file (a device)")
    if stat.S_ISSOCK(mode):
        raise Unreadable("not a regular file (a socket)")
    raise Unreadable("not a regular file")
