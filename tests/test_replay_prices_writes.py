"""R-RPL-7's `settings.prices` formula with cache writes, checked against the rule's arithmetic
written out here (not through ctxkit.replay.cost, which the compact rows' oracle shares). The
other prices test is OpenAI-only (nothing written), so billing written tokens twice
(`uncached = prompt - cached`) passed the suite before this test (issue 22's review)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from ctxkit.loading.config import Options
from ctxkit.loading.read import load_fixture
from ctxkit.replay.driver import replay
from ctxkit.reports.replay import report

from .conftest import FIXTURES

PRICES = {"input": "3", "cached_input": "0.3", "cache_write": "3.75", "output": "15"}


@pytest.mark.parametrize("provider", ["anthropic", "openai", "gemini"])
def test_r_rpl_7_settings_prices_with_cache_writes_follow_the_spec_formula(tmp_path: Path, provider: str) -> None:
    text = (FIXTURES / "replay" / "long_session.yaml").read_text(encoding="utf-8")
    prices = "settings: {prices: {input: 3, cached_input: 0.3, cache_write: 3.75, output: 15}}\n"
    path = tmp_path / "priced.yaml"
    path.write_text(text.replace("tokenizer: approx\n", "tokenizer: approx\n" + prices, 1), encoding="utf-8")
    done = replay(load_fixture(str(path)), Options(provider=provider, max_input_tokens=3000))
    p = {k: Decimal(v) for k, v in PRICES.items()}
    writes = 0
    for row in done.calls:
        out = row.output_tokens or 0
        cached, written = row.cached_tokens, row.cache_write_tokens
        writes += written
        cost = (
            (row.prompt_tokens - cached - written) * p["input"]
            + cached * p["cached_input"]
            + written * p["cache_write"]
            + out * p["output"]
        ) / Decimal(1_000_000)
        without = (row.prompt_tokens * p["input"] + out * p["output"]) / Decimal(1_000_000)
        assert (row.cost, row.cost_without_cache) == (cost, without), row.index
    if provider == "anthropic":
        assert writes > 0  # the case the written term matters for
    rows = report(done)["calls"]
    assert json.dumps([r["cost"] for r in rows]) == json.dumps(
        [None if c.cost is None else float(c.cost) for c in done.calls]
    )
