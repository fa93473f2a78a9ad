"""The `genai-prices` package, imported on first use: the one place ctxkit imports it.

Input: nothing, or a provider and a model name. Output: the package module (`prices()`),
and the package's own match of a model name (`find`). Importing it loads pydantic, httpx
and the bundled data, about a second at start-up, so no command that only assembles a
model ctxkit's table knows may pay for it: every user calls these where it prices or meets
a model the table lacks, never at import time (tests/test_imports.py checks both).
"""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Any
from urllib.parse import unquote

from ctxkit import providers

# A provider's id in the package is its spec's `prices_id` (None: unpriced, as Ollama's local
# server); `also_priced_by` names where else the package may know its model names: Bedrock
# serves Anthropic's models under its own ids (`anthropic.claude-3-haiku-20240307-v1:0`, `us.anthropic.…`).


@functools.cache
def prices() -> ModuleType:
    import genai_prices
    import genai_prices.types  # noqa: F401  (TieredPrices, read by the cost's fast path)

    return genai_prices


def version() -> str:
    """The installed package's version (read from its metadata: no import of the package)."""
    from importlib.metadata import version as installed

    return installed("genai-prices")


@functools.cache
def find(provider: str, name: str, *, gateway: bool = True) -> tuple[Any, Any] | None:
    """The package's (provider, model) for a model name as a request or a log gives it, by the
    package's own matching; URL-encoded names (`…-v1%3A0`) are decoded first, and a name of the
    `vendor/model` shape (`openai/gpt-4o-mini`, `anthropic/claude-opus-5` through a gateway) is
    the package's own `litellm` form (unless `gateway` is false: a model table entry for a
    provider is that provider's own name). None when the package does not know the name for this
    provider (or the provider is not priced)."""
    spec = providers.spec(provider)
    if spec.prices_id is None:
        return None
    snapshot = prices().data_snapshot.get_snapshot()
    ref = unquote(name)
    for prefix in spec.model_prefixes:
        ref = ref.removeprefix(prefix)  # the Gemini API's resource form of a model name
    vendor = ("litellm",) if gateway and "/" in ref else ()
    for provider_id in (spec.prices_id, *spec.also_priced_by, *vendor):
        try:
            found: tuple[Any, Any] = snapshot.find_provider_model(ref, None, provider_id, None)
        except LookupError:
            continue
        return found
    return None
