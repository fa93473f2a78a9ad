"""The model table (R-FIX-0): windows from genai-prices, the rest as ctxkit's table writes it.

The values themselves are data (genai-prices' and ctxkit/data/models.json); the tests do not
restate them. They check that the lookup gives each row's own fields unchanged and the window
genai-prices gives (asked of the package here, not through ctxkit), that the generated
ctxkit/data/genai_prices.json is what the installed package says, that the OpenAI tokenizer
column agrees with tiktoken's own model map, how names are normalised, what names only the
package knows resolve to, and the precedence option > the fixture's field > the table.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxkit import providers
from ctxkit.errors import InputError
from ctxkit.loading import models
from ctxkit.loading.config import Effective, Options, resolve
from ctxkit.loading.domain import TOKENIZERS
from ctxkit.loading.models import DEFAULTS_FOR_UNKNOWN, ModelInfo, known_models, lookup
from ctxkit.loading.read import load_fixture


def _rows() -> list[tuple[str, str, dict[str, Any]]]:
    raw = json.loads(models._TABLE_PATH.read_text(encoding="utf-8"))
    return [(provider, name, row) for provider, rows in raw["models"].items() for name, row in rows.items()]


GENAI_IDS = {"openai": "openai", "anthropic": "anthropic", "gemini": "google"}


def _package_window(provider: str, name: str) -> int | None:
    """The context window genai-prices itself gives the name (None: it knows none)."""
    if provider not in GENAI_IDS:
        return None
    import genai_prices

    try:
        _, model = genai_prices.data_snapshot.get_snapshot().find_provider_model(name, None, GENAI_IDS[provider], None)
    except LookupError:
        return None
    window: int | None = model.context_window
    return window


@pytest.mark.parametrize(("provider", "name", "row"), _rows(), ids=[f"{p}/{n}" for p, n, _ in _rows()])
def test_r_fix_0_window_is_genai_prices_and_the_rest_the_row(provider: str, name: str, row: dict[str, Any]) -> None:
    """R-FIX-0 (issue 21 item 2): the window is genai-prices' context window (minus the output
    reserve where the row says the window includes it); only where the package has none does the
    row carry its own. Output reserve, images and tokenizer are the row's, unchanged."""
    window = _package_window(provider, name)
    if window is None:
        window = row["max_input_tokens"]
    else:
        assert "max_input_tokens" not in row, "one source: the package gives this window"
    if row.get("window_includes_output"):
        window -= row["max_output_tokens"]
    assert lookup(provider, name) == ModelInfo(
        window, row["supports_images"], row["max_output_tokens"], row["tokenizer"]
    )


def test_generated_windows_are_the_installed_packages() -> None:
    """ctxkit/data/genai_prices.json (kept so that assembling never imports the package) is what
    scripts/models.py writes from the installed genai-prices: rerun it after an upgrade."""
    import importlib.metadata
    import runpy

    from .conftest import ROOT

    script = runpy.run_path(str(ROOT / "scripts" / "models.py"))
    stored = json.loads(models._WINDOWS_PATH.read_text(encoding="utf-8"))
    assert stored["genai_prices"] == importlib.metadata.version("genai-prices")
    assert stored == script["windows"]()


def test_gpt_5_input_budget_is_window_minus_output() -> None:
    """R-FIX-0: OpenAI gives gpt-5 a 400,000 window that includes up to 128,000 output tokens,
    so its input budget is 272,000, as the old hand table said."""
    assert _package_window("openai", "gpt-5") == 400_000
    info = lookup("openai", "gpt-5")
    assert info is not None and info.max_input_tokens == 272_000


@pytest.mark.parametrize(
    ("provider", "name", "package_name"),
    [
        ("anthropic", "anthropic.claude-3-haiku-20240307-v1:0", "claude-3-haiku"),  # Bedrock
        ("anthropic", "us.anthropic.claude-3-5-sonnet-20240620-v1:0", "claude-3-5-sonnet"),  # cross-region
        ("anthropic", "us.anthropic.claude-3-5-sonnet-20240620-v1%3A0", "claude-3-5-sonnet"),  # URL-encoded
        ("anthropic", "claude-3-opus-20240229", "claude-3-opus"),
        ("openai", "gpt-5.5", "gpt-5.5"),
        ("gemini", "models/gemini-1.5-flash-002", "gemini-1.5-flash"),
    ],
)
def test_names_only_genai_prices_knows_take_its_window(provider: str, name: str, package_name: str) -> None:
    """Issue 21 item 2: a name ctxkit's table lacks is matched by genai-prices (Bedrock ids, `%3A`);
    its window is the package's, the rest the defaults for unknown models."""
    import genai_prices

    snapshot = genai_prices.data_snapshot.get_snapshot()
    pid = {"anthropic": "aws"}.get(provider, GENAI_IDS[provider])
    ref = name.replace("%3A", ":").removeprefix("models/")
    _, model = snapshot.find_provider_model(ref, None, pid, None)
    assert package_name in model.id
    info = lookup(provider, name)
    assert info is not None
    assert info.max_input_tokens == model.context_window
    assert (info.supports_images, info.max_output_tokens) == (
        DEFAULTS_FOR_UNKNOWN.supports_images,
        DEFAULTS_FOR_UNKNOWN.max_output_tokens,
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
    assert lookup("azure", "azure/o1-mini") == lookup("openai", "o1-mini")
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
        ("openai", "claude-sonnet-4-5"),  # a model of another provider
        ("anthropic", "gpt-4o"),
        ("anthropic", "anthropic.claude-nonesuch-v1:0"),
        ("ollama", "my-finetune:7b"),
        ("ollama", "gpt-4o"),  # Ollama serves local weights: never looked up in the price data
        ("gemini", "gemini-0.1-nonesuch"),
    ],
)
def test_r_fix_0_unknown_is_none(provider: str, name: str) -> None:
    """R-FIX-0: a model neither ctxkit's table nor genai-prices knows has no entry (the fixture
    must give a window)."""
    assert lookup(provider, name) is None


def test_a_provider_nobody_registered_is_bad_input_naming_the_known_ones() -> None:
    known = r"\(known: openai, azure, anthropic, ollama, gemini\)"
    with pytest.raises(InputError, match=r"unknown provider 'nonesuch' " + known):
        lookup("nonesuch", "gpt-4o")


PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="  # 1x1 PNG
UNKNOWN_MODEL = f"""\
ctxkit: 1
now: "2026-03-14T09:30:00Z"
model: {{provider: anthropic, name: house-model-1, max_input_tokens: 20000}}
files:
  - {{id: img, name: a.png, kind: image, data: {PIXEL}}}
messages: [{{id: 1, role: user, text: "What is in this picture?", files: [img]}}]
"""


def test_r_fix_0_unknown_model_defaults_shape_the_request(tmp_path: Path) -> None:
    """R-FIX-0: a model the table does not know is built with the defaults the spec gives:
    4096 output tokens (Anthropic's `max_tokens`), its image sent as an image (images
    supported) and counted with cl100k_base. Checked on what assembly produces, so a
    changed default fails here."""
    from ctxkit.pipeline import run
    from ctxkit.reports.budget import report

    path = tmp_path / "unknown.yaml"
    path.write_text(UNKNOWN_MODEL, encoding="utf-8")
    result = run(load_fixture(str(path)))
    body = result.payload.body
    assert body["max_tokens"] == 4096
    blocks = body["messages"][-1]["content"]
    assert [b["type"] for b in blocks if b["type"] == "image"] == ["image"]
    assert report(result)["tokenizer"] == "cl100k_base"


def test_r_fix_0_table_is_well_formed() -> None:
    """R-FIX-0: every entry is complete, positive and names a known tokenizer."""
    raw = json.loads(models._TABLE_PATH.read_text(encoding="utf-8"))
    assert "genai-prices" in raw["_note"]
    for provider in providers.names():
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


@pytest.mark.parametrize(
    ("provider", "name", "package_provider", "package_name"),
    [
        (
            "anthropic",
            "us.anthropic.claude-3-5-sonnet-20240620-v1%3A0",
            "aws",
            "us.anthropic.claude-3-5-sonnet-20240620-v1:0",
        ),
        ("anthropic", "anthropic.claude-3-haiku-20240307-v1:0", "aws", "anthropic.claude-3-haiku-20240307-v1:0"),
        ("openai", "anthropic/claude-opus-5", "anthropic", "claude-opus-5"),  # through a gateway
        ("gemini", "models/gemini-2.5-flash", "google", "gemini-2.5-flash"),
    ],
)
def test_replay_prices_names_seen_in_real_logs(provider, name, package_provider, package_name):
    """Issue 21 item 2: the recorded traffic's Bedrock ids (also `%3A`-encoded) and gateway names
    are priced by genai-prices' own matching, as the package prices the plain name."""
    from datetime import UTC, datetime
    from decimal import Decimal

    import genai_prices

    from ctxkit.replay.cost import Pricer

    clock = datetime(2026, 6, 1, tzinfo=UTC)
    usage = genai_prices.Usage(input_tokens=1000, cache_read_tokens=200, output_tokens=50)
    expected = genai_prices.calc_price(usage, package_name, provider_id=package_provider, genai_request_timestamp=clock)
    pricer = Pricer(provider, name, None)
    assert pricer.cost(1000, 200, 0, 50, clock) == Decimal(expected.total_price)
    assert pricer.warning() is None


def test_r_fix_0_unknown_openai_family_keeps_its_encoding():
    """A gpt-5.x, o-series or gpt-4o name no table knows counts with o200k_base (a logged body)."""
    from ctxkit.loading.models import unknown_defaults

    for name in ("gpt-5.5", "gpt-5.6-sol", "o5-mini", "gpt-4o-2099-01-01", "ft:gpt-4o-mini:acme::x1"):
        assert unknown_defaults("openai", name).tokenizer == "o200k_base", name
    for name in ("gpt-4", "gpt-3.5-turbo-0613", "my-fine-tune"):
        assert unknown_defaults("openai", name).tokenizer == "cl100k_base", name
    assert unknown_defaults("anthropic", "gpt-5.5").tokenizer == "cl100k_base"
