"""The built-in model table (R-FIX-0): read as written, checked against tiktoken, and its precedence.

The values themselves are data (ctxkit/data/models.json); the tests do not restate them.
They check that the lookup returns each row unchanged, that the OpenAI tokenizer column
agrees with tiktoken's own model map, how names are normalised, and the precedence
option > the fixture's field > the table.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxkit.loading import models
from ctxkit.loading.config import Effective, Options, resolve
from ctxkit.loading.domain import TOKENIZERS, Provider
from ctxkit.loading.models import DEFAULTS_FOR_UNKNOWN, ModelInfo, known_models, lookup
from ctxkit.loading.read import load_fixture


def _rows() -> list[tuple[str, str, dict[str, Any]]]:
    raw = json.loads(models._TABLE_PATH.read_text(encoding="utf-8"))
    return [(provider, name, row) for provider, rows in raw["models"].items() for name, row in rows.items()]


@pytest.mark.parametrize(("provider", "name", "row"), _rows(), ids=[f"{p}/{n}" for p, n, _ in _rows()])
def test_r_fix_0_lookup_returns_the_row_as_written(provider: str, name: str, row: dict[str, Any]) -> None:
    """R-FIX-0: the lookup gives each row of models.json back unchanged (the data is the table's)."""
    assert lookup(provider, name) == ModelInfo(
        row["max_input_tokens"], row["supports_images"], row["max_output_tokens"], row["tokenizer"]
    )


@pytest.mark.parametrize("name", known_models("openai"))
def test_r_fix_0_openai_tokenizers_agree_with_tiktoken(name: str) -> None:
    """R-FIX-0: an independent source for the OpenAI tokenizer column: tiktoken's own model map."""
    from tiktoken.model import encoding_name_for_model

    info = lookup("openai", name)
    assert info is not None and info.tokenizer == encoding_name_for_model(name)


PRECEDENCE = """\
ctxkit: 1
model: {provider: openai, name: gpt-4o%s}
messages: [{id: 1, role: user, text: q}]
"""


def _effective(tmp_path: Path, model_fields: str = "", **options: Any) -> Effective:
    path = tmp_path / "f.yaml"
    path.write_text(PRECEDENCE % model_fields, encoding="utf-8")
    return resolve(load_fixture(str(path)), Options(**options))


def test_r_fix_0_table_fills_what_the_fixture_leaves_out(tmp_path: Path) -> None:
    """R-FIX-0: gpt-4o without a window, image flag, output limit or tokenizer takes its row."""
    eff = _effective(tmp_path)
    row = lookup("openai", "gpt-4o")
    assert row is not None
    assert (eff.max_input_tokens, eff.supports_images, eff.max_output_tokens, eff.tokenizer) == (
        row.max_input_tokens,
        row.supports_images,
        row.max_output_tokens,
        row.tokenizer,
    )


def test_r_fix_0_fixture_fields_beat_the_table(tmp_path: Path) -> None:
    """R-FIX-0: values the fixture sets win over the model table's."""
    eff = _effective(tmp_path, ", max_input_tokens: 1000, supports_images: false, max_output_tokens: 7")
    assert (eff.max_input_tokens, eff.supports_images, eff.max_output_tokens) == (1000, False, 7)


def test_r_fix_0_model_option_changes_table_defaults_not_fixture_values(tmp_path: Path) -> None:
    """R-FIX-0: `--model gpt-3.5-turbo` brings that row's defaults, but the fixture's own
    window stays; the option itself wins over the fixture's model name."""
    eff = _effective(tmp_path, ", max_input_tokens: 1000", model="gpt-3.5-turbo")
    row = lookup("openai", "gpt-3.5-turbo")
    assert row is not None
    assert (eff.model, eff.max_input_tokens, eff.tokenizer, eff.supports_images) == (
        "gpt-3.5-turbo",
        1000,
        row.tokenizer,
        row.supports_images,
    )


def test_r_fix_0_option_beats_the_fixture(tmp_path: Path) -> None:
    """R-FIX-0: `--max-input-tokens` and `--tokenizer` win over the fixture's fields."""
    eff = _effective(tmp_path, ", max_input_tokens: 1000", max_input_tokens=500, tokenizer="approx")
    assert (eff.max_input_tokens, eff.tokenizer) == (500, "approx")


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
    for provider in (p.value for p in Provider):
        names = known_models(provider)
        assert names, provider
        for name in names:
            info = lookup(provider, name)
            assert info is not None
            assert info.tokenizer in TOKENIZERS
            assert info.max_input_tokens > 0 and info.max_output_tokens > 0
    for target in raw["aliases"].values():
        assert any(target in known_models(p) for p in raw["models"]), target


@pytest.mark.parametrize(
    ("provider", "name", "owner"),
    [
        ("anthropic", "gpt-4o", "openai"),  # the table knows it for another provider
        ("gemini", "o3-mini", "openai"),
        ("openai", "claude-sonnet-4-5", "anthropic"),
        ("ollama", "gemini-2.5-pro", "gemini"),
        ("openai", "claude-9-future", "anthropic"),  # unknown, but plainly of that shape
        ("anthropic", "gpt-6", "openai"),
        ("azure", "gpt-4o", None),  # Azure serves the OpenAI table
        ("openai", "gpt-4o-2024-08-06", None),
        ("gemini", "models/gemini-2.5-pro", None),
        ("openai", "llama3.1", None),  # open weights: served by OpenAI-compatible servers too
        ("ollama", "gpt-oss:20b", None),
        ("anthropic", "my-fine-tune", None),
    ],
)
def test_provider_mismatch_names_the_models_own_provider(provider, name, owner):
    """Issue 11.19: `--provider anthropic` on a gpt-4o fixture must not send "model": "gpt-4o" without a word."""
    assert models.owner_elsewhere(provider, name) == owner
    warning = models.provider_mismatch(provider, name)
    assert (warning is None) == (owner is None)
    if warning:
        assert warning.startswith(f"model {name!r} belongs to {owner}, but the request is built for {provider}")
