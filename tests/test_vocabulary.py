"""The closed lists have one source in code each: the providers the registry
(`ctxkit/providers/`), the tokenizers `ctxkit/loading/domain.py`; the fixture schema (its data
file and the schema the loader checks with), the command line, translation and token counting
must agree with them."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxkit import providers
from ctxkit.cli.options import PROVIDER_TYPE, TOKENIZER_TYPE
from ctxkit.counting.tokens import get_counter
from ctxkit.errors import InputError
from ctxkit.loading.domain import TOKENIZERS
from ctxkit.loading.schema import load_schema
from ctxkit.translate import translator

BUILT_IN = ("openai", "azure", "anthropic", "ollama", "gemini")
SCHEMA_FILE = Path(__file__).resolve().parent.parent / "ctxkit" / "data" / "fixture.schema.json"


def _enums_of(node: Any, key: str) -> Iterator[list[Any]]:
    """Every `enum` of a property named `key`, anywhere in the schema (it may be stated in $defs too)."""
    if isinstance(node, dict):
        for name, value in node.items():
            if name == key and isinstance(value, dict) and "enum" in value:
                yield value["enum"]
            yield from _enums_of(value, key)
    elif isinstance(node, list):
        for value in node:
            yield from _enums_of(value, key)


def test_built_in_providers_are_registered_in_the_schema_order() -> None:
    assert providers.names() == BUILT_IN


def test_schema_provider_enums_are_the_registered_providers() -> None:
    """The data file (what `ctxkit schema` shows editors) lists the built-in providers; the schema
    the loader checks with lists every registered one."""
    written = list(_enums_of(json.loads(SCHEMA_FILE.read_text("utf-8")), "provider"))
    assert written == [list(BUILT_IN)]
    found = list(_enums_of(load_schema(), "provider"))
    assert found == [list(providers.names())]


def test_schema_tokenizer_enum_is_tokenizers() -> None:
    found = list(_enums_of(load_schema(), "tokenizer"))
    assert found == [list(TOKENIZERS)]


def test_command_line_choices_are_the_domain_lists() -> None:
    assert list(PROVIDER_TYPE.choices) == list(providers.names())
    assert list(TOKENIZER_TYPE.choices) == list(TOKENIZERS)


def test_every_provider_has_a_translator() -> None:
    for provider in providers.names():
        assert callable(translator(provider))


def test_every_tokenizer_has_a_counter_and_an_unknown_one_lists_them() -> None:
    for name in TOKENIZERS:
        assert get_counter(name).name == name
    with pytest.raises(InputError, match=r"known: cl100k_base, o200k_base, approx\)"):
        get_counter("p50k_base")


def test_every_provider_has_cache_rules_a_model_table_and_a_price_source() -> None:
    """What the old recipe forgot (issue 22 item 2): a provider without cache rules crashed replay."""
    from ctxkit.loading.cache_rules import rules
    from ctxkit.loading.domain import CacheRules
    from ctxkit.loading.models import known_models

    for name in providers.names():
        spec = providers.spec(name)
        assert rules(name, "a-model-nobody-knows", CacheRules()).family, name
        assert known_models(name), name
        assert spec.free or spec.prices_id, name


def test_opentelemetry_provider_names_are_the_specs() -> None:
    from ctxkit.loading.otel import otel_provider

    given = {
        "openai": "openai",
        "azure.ai.openai": "azure",
        "az.ai.openai": "azure",
        "azure.ai.inference": "azure",
        "anthropic": "anthropic",
        "aws.bedrock": "anthropic",
        "gcp.gemini": "gemini",
        "gcp.vertex_ai": "gemini",
        "gcp.gen_ai": "gemini",
        "gemini": "gemini",
        "vertex_ai": "gemini",
        "ollama": "ollama",
        "mistral_ai": "openai",  # any other: the normalised messages read as OpenAI's
    }
    assert {name: otel_provider(name) for name in given} == given


def _names_in(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.Tuple | ast.Set | ast.List):
        return {name for element in node.elts for name in _names_in(element)}
    return set()


def _called(node: ast.AST) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def test_no_module_compares_a_provider_with_a_name() -> None:
    """Issue 22 item 2: what differs between providers is a field of their spec (or of the wire
    format it names), so a provider added by the recipe is never missed by an `if provider ==
    "openai"` somewhere. Modules of ctxkit/providers/ state the names; nothing else compares one."""
    package = Path(__file__).resolve().parent.parent / "ctxkit"
    found = []
    for path in sorted(package.rglob("*.py")):
        if path.parent.name == "providers":
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            if any("provider" in _called(s).lower() for s in sides) and any(
                _names_in(s) & set(BUILT_IN) for s in sides
            ):
                found.append(f"{path.relative_to(package.parent)}:{node.lineno}: {ast.unparse(node)}")
    assert not found, found
