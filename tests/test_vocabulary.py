"""The closed lists (providers, tokenizers) have one source in code, `ctxkit/loading/domain.py`;
the fixture schema, the command line, translation and token counting must agree with it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ctxkit.cli.options import PROVIDER_TYPE, TOKENIZER_TYPE
from ctxkit.counting.tokens import get_counter
from ctxkit.errors import InputError
from ctxkit.loading.domain import TOKENIZERS, Provider
from ctxkit.loading.schema import load_schema
from ctxkit.translate import MODULES, translator


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


def test_schema_provider_enums_are_the_provider_enum() -> None:
    found = list(_enums_of(load_schema(), "provider"))
    assert found, "the schema states no provider enum"
    assert all(e == [str(p) for p in Provider] for e in found), found


def test_schema_tokenizer_enum_is_tokenizers() -> None:
    found = list(_enums_of(load_schema(), "tokenizer"))
    assert found == [list(TOKENIZERS)]


def test_command_line_choices_are_the_domain_lists() -> None:
    assert list(PROVIDER_TYPE.choices) == [str(p) for p in Provider]
    assert list(TOKENIZER_TYPE.choices) == list(TOKENIZERS)


def test_every_provider_has_a_translator() -> None:
    assert set(MODULES) == set(Provider)
    for provider in Provider:
        assert callable(translator(provider))


def test_every_tokenizer_has_a_counter_and_an_unknown_one_lists_them() -> None:
    for name in TOKENIZERS:
        assert get_counter(name).name == name
    with pytest.raises(InputError, match=r"known: cl100k_base, o200k_base, approx\)"):
        get_counter("p50k_base")
