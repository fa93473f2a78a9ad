"""Cost of a call (R-RPL-7): `settings.prices` when given, else the `genai-prices` package's bundled data.

Input: provider, model, the call's prompt, cached, written and output tokens, and its clock (prices
change over time; the data is dated). Output: USD as a Decimal, or None when the model is unknown
to the price data. Offline: only the data shipped inside the package is read, never updated.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from ctxkit.loading.domain import Prices

MILLION = Decimal(1_000_000)
PROVIDER_IDS = {"openai": "openai", "azure": "azure", "anthropic": "anthropic", "gemini": "google"}


class Pricer:
    def __init__(self, provider: str, model: str, prices: Prices | None) -> None:
        self.provider = provider
        self.model = model
        self.prices = prices
        self.unknown = False  # the price data does not know the model (one warning per replay)

    def cost(
        self, prompt: int, cached: int, written: int, output: int | None, clock: datetime | None
    ) -> Decimal | None:
        out = output or 0
        if self.prices is not None:
            p = self.prices
            uncached = prompt - cached - written
            total = uncached * p.input + cached * p.cached_input + written * p.cache_write + out * p.output
            return total / MILLION
        if self.provider == "ollama":
            return Decimal(0)
        return self._package(prompt, cached, written, out, clock)

    def _package(self, prompt: int, cached: int, written: int, output: int, clock: datetime | None) -> Decimal | None:
        if self.unknown:
            return None
        import genai_prices  # imported on use: its data takes a moment to load

        usage = genai_prices.Usage(
            input_tokens=prompt, cache_read_tokens=cached, cache_write_tokens=written, output_tokens=output
        )
        try:
            found = genai_prices.calc_price(
                usage, self.model, provider_id=PROVIDER_IDS[self.provider], genai_request_timestamp=clock
            )
        except LookupError:
            self.unknown = True
            return None
        return Decimal(found.total_price)

    def warning(self) -> str | None:
        if not self.unknown:
            return None
        return (
            f"no price known for {self.provider} model {self.model!r}: costs are null "
            "(give settings.prices to price it, R-RPL-7)"
        )
