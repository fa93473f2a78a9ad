"""R-RPL-9: a replayed call's item columns (`replay/prefix.py::Columns`: key numbers, tokens,
breakpoints), taken as slices of the last call's for the runs of items both send, equal the
columns read off the call's own items; and the cache reads them as it reads the items."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

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

    def checked(self: prefix.Numbers, items: Any) -> prefix.Columns:
        made = columns(self, items)
        keys = {k: n for n, k in zip(made.keys, (i.key for i in items), strict=True)}
        assert [keys[i.key] for i in items] == list(made.keys)  # one number per key
        assert list(made.tokens) == [i.tokens for i in items]
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
    break on, less the items the last call did not send), equal `_lost` over the two calls' keys."""
    from ctxkit.replay import breaks

    path = tmp_path / "h.json"
    path.write_text(json.dumps(bench_history(120)), encoding="utf-8")
    lost = breaks.MappedCall.lost
    quick = [0]

    def checked(self: breaks.MappedCall, cand: Any, common: int) -> int:
        got = lost(self, cand, common)
        assert got == breaks._lost(self.items[common:], cand.keys_from(common), self.keys_from(common))
        quick[0] += self.columns is not None and cand.keys is self.columns.last_keys and self.columns.distinct
        return got

    monkeypatch.setattr(breaks.MappedCall, "lost", checked)
    model = "claude-sonnet-4-5" if provider == "anthropic" else None
    done = driver.replay(load_fixture(str(path)), Options(provider=provider, model=model, max_input_tokens=window))
    assert quick[0] > len(done.calls) // 2


def test_r_rpl_9_carried_key_counts_follow_repeated_keys() -> None:
    """The last call's keys, counted and carried by runs, say whether a call sends a key twice and
    which items in no run the last call did not send, on windows that slide, repeat and jump."""
    import random

    from ctxkit.translate.items import Item

    rng = random.Random(7)
    numbers = prefix.Numbers()
    stream = [Item(f"k{rng.randrange(12)}", 10, "user") for _ in range(400)]
    before: list[int] = []
    for _ in range(120):
        start = rng.randrange(len(stream) - 30)
        prompt = tuple(stream[start : start + rng.randrange(1, 30)])
        if rng.random() < 0.3:
            prompt = (Item("s", 5, "system"), *prompt)
        cols = numbers.columns(prompt)
        keys = list(cols.keys)
        assert cols.distinct == (len(set(keys)) == len(keys))
        covered = {i + t for i, _, k in cols.runs for t in range(k)}
        assert list(cols.unsent) == [p for p, key in enumerate(keys) if p not in covered and key not in before]
        before = keys
