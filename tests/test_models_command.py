"""`ctxkit models` (issue 21 item 2): the table with each field's source, prices from genai-prices.

Expected prices and windows are asked of the genai-prices package directly here, not through ctxkit.
"""

from __future__ import annotations

import importlib.metadata
import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from ctxkit.loading.models import known_models, lookup

from .conftest import ctxkit

AT = "2026-12-01"
PACKAGE = f"genai-prices {importlib.metadata.version('genai-prices')}"
SAMPLE = [
    ("openai", "gpt-4o", "openai"),
    ("anthropic", "claude-haiku-4-5", "anthropic"),
    ("gemini", "gemini-2.5-flash", "google"),
]


def _listed() -> dict[tuple[str, str], dict[str, Any]]:
    rows = json.loads(ctxkit("models", "--at", AT, "--format", "json").out)
    return {(r["provider"], r["model"]): r for r in rows}


def test_models_lists_every_row_of_the_table_with_its_lookup_values():
    listed = _listed()
    expected = {(p, n) for p in ("openai", "anthropic", "gemini", "ollama") for n in known_models(p)}
    assert set(listed) == expected
    for (provider, name), row in listed.items():
        info = lookup(provider, name)
        assert info is not None
        assert (row["max_input_tokens"], row["max_output_tokens"], row["supports_images"], row["tokenizer"]) == (
            info.max_input_tokens,
            info.max_output_tokens,
            info.supports_images,
            info.tokenizer,
        )


@pytest.mark.parametrize(("provider", "name", "package_provider"), SAMPLE)
def test_models_prices_and_windows_are_genai_prices(provider, name, package_provider):
    """The listed prices are the package's in force on --at, its window the package's context_window."""
    import genai_prices

    _, model = genai_prices.data_snapshot.get_snapshot().find_provider_model(name, None, package_provider, None)
    price = model.get_prices(datetime.fromisoformat(AT).replace(tzinfo=UTC))
    row = _listed()[(provider, name)]
    assert row["max_input_tokens"] == model.context_window
    assert Decimal(row["prices_per_million"]["input_mtok"]) == price.input_mtok
    assert Decimal(row["prices_per_million"]["output_mtok"]) == price.output_mtok
    assert Decimal(row["prices_per_million"]["cache_read_mtok"]) == price.cache_read_mtok
    assert row["sources"]["max_input_tokens"] == f"{PACKAGE} ({model.id})"
    assert row["sources"]["prices"] == f"{PACKAGE} ({model.id})"
    assert row["sources"]["tokenizer"] == "ctxkit/data/models.json"


def test_models_names_ctxkit_as_the_source_where_the_package_has_nothing():
    """Ollama models are unpriced and their windows are ctxkit's; gemini-2.5-pro has no window in the package."""
    listed = _listed()
    llama = listed[("ollama", "llama3.1")]
    assert llama["sources"]["max_input_tokens"] == "ctxkit/data/models.json"
    assert llama["sources"]["prices"] is None
    assert set(llama["prices_per_million"].values()) == {None}
    assert listed[("gemini", "gemini-2.5-pro")]["sources"]["max_input_tokens"] == "ctxkit/data/models.json"


def test_models_text_footer_names_the_sources():
    out = ctxkit("models", "--at", AT).out
    header, first = out.splitlines()[:2]
    assert header.split()[:3] == ["provider", "model", "window"]
    assert first.split()[:3] == ["openai", "gpt-4o", "128,000"]
    assert f"prices: {PACKAGE}, USD per million tokens" in out
    assert "cache rules: ctxkit/data/cache_rules.json" in out


def test_models_bad_date_is_one_error_line():
    r = ctxkit("models", "--at", "yesterday", expect=2)
    assert r.err == "error: --at 'yesterday' is not a date (YYYY-MM-DD)\n"
