"""R-RPL-9: replay shares work between calls, and sharing never changes a call.

Every call assembled with the replay's shared work (`replay.state.State`: branch lookups, each
stored message's conversion and cacheable copy, the positions behind the lazily recorded
fates of the dropped history) must equal the same call assembled afresh, and each
stored message is converted once per replay, however many calls send it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from ctxkit.errors import CtxkitError
from ctxkit.history import convert
from ctxkit.loading.config import Options
from ctxkit.loading.read import load_fixture
from ctxkit.output import dumps
from ctxkit.pipeline import run
from ctxkit.replay.driver import replay
from ctxkit.translate.items import ItemMemo, priming_tokens, prompt_items, read_items

from .conftest import FIXTURES, GALLERY

REPLAY_GALLERY = sorted((FIXTURES / "replay").glob("*.yaml"))


@pytest.mark.parametrize("path", GALLERY + REPLAY_GALLERY, ids=lambda p: p.name)
@pytest.mark.parametrize("compress_as", [None, 50])
def test_r_rpl_9_shared_work_gives_the_same_call_as_assembling_afresh(path: Any, compress_as: int | None) -> None:
    fixture = load_fixture(str(path))
    seen: list[int] = []

    def check(index: int, call: Any, result: Any) -> None:
        fresh = run(call.fixture, call.options)
        assert dumps(result.payload.body) == dumps(fresh.payload.body), (path.name, index)  # as bytes
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
def test_r_rpl_9_translation_memo_gives_the_items_read_afresh(provider: str) -> None:
    """R-RPL-4 items of every replayed call, emitted by translation through the replay's
    `TranslationMemo` (each working message translated, keyed and counted once), equal the items
    read back from the body of the same call assembled afresh; and most of them came from the memo."""
    seen = reused = 0
    for path in GALLERY + REPLAY_GALLERY:

        def check(index: int, call: Any, result: Any, name: str = path.name) -> None:
            nonlocal seen, reused
            fresh = run(call.fixture, call.options)
            emitted = prompt_items(result.payload, meter=result.assembly.meter)
            assert emitted == read_items(fresh.payload, meter=fresh.assembly.meter), (name, index)
            assert priming_tokens(result.payload, meter=result.assembly.meter) == priming_tokens(
                fresh.payload, meter=fresh.assembly.meter
            )
            reused += sum(k is not None for s in result.payload.messages for k in s.known or ())
            seen += 1

        try:
            replay(load_fixture(str(path)), Options(provider=provider, max_input_tokens=2_000), on_call=check)
        except CtxkitError:
            continue
    assert seen > 50 and reused > 500


def test_r_rpl_9_item_memo_gives_the_items_counted_afresh() -> None:
    """The `ItemMemo` (log replay: each distinct item of bodies as sent keyed and counted once)
    gives the items read afresh (one memo per tokenizer, as in `replay.logs`)."""
    seen = held = 0
    for path in GALLERY:
        memo = ItemMemo()
        try:
            result = run(load_fixture(str(path)), Options(provider="anthropic", max_input_tokens=2_000))
        except CtxkitError:
            continue
        for _ in range(2):
            meter = result.assembly.meter
            assert read_items(result.payload, meter=meter, memo=memo) == read_items(result.payload, meter=meter)
            seen += 1
        held += memo.held()
    assert seen > 20 and held > 50


def test_r_rpl_9_dropped_fates_through_the_shared_index_equal_fresh_ones() -> None:
    """The fates of dropped messages are found through one key index for all calls
    (the positions on the path of `replay.state.State`); each must equal the same call's fate assembled afresh."""
    looked_up = 0

    def check(index: int, call: Any, result: Any) -> None:
        nonlocal looked_up
        fresh = run(call.fixture, call.options).assembly
        for w in fresh.dropped:
            assert result.assembly.fates.get(w.key) == fresh.fates.get(w.key), (index, w.key)
            looked_up += 1

    replay(load_fixture(str(FIXTURES / "replay" / "long_session.yaml")), Options(max_input_tokens=700), on_call=check)
    assert looked_up > 100


def _prompts() -> Any:
    """Prompts over a few item keys, so that they share prefixes, fork and end inside each other's runs."""
    from hypothesis import strategies as st

    item = st.tuples(st.sampled_from("abcd"), st.booleans())  # (key, breakpoint)
    return st.lists(st.tuples(st.lists(item, max_size=9), st.integers(0, 400)), min_size=1, max_size=14)


def _brute_path(prompts: list[tuple[Any, ...]], keys: tuple[str, ...], first: int, min_tokens: int) -> Any:
    """What the trie walk must find, from every earlier prompt within the window one by one."""
    from ctxkit.replay import trie

    def shared(j: int) -> int:
        n = 0
        while n < min(len(keys), len(prompts[j])) and prompts[j][n].key == keys[n]:
            n += 1
        return n

    window = range(first, len(prompts))
    common, latest = max(((shared(j), j) for j in window), default=(0, -1))
    marks = []
    for depth in range(common, 0, -1):
        # a mark records the latest call of the window (the trie forgets the calls before it: beyond
        # the TTL, or for Ollama before the previous call, nothing of theirs can be read again)
        through = [j for j in window if shared(j) >= depth and prompts[j][depth - 1].breakpoint]
        if through:
            stored = [j for j in through if sum(i.tokens for i in prompts[j][:depth]) >= min_tokens]
            marks.append((depth, max(stored, default=-1), max(through), -1))  # the writer is not compared
    return trie.Walked(common, latest if common else -1, marks)


@pytest.mark.parametrize("provider", ["openai", "anthropic", "ollama"])
def test_r_rpl_5_path_compressed_trie_finds_what_every_earlier_prompt_gives(provider: str) -> None:
    """R-RPL-5/R-RPL-9: the cache's trie stores a run of items as one edge, split where a later
    prompt leaves it or ends inside it; each call's hit must equal the one computed from every
    earlier prompt within the TTL directly (longest common prefix, latest on a tie, and the
    latest call that marked or stored each breakpoint item)."""
    from datetime import UTC, datetime, timedelta
    from itertools import accumulate

    from hypothesis import given, settings

    from ctxkit.loading.domain import CacheRules
    from ctxkit.replay import cache
    from ctxkit.translate.items import Item

    tokens = {"a": 300, "b": 7, "c": 500, "d": 40}  # an item's tokens follow its key, as in a replay

    @settings(max_examples=150, deadline=None)
    @given(_prompts())
    def check(calls: list[tuple[list[tuple[str, bool]], int]]) -> None:
        rules = cache.rules(provider, "model", CacheRules(min_tokens=600, lookback=3))
        trie, oracle = cache.Cache(rules), cache.Cache(rules)
        prompts: list[tuple[Item, ...]] = []
        clock, first = datetime(2026, 3, 14, tzinfo=UTC), 0
        for index, (spec, gap) in enumerate(calls):
            items = tuple(Item(k, tokens[k], "user", bp) for n, (k, bp) in enumerate(spec))
            clock += timedelta(seconds=gap)  # gaps over the 300-second TTL start a new window
            if index and gap > rules.ttl_seconds:
                first = index
            low = max(first, index - 1) if rules.mode == "previous" else first
            keys = tuple(k for k, _ in spec)
            path = _brute_path(prompts, keys, low, rules.min_tokens)
            walked = trie.trie.walk(keys, low)
            assert (walked.common, walked.latest) == (path.common, path.latest), (index, calls)
            assert [m[:3] for m in walked.marks] == [m[:3] for m in path.marks], (index, calls)
            hit = trie.add(items, clock)
            candidate = path.latest if path.common else (index - 1 if index > low else None)
            prefix = sum(i.tokens for i in items[: path.common])
            points = oracle._breakpoints(items)
            ends = list(accumulate((i.tokens for i in items), initial=0))
            assert hit == oracle._apply(index, items, path, low, candidate, prefix, points, ends)[0], (index, calls)
            prompts.append(items)

    check()


@pytest.mark.parametrize("path", REPLAY_GALLERY + [FIXTURES / "tool_loop_in_flight.yaml"], ids=lambda p: p.name)
def test_r_rpl_9_earlier_calls_kept_overtaken_and_numbered_give_the_same_replay(path: Any, monkeypatch: Any) -> None:
    """Issue 19 item 6: an earlier call is kept only from where no later call overtook it, its
    items as numbers (`breaks.Earlier`), and forgotten when nothing of it is left or the TTL ends;
    every call's row (candidate, break, cause, lost tokens, cache) must equal the replay that keeps
    every earlier call whole, for every provider's rules and a window that truncates."""
    from ctxkit.replay import driver

    fixture = load_fixture(str(path))
    for provider, model in ((None, None), ("anthropic", "claude-sonnet-4-5"), ("ollama", "llama3.1")):
        for window in (None, 700):
            options = Options(provider=provider, model=model, max_input_tokens=window)
            try:
                kept = replay(fixture, options)
            except CtxkitError:
                continue
            with monkeypatch.context() as m:
                m.setattr(driver, "_trim", lambda *args: None)
                whole = replay(fixture, options)
            assert kept == whole, (path.name, provider, window)


def test_r_rpl_9_a_truncating_history_keeps_numbers_and_gives_the_same_replay(tmp_path: Any, monkeypatch: Any) -> None:
    """The same, for a generated history of 150 messages at a 4,000-token window: truncation moves
    the window's start every call, so every earlier call is kept from its third item on."""
    import json

    from ctxkit.replay import driver

    from .helpers import bench_history

    path = tmp_path / "h.json"
    path.write_text(json.dumps(bench_history(150)), encoding="utf-8")
    fixture = load_fixture(str(path))
    options = Options(max_input_tokens=4000)
    kept = replay(fixture, options)
    monkeypatch.setattr(driver, "_trim", lambda *args: None)
    assert kept == replay(fixture, options)
    assert sum(c.brk.cause == "truncation" for c in kept.calls) > 20


def _repeated_call_fixture(second_args: str, stories: int) -> str:
    """A question answered by a tool call, `stories` long exchanges, then the same call id again
    with arguments equal as Python dicts but sent differently (`second_args`)."""
    long = " ".join(["word"] * 60)
    middle = "".join(
        f"  - {{id: s{n}, role: user, text: 'story {n} {long}'}}\n"
        f"  - {{id: t{n}, role: assistant, text: 'once {long}'}}\n"
        for n in range(stories)
    )
    return (
        "ctxkit: 1\nname: repeated call id\nnow: '2026-03-14T09:12:00Z'\n"
        "model: {provider: openai, name: gpt-4o, max_input_tokens: 200000}\n"
        "tokenizer: approx\nprompts: {system: S, datetime_aware: false}\nmessages:\n"
        "  - {id: u1, role: user, text: 'Oslo?'}\n"
        "  - {id: a1, role: assistant, text: Checking., tool_calls: "
        "[{id: call_1, name: get_weather, args: {city: Oslo, days: 1}, response: rain}]}\n"
        + middle
        + "  - {id: u9, role: user, text: 'Again?'}\n"
        "  - {id: a9, role: assistant, text: Checking., tool_calls: "
        f"[{{id: call_1, name: get_weather, args: {second_args}, response: sun}}]}}\n"
        "  - {id: u10, role: user, text: Thanks}\n"
    )


@pytest.mark.parametrize(
    "second_args", ["{days: true, city: Oslo}", "{days: 1, city: Oslo}", "{city: Oslo, days: 1.0}"]
)
@pytest.mark.parametrize("stories", [0, 6])
@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "ollama"])
def test_r_rpl_9_a_repeated_call_id_with_arguments_written_otherwise_is_sent_as_written(
    second_args: str, stories: int, provider: str, tmp_path: Any, monkeypatch: Any
) -> None:
    """Replay shares a translation between messages of equal content (R-RPL-9). A later message
    with the same call id whose arguments differ only in key order or in `1`/`1.0`/`true` (equal
    as Python dicts) must still be sent as it is written, whether the first one is still in the
    window or long gone (window 600 with six long exchanges between them)."""
    from .helpers import replay_against_fresh

    path = tmp_path / "f.yaml"
    path.write_text(_repeated_call_fixture(second_args, stories), encoding="utf-8")
    options = Options(provider=provider, max_input_tokens=600 if stories else None)
    assert replay_against_fresh(load_fixture(str(path)), options, monkeypatch) >= 4
