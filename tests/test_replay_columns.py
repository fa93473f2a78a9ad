"""R-RPL-9: a replayed call's item columns (`replay/prefix.py::Columns`: key numbers, tokens,
breakpoints), taken as slices of the last call's for the runs of items both send, equal the
columns read off the call's own items; and the cache reads them as it reads the items."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxkit.loading.config import Options
from ctxkit.loading.read import load_fixture
from ctxkit.replay import cache, driver, prefix

from .helpers import bench_history


@pytest.mark.parametrize(("provider", "model"), [("openai", None), ("anthropic", "claude-sonnet-4-5")])
@pytest.mark.parametrize("window", [3000, None])
def test_r_rpl_9_carried_columns_equal_the_items_own(
    provider: str, model: str | None, window: int | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "h.json"
    path.write_text(json.dumps(bench_history(120)), encoding="utf-8")
    seen: list[int] = []
    columns = prefix.Numbers.columns

    def checked(self: prefix.Numbers, items: Any, carried: Any = None) -> prefix.Columns:
        made = columns(self, items, carried)
        keys = {k: n for n, k in zip(made.keys, (i.key for i in items), strict=True)}
        assert [keys[i.key] for i in items] == list(made.keys)  # one number per key
        assert list(made.tokens) == [i.tokens for i in items]
        assert str(made.total) == str(sum(i.tokens for i in items))  # carried: the last call's, less and plus
        assert made.marks == bytes(i.breakpoint for i in items)
        assert made.marked() == [n for n, i in enumerate(items) if i.breakpoint]
        seen.append(sum(i.breakpoint for i in items))
        return made

    monkeypatch.setattr(prefix.Numbers, "columns", checked)
    done = driver.replay(load_fixture(str(path)), Options(provider=provider, model=model, max_input_tokens=window))
    assert len(seen) == len(done.calls) > 50
    assert (provider == "anthropic") == any(seen)  # Anthropic's breakpoints were carried


@pytest.mark.parametrize(("provider", "model"), [("anthropic", "claude-sonnet-4-5"), ("openai", "gpt-5.6")])
def test_r_rpl_5_the_cache_reads_columns_as_it_reads_items(provider: str, model: str) -> None:
    from ctxkit.loading.domain import CacheRules
    from ctxkit.translate.items import Item

    rules = cache.rules(provider, model, CacheRules())
    numbers = prefix.Numbers()
    plain, columned = cache.Cache(rules), cache.Cache(rules)
    history: list[Item] = []
    for n in range(30):
        history.append(Item(f"k{n}", 400 + 37 * n, "user" if n % 2 else "assistant", n % 5 == 0))
        prompt = (Item(f"s{n // 7}", 900, "system", True), *history[n // 3 :])
        cols = numbers.columns(prompt)
        assert columned.add(prompt, None, cols.keys, cols) == plain.add(prompt, None), n


@pytest.mark.parametrize(("provider", "window"), [("openai", 3000), ("openai", None), ("anthropic", 3000)])
def test_r_rpl_6_lost_tokens_from_the_columns_equal_the_sets(
    provider: str, window: int | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A break's lost tokens against the last call, read off the columns (the tokens from the
    break on, less the last items of each key this call sends more often), equal `_lost` over
    the two calls' keys."""
    from ctxkit.replay import breaks

    path = tmp_path / "h.json"
    path.write_text(json.dumps(bench_history(120)), encoding="utf-8")
    lost = breaks.MappedCall.lost
    quick = [0]

    def checked(self: breaks.MappedCall, cand: Any, common: int) -> int:
        got = lost(self, cand, common)
        assert got == breaks._lost(self.items[common:], cand.keys_from(common), self.keys_from(common))
        quick[0] += self.columns is not None and cand.keys is self.columns.last_keys
        return got

    monkeypatch.setattr(breaks.MappedCall, "lost", checked)
    model = "claude-sonnet-4-5" if provider == "anthropic" else None
    done = driver.replay(load_fixture(str(path)), Options(provider=provider, model=model, max_input_tokens=window))
    assert quick[0] > len(done.calls) // 2


def test_r_rpl_9_carried_key_counts_follow_repeated_keys() -> None:
    """The last call's keys, counted and carried by runs, say which keys a call sends twice and
    which it sends more often than the last call (and how much more), and its tokens' total
    carried the same way gives the tokens from any item on, on windows that slide, repeat and
    jump."""

    from ctxkit.translate.items import Item

    rng = random.Random(7)
    numbers = prefix.Numbers()
    stream = [Item(f"k{rng.randrange(12)}", rng.randrange(1, 50), "user") for _ in range(400)]
    before: list[int] = []
    for _ in range(120):
        start = rng.randrange(len(stream) - 30)
        prompt = tuple(stream[start : start + rng.randrange(1, 30)])
        if rng.random() < 0.3:
            prompt = (Item("s", 5, "system"), *prompt)
        cols = numbers.columns(prompt)
        keys = list(cols.keys)
        assert cols.distinct == (len(set(keys)) == len(keys))
        assert cols.repeated == {key for key in keys if keys.count(key) > 1}
        more = {key: keys.count(key) - before.count(key) for key in keys if keys.count(key) > before.count(key)}
        assert sorted(cols.surplus) == sorted(more.items())
        assert [cols.tokens_from(n) for n in range(len(keys) + 1)] == [
            sum(cols.tokens[n:]) for n in range(len(keys) + 1)
        ]
        before = keys


def _window_steps() -> st.SearchStrategy[list[tuple[int, int, list[tuple[int, int]], bool]]]:
    """Steps of a window: drop n items after the first, keep at most m, append these (key,
    tokens) items, or jump (start afresh from the appended ones)."""
    item = st.tuples(st.integers(0, 5), st.integers(1, 9))  # few keys, each with differing tokens
    step = st.tuples(st.integers(0, 4), st.integers(0, 40), st.lists(item, max_size=5), st.booleans())
    return st.lists(step, min_size=1, max_size=25)


@settings(max_examples=300, deadline=None)
@given(
    steps=_window_steps(),
    few=st.sampled_from([0, 1, 16]),
    aside=st.sampled_from([0, 3, 128]),
    rng=st.randoms(use_true_random=False),
)
def test_r_rpl_6_lost_tokens_on_repeated_keys_equal_the_counted_ones(
    steps: list[tuple[int, int, list[tuple[int, int]], bool]], few: int, aside: int, rng: random.Random
) -> None:
    """R-RPL-6: a break's lost tokens from the columns (the last call's carried key counts, or
    the runs two calls share) equal `_lost` counting the two calls' keys item by item, on windows
    that repeat keys whose items carry different tokens (a key's first items are the ones
    matched, so taking any other of its items gives other tokens), against the last call and
    older ones, at the common prefix and at other places, on each of the ways `lost` counts."""
    from ctxkit.replay import breaks
    from ctxkit.translate.items import Item, Prompt

    made: dict[tuple[int, int], Item] = {}  # one object per (key, tokens), as the item memo makes
    system = Item("s", 3, "system")
    numbers, window, views = prefix.Numbers(), [system], list[breaks.MappedCall]()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(breaks, "_FEW", few)
        mp.setattr(breaks, "_ASIDE", aside)
        for drop, most, added, jump in steps:
            new = [made.setdefault(p, Item(f"k{p[0]}", p[1], "user")) for p in added]
            window = [system, *new] if jump else [system, *window[1 + drop :][-most:], *new] if most else [system, *new]
            prompt = tuple(window)
            cols = numbers.columns(prompt)
            view = breaks.MappedCall(Prompt(prompt, 0, [], 0), cols.keys, [], [], "u", None, None, columns=cols)
            for cand in views[-3:]:
                shared = prefix.common_prefix(list(cols.keys), list(cand.keys))
                for common in (shared, rng.randint(0, shared), rng.randint(0, len(prompt))):
                    got = view.lost(cand, common)
                    want = breaks._lost(prompt[common:], cand.keys_from(common), view.keys_from(common))
                    assert (type(got), got) == (int, want), (common, list(cols.keys), list(cand.keys))
            views.append(view)


@pytest.mark.parametrize("provider", ["openai", "ollama", "anthropic"])
@pytest.mark.parametrize("window", [3000, None])
def test_r_rpl_9_columns_from_the_item_memos_runs_equal_the_found_ones(
    provider: str, window: int | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runs the item memo took (`Prompt.carried`: this call's items that are the last call's,
    by item) are runs of equal items of the last call's items, and the columns made from them
    equal the columns made from the runs found by comparing the items (`prefix.runs`)."""
    from ctxkit.translate import items as items_module

    path = tmp_path / "h.json"
    path.write_text(json.dumps(bench_history(120)), encoding="utf-8")
    prompts: list[Any] = []
    made = items_module.prompt_items

    def kept(*args: Any, **kwargs: Any) -> Any:
        prompts.append(made(*args, **kwargs))
        return prompts[-1]

    monkeypatch.setattr(driver, "prompt_items", kept)
    found, taken, used = prefix.Numbers(), prefix.Numbers(), []
    columns = prefix.Numbers.columns

    def both(self: prefix.Numbers, items: Any, carried: Any = None) -> prefix.Columns:
        prompt = prompts[-1]
        assert prompt.items is items
        if prompt.carried is not None:
            last, runs = prompt.carried
            assert len(prompts) > 1 and last is prompts[-2].items  # the last call's very items
            for i, j, k in runs:
                assert k > 0 and items[i : i + k] == last[j : j + k]
            assert [r[0] for r in runs] == sorted(r[0] for r in runs)
            used.append(len(runs))
        a, b = columns(found, items), columns(taken, items, prompt.carried)
        for field in ("keys", "tokens", "marks", "total", "repeated"):
            assert repr(getattr(a, field)) == repr(getattr(b, field)), field
        assert sorted(a.surplus) == sorted(b.surplus)
        return columns(self, items, prompt.carried)

    monkeypatch.setattr(prefix.Numbers, "columns", both)
    done = driver.replay(load_fixture(str(path)), Options(provider=provider, max_input_tokens=window))
    assert len(prompts) == len(done.calls) > 50
    assert (provider != "anthropic") == (len(used) > len(done.calls) // 2)  # one item per message: runs taken


@pytest.mark.parametrize("limit", [prefix.LOG_LIMIT, 200])
@pytest.mark.parametrize("window", [3000, None])
def test_r_rpl_9_keys_logged_once_read_back_equal(
    window: int | None, limit: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each call's key numbers sit in the shared log (`Numbers.log`: keys[x] == log[at + x] from
    `lo` on) and still do after the replay (the log is only appended to, a full one replaced); a
    sliding window appends only its new items, so the logs hold far fewer numbers than the calls."""
    monkeypatch.setattr(prefix, "LOG_LIMIT", limit)
    path = tmp_path / "h.json"
    path.write_text(json.dumps(bench_history(160)), encoding="utf-8")
    kept: list[tuple[Any, int, int, list[int]]] = []
    columns = prefix.Numbers.columns

    def logged(self: prefix.Numbers, items: Any, carried: Any = None) -> prefix.Columns:
        made = columns(self, items, carried)
        log, at, lo = made.logged  # type: ignore[misc]
        assert 0 <= lo <= len(made.keys) and at + lo >= 0
        kept.append((log, at, lo, list(made.keys)))
        return made

    monkeypatch.setattr(prefix.Numbers, "columns", logged)
    done = driver.replay(load_fixture(str(path)), Options(max_input_tokens=window))
    assert len(kept) == len(done.calls) > 50
    for log, at, lo, keys in kept:
        assert list(log[at + lo : at + len(keys)]) == keys[lo:]
    logs = {id(log): len(log) for log, *_ in kept}
    assert (len(logs) > 1) == (limit < 1000)
    if window is not None:  # the window slid: most calls appended only their new items
        assert sum(logs.values()) < sum(len(k) for *_, k in kept) / 3
        assert sum(lo > 0 for _, _, lo, _ in kept) > len(kept) / 2
