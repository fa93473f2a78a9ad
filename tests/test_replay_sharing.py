"""R-RPL-9: replay shares work between calls, and sharing never changes a call.

Every call assembled with the replay's shared work (`assemble.Shared`: branch lookups, each
stored message's conversion and cacheable copy, the positions behind the lazily recorded
fates of the dropped history) must equal the same call assembled afresh, and each
stored message is converted once per replay, however many calls send it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from ctxkit.assembly.pipeline import run
from ctxkit.errors import CtxkitError
from ctxkit.history import convert
from ctxkit.loading.config import Options
from ctxkit.loading.read import load_fixture
from ctxkit.replay.driver import replay
from ctxkit.translate.items import ItemMemo, prompt_items

from .conftest import FIXTURES, GALLERY

REPLAY_GALLERY = sorted((FIXTURES / "replay").glob("*.yaml"))


@pytest.mark.parametrize("path", GALLERY + REPLAY_GALLERY, ids=lambda p: p.name)
@pytest.mark.parametrize("compress_as", [None, 50])
def test_r_rpl_9_shared_work_gives_the_same_call_as_assembling_afresh(path: Any, compress_as: int | None) -> None:
    fixture = load_fixture(str(path))
    seen: list[int] = []

    def check(index: int, call: Any, result: Any) -> None:
        fresh = run(call.fixture, call.options)
        assert result.payload.body == fresh.payload.body, (path.name, index)
        fates = result.assembly.fates  # the dropped runs are looked up through the replay's shared index
        assert fates == fresh.assembly.fates and list(fates) == list(fresh.assembly.fates), (path.name, index)
        one_by_one = Counter(str(fates[w.key].fate) for w in result.assembly.dropped)
        assert fates.dropped() == one_by_one, (path.name, index)
        assert result.assembly.dropped == fresh.assembly.dropped, (path.name, index)
        seen.append(index)

    try:
        replay(fixture, Options(max_input_tokens=2_000), compress_as=compress_as, on_call=check)
    except CtxkitError:
        return  # fixtures that fail by rule (R-ASM-2/3) have no calls to compare
    assert seen


def test_r_rpl_9_each_stored_message_is_converted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    converted: list[str] = []
    original = convert._message

    def counting(m: Any, *args: Any) -> Any:
        converted.append(m.id)
        return original(m, *args)

    monkeypatch.setattr(convert, "_message", counting)
    done = replay(load_fixture(str(FIXTURES / "replay" / "branch.yaml")))
    assert len(done.calls) == 3
    assert sorted(converted) == sorted(set(converted))


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "ollama"])
def test_r_rpl_9_item_memo_gives_the_items_counted_afresh(provider: str) -> None:
    """R-RPL-4 items through one `ItemMemo` for all the calls of a replay (one tokenizer, as in
    the driver) equal the items keyed and counted afresh."""
    seen = held = 0
    for path in GALLERY + REPLAY_GALLERY:
        memo = ItemMemo()

        def check(index: int, call: Any, result: Any, memo: ItemMemo = memo) -> None:
            nonlocal seen
            meter = result.assembly.meter
            assert prompt_items(result.payload, meter=meter, memo=memo) == prompt_items(result.payload, meter=meter)
            seen += 1

        try:
            replay(load_fixture(str(path)), Options(provider=provider, max_input_tokens=2_000), on_call=check)
        except CtxkitError:
            continue
        held += memo.held()
    assert seen > 50 and held > 50


def test_r_rpl_9_dropped_fates_through_the_shared_index_equal_fresh_ones() -> None:
    """The fates of dropped messages are found through one key index for all calls
    (`convert.Conversions.positions`); each must equal the same call's fate assembled afresh."""
    looked_up = 0

    def check(index: int, call: Any, result: Any) -> None:
        nonlocal looked_up
        fresh = run(call.fixture, call.options).assembly
        for w in fresh.dropped:
            assert result.assembly.fates.get(w.key) == fresh.fates.get(w.key), (index, w.key)
            looked_up += 1

    replay(load_fixture(str(FIXTURES / "replay" / "long_session.yaml")), Options(max_input_tokens=700), on_call=check)
    assert looked_up > 100
