"""A provider's own usage numbers → what it says the prompt cost (R-LOG-3).

Input: the usage object a provider returned, verbatim, in any of the providers'
shapes (or the whole response or final stream event that holds it). Output:
`Reported` — the prompt's input tokens (cached and cache-written tokens
included), the tokens read from the cache and the tokens written to it, with the
`UsageShape` they were read from — or None when the object carries no prompt count;
`reports_cache`: whether the object says what was cached at all (by its shape's `CACHE_KEYS`).

Shapes, recognised by their keys:

* OpenAI chat completions (Azure, OpenAI-compatible hosts): `prompt_tokens`,
  `prompt_tokens_details.cached_tokens` (some hosts: top-level `cached_tokens`,
  `prompt_cache_hit_tokens`, `num_cached_tokens`), writes in
  `prompt_tokens_details.cache_write_tokens` where a host reports them.
  `prompt_tokens` includes the cached tokens.
* OpenAI Responses: `input_tokens` with `input_tokens_details.cached_tokens`
  (and `cache_write_tokens`); told from Anthropic's `input_tokens` by that
  details object, or by no Anthropic cache field when the provider is not known
  to be Anthropic.
* Anthropic Messages: `input_tokens` counts only the uncached rest; the prompt
  is `input_tokens + cache_creation_input_tokens + cache_read_input_tokens`,
  and `cache_creation.ephemeral_5m_input_tokens` / `ephemeral_1h_input_tokens`
  split the writes by TTL.
* Gemini: `promptTokenCount` (it includes `cachedContentTokenCount`, the
  tokens read from a cache); no writes are reported.
* Ollama: `prompt_eval_count` (the tokens it evaluated; no cache fields).
* OpenTelemetry GenAI attributes: `gen_ai.usage.input_tokens`,
  `gen_ai.usage.cache_read.input_tokens`, `gen_ai.usage.cache_creation.input_tokens`
  (the input count is taken as the whole prompt).

Wrappers: a response's `usage` / `usageMetadata`, Anthropic's stream event
`message.usage`, the Responses stream event `response.usage`. A count that is
not a non-negative integer is an `InputError` naming its field.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ctxkit.errors import InputError


class UsageShape(enum.StrEnum):
    """Which provider's usage object the numbers were read from (the shapes listed above)."""

    OPENAI = "openai"  # chat completions, and the hosts that copy it
    RESPONSES = "responses"
    ANTHROPIC = "anthropic"
    GEMINI = "gemini"
    OLLAMA = "ollama"
    OTEL = "otel"


# The keys by which each shape says what was cached; a usage object with none of them (Ollama's
# always, OpenAI-compatible hosts and older API versions often) does not report the cache at all.
CACHE_KEYS: dict[UsageShape, tuple[str, ...]] = {
    UsageShape.OPENAI: ("prompt_tokens_details", "cached_tokens", "prompt_cache_hit_tokens", "num_cached_tokens"),
    UsageShape.RESPONSES: ("input_tokens_details",),
    UsageShape.ANTHROPIC: ("cache_read_input_tokens", "cache_creation_input_tokens"),
    UsageShape.GEMINI: ("promptTokenCount",),  # cachedContentTokenCount is left out when nothing was cached
    UsageShape.OLLAMA: (),
    UsageShape.OTEL: ("gen_ai.usage.input_tokens",),
}


@dataclass(frozen=True, slots=True)
class Reported:
    """What a provider reported for one call's prompt."""

    input_tokens: int  # the whole prompt: cached and cache-written tokens included
    cached_tokens: int  # read from the prompt cache
    cache_write_tokens: int  # written to the prompt cache (0 where the provider reports none)
    shape: UsageShape
    cache_write_5m_tokens: int | None = None  # Anthropic's split of the writes by TTL, when given
    cache_write_1h_tokens: int | None = None

    @property
    def uncached_tokens(self) -> int:
        """The prompt tokens neither read from nor written to the cache."""
        return self.input_tokens - self.cached_tokens - self.cache_write_tokens


_OTEL_INPUT = "gen_ai.usage.input_tokens"
_OTEL_READ = "gen_ai.usage.cache_read.input_tokens"
_OTEL_WRITE = "gen_ai.usage.cache_creation.input_tokens"
_ANTHROPIC_CACHE = ("cache_creation_input_tokens", "cache_read_input_tokens", "cache_creation")


def reported_usage(value: Any, wire_format: str | None = None) -> Reported | None:
    """The provider's numbers in `value` (a usage object or what wraps one), or None.

    `wire_format` (the record's provider's, when known) settles the one ambiguous shape: a bare
    `{input_tokens, output_tokens}` is Anthropic's for `anthropic`, else the Responses API's
    (the numbers are the same either way)."""
    usage = _unwrap(value)
    if usage is None:
        return None
    if "prompt_tokens" in usage:
        return _openai_chat(usage)
    if "promptTokenCount" in usage:
        return _gemini(usage)
    if "prompt_eval_count" in usage:
        n = _count(usage, "prompt_eval_count")
        return Reported(n, 0, 0, UsageShape.OLLAMA)
    if _OTEL_INPUT in usage:
        return Reported(
            _count(usage, _OTEL_INPUT),
            _count(usage, _OTEL_READ, 0),
            _count(usage, _OTEL_WRITE, 0),
            UsageShape.OTEL,
        )
    if "input_tokens" in usage:
        anthropic = wire_format == "anthropic" or any(k in usage for k in _ANTHROPIC_CACHE)
        if "input_tokens_details" in usage or not anthropic:
            return _responses(usage)
        return _anthropic(usage)
    return None


def _unwrap(value: Any) -> Mapping[str, Any] | None:
    """The usage object itself: found under the wrappers responses and stream events use."""
    for _ in range(3):  # a response, a stream event's message or response, then the usage
        if not isinstance(value, Mapping):
            return None
        if any(k in value for k in ("prompt_tokens", "promptTokenCount", "prompt_eval_count", _OTEL_INPUT)):
            return value
        if "input_tokens" in value and "usage" not in value:
            return value
        inner = next((value[k] for k in ("usage", "usageMetadata", "message", "response") if k in value), None)
        value = inner
    return None


def _count(usage: Mapping[str, Any], key: str, default: int | None = None) -> int:
    """A non-negative integer count (a missing or null one is `default`; none → InputError)."""
    value = usage.get(key)
    if value is None and default is not None:
        return default
    if type(value) is not int or value < 0:
        raise InputError(f"usage field {key!r} is not a non-negative integer: {value!r}")
    return value


def _details(usage: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    found = usage.get(key)
    if found is None:
        return {}
    if not isinstance(found, Mapping):
        raise InputError(f"usage field {key!r} is not an object: {found!r}")
    return found


def _openai_chat(usage: Mapping[str, Any]) -> Reported:
    details = _details(usage, "prompt_tokens_details")
    cached = _count(details, "cached_tokens", 0)
    for alias in ("cached_tokens", "prompt_cache_hit_tokens", "num_cached_tokens"):  # OpenAI-compatible hosts
        if not cached and alias in usage:
            cached = _count(usage, alias, 0)
    return Reported(_count(usage, "prompt_tokens"), cached, _count(details, "cache_write_tokens", 0), UsageShape.OPENAI)


def _responses(usage: Mapping[str, Any]) -> Reported:
    details = _details(usage, "input_tokens_details")
    return Reported(
        _count(usage, "input_tokens"),
        _count(details, "cached_tokens", 0),
        _count(details, "cache_write_tokens", 0),
        UsageShape.RESPONSES,
    )


def _anthropic(usage: Mapping[str, Any]) -> Reported:
    written = _count(usage, "cache_creation_input_tokens", 0)
    read = _count(usage, "cache_read_input_tokens", 0)
    by_ttl = _details(usage, "cache_creation")
    five = _count(by_ttl, "ephemeral_5m_input_tokens", 0) if by_ttl else None
    hour = _count(by_ttl, "ephemeral_1h_input_tokens", 0) if by_ttl else None
    return Reported(_count(usage, "input_tokens") + written + read, read, written, UsageShape.ANTHROPIC, five, hour)


def _gemini(usage: Mapping[str, Any]) -> Reported:
    return Reported(
        _count(usage, "promptTokenCount"), _count(usage, "cachedContentTokenCount", 0), 0, UsageShape.GEMINI
    )


def reports_cache(usage: dict[str, Any] | None, rep: Reported | None) -> bool:
    """Whether the usage object says what was cached (else there is nothing to judge the cache by)."""
    if usage is None or rep is None:
        return False
    inner = usage
    for key in ("usage", "usageMetadata"):
        if isinstance(usage.get(key), dict):
            inner = usage[key]
    keys = CACHE_KEYS[rep.shape]
    details = inner.get("prompt_tokens_details")
    if rep.shape is UsageShape.OPENAI and isinstance(details, dict) and "cached_tokens" not in details:
        keys = keys[1:]  # an empty details object: only a host's own cache field tells
    return any(k in inner for k in keys)
