"""The cyclic garbage collector, paused around the stages that build many objects.

Input: nothing. Output: `paused()`, a context manager. Loading a large fixture and
assembling it create hundreds of thousands to millions of objects and no reference
cycles; each time enough of them survive, Python's collector rescans every object in
the process (the whole parsed fixture), which tripled the load time of a 10 MB YAML
fixture and doubled the assembly time of 100,000 messages. Pausing it is safe:
nothing here creates cycles, reference counting still frees everything, and the
previous state is restored on exit (also on errors, also when nested).

On the outermost exit, what was built during the pause is moved to the oldest
generation in one step (`gc.freeze()` then `gc.unfreeze()`, a list splice): left in the
youngest, the first allocation after the pause would scan all of it, ~90 ms after
loading 100,000 messages. Nothing is frozen afterwards, and a process that keeps
frozen objects of its own (a pre-fork server) is left alone.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()
