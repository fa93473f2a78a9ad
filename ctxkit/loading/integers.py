"""Integral floats where the fixture format wants an integer become ints.

Input: a schema-valid document (JSON-shaped data) that holds floats. Output: the same
document, changed in place: `3.0` or `1e308` in an integer field (`tokens`, `image_cap`,
`max_input_tokens`, …) is the int it stands for. JSON Schema counts an integral float as
an integer, but the code after the loader slices, ranges and prints with these values,
and `2.0` there meant a crash (exit 3) or `"tokens": 4.0` in a report. The fields are
read from the schema itself, so a new integer field is covered without a list to keep.
"""

from __future__ import annotations

import functools
from typing import Any

Pattern = tuple[str, ...]  # keys; "*" for every item of a list


@functools.cache
def integer_fields() -> tuple[Pattern, ...]:
    """Every path of the schema whose value must be an integer."""
    from ctxkit.loading.schema import load_schema

    schema = load_schema()
    defs: dict[str, Any] = schema.get("$defs", {})
    found: set[Pattern] = set()

    def walk(node: Any, path: Pattern, refs: frozenset[str]) -> None:
        if not isinstance(node, dict):
            return
        ref = node.get("$ref", "")
        if ref.startswith("#/$defs/") and (name := ref.rsplit("/", 1)[1]) not in refs:
            walk(defs[name], path, refs | {name})
        if node.get("type") == "integer" or node.get("type") == ["integer", "null"]:  # not ids (string or integer)
            found.add(path)
        for key in ("anyOf", "oneOf", "allOf"):
            for sub in node.get(key, ()):
                walk(sub, path, refs)
        for key in ("if", "then", "else"):
            walk(node.get(key), path, refs)
        for name, sub in node.get("properties", {}).items():
            walk(sub, (*path, name), refs)
        walk(node.get("items"), (*path, "*"), refs)

    walk(schema, (), frozenset())
    return tuple(sorted(found))


def whole_numbers(doc: Any) -> None:
    """Replace, in place, each integral float at an integer field by its int."""
    for pattern in integer_fields():
        _convert(doc, pattern)


def _convert(node: Any, pattern: Pattern) -> None:
    head, rest = pattern[0], pattern[1:]
    if head == "*":
        children = range(len(node)) if isinstance(node, list) else range(0)
    else:
        children = [head] if isinstance(node, dict) and head in node else []  # type: ignore[assignment]
    for key in children:
        value = node[key]
        if rest:
            _convert(value, rest)
        elif isinstance(value, float) and value.is_integer():
            node[key] = int(value)
