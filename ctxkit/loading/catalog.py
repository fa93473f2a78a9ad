"""The model table as `ctxkit models` lists it: every row with each field's source.

Input: a date (prices change over time; the package's data is dated). Output: one `Entry`
per model of ctxkit's table, with its window, output reserve, image support, tokenizer and
prices per million tokens (input, cache read, cache write, output), and where each came
from: genai-prices (its version and model id) or ctxkit's own table. Imports the package.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ctxkit.loading import models, prices

OWN = "ctxkit/data/models.json"
PRICE_FIELDS = ("input_mtok", "cache_read_mtok", "cache_write_mtok", "output_mtok")


@dataclass(frozen=True, slots=True)
class Entry:
    provider: str
    model: str
    info: models.ModelInfo
    prices: dict[str, str | None]  # PRICE_FIELDS → USD per million tokens, "from X" when tiered
    window_source: str
    price_source: str | None  # None: the package does not price it (Ollama runs locally)

    def as_json(self) -> dict[str, Any]:
        i = self.info
        return {
            "provider": self.provider,
            "model": self.model,
            "max_input_tokens": i.max_input_tokens,
            "max_output_tokens": i.max_output_tokens,
            "supports_images": i.supports_images,
            "tokenizer": i.tokenizer,
            "prices_per_million": self.prices,
            "sources": {
                "max_input_tokens": self.window_source,
                "prices": self.price_source,
                "max_output_tokens": OWN,
                "supports_images": OWN,
                "tokenizer": OWN,
            },
        }


def _price(value: Any) -> str | None:
    if value is None:
        return None
    base = getattr(value, "base", None)
    return f"from {base}" if base is not None else str(value)


def entries(at: datetime) -> list[Entry]:
    """Every model of ctxkit's table, in table order, with the package's prices in force at `at`."""
    package = f"genai-prices {prices.version()}"
    out = []
    for provider in models.own_providers():
        for name in models.known_models(provider):
            info = models.lookup(provider, name)
            assert info is not None  # the table's own rows
            window_id = models.window_source(provider, name)
            window = f"{package} ({window_id})" if window_id else OWN
            found = prices.find(provider, name)
            if found is None:
                out.append(Entry(provider, name, info, dict.fromkeys(PRICE_FIELDS), window, None))
                continue
            price_set = found[1].get_prices(at)
            shown = {field: _price(getattr(price_set, field, None)) for field in PRICE_FIELDS}
            out.append(Entry(provider, name, info, shown, window, f"{package} ({found[1].id})"))
    return out
