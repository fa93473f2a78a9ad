"""What ctxkit knows about one provider, as data: `ProviderSpec`, and the registry of them.

Input: nothing (types), or a provider's name. Output: its `ProviderSpec`. Every stage that
depends on the provider asks here — the loader (the fixture schema's provider list, the model
table, the price data, the prompt-cache rules, a log's endpoints), counting (framing, the image
rule, the text ratio), translation (which wire format builds and reads its bodies) — so a
provider is described once. The registry sits below `loading` in the layer order so that every
stage can read it; behaviour (translators, how a format's body is read) lives with its stage and
is chosen by the spec's `format`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ctxkit.errors import InputError

# How an image's tokens are estimated (ctxkit/counting/image_rules.py).
IMAGE_RULES = ("openai", "anthropic", "gemini", "estimate")


@dataclass(frozen=True, slots=True)
class Framing:
    """What the provider adds around each message when it counts a prompt (R-RPL-4)."""

    per_message: int = 3  # tokens per payload message (OpenAI's published chat-format overhead)
    role: bool = True  # the role name's tokens count once per message
    priming: int = 3  # the reply priming, once per request


@dataclass(frozen=True, slots=True)
class Route:
    """How a recorded request's URL shows one of the provider's chat calls (a cassette holds URLs,
    not provider names): the end of its path, and the endpoint it is."""

    endpoint: str  # one of the spec's `endpoints`
    path: str  # regex the URL's percent-decoded path ends with; a group `model` names the model
    host: str | None = None  # regex found in the URL's host, when the host tells it apart


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    """One provider, everything about it that is data. Defaults suit a local, unpriced provider
    speaking a chat format of its own."""

    name: str  # as fixtures, the command line and logs name it
    format: str  # its bodies' wire format: a translator in ctxkit/translate/ (or `register_format`)
    endpoints: tuple[str, ...]  # a log's endpoints of its chat call (at least one; the first is the default)
    # The table of ctxkit/data/models.json it reads (None: its own name), or its own rows in that
    # shape (model name → max_input_tokens, max_output_tokens, supports_images, tokenizer).
    models: str | Mapping[str, Mapping[str, Any]] | None = None
    # The entry of ctxkit/data/cache_rules.json (None: its own name), or its own table in that shape.
    cache_rules: str | Mapping[str, Any] | None = None
    prices_id: str | None = None  # genai-prices' provider id (None: the package does not price it)
    also_priced_by: tuple[str, ...] = ()  # other package providers that serve its model names
    free: bool = False  # calls cost nothing (a local server): no price lookup, cost 0
    model_prefixes: tuple[str, ...] = ()  # dropped from a model name before lookup (after `<name>/`)
    model_tags: bool = False  # `model:tag` names: the tag is ignored when looking the model up
    name_shape: str | None = None  # regex: model names that plainly belong to this provider
    tiktoken_names: bool = False  # a model the table lacks takes tiktoken's encoding for its name
    framing: Framing = field(default_factory=Framing)
    text_ratio: str | None = None  # ctxkit/data file of a fitted ratio applied to cl100k_base counts
    image_rule: str = "estimate"  # one of IMAGE_RULES
    keyed_settings: tuple[str, ...] = ()  # request settings its prompt cache is keyed on
    keyed_from: str = "all"  # where a keyed setting changes the prefix: all items, or the "messages"
    image_cap: int | None = None  # images per request when `settings.azure_image_cap` is on
    otel_names: tuple[str, ...] = ()  # its OpenTelemetry `gen_ai.provider.name` values besides its name
    routes: tuple[Route, ...] = ()  # the URLs of its chat calls in a cassette (`route`)


_REGISTRY: dict[str, ProviderSpec] = {}


def register(spec: ProviderSpec) -> ProviderSpec:
    """Make a provider known to every stage (once per name; registering it again is an error)."""
    if spec.name in _REGISTRY and _REGISTRY[spec.name] != spec:
        raise ValueError(f"provider {spec.name!r} is already registered")
    if not spec.endpoints:
        raise ValueError(f"provider {spec.name!r}: name at least one endpoint")
    if spec.image_rule not in IMAGE_RULES:
        raise ValueError(f"provider {spec.name!r}: image_rule {spec.image_rule!r} is not one of {IMAGE_RULES}")
    for r in spec.routes:
        if r.endpoint not in spec.endpoints:
            raise ValueError(
                f"provider {spec.name!r}: route {r.path!r} is for {r.endpoint!r}, not one of its endpoints"
            )
    _REGISTRY[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    """Forget a provider registered at run time (tests)."""
    _REGISTRY.pop(name, None)


def names() -> tuple[str, ...]:
    """Every registered provider's name, built-ins first, in registration order."""
    return tuple(_REGISTRY)


def spec(name: str) -> ProviderSpec:
    """The provider's spec; an unknown name is bad input (exit 2) naming the known ones."""
    found = _REGISTRY.get(name)
    if found is None:
        raise InputError(f"unknown provider {name!r} (known: {', '.join(_REGISTRY)})")
    return found


def wire_format(name: str) -> str:
    """The wire format of a provider's bodies."""
    return spec(name).format


def route(host: str, path: str) -> tuple[str, str, str | None] | None:
    """(provider, endpoint, model the URL names) of the registered route a URL's host and
    percent-decoded path match, or None. Where several match, a route that names its host wins,
    then the one that matches more of the path (Azure's deployment URLs before OpenAI's)."""
    best: tuple[tuple[bool, int], tuple[str, str, str | None]] | None = None
    for name, found in _REGISTRY.items():
        for r in found.routes:
            if r.host is not None and not re.search(r.host, host):
                continue
            m = re.search(rf"(?:{r.path})\Z", path)
            if m is None:
                continue
            rank = (r.host is not None, m.end() - m.start())
            if best is None or rank > best[0]:
                best = (rank, (name, r.endpoint, m.groupdict().get("model")))
    return None if best is None else best[1]
