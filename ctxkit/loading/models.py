"""The built-in model table: (provider, model name) → `ModelInfo`, or None when unknown.

The table is `ctxkit/data/models.json`, read once on the first lookup. Names match
exactly (case-sensitive) after these normalisations, tried in order:

* a leading `<provider>/` is dropped (`azure/gpt-5.1`, `ollama/llama3.1`);
  Gemini also drops `models/`;
* Ollama tags are ignored: `llama3.1:8b` is `llama3.1`;
* a dated snapshot falls back to its base name (`gpt-4o-2024-08-06` → `gpt-4o`,
  `claude-sonnet-4-5-20250929` → `claude-sonnet-4-5`);
* a few documented aliases (`gpt-35-turbo`, `claude-3-7-sonnet`, …).

Azure OpenAI shares the OpenAI table. Unknown models use `DEFAULTS_FOR_UNKNOWN`
(images supported, 4096 output tokens, cl100k_base), but still need a window.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxkit.loading.domain import Provider

_TABLE_PATH = Path(__file__).parents[1] / "data" / "models.json"
_DATED = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8})$")


@dataclass(frozen=True, slots=True)
class ModelInfo:
    max_input_tokens: int
    supports_images: bool
    max_output_tokens: int
    tokenizer: str


@dataclass(frozen=True, slots=True)
class ModelDefaults:
    """What R-FIX-0 assumes for a model the table does not know (no window)."""

    supports_images: bool
    max_output_tokens: int
    tokenizer: str


DEFAULTS_FOR_UNKNOWN = ModelDefaults(supports_images=True, max_output_tokens=4096, tokenizer="cl100k_base")


@dataclass(frozen=True, slots=True)
class _Table:
    models: dict[str, dict[str, ModelInfo]]
    provider_tables: dict[str, str]
    aliases: dict[str, str]


@functools.cache
def _table() -> _Table:
    raw: dict[str, Any] = json.loads(_TABLE_PATH.read_text(encoding="utf-8"))
    models = {
        provider: {name: ModelInfo(**fields) for name, fields in entries.items()}
        for provider, entries in raw["models"].items()
    }
    return _Table(models, dict(raw["provider_tables"]), dict(raw["aliases"]))


def _candidates(provider: str, name: str) -> Iterator[str]:
    base = name.removeprefix(f"{provider}/")
    if provider == Provider.GEMINI:
        base = base.removeprefix("models/")
    if provider == Provider.OLLAMA:
        base = base.split(":", 1)[0]
    yield base
    undated = _DATED.sub("", base)
    if undated != base:
        yield undated


def lookup(provider: str, name: str) -> ModelInfo | None:
    """The table's entry for the model, or None when the table does not know it."""
    table = _table()
    models = table.models.get(table.provider_tables.get(provider, provider), {})
    for candidate in _candidates(provider, name):
        info = models.get(table.aliases.get(candidate, candidate))
        if info is not None:
            return info
    return None


def known_models(provider: str) -> tuple[str, ...]:
    """The names the table knows for a provider, in table order (for messages and docs)."""
    table = _table()
    return tuple(table.models.get(table.provider_tables.get(provider, provider), {}))


# Name shapes that plainly belong to one provider, for names the table does not know.
_NAME_SHAPES = (
    ("openai", re.compile(r"(?:gpt-(?!oss)|chatgpt-|o\d(?:-|$))")),
    ("anthropic", re.compile(r"claude-")),
    ("gemini", re.compile(r"(?:models/)?gemini-")),
)


def owner_elsewhere(provider: str, name: str) -> str | None:
    """The provider a model name belongs to when that is not `provider`, else None.

    A name `provider`'s table knows belongs to it; otherwise a hosted provider's
    table that knows it, then the name's shape (`gpt-…`, `o3`, `claude-…`,
    `gemini-…`). Open-weight models (the Ollama table) are served by many, and
    unknown names of no clear shape (a fine-tune, a local name) are nobody's.
    """
    table = _table()
    own = table.provider_tables.get(provider, provider)
    if lookup(provider, name) is not None:
        return None
    for other, _ in _NAME_SHAPES:
        if other != own and lookup(other, name) is not None:
            return other
    base = name.split("/")[-1] if "/" in name and not name.startswith("models/") else name
    for other, shape in _NAME_SHAPES:
        if other != own and shape.match(base):
            return other
    return None


def provider_mismatch(provider: str, name: str) -> str | None:
    """A warning when the request for `provider` would name another provider's model."""
    owner = owner_elsewhere(provider, name)
    if owner is None:
        return None
    return (
        f"model {name!r} belongs to {owner}, but the request is built for {provider}: "
        f"the payload names it anyway (pass --model to name a model {provider} serves)"
    )
