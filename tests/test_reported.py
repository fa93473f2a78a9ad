"""Provider usage objects → reported input, cached and cache-write tokens (R-LOG-3).

The usage objects are copied from calls in ../shared/data/traffic/cassettes.jsonl.gz
(one of each shape there); the expected numbers follow from each provider's
documented meaning of its fields, worked out by hand in each test.
"""

from __future__ import annotations

from typing import Any

import pytest

from ctxkit.counting.reported import Reported, UsageShape, reported_usage
from ctxkit.errors import InputError

OPENAI_CHAT_CACHED = {
    "prompt_tokens": 1370,
    "completion_tokens": 155,
    "total_tokens": 1525,
    "prompt_tokens_details": {"cached_tokens": 1280, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
}
RESPONSES_WRITE = {
    "input_tokens": 1220,
    "input_tokens_details": {"cache_write_tokens": 1217, "cached_tokens": 0},
    "output_tokens": 100,
    "output_tokens_details": {"reasoning_tokens": 54},
    "total_tokens": 1320,
}
ANTHROPIC_TTL = {
    "input_tokens": 28,
    "cache_creation_input_tokens": 1733,
    "cache_read_input_tokens": 0,
    "cache_creation": {"ephemeral_5m_input_tokens": 1733, "ephemeral_1h_input_tokens": 0},
    "output_tokens": 36,
    "service_tier": "standard",
}
GEMINI_CACHED = {
    "promptTokenCount": 424,
    "candidatesTokenCount": 70,
    "totalTokenCount": 781,
    "cachedContentTokenCount": 287,
    "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 166}, {"modality": "IMAGE", "tokenCount": 258}],
}


def test_r_log_3_openai_chat_prompt_includes_cached() -> None:
    """prompt_tokens already includes prompt_tokens_details.cached_tokens."""
    assert reported_usage(OPENAI_CHAT_CACHED) == Reported(1370, 1280, 0, UsageShape.OPENAI)


def test_r_log_3_openai_chat_without_details() -> None:
    assert reported_usage({"prompt_tokens": 23, "completion_tokens": 5, "total_tokens": 28}) == Reported(
        23, 0, 0, UsageShape.OPENAI
    )


def test_r_log_3_openai_compatible_cache_fields() -> None:
    """DeepSeek's prompt_cache_hit_tokens and a top-level cached_tokens are the cached tokens."""
    deepseek = {"prompt_tokens": 900, "prompt_cache_hit_tokens": 640, "prompt_cache_miss_tokens": 260}
    assert reported_usage(deepseek) == Reported(900, 640, 0, UsageShape.OPENAI)
    assert reported_usage({"prompt_tokens": 50, "cached_tokens": 10}) == Reported(50, 10, 0, UsageShape.OPENAI)


def test_r_log_3_openai_chat_cache_write_tokens() -> None:
    usage = {"prompt_tokens": 1220, "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 1217}}
    assert reported_usage(usage) == Reported(1220, 0, 1217, UsageShape.OPENAI)


def test_r_log_3_responses_usage() -> None:
    assert reported_usage(RESPONSES_WRITE) == Reported(1220, 0, 1217, UsageShape.RESPONSES)
    cached = {"input_tokens": 1515, "input_tokens_details": {"cached_tokens": 1390}, "output_tokens": 8}
    assert reported_usage(cached) == Reported(1515, 1390, 0, UsageShape.RESPONSES)


def test_r_log_3_anthropic_prompt_is_input_plus_cache_creation_plus_read() -> None:
    """28 uncached + 1733 written = 1761; the TTL split is kept."""
    assert reported_usage(ANTHROPIC_TTL) == Reported(1761, 0, 1733, UsageShape.ANTHROPIC, 1733, 0)
    read = {"input_tokens": 21, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 1733, "output_tokens": 5}
    got = reported_usage(read)
    assert got == Reported(1754, 1733, 0, UsageShape.ANTHROPIC)
    assert got is not None and got.uncached_tokens == 21


def test_r_log_3_bare_input_tokens_follow_the_provider() -> None:
    """{input_tokens, output_tokens}: Anthropic's with the hint, else the Responses API's; same numbers."""
    bare = {"input_tokens": 28, "output_tokens": 36}
    assert reported_usage(bare, "anthropic") == Reported(28, 0, 0, UsageShape.ANTHROPIC)
    assert reported_usage(bare) == Reported(28, 0, 0, UsageShape.RESPONSES)


def test_r_log_3_gemini_prompt_includes_cached_content() -> None:
    assert reported_usage(GEMINI_CACHED) == Reported(424, 287, 0, UsageShape.GEMINI)


def test_r_log_3_ollama_prompt_eval_count() -> None:
    usage = {"prompt_eval_count": 21, "eval_count": 369, "total_duration": 3699126583, "model": "qwen3.6:latest"}
    assert reported_usage(usage) == Reported(21, 0, 0, UsageShape.OLLAMA)


def test_r_log_3_otel_genai_attributes() -> None:
    attrs = {
        "gen_ai.usage.input_tokens": 500,
        "gen_ai.usage.cache_read.input_tokens": 256,
        "gen_ai.usage.cache_creation.input_tokens": 0,
    }
    assert reported_usage(attrs) == Reported(500, 256, 0, UsageShape.OTEL)


@pytest.mark.parametrize(
    "wrapped",
    [
        {"id": "chatcmpl-1", "choices": [], "usage": OPENAI_CHAT_CACHED},  # a whole response
        {"candidates": [], "usageMetadata": GEMINI_CACHED},
        {"type": "message_start", "message": {"id": "msg_1", "usage": ANTHROPIC_TTL}},  # a stream event
        {"type": "response.completed", "response": {"id": "resp_1", "usage": RESPONSES_WRITE}},
    ],
)
def test_r_log_3_usage_found_inside_responses_and_stream_events(wrapped: dict[str, Any]) -> None:
    inner = next(iter(v for k, v in wrapped.items() if k in ("usage", "usageMetadata", "message", "response")))
    usage = inner.get("usage", inner)
    assert reported_usage(wrapped) == reported_usage(usage)
    assert reported_usage(wrapped) is not None


@pytest.mark.parametrize("value", [None, {}, [], "12", {"output_tokens": 3}, {"candidatesTokenCount": 6}])
def test_r_log_3_no_prompt_count_is_none(value: Any) -> None:
    assert reported_usage(value) is None


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": -1},
        {"prompt_tokens": "12"},
        {"prompt_tokens": True},
        {"prompt_tokens": 5, "prompt_tokens_details": [1]},
        {"input_tokens": 3, "cache_read_input_tokens": 1.5},
    ],
)
def test_r_log_3_bad_counts_are_input_errors(usage: dict[str, Any]) -> None:
    with pytest.raises(InputError, match="usage field"):
        reported_usage(usage)
