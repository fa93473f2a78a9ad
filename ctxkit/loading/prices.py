"""The `genai-prices` package, imported on first use: the one place ctxkit imports it.

Input: nothing. Output: the package module (`prices()`), for the price data's users (the
replay's cost, R-RPL-7). Importing it loads pydantic, httpx and the bundled data, about a
second at start-up, so no command that only assembles may pay for it: every user calls
`prices()` where it prices, never at import time (tests/test_imports.py checks both).
"""

from __future__ import annotations

import functools
from types import ModuleType


@functools.cache
def prices() -> ModuleType:
    import genai_prices
    import genai_prices.types  # noqa: F401  (TieredPrices, read by the cost's fast path)

    return genai_prices
