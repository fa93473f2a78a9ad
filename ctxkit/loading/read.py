"""Loading: fixture file → `domain.Fixture` (layer 1), the only stage that reads files.

Input: a path (or "-" for stdin). Output: a `domain.Fixture`, or an `InputError`
listing every problem of the first stage that fails: bytes and syntax (here and in
`yaml_text`, R-FIX-5),
then the schema (`fixture_schema`), then references and files (`fixture_refs`).
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path
from typing import IO, Any

from ctxkit import collector
from ctxkit.errors import InputError, Problem
from ctxkit.loading import domain
from ctxkit.loading.files import DEFAULT_MAX_SIZE_TEXT, TooBig, Unreadable, read_bounded, read_regular_file
from ctxkit.loading.integers import whole_numbers
from ctxkit.loading.lines import with_lines
from ctxkit.loading.refs import build_fixture, template_problems
from ctxkit.loading.schema import JsonPath, line_column, load_schema, pointer, problem, validate_document
from ctxkit.loading.values import FloatTexts

__all__ = ["load_fixture", "load_schema", "load_templates_file", "parse_json", "parse_size"]

_SIZE_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}
_SIZE = re.compile(r"\s*(\d{1,19})\s*(?:([kmg])(?:i?b)?|b)?\s*", re.IGNORECASE)


def parse_size(text: str) -> int:
    """`--max-size`: bytes with an optional K/M/G suffix (binary units: 1K = 1024)."""
    match = _SIZE.fullmatch(text)
    if match is None or int(match[1]) == 0:
        example = f"512K or {DEFAULT_MAX_SIZE_TEXT}"
        raise InputError(problem("--max-size", "", f"expected a positive size such as {example}, got {text!r}"))
    return int(match[1]) * _SIZE_UNITS[(match[2] or "").lower()]


DEFAULT_MAX_SIZE = parse_size(DEFAULT_MAX_SIZE_TEXT)


def load_fixture(
    path: str,
    *,
    allow_outside_paths: bool = False,
    max_size: int = DEFAULT_MAX_SIZE,
    stdin: IO[bytes] | None = None,
) -> domain.Fixture:
    """Read, parse, validate and resolve one fixture; "-" reads stdin (paths resolve from cwd)."""
    data = _read(path, max_size, stdin)
    floats: FloatTexts = {}
    with collector.paused():  # millions of objects, no cycles
        text = _decode(path, data)
        doc = parse_document(path, text, floats, max_size=max_size, data=data)
        try:
            validate_document(path, doc)
        except InputError as exc:
            raise with_lines(exc, text) from None
        if floats:  # only a document with floats can hold an integral float
            whole_numbers(doc)
        base_dir = Path.cwd() if path == "-" else Path(path).absolute().parent
        return build_fixture(
            doc,
            source=path,
            base_dir=base_dir,
            allow_outside_paths=allow_outside_paths,
            max_size=max_size,
            floats=floats,
        )


def load_templates_file(
    path: str, *, max_size: int = DEFAULT_MAX_SIZE, stdin: IO[bytes] | None = None
) -> tuple[tuple[str, str], ...]:
    """`--templates FILE`: a YAML (or JSON) map of template name → text, checked like `templates:`."""
    doc = parse_document(path, _decode(path, _read(path, max_size, stdin)), {}, max_size=max_size)
    if not isinstance(doc, dict):
        raise InputError(problem(path, "", "expected a map of template name → text"))
    found: list[tuple[JsonPath, str]] = [
        ((name,), "expected a string") for name, text in doc.items() if not isinstance(text, str)
    ]
    if not found:
        found.extend(template_problems(doc, ()))
    if found:
        raise InputError([problem(path, pointer(at), message) for at, message in found])
    return tuple(doc.items())


# --- bytes ---------------------------------------------------------------------------------


def read_bytes(path: str, max_size: int, stdin: IO[bytes] | None = None) -> bytes:
    """A file's bytes ("-": stdin), at most `max_size`; an `InputError` naming the file otherwise."""
    return _read(path, max_size, stdin)


def _read(path: str, max_size: int, stdin: IO[bytes] | None) -> bytes:
    try:
        if path == "-":
            return read_bounded(stdin if stdin is not None else sys.stdin.buffer, max_size)
        return read_regular_file(path, max_size)
    except TooBig as exc:
        raise InputError(problem(path, "", exc.args[0])) from None
    except Unreadable as exc:
        raise InputError(problem(path, "", f"cannot read: {exc.args[0]}")) from None


def _decode(path: str, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        bad = data[exc.start : exc.start + 1].hex()
        raise InputError(problem(path, f"{line}:{column}", f"not valid UTF-8 (byte 0x{bad})")) from None


# --- syntax --------------------------------------------------------------------------------


def parse_document(
    source: str, text: str, floats: FloatTexts, *, max_size: int = DEFAULT_MAX_SIZE, data: bytes | None = None
) -> Any:
    """JSON when the first non-blank character is `{` or `[` and it parses as JSON, else YAML.

    Every float's text is recorded in `floats` (by object id) so ratios stay exact decimals.
    `data`: the bytes `text` was decoded from, when at hand (searched faster than the text).
    """
    if not text.lstrip().startswith(("{", "[")):
        return _parse_yaml(source, text, floats, max_size)
    try:
        return _parse_json(source, text, floats, data)
    except json.JSONDecodeError as json_error:
        try:
            return _parse_yaml(source, text, floats, max_size)  # YAML flow style, e.g. {ctxkit: 1, ...}
        except InputError:
            pass  # it looks like JSON: JSON's complaint is the useful one
        location = f"{json_error.lineno}:{json_error.colno}"
        raise InputError(problem(source, location, json_error.msg)) from None


def _parse_yaml(source: str, text: str, floats: FloatTexts, max_size: int) -> Any:
    """PyYAML is imported for a YAML document only: a JSON fixture never loads it (~20 ms)."""
    from ctxkit.loading.yaml_text import parse_yaml

    return parse_yaml(source, text, floats, max_size)


def parse_json(source: str, text: str, floats: FloatTexts) -> Any:
    """Strict JSON only (no YAML fallback): a syntax error is located by line:column."""
    try:
        return _parse_json(source, text, floats)
    except json.JSONDecodeError as exc:
        raise InputError(problem(source, f"{exc.lineno}:{exc.colno}", f"not JSON: {exc.msg}")) from None


class _DuplicateKey(Exception):
    pass


def _parse_json(source: str, text: str, floats: FloatTexts, data: bytes | None = None) -> Any:
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        result = dict(items)
        if len(result) != len(items):
            raise _DuplicateKey
        return result

    def number(token: str) -> float:
        value = float(token)
        if not math.isfinite(value):
            raise _BadNumber(token)
        floats[id(value)] = (value, token)
        return value

    def constant(token: str) -> float:
        raise _BadNumber(token)

    try:
        doc = json.loads(text, object_pairs_hook=pairs, parse_float=number, parse_constant=constant)
    except _DuplicateKey:
        raise InputError(_json_duplicates(source, text)) from None
    except _BadNumber as exc:
        raise InputError(problem(source, "", f"number not allowed: {exc.args[0]}")) from None
    except RecursionError:
        raise InputError(problem(source, "", "nested too deeply")) from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # e.g. an integer with thousands of digits
        raise InputError(problem(source, "", f"invalid number: {exc}")) from None
    if _SURROGATE_BYTES.search(data) if data is not None else _SURROGATE_ESCAPE.search(text):
        _refuse_lone_surrogates(source, text)
    return doc


class _BadNumber(ValueError):
    pass


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
# The same in the UTF-8 bytes (ASCII bytes never occur inside a multi-byte character): a
# bytes search is about twice as fast as one over the decoded text (12 MB: ~4 ms less).
_SURROGATE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
# Every backslash in valid JSON starts an escape: consuming `\\` pairs first and whole
# surrogate pairs next leaves exactly the lone halves for the last alternative.
_JSON_ESCAPES = re.compile(
    r"\\\\|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|(\\u[dD][89a-fA-F][0-9a-fA-F]{2})"
)


def _refuse_lone_surrogates(source: str, text: str) -> None:
    """A `\\ud800` without its pair decodes to a string no output can encode: refuse it here."""
    found = []
    for match in _JSON_ESCAPES.finditer(text):
        if match[1]:
            found.append(
                problem(source, line_column(text, match.start()), f"lone surrogate {match[1]} (not valid Unicode)")
            )
    if found:
        raise InputError(found)


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]', re.DOTALL)


def _json_duplicates(source: str, text: str) -> list[Problem]:
    """Find every duplicate key, with its line:column (the fast parser cannot tell where)."""
    found: list[Problem] = []
    stack: list[set[str] | None] = []
    expect_key = False
    for match in _JSON_TOKEN.finditer(text):
        token = match[0]
        if token in "{[":
            stack.append(set() if token == "{" else None)
            expect_key = token == "{"
        elif token in "}]":
            if not stack:
                break
            stack.pop()
            expect_key = False
        elif token == ",":
            expect_key = bool(stack) and stack[-1] is not None
        elif token == ":":
            expect_key = False
        elif expect_key and stack and (keys := stack[-1]) is not None:
            try:
                key = json.loads(token)
            except ValueError:  # past the part of the text the parser accepted
                break
            if key in keys:
                found.append(problem(source, line_column(text, match.start()), f"duplicate key {key!r}"))
            keys.add(key)
            expect_key = False
    return found or [problem(source, "", "duplicate key")]
