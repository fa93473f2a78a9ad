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
