"""The collector pause: state restored, what was built promoted to the oldest generation."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from ctxkit import collector, providers
from ctxkit.loading.config import Options
from ctxkit.loading.read import load_fixture
from ctxkit.replay.driver import replay

FIXTURES = Path(__file__).parent.parent / "fixtures"


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


@pytest.mark.parametrize("provider", providers.names())
def test_r_rpl_9_replay_makes_no_reference_cycles(provider: str) -> None:
    """Replay runs with the collector paused, so a reference cycle among its objects is memory
    kept to the end of the run (the translation memo's entries and their wire messages held
    each other: 20,000 messages at 8,000 tokens grew by 70 MiB). Reference counting alone must
    free everything a replay made once it is dropped."""
    fixture = load_fixture(str(FIXTURES / "replay" / "long_session.yaml"))
    with collector.paused():
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            replay(fixture, Options(provider=provider, max_input_tokens=1_500))
            gc.collect()
            ours = [o for o in gc.garbage if type(o).__module__.startswith("ctxkit.")]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
    assert [type(o).__qualname__ for o in ours[:5]] == []
