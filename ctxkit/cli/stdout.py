"""Where the payload or report goes: stdout, and what happens when it cannot be written.

Input: the process's stdout. Output: `OutputError` (exit 2, one line) when stdout
is closed or a write or flush fails (a full disk, an I/O error); a closed pipe
(`| head`) stays a quiet success, as shells expect. Every command prints through
the stream `guard` installs, so this is the one place output errors are decided.
"""

from __future__ import annotations

import errno
import io
import os
import sys
from typing import Any

from ctxkit.errors import CtxkitError


class OutputError(CtxkitError):
    """The output could not be written (exit 2: the environment, not the fixture)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"cannot write output: {reason}")


class _Closed(io.TextIOBase):
    """Stands in for a closed stdout (`>&-`): the first write fails instead of vanishing."""

    encoding = "utf-8"
    errors = "strict"

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        raise OutputError("stdout is closed")


class _Guarded:
    """The real stdout, with write and flush failures turned into `OutputError`."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        if not isinstance(text, str):  # click probes with bytes: a text stream refuses them
            raise TypeError("write() argument must be str")
        if not text:
            return 0
        try:
            return int(self._inner.write(text))
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise _failed(exc) from None
        except UnicodeEncodeError as exc:
            char = exc.object[exc.start]
            raise OutputError(
                f"stdout's encoding ({exc.encoding}) cannot write {char!r} (U+{ord(char):04X}): "
                "set PYTHONIOENCODING=utf-8"
            ) from None

    def flush(self) -> None:
        try:
            self._inner.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise _failed(exc) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Quiet:
    """stderr, where a failed write (`2>/dev/full`, a closed descriptor) is dropped: there is
    nowhere left to say so, and the exit code must stay the one the run decided."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        try:
            return int(self._inner.write(text))
        except (OSError, ValueError):
            _silence(2)
            return len(text)

    def flush(self) -> None:
        try:
            self._inner.flush()
        except (OSError, ValueError):
            _silence(2)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def guard() -> None:
    """Call once before a command runs: output failures become `OutputError`; stderr
    failures are dropped, and stderr (one line per warning or error) writes what its
    encoding cannot as escapes."""
    reconfigure = getattr(sys.stderr, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="backslashreplace")
    if sys.stdout is None:
        sys.stdout = _Closed()
    elif not isinstance(sys.stdout, _Closed | _Guarded):
        sys.stdout = _Guarded(sys.stdout)
    if sys.stderr is not None and not isinstance(sys.stderr, _Quiet):
        sys.stderr = _Quiet(sys.stderr)


def _silence(fd: int) -> None:
    """Point `fd` at the null device, so what is still buffered for it cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
    except (OSError, ValueError):
        pass


def finish() -> None:
    """Call once after a command ran: flush, so a late failure is still reported."""
    if sys.stdout is not None:
        sys.stdout.flush()


def _failed(exc: OSError) -> OutputError:
    """The error to report; what is still buffered is dropped (the exit must not retry it)."""
    try:
        _silence(sys.__stdout__.fileno() if sys.__stdout__ else 1)
    except (OSError, ValueError):
        pass
    return OutputError(exc.strerror or errno.errorcode.get(exc.errno or 0, str(exc)))
