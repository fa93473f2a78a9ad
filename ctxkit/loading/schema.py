"""Schema stage: parsed document → accepted, or every schema problem as (JSON pointer, message).

Input: the plain data the parsers produce (dict, list, str, int, float, bool, None).
Output: nothing, or an `InputError` listing all problems sorted by pointer then message.
A predicate compiled from the schema accepts valid documents quickly (SPEC §9);
jsonschema runs only to explain a document the predicate rejects.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ctxkit.errors import InputError, Problem

JsonPath = tuple[str | int, ...]
MAX_DEPTH = 120  # the schema is 7 levels deep; tool arguments may nest up to 100 more


def problem(source: str, location: str, message: str) -> Problem:
    """A Problem whose message is guaranteed to be one line."""
    if len(lines := message.splitlines()) != 1:
        message = " ".join(lines) or "invalid"
    return Problem(source, location, message)


def pointer(path: JsonPath) -> str:
    """JSON pointer of a path; unprintable characters are escaped so errors stay one line."""
    parts = []
    for part in path:
        text = str(part).replace("~", "~0").replace("/", "~1")
        if not text.isprintable():
            text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
        parts.append("/" + text)
    return "".join(parts)


@functools.cache
def load_schema() -> dict[str, Any]:
    """The fixture JSON Schema (draft 2020-12), parsed once. Do not mutate the result."""
    text = (Path(__file__).parents[1] / "data" / "fixture.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def validate_document(source: str, doc: Any) -> None:
    """Schema stage: a compiled fast check; jsonschema only to explain a rejected document."""
    if _fast_check()(doc):
        return
    deep = _too_deep(doc)
    if deep is not None:  # jsonschema's messages would recurse through it
        raise InputError(problem(source, pointer(deep), f"nested more than {MAX_DEPTH} levels deep"))
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(load_schema())
    found = {item for error in validator.iter_errors(doc) for item in _explain(error)}
    if found:
        ordered = sorted(found, key=lambda item: (sort_key(item[0]), item[1]))
        raise InputError([problem(source, pointer(path), message) for path, message in ordered])


def _too_deep(doc: Any) -> JsonPath | None:
    """Where the document nests deeper than MAX_DEPTH (pointer cut after 6 parts), if anywhere."""
    stack: list[tuple[Any, int, JsonPath]] = [(doc, 0, ())]
    while stack:
        value, depth, path = stack.pop()
        if depth > MAX_DEPTH:
            return path
        if isinstance(value, dict | list):
            pairs = value.items() if isinstance(value, dict) else enumerate(value)
            stack.extend((item, depth + 1, (*path, key) if depth < 6 else path) for key, item in pairs)
    return None


def sort_key(path: JsonPath) -> tuple[tuple[int, str | int], ...]:
    return tuple((0, part) if isinstance(part, int) else (1, part) for part in path)


def _explain(error: Any) -> Iterator[tuple[JsonPath, str]]:
    """One jsonschema error → (path, one-line message) pairs, worded for people."""
    path = tuple(error.absolute_path)
    schema, value, instance = error.schema, error.validator_value, error.instance
    kind = error.validator
    if isinstance(schema, dict) and "errorMessage" in schema:
        yield path, schema["errorMessage"]
    elif kind == "additionalProperties":
        for key in instance.keys() - schema.get("properties", {}).keys():
            yield (*path, key), f"unknown key {_short(key)}"
    elif kind == "required":
        for key in value:
            if key not in instance:
                yield path, f"missing required key {key!r}"
    elif kind in ("anyOf", "oneOf"):
        yield from _explain_alternatives(error, path)
    elif kind == "type":
        yield path, f"expected {_types(value)}, got {_describe(instance)}"
    elif kind == "enum":
        yield path, f"{_short(instance)} is not one of {value!r}"
    elif kind == "const":
        yield path, f"must be {value!r}, got {_describe(instance)}"
    elif kind in _COMPARISONS:
        yield path, f"must be {_COMPARISONS[kind]} {value}, got {instance}"
    else:
        yield path, error.message[:200]


_COMPARISONS = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}


def _explain_alternatives(error: Any, path: JsonPath) -> Iterator[tuple[JsonPath, str]]:
    """anyOf: explain the branch whose type fits (an object tool → its own errors)."""
    branches: dict[int, list[Any]] = {}
    for sub in error.context:
        branches.setdefault(sub.relative_schema_path[0], []).append(sub)
    wrong_type = {
        index
        for index, subs in branches.items()
        if any(sub.validator == "type" and not sub.relative_path for sub in subs)
    }
    fitting = [subs for index, subs in branches.items() if index not in wrong_type]
    if len(fitting) == 1:
        for sub in fitting[0]:
            yield from _explain(sub)
        return
    types = [sub.validator_value for subs in branches.values() for sub in subs if sub.validator == "type"]
    if types and len(fitting) == 0:
        yield path, f"expected {_types(types)}, got {_describe(error.instance)}"
    else:
        yield path, "does not match any of the allowed forms"


def _types(value: Any) -> str:
    names: list[str] = []
    for item in value if isinstance(value, list) else [value]:
        names.extend(item if isinstance(item, list) else [item])
    return " or ".join(dict.fromkeys(names))


_JSON_TYPES = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"))


def _describe(instance: Any) -> str:
    if instance is None:
        return "null"
    if isinstance(instance, dict):
        return "object"
    if isinstance(instance, list):
        return "array"
    for python_type, name in _JSON_TYPES:
        if isinstance(instance, python_type):
            return f"{name} {_short(instance)}"
    return type(instance).__name__


def _short(value: Any) -> str:
    if isinstance(value, dict | list):
        return "an object" if isinstance(value, dict) else "an array"
    if isinstance(value, str) and len(value) > 40:
        return repr(value[:40]) + "…"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


# --- the compiled fast path ----------------------------------------------------------------

Check = Callable[[Any], bool]
_ANNOTATIONS = {
    "title",
    "description",
    "$comment",
    "errorMessage",
    "format",
    "$schema",
    "$id",
    "$defs",
    "default",
    "examples",
}
_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
    "object": (dict,),
    "array": (list,),
}
_NUMBERS = (int, float)


def _yes(value: Any) -> bool:
    return True


def _no(value: Any) -> bool:
    return False


@functools.cache
def _fast_check() -> Check:
    """Compile the schema into one predicate; agrees with jsonschema on parsed JSON/YAML data.

    Covers exactly the keywords the fixture schema uses; any other keyword fails loudly.
    The loader's parsers only produce dict, list, str, int, float, bool and None.
    """
    schema = load_schema()
    return _compile(schema, schema["$defs"])


def _compile(schema: Any, defs: Mapping[str, Any]) -> Check:
    if schema is True or schema == {}:
        return _yes
    if schema is False:
        return _no
    unknown = schema.keys() - _ANNOTATIONS - _KEYWORDS.keys() - _OBJECT_KEYWORDS - {"then", "else"}
    if unknown:
        raise ValueError(f"fast path: unsupported schema keywords {sorted(unknown)}")
    checks = [compile_keyword(schema, defs) for k, compile_keyword in _KEYWORDS.items() if k in schema]
    if schema.keys() & _OBJECT_KEYWORDS:
        checks.append(_object(schema, defs))
    checks = [check for check in checks if check is not _yes]
    if not checks:
        return _yes
    if len(checks) == 1:
        return checks[0]
    return _every(checks)


def _every(checks: list[Check]) -> Check:
    if len(checks) == 2:
        first, second = checks
        return lambda value: first(value) and second(value)

    def every(value: Any) -> bool:
        for check in checks:
            if not check(value):
                return False
        return True

    return every


def _ref(schema: Any, defs: Mapping[str, Any]) -> Check:
    return _compile(defs[schema["$ref"].removeprefix("#/$defs/")], defs)


def _type(schema: Any, defs: Mapping[str, Any]) -> Check:
    names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    allowed = frozenset(t for name in names for t in _PY_TYPES[name])
    if len(allowed) == 1:
        (only,) = allowed
        return lambda value: type(value) is only
    return lambda value: type(value) in allowed


def _enum(schema: Any, defs: Mapping[str, Any]) -> Check:
    if not all(isinstance(item, str) for item in schema["enum"]):
        raise ValueError("fast path: only string enums")
    allowed = frozenset(schema["enum"])
    return lambda value: type(value) is str and value in allowed


def _const(schema: Any, defs: Mapping[str, Any]) -> Check:
    expected = schema["const"]
    if isinstance(expected, str):
        return lambda value: type(value) is str and value == expected
    if type(expected) is not int:
        raise ValueError("fast path: only string or integer constants")
    return lambda value: type(value) in _NUMBERS and value == expected  # as jsonschema: 1 == 1.0


def _minimum(schema: Any, defs: Mapping[str, Any]) -> Check:
    limit = schema["minimum"]
    return lambda value: type(value) not in _NUMBERS or value >= limit


def _maximum(schema: Any, defs: Mapping[str, Any]) -> Check:
    limit = schema["maximum"]
    return lambda value: type(value) not in _NUMBERS or value <= limit


def _exclusive_maximum(schema: Any, defs: Mapping[str, Any]) -> Check:
    limit = schema["exclusiveMaximum"]
    return lambda value: type(value) not in _NUMBERS or value < limit


def _object(schema: Any, defs: Mapping[str, Any]) -> Check:
    properties = {key: _compile(sub, defs) for key, sub in schema.get("properties", {}).items()}
    checked = {key: check for key, check in properties.items() if check is not _yes}
    required = tuple(schema.get("required", ()))
    extra = schema.get("additionalProperties", True)
    closed = frozenset(properties) if extra is False else None
    extra_check = None if extra is True or extra is False else _compile(extra, defs)
    if "additionalProperties" not in schema:  # the shapes of `if` conditions and `then` parts
        if not required and all(check is _no for check in checked.values()):
            forbidden = frozenset(checked)
            return lambda value: type(value) is not dict or value.keys().isdisjoint(forbidden)
        if len(checked) == 1 and required == tuple(checked):
            ((key, sub),) = checked.items()
            return lambda value: type(value) is not dict or (key in value and sub(value[key]))

    def check(value: Any) -> bool:
        if type(value) is not dict:
            return True
        for key in required:
            if key not in value:
                return False
        if closed is not None and not value.keys() <= closed:
            return False
        for key, item in value.items():
            sub = checked.get(key)
            if sub is not None:
                if not sub(item):
                    return False
            elif extra_check is not None and key not in properties and not extra_check(item):
                return False
        return True

    return check


def _items(schema: Any, defs: Mapping[str, Any]) -> Check:
    sub = _compile(schema["items"], defs)
    return lambda value: type(value) is not list or all(map(sub, value))


def _any_of(schema: Any, defs: Mapping[str, Any]) -> Check:
    subs = [_compile(sub, defs) for sub in schema["anyOf"]]
    return lambda value: any(sub(value) for sub in subs)


def _all_of(schema: Any, defs: Mapping[str, Any]) -> Check:
    return _every([_compile(sub, defs) for sub in schema["allOf"]])


def _not(schema: Any, defs: Mapping[str, Any]) -> Check:
    sub = _compile(schema["not"], defs)
    if sub is _yes or sub is _no:
        return _no if sub is _yes else _yes
    return lambda value: not sub(value)


def _if(schema: Any, defs: Mapping[str, Any]) -> Check:
    condition = _compile(schema["if"], defs)
    then = _compile(schema.get("then", True), defs)
    otherwise = _compile(schema.get("else", True), defs)
    return lambda value: then(value) if condition(value) else otherwise(value)


_OBJECT_KEYWORDS = frozenset({"properties", "required", "additionalProperties"})
_KEYWORDS: dict[str, Callable[[Any, Mapping[str, Any]], Check]] = {
    "$ref": _ref,
    "type": _type,
    "enum": _enum,
    "const": _const,
    "minimum": _minimum,
    "maximum": _maximum,
    "exclusiveMaximum": _exclusive_maximum,
    "items": _items,
    "anyOf": _any_of,
    "allOf": _all_of,
    "not": _not,
    "if": _if,
}
