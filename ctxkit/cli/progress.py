"""Progress of a long command on stderr, only when stderr is a terminal (R-RPL-8).

A pipe, a file or a test's captured output never sees it: what is written there stays the
command's output and its warnings, byte for byte the same with or without a terminal.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import click

Step = Callable[[], None]


@contextmanager
def progress(total: int, label: str) -> Iterator[Step]:
    """`step()` once per unit of `total`; the bar is drawn and cleared only on a terminal."""
    if not sys.stderr.isatty():
        yield _nothing
        return
    bar = click.progressbar(length=total, label=label, file=sys.stderr)
    try:
        yield lambda: bar.update(1)
    finally:
        bar.render_finish()


def _nothing() -> None:
    return None
