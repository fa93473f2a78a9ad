"""The collector pause: state restored, what was built promoted to the oldest generation."""

from __future__ import annotations

import gc

from ctxkit import collector


def _in_generation(obj: object, generation: int) -> bool:
    return any(o is obj for o in gc.get_objects(generation=generation))


def test_what_was_built_during_the_pause_ends_in_the_oldest_generation() -> None:
    assert gc.isenabled()
    with collector.paused():
        assert not gc.isenabled()
        built = [[index] for index in range(10)]
        assert _in_generation(built, 0)
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert _in_generation(built, 2) and not _in_generation(built, 0)


def test_nested_pauses_promote_once_and_restore_the_collector() -> None:
    with collector.paused():
        with collector.paused():
            inner = [object()]
        assert not gc.isenabled() and _in_generation(inner, 0)  # only the outermost exit promotes
    assert gc.isenabled() and _in_generation(inner, 2)


def test_a_disabled_collector_stays_disabled_and_untouched() -> None:
    gc.disable()
    try:
        with collector.paused():
            kept = [object()]
        assert not gc.isenabled() and _in_generation(kept, 0)
    finally:
        gc.enable()


def test_frozen_objects_of_the_process_stay_frozen() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with collector.paused():
            young = [object()]
        gc.disable()  # no young collection may move it before it is looked for
        assert gc.get_freeze_count() == frozen and _in_generation(young, 0)
    finally:
        gc.unfreeze()
        gc.enable()
