"""R-RPL-9: a replayed call's cache work follows what changed since the previous call.

The cache compares each prompt with the previous one (`prefix.common_prefix`), walks and extends
its trie only from where the two part (and follows a recent call's path it comes back to, compared
in C: `trie.Trie.paths`), and numbers only the items the previous prompt did not share
(`prefix.Numbers`). Each must give exactly what the plain way gives: every walk from the
trie's root (`Cache.incremental = False`), every key numbered one by one, the prefix counted
item by item.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxkit.loading.domain import CacheRules
from ctxkit.replay import cache
from ctxkit.replay.prefix import Numbers, common_prefix
from ctxkit.translate.items import Item

TOKENS = {"a": 300, "b": 7, "c": 500, "d": 40, "e": 1100, "f": 3}


def _calls() -> Any:
    """Each call keeps a leading run of an earlier prompt (the previous one most often) and adds a
    few items, so that calls share long prefixes, part inside and at the end of trie edges,
    truncate (keep nothing), come back to an older branch, and idle past the TTL."""
    item = st.tuples(st.sampled_from("abcdef"), st.booleans())  # (key, breakpoint)
    step = st.tuples(st.integers(0, 3), st.integers(0, 14), st.lists(item, max_size=4), st.integers(0, 400))
    return st.lists(step, min_size=1, max_size=18)


def _prompts(steps: list[tuple[int, int, list[tuple[str, bool]], int]]) -> list[tuple[list[tuple[str, bool]], int]]:
    prompts: list[list[tuple[str, bool]]] = []
    out = []
    for back, keep, added, gap in steps:
        base = prompts[-1 - min(back, len(prompts) - 1)] if prompts else []
        prompt = base[:keep] + added
        prompts.append(prompt)
        out.append((prompt, gap))
    return out


@pytest.mark.parametrize(
    ("provider", "model"),
    [("openai", "gpt-4o"), ("openai", "gpt-5.6"), ("anthropic", "claude-sonnet-4-5"), ("ollama", "llama3.1")],
)
def test_r_rpl_9_the_incremental_trie_equals_the_walk_from_the_root(provider: str, model: str) -> None:
    """Every call's hit, the calls it overtook (and down to which depth, in the same order), the
    walk a later call would make, and the writes never read: the same both ways."""

    @settings(max_examples=300, deadline=None)
    @given(_calls(), st.booleans())
    def check(steps: list[tuple[int, int, list[tuple[str, bool]], int]], numbered: bool) -> None:
        rules = cache.rules(provider, model, CacheRules(min_tokens=600, lookback=3))
        fast, plain = cache.Cache(rules), cache.Cache(rules)
        plain.incremental = False
        numbers, ids = Numbers(), dict[str, int]()
        clock = datetime(2026, 3, 14, tzinfo=UTC)
        calls = _prompts(steps)
        for index, (spec, gap) in enumerate(calls):
            items = tuple(Item(k, TOKENS[k], "user" if n % 3 else "assistant", bp) for n, (k, bp) in enumerate(spec))
            clock += timedelta(seconds=gap)  # gaps over the TTL empty the trie
            keys: Any = None
            columns = None  # numbered: the columns too, whose first run the cache starts its comparison after
            if numbered:
                columns = numbers.columns(items)
                keys = columns.keys
                assert list(keys) == [ids.setdefault(k, len(ids)) for k, _ in spec], (index, calls)
            assert fast.add(items, clock, keys, columns) == plain.add(items, clock, keys), (index, calls)
            assert list(fast.overtaken.items()) == list(plain.overtaken.items()), (index, calls)
            probe = tuple(k for k, _ in calls[0][0]) if not numbered else keys
            first = fast.keep_from
            assert fast.trie.walk(probe, first) == plain.trie.walk(probe, first), (index, calls)
        assert [fast.unread_write(i) for i in range(len(calls))] == [plain.unread_write(i) for i in range(len(calls))]

    check()


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from("ab"), max_size=40), st.lists(st.sampled_from("ab"), max_size=40))
def test_r_rpl_9_the_common_prefix_found_by_bisection_is_the_one_counted(a: list[str], b: list[str]) -> None:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    assert common_prefix(a, b) == common_prefix(tuple(b), tuple(a)) == n
    assert common_prefix(a, a) == len(a)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.sampled_from("ab"), max_size=40),
    st.lists(st.sampled_from("ab"), max_size=40),
    st.integers(0, 40),
    st.integers(0, 40),
    st.integers(0, 40),
)
def test_r_rpl_9_a_common_run_from_two_places_is_the_one_counted(
    a: list[str], b: list[str], i: int, j: int, most: int
) -> None:
    """`common_run(a, i, b, j, most)`: the equal items from a[i] and b[j] on, at most `most`,
    found without copying the sequences first (the runs of the item memo and the columns)."""
    from ctxkit.translate.itemmemo import common_run

    i, j = min(i, len(a)), min(j, len(b))
    most = min(most, len(a) - i, len(b) - j)
    n = 0
    while n < most and a[i + n] == b[j + n]:
        n += 1
    assert common_run(a, i, b, j, most) == common_run(tuple(a), i, tuple(b), j, most) == n


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.sampled_from("ab"), min_size=1, max_size=40),
    st.lists(st.sampled_from("ab"), min_size=1, max_size=40),
    st.integers(0, 40),
    st.integers(0, 40),
)
def test_r_rpl_9_the_shared_bisection_finds_the_first_difference(a: list[str], b: list[str], i: int, j: int) -> None:
    """`bisected`, which the item memo's runs and translation's runs (`memo._common`, with its
    cheaper `differ`) share: from a known equal start and a known unequal end, the first place
    where the two differ, with or without `differ`."""
    from operator import ne

    from ctxkit.translate.itemmemo import bisected

    a, b = [*a, "x"], [*b, "y"]  # the two differ by the end of the shorter one: an unequal end
    i, j = min(i, len(a) - 1), min(j, len(b) - 1)
    most = min(len(a) - i, len(b) - j)
    n = 0
    while a[i + n] == b[j + n]:
        n += 1
    for low in range(n + 1):
        assert bisected(a, i, b, j, low, most) == bisected(a, i, b, j, low, most, ne) == n


def test_r_rpl_9_sides_numbered_in_c_and_lost_tokens_equal_the_item_by_item_way(
    monkeypatch: Any, tmp_path: Any
) -> None:
    """`Sides.numbers` (keys built and looked up in C) gives each kept item the side the item by
    item way gives, and `_lost` with no key twice (a set, in C) and `MappedCall.lost` (read off the
    columns) the tokens the counting loop gives, on every replay fixture and a history whose
    window truncates."""
    import json
    from collections import Counter

    from ctxkit.loading.config import Options
    from ctxkit.loading.read import load_fixture
    from ctxkit.replay import breaks
    from ctxkit.replay.driver import replay

    from .conftest import FIXTURES
    from .helpers import bench_history

    numbers, lost, lost_from_columns = breaks.Sides.numbers, breaks._lost, breaks.MappedCall.lost
    checked = Counter[str]()

    def numbered(sides: breaks.Sides, view: breaks.MappedCall, start: int) -> Any:
        found = numbers(sides, view, start)
        for n, number in enumerate(found, start):
            item = view.items[n]
            own, side, segment = sides.table[number]
            assert (*own, breaks.Source.of(side, segment)) == (
                item.tokens,
                item.role,
                item.breakpoint,
                view.source_at(n),
            )
            checked["sides"] += 1
        return found

    def one_by_one(mine: Any, theirs: Any, keys: Any = None) -> int:
        unused, expected = Counter(theirs), 0
        for item, key in zip(mine, keys if keys is not None else [i.key for i in mine], strict=True):
            if unused[key] > 0:
                unused[key] -= 1
                expected += item.tokens
        return expected

    def counted(mine: Any, theirs: Any, keys: Any = None) -> int:
        expected = one_by_one(mine, theirs, keys)
        assert lost(mine, theirs, keys) == expected
        checked["lost"] += 1
        return expected

    def counted_from_columns(view: breaks.MappedCall, cand: Any, common: int) -> int:
        expected = one_by_one(view.items[common:], cand.keys_from(common), view.keys_from(common))
        assert lost_from_columns(view, cand, common) == expected
        checked["lost"] += 1
        return expected

    monkeypatch.setattr(breaks.Sides, "numbers", numbered)
    monkeypatch.setattr(breaks, "_lost", counted)
    monkeypatch.setattr(breaks.MappedCall, "lost", counted_from_columns)
    path = tmp_path / "h.json"
    path.write_text(json.dumps(bench_history(120)), encoding="utf-8")
    for name in [*sorted((FIXTURES / "replay").glob("*.yaml")), path]:
        for window in (None, 4000):
            replay(load_fixture(str(name)), Options(max_input_tokens=window))
    assert checked["sides"] > 1000 and checked["lost"] > 100, checked
