"""Schema stage: parsed document → accepted, or every schema problem as (JSON pointer, message).

Input: the plain data the parsers produce (dict, list, str, int, float, bool, None).
Output: nothing, or an `InputError` listing all problems sorted by pointer then message.
jsonschema-rs's compiled validator accepts valid documents quickly (docs/rules.md#quality-targets);
jsonschema runs only to explain a document the compiled check rejects.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from ctxkit import providers
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


def line_column(text: str, index: int) -> str:
    """`line:column` (1-based) of a character index, counting lines as editors do (by `\\n`)."""
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return f"{line}:{column}"


def load_schema() -> dict[str, Any]:
    """The fixture JSON Schema (draft 2020-12), its provider enum the registered providers (the
    data file lists the built-in ones), parsed once per list of providers. Do not mutate it."""
    return _schema(providers.names())


@functools.cache
def _schema(names: tuple[str, ...]) -> dict[str, Any]:
    text = (Path(__file__).parents[1] / "data" / "fixture.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    schema["$defs"]["model"]["properties"]["provider"]["enum"] = list(names)
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
        known = schema.get("properties", {}).keys()
        for key in instance.keys() - known:
            yield (*path, key), f"unknown key {_short(key)}{_did_you_mean(key, known)}"
    elif kind == "required":
        for key in value:
            if key not in instance:
                yield path, f"missing required key {key!r}"
    elif kind in ("anyOf", "oneOf"):
        yield from _explain_alternatives(error, path)
    elif kind == "type":
        yield path, f"expected {_types(value)}, got {_describe(instance)}"
    elif kind == "enum":
        yield path, f"{_short(instance)} is not one of {value!r}{_did_you_mean(instance, value)}"
    elif kind == "const":
        yield path, f"must be {value!r}, got {_describe(instance)}"
    elif kind in _COMPARISONS:
        yield path, f"must be {_COMPARISONS[kind]} {value}, got {instance}"
    else:
        yield path, error.message[:200]


def _did_you_mean(given: Any, known: Iterable[Any]) -> str:
    """` (did you mean 'role'?)` when one known name is close to a mistyped one."""
    import difflib

    if not isinstance(given, str):
        return ""
    close = difflib.get_close_matches(given, [k for k in known if isinstance(k, str)], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


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


def _fast_check() -> Check:
    """The compiled check of the schema for the registered providers."""
    return _compiled(providers.names())


@functools.cache
def _compiled(names: tuple[str, ...]) -> Check:
    """jsonschema-rs's compiled validator for the fixture schema (built once per process,
    imported on first use so commands that load no fixture never pay for it): True = valid.

    It must agree with jsonschema (property tests check); anything it raises on, such as a
    YAML key that is not a string, only means "let jsonschema decide". Formats are not
    asserted, as in jsonschema's default for 2020-12 (`now` and `at` are parsed later).
    """
    import jsonschema_rs

    validator = jsonschema_rs.Draft202012Validator(_schema(names), validate_formats=False)

    def check(doc: Any) -> bool:
        try:
            return validator.is_valid(doc)
        except Exception:
            return False

    return check
