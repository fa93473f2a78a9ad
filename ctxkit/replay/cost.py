"""Cost of a call (R-RPL-7): `settings.prices` when given, else the `genai-prices` package's bundled data.

Input: provider, model, the call's prompt, cached, written and output tokens, and its clock (prices
change over time; the data is dated). Output: USD as a Decimal, or None when the model is unknown
to the price data. Offline: only the data shipped inside the package is read, never updated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Protocol

from ctxkit import providers
from ctxkit.loading.domain import Prices
from ctxkit.loading.prices import find
from ctxkit.loading.prices import prices as package

MILLION = Decimal(1_000_000)


class Pricer:
    """`one_hour`: Anthropic writes with `ttl: 1h`, priced at the package's 1h write rate (2x input)."""

    def __init__(self, provider: str, model: str, prices: Prices | None, *, one_hour: bool = False) -> None:
        self.provider = provider
        self.model = model
        self.prices = prices
        self.one_hour = one_hour
        self.unknown = False  # the price data does not know the model (one warning per replay)
        self._model: Any = None  # the package's model and provider, found on the first call
        self._provider: Any = None
        self._rates: dict[int, tuple[Any, _Rates | None]] = {}  # per price set in force (kept alive here)
        self._clock: datetime | None = None  # the last clock priced from the package's untiered rates, and those
        self._at: _Rates | None = None
        self._given: _Given | None = None  # `settings.prices` as a `Pricing`, made on first use

    def costs(
        self, prompt: int, cached: int, written: int, output: int | None, clock: datetime | None
    ) -> tuple[Decimal | None, Decimal | None]:
        """The call's cost and its cost without the cache: `cost(prompt, cached, written, output,
        clock)` and `cost(prompt, 0, 0, output, clock)`, one Decimal for both when nothing was read
        from the cache nor written to it (the same price)."""
        return self.pricing(prompt, cached, written, output, clock).costs(prompt, cached, written, output or 0)

    def pricing(self, prompt: int, cached: int, written: int, output: int | None, clock: datetime | None) -> Pricing:
        """What prices the call: `pricing(...).costs(prompt, cached, written, output or 0)` is
        `costs(...)`. Untiered rates, `settings.prices`, a free provider or an unknown model give a
        value shared by the calls they price (replay keeps it per call instead of two Decimals, and
        works the Decimals out when a row is read: the same arithmetic on the same numbers); tiered
        prices are asked of the package now (its answer may depend on the clock)."""
        if clock is self._clock and clock is not None:  # as in `cost`: the last call's clock object
            assert self._at is not None
            return self._at
        if self.prices is not None:
            return self._given_prices()
        if providers.spec(self.provider).free:
            return _FREE
        found = self._rates_at(clock)
        if found is None:
            return _UNKNOWN
        if found[1] is None:  # tiered: the package's answer now
            return _Fixed(*_pair(self.cost, prompt, cached, written, output, clock))
        return found[1]

    def cost(
        self, prompt: int, cached: int, written: int, output: int | None, clock: datetime | None
    ) -> Decimal | None:
        out = output or 0
        if clock is self._clock and clock is not None:  # the last call's clock object (a replay's calls share
            assert self._at is not None  # theirs): the rates found for it, not looked up again (R-RPL-9)
            return self._at.cost(prompt, cached, written, out)
        if self.prices is not None:
            return self._given_prices().cost(prompt, cached, written, out)
        if providers.spec(self.provider).free:
            return Decimal(0)
        return self._package(prompt, cached, written, out, clock)

    def _given_prices(self) -> _Given:
        if self._given is None:
            assert self.prices is not None
            self._given = _Given(self.prices)
        return self._given

    def _package(self, prompt: int, cached: int, written: int, output: int, clock: datetime | None) -> Decimal | None:
        found = self._rates_at(clock)
        if found is None:
            return None
        if found[1] is None:  # tiered prices: not linear in the counts, ask the package every time
            usage = self._usage(prompt, cached, written, output)
            return Decimal(self._model.calc_price(usage, self._provider, genai_request_timestamp=clock).total_price)
        return found[1].cost(prompt, cached, written, output)

    def _rates_at(self, clock: datetime | None) -> tuple[Any, _Rates | None] | None:
        """The package's prices in force at `clock` and their rates (None: tiered), or None (an
        unknown model)."""
        if self.unknown:
            return None
        if self._model is None:  # the model is looked up once per replay, by the package's own matching
            found = find(self.provider, self.model)
            if found is None:
                self.unknown = True
                return None
            self._provider, self._model = found
        prices = self._model.get_prices(clock or datetime.now(UTC))  # prices change over time
        rates = self._rates.get(id(prices))
        if rates is None:
            rates = self._rates[id(prices)] = (prices, _Rates.of(prices, one_hour=self.one_hour))
        if rates[1] is not None and clock is not None:  # the prices in force at this very clock object: the same
            self._clock, self._at = clock, rates[1]  # for its next calls
        return rates

    def _usage(self, prompt: int, cached: int, written: int, output: int) -> Any:
        one_hour = {"cache_write_1h_tokens": written} if self.one_hour and written else {}
        return package().Usage(
            input_tokens=prompt, cache_read_tokens=cached, cache_write_tokens=written, output_tokens=output, **one_hour
        )

    def warning(self) -> str | None:
        if not self.unknown:
            return None
        return (
            f"no price known for {self.provider} model {self.model!r}: costs are null "
            "(give settings.prices to price it, R-RPL-7)"
        )


@dataclass(frozen=True, slots=True)
class _Rates:
    """One price set as a fixed part and a price per token of each count, taken from the package's
    own arithmetic on unit usages. Untiered prices are exact decimals times counts, so the cost of
    any call is this affine sum, equal in value to what the package computes (checked in the tests)
    at a fraction of its per-call cost (R-RPL-9)."""

    base: Decimal
    input: Decimal
    cached: Decimal  # on top of `input`: a cached token is also an input token
    written: Decimal
    output: Decimal

    @staticmethod
    def of(prices: Any, *, one_hour: bool = False) -> _Rates | None:
        genai_prices = package()
        if any(isinstance(v, genai_prices.types.TieredPrices) for v in vars(prices).values()):
            return None

        def at(**counts: int) -> Decimal:
            return Decimal(prices.calc_price(genai_prices.Usage(**counts))["total_price"])

        base, one = at(), at(input_tokens=1)
        write = {"cache_write_1h_tokens": 1} if one_hour else {}
        return _Rates(
            base,
            one - base,
            at(input_tokens=1, cache_read_tokens=1) - one,
            at(input_tokens=1, cache_write_tokens=1, **write) - one,
            at(output_tokens=1) - base,
        )

    def costs(self, prompt: int, cached: int, written: int, output: int) -> tuple[Decimal | None, Decimal | None]:
        return _pair(self.cost, prompt, cached, written, output)

    def cost(self, prompt: int, cached: int, written: int, output: int) -> Decimal:
        return self.base + prompt * self.input + cached * self.cached + written * self.written + output * self.output


class Pricing(Protocol):
    """What prices a call (`Pricer.pricing`): `costs(prompt, cached, written, output)` gives its
    cost and its cost without the cache, the same Decimal twice when nothing was cached or written."""

    def costs(self, prompt: int, cached: int, written: int, output: int) -> tuple[Decimal | None, Decimal | None]: ...


def _pair(
    cost: Callable[..., Decimal | None], prompt: int, cached: int, written: int, *rest: Any
) -> tuple[Decimal | None, Decimal | None]:
    """`(cost(prompt, cached, written, *rest), cost(prompt, 0, 0, *rest))`, one value for both when
    nothing was read from the cache nor written to it."""
    with_cache = cost(prompt, cached, written, *rest)
    if not cached and not written:
        return with_cache, with_cache
    return with_cache, cost(prompt, 0, 0, *rest)


@dataclass(frozen=True, slots=True)
class _Given:
    """`settings.prices`: USD per million tokens of each count."""

    prices: Prices

    def costs(self, prompt: int, cached: int, written: int, output: int) -> tuple[Decimal | None, Decimal | None]:
        return _pair(self.cost, prompt, cached, written, output)

    def cost(self, prompt: int, cached: int, written: int, output: int) -> Decimal:
        p = self.prices
        uncached = prompt - cached - written
        total = uncached * p.input + cached * p.cached_input + written * p.cache_write + output * p.output
        return total / MILLION


@dataclass(frozen=True, slots=True)
class _Fixed:
    """Costs known already: a free provider's, an unknown model's (None), tiered prices' answer."""

    cost: Decimal | None
    without: Decimal | None

    def costs(self, prompt: int, cached: int, written: int, output: int) -> tuple[Decimal | None, Decimal | None]:
        return self.cost, self.without


_FREE = _Fixed(Decimal(0), Decimal(0))
_UNKNOWN = _Fixed(None, None)
