"""Effective settings: a Fixture plus command-line options, with the model table.

Input: `domain.Fixture`, `Options`. Output: `Effective`, the one place that
decides precedence (R-FIX-0: option > the fixture's explicit field > the model
table's value for the effective model > the defaults for unknown models).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from ctxkit import providers
from ctxkit.errors import InputError, Problem
from ctxkit.loading import models
from ctxkit.loading.domain import Fixture, Settings
from ctxkit.loading.templates import Templates, check_override


@dataclass(frozen=True, slots=True)
class Options:
    """What the command line may override (each None = not given)."""

    provider: str | None = None
    model: str | None = None
    max_input_tokens: int | None = None
    leaf: str | None = None
    tokenizer: str | None = None
    now: datetime | None = None
    templates: tuple[tuple[str, str], ...] = ()
    templates_source: str = ""


def python_options(provider: object = None, max_input_tokens: object = None) -> Options:
    """`Options` from Python values (the pytest plugin), accepted and refused as the command line
    accepts and refuses `--provider` and `--max-input-tokens` (text as typed, ints; the same
    messages: `tests/test_pytest_plugin.py` holds both to click's own)."""
    chosen: str | None = None
    window: int | None = None
    if provider is not None:
        text = _as_typed(provider)
        choices = list(providers.names())
        if text not in choices:
            shown = ", ".join(repr(c) for c in choices)
            raise InputError(f"Invalid value for '--provider': {text!r} is not one of {shown}.")
        chosen = text
    if max_input_tokens is not None:
        text = _as_typed(max_input_tokens)
        try:
            window = int(text)
        except ValueError:
            raise InputError(
                f"Invalid value for '--max-input-tokens': {text!r} is not a valid integer range."
            ) from None
        if window < 1:
            raise InputError(f"Invalid value for '--max-input-tokens': {window} is not in the range x>=1.")
    return Options(provider=chosen, max_input_tokens=window)


def _as_typed(value: object) -> str:
    """A Python value as the text the command line would receive (1.5, True: as typed)."""
    return value if isinstance(value, str) else str(value)


@dataclass(frozen=True, slots=True)
class Effective:
    """The settings an assembly runs with: the fixture's, the options' and the table's, resolved."""

    fixture: Fixture
    provider: str
    model: str
    max_input_tokens: int
    supports_images: bool
    max_output_tokens: int
    tokenizer: str
    templates: Templates
    now: datetime | None
    leaf: str | None
    tool_names: frozenset[str] = field(default_factory=frozenset)

    @property
    def settings(self) -> Settings:
        return self.fixture.settings


def provider_for_model(fixture_provider: str, model: str | None) -> str:
    """R-FIX-0: without `--provider`, a `--model` that belongs to another provider (the model
    table knows it there, or its name's shape says so) chooses that provider: `--model
    claude-sonnet-4-5` on an OpenAI fixture builds the Anthropic request."""
    owner = models.owner_elsewhere(fixture_provider, model) if model else None
    return owner or fixture_provider


def _lookup(provider: str, own: str, name: str, *, package: bool) -> models.ModelInfo | None:
    info = models.lookup(provider, name, package=package)
    if info is None and provider != own:
        # --provider switched the provider but not the model: keep the model's own limits
        info = models.lookup(own, name, package=package)
    return info


def resolve(fixture: Fixture, options: Options | None = None) -> Effective:
    """Apply the precedence rules; raise InputError naming the field to add."""
    o = options or Options()
    provider = o.provider if o.provider else provider_for_model(fixture.model.provider, o.model)
    name = o.model or fixture.model.name
    given = o.max_input_tokens or fixture.model.max_input_tokens
    # ctxkit's own table first; genai-prices (imported on use) only for a window nobody gave
    info = _lookup(provider, fixture.model.provider, name, package=False)
    if info is None and given is None:
        info = _lookup(provider, fixture.model.provider, name, package=True)
    defaults = info or models.DEFAULTS_FOR_UNKNOWN
    max_input = given
    if max_input is None:
        max_input = info.max_input_tokens if info else None
    if max_input is None:
        raise InputError(
            Problem(
                fixture.source,
                "/model/max_input_tokens",
                f"model {name!r} ({provider}) is not in the built-in model table: "
                "add model.max_input_tokens to the fixture or pass --max-input-tokens",
            )
        )
    supports_images = fixture.model.supports_images
    if supports_images is None:
        supports_images = defaults.supports_images
    max_output = fixture.model.max_output_tokens or defaults.max_output_tokens
    tokenizer = o.tokenizer or fixture.tokenizer or defaults.tokenizer
    problems = [Problem(o.templates_source, f"/{n}", msg) for n, t in o.templates if (msg := check_override(n, t))]
    if problems:
        raise InputError(problems)
    leaf = o.leaf if o.leaf is not None else fixture.leaf
    if o.leaf is not None and not any(m.id == o.leaf for m in fixture.messages):
        raise InputError(Problem(fixture.source, "", f"--leaf {o.leaf!r}: no such message"))
    if o.leaf is not None and fixture.message(o.leaf).role == "summary":
        raise InputError(Problem(fixture.source, "", f"--leaf {o.leaf!r} is a summary node, not a message"))
    return Effective(
        fixture=fixture,
        provider=provider,
        model=name,
        max_input_tokens=max_input,
        supports_images=supports_images,
        max_output_tokens=max_output,
        tokenizer=tokenizer,
        templates=Templates.build(fixture.templates, o.templates),
        now=o.now or fixture.now,
        leaf=leaf,
        tool_names=frozenset(t.name for t in fixture.tools),
    )
