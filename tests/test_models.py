"""The built-in model table (R-FIX-0)."""

from __future__ import annotations

import json

import pytest

from ctxkit.loading import models
from ctxkit.loading.domain import TOKENIZERS, Provider
from ctxkit.loading.models import DEFAULTS_FOR_UNKNOWN, ModelInfo, known_models, lookup


@pytest.mark.parametrize(
    ("provider", "name", "expected"),
    [
        ("openai", "gpt-4o", ModelInfo(128000, True, 16384, "o200k_base")),
        ("openai", "gpt-4.1-mini", ModelInfo(1047576, True, 32768, "o200k_base")),
        ("openai", "gpt-5.1", ModelInfo(272000, True, 128000, "o200k_base")),
        ("openai", "o3-mini", ModelInfo(200000, False, 100000, "o200k_base")),
        ("openai", "gpt-4-turbo", ModelInfo(128000, True, 4096, "cl100k_base")),
        ("openai", "gpt-3.5-turbo", ModelInfo(16385, False, 4096, "cl100k_base")),
        ("anthropic", "claude-sonnet-4-5", ModelInfo(200000, True, 64000, "cl100k_base")),
        ("anthropic", "claude-opus-4-1", ModelInfo(200000, True, 32000, "cl100k_base")),
        ("anthropic", "claude-3-5-haiku-latest", ModelInfo(200000, True, 8192, "cl100k_base")),
        ("gemini", "gemini-2.5-pro", ModelInfo(1048576, True, 65536, "cl100k_base")),
        ("gemini", "gemini-2.0-flash", ModelInfo(1048576, True, 8192, "cl100k_base")),
        ("ollama", "llama3.1", ModelInfo(131072, False, 4096, "cl100k_base")),
        ("ollama", "llava", ModelInfo(32768, True, 4096, "cl100k_base")),
    ],
)
def test_r_fix_0_lookup(provider: str, name: str, expected: ModelInfo) -> None:
    """R-FIX-0: the table supplies window, images, output limit and tokenizer."""
    assert lookup(provider, name) == expected


def test_r_fix_0_azure_shares_openai_and_accepts_prefix() -> None:
    """R-FIX-0: Azure uses the OpenAI names, with or without an `azure/` prefix."""
    assert lookup("azure", "gpt-5.1") == lookup("openai", "gpt-5.1") is not None
    assert lookup("azure", "azure/gpt-4o") == lookup("openai", "gpt-4o")
    assert lookup("azure", "gpt-35-turbo") == lookup("openai", "gpt-3.5-turbo")
    assert lookup(Provider.AZURE, "azure/o1-mini") == lookup("openai", "o1-mini")
    assert lookup("openai", "azure/gpt-4o") is None  # the prefix belongs to Azure


def test_r_fix_0_ollama_tags_match_the_base_name() -> None:
    """R-FIX-0: an Ollama tag (`llama3.1:8b`, `:latest`) matches the name before `:`."""
    assert lookup("ollama", "llama3.1:8b") == lookup("ollama", "llama3.1")
    assert lookup("ollama", "qwen2.5:latest") == lookup("ollama", "qwen2.5")
    vision = lookup("ollama", "llama3.2-vision:11b")
    assert vision is not None and vision.supports_images
    assert lookup("ollama", "llama3.2:3b") == lookup("ollama", "llama3.2")
    assert lookup("ollama", "nomic-embed-text:latest") is None


def test_r_fix_0_images_only_where_published() -> None:
    """R-FIX-0: text-only models say so; among Ollama models only vision models take images."""
    for name in ("o1-mini", "o1-preview", "o3-mini", "gpt-3.5-turbo"):
        info = lookup("openai", name)
        assert info is not None and not info.supports_images, name
    vision = {n for n in known_models("ollama") if (i := lookup("ollama", n)) and i.supports_images}
    assert vision == {"llava", "gemma3", "llama3.2-vision"}


def test_r_fix_0_snapshots_prefixes_and_aliases() -> None:
    """R-FIX-0: dated snapshots, `<provider>/` and Gemini's `models/` prefix are normalised."""
    assert lookup("openai", "gpt-4o-2024-08-06") == lookup("openai", "gpt-4o")
    assert lookup("openai", "openai/gpt-4.1") == lookup("openai", "gpt-4.1")
    assert lookup("anthropic", "claude-sonnet-4-5-20250929") == lookup("anthropic", "claude-sonnet-4-5")
    assert lookup("anthropic", "claude-3-7-sonnet-20250219") == lookup("anthropic", "claude-3-7-sonnet-latest")
    assert lookup("gemini", "models/gemini-2.5-flash") == lookup("gemini", "gemini-2.5-flash")


@pytest.mark.parametrize(
    ("provider", "name"),
    [
        ("openai", "gpt-4o-turbo-ultra"),
        ("openai", "GPT-4o"),  # names are case-sensitive, as the vendors' are
        ("openai", "claude-sonnet-4-5"),  # a model of another provider
        ("anthropic", "gpt-4o"),
        ("ollama", "my-finetune:7b"),
        ("gemini", "gemini-1.0-pro"),
        ("nonesuch", "gpt-4o"),
    ],
)
def test_r_fix_0_unknown_is_none(provider: str, name: str) -> None:
    """R-FIX-0: a model the table does not know has no entry (the fixture must give a window)."""
    assert lookup(provider, name) is None


def test_r_fix_0_defaults_for_unknown() -> None:
    """R-FIX-0: unknown models default to images supported, 4096 output, cl100k_base."""
    assert DEFAULTS_FOR_UNKNOWN.supports_images is True
    assert DEFAULTS_FOR_UNKNOWN.max_output_tokens == 4096
    assert DEFAULTS_FOR_UNKNOWN.tokenizer == "cl100k_base"


def test_r_fix_0_table_is_well_formed() -> None:
    """R-FIX-0: every entry is complete, positive and names a known tokenizer."""
    raw = json.loads(models._TABLE_PATH.read_text(encoding="utf-8"))
    assert "2026" in raw["_note"]
    for provider in ("openai", "azure", "anthropic", "gemini", "ollama"):
        names = known_models(provider)
        assert names, provider
        for name in names:
            info = lookup(provider, name)
            assert info is not None
            assert info.tokenizer in TOKENIZERS
            assert info.max_input_tokens > 0 and info.max_output_tokens > 0
    for target in raw["aliases"].values():
        assert any(target in known_models(p) for p in raw["models"]), target
