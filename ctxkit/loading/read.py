"""Loading: fixture file → `domain.Fixture` (layer 1), the only stage that reads files.

Input: a path (or "-" for stdin). Output: a `domain.Fixture`, or an `InputError`
listing every problem of the first stage that fails: bytes and syntax (here, R-FIX-5),
then the schema (`fixture_schema`), then references and files (`fixture_refs`).
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path
from typing import IO, Any

import yaml

from ctxkit.assembly import collector
from ctxkit.errors import InputError, Problem
from ctxkit.loading import domain
from ctxkit.loading.files import TooBig, Unreadable, format_limit, read_bounded, read_regular_file
from ctxkit.loading.refs import FloatTexts, build_fixture, template_problems
from ctxkit.loading.schema import JsonPath, load_schema, pointer, problem, validate_document

__all__ = ["load_fixture", "load_schema", "load_templates_file", "parse_size"]

try:  # libyaml when available: the same safe constructor, a faster parser
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

DEFAULT_MAX_SIZE = 64 * 1024**2
MAX_ALIAS_EXPANSION = 1_000_000  # nodes that aliases may add beyond the nodes written
_SIZE_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}
_SIZE = re.compile(r"\s*(\d{1,19})\s*(?:([kmg])(?:i?b)?|b)?\s*", re.IGNORECASE)
_STR_TAG = "tag:yaml.org,2002:str"
_MAX_INT_BITS = 14_000  # about 4,200 decimal digits: JSON's parser takes no more, and str() works
_Scalar = yaml.ScalarNode


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
        doc = parse_document(path, _decode(path, data), floats, max_size=max_size)
        validate_document(path, doc)
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


def parse_size(text: str) -> int:
    """`--max-size`: bytes with an optional K/M/G suffix (binary units: 1K = 1024)."""
    match = _SIZE.fullmatch(text)
    if match is None or int(match[1]) == 0:
        raise InputError(problem("--max-size", "", f"expected a positive size such as 512K or 64M, got {text!r}"))
    return int(match[1]) * _SIZE_UNITS[(match[2] or "").lower()]


# --- bytes ---------------------------------------------------------------------------------


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


def parse_document(source: str, text: str, floats: FloatTexts, *, max_size: int = DEFAULT_MAX_SIZE) -> Any:
    """JSON when the first non-blank character is `{` or `[` and it parses as JSON, else YAML.

    Every float's text is recorded in `floats` (by object id) so ratios stay exact decimals.
    """
    if not text.lstrip().startswith(("{", "[")):
        return _parse_yaml(source, text, floats, max_size)
    try:
        return _parse_json(source, text, floats)
    except json.JSONDecodeError as json_error:
        try:
            return _parse_yaml(source, text, floats, max_size)  # YAML flow style, e.g. {ctxkit: 1, ...}
        except InputError:
            pass  # it looks like JSON: JSON's complaint is the useful one
        location = f"{json_error.lineno}:{json_error.colno}"
        raise InputError(problem(source, location, json_error.msg)) from None


class _DuplicateKey(Exception):
    pass


def _parse_json(source: str, text: str, floats: FloatTexts) -> Any:
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
    if _SURROGATE_ESCAPE.search(text):
        _refuse_lone_surrogates(source, text)
    return doc


class _BadNumber(ValueError):
    pass


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
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
                problem(source, _line_column(text, match.start()), f"lone surrogate {match[1]} (not valid Unicode)")
            )
    if found:
        raise InputError(found)


def _line_column(text: str, index: int) -> str:
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return f"{line}:{column}"


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
                found.append(problem(source, _line_column(text, match.start()), f"duplicate key {key!r}"))
            keys.add(key)
            expect_key = False
    return found or [problem(source, "", "duplicate key")]


class _FixtureLoader(_BaseLoader):
    """Safe YAML restricted to JSON's data model: string keys, no duplicates, strings stay strings."""

    floats: FloatTexts
    checked: set[int]
    key_problems: set[tuple[int, int, str]]

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        if not isinstance(node, yaml.MappingNode):  # e.g. `!!map [a]`
            raise yaml.constructor.ConstructorError(None, None, f"expected a mapping, found {node.id}", node.start_mark)
        if id(node) not in self.checked:  # the first call sees the keys as written
            self.checked.add(id(node))
            keys = [key for key, _ in node.value if key.tag == _STR_TAG and type(key) is _Scalar]
            if len({key.value for key in keys}) != len(keys):
                seen: set[str] = set()
                for key in keys:
                    if key.value in seen:
                        self._key_problem(key, f"duplicate key {_short(key.value)}")
                    seen.add(key.value)
        super().flatten_mapping(node)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        self.flatten_mapping(node)
        if any(key.tag != _STR_TAG or type(key) is not _Scalar for key, _ in node.value):
            kept = []
            for key, value in node.value:
                if key.tag == _STR_TAG and isinstance(key, yaml.ScalarNode):
                    kept.append((key, value))
                elif isinstance(key, yaml.ScalarNode):
                    self._key_problem(key, f"non-string key {_short(key.value)} (quote it)")
                else:
                    self._key_problem(key, "non-string key (a mapping or list used as a key)")
            node.value = kept
        return yaml.constructor.BaseConstructor.construct_mapping(self, node, deep=deep)

    def _key_problem(self, node: yaml.Node, message: str) -> None:
        self.key_problems.add((node.start_mark.line + 1, node.start_mark.column + 1, message))

    def construct_exact_float(self, node: yaml.ScalarNode) -> float:
        try:
            value = super().construct_yaml_float(node)
        except (ValueError, IndexError):
            raise _invalid(node) from None
        if not math.isfinite(value):
            raise yaml.constructor.ConstructorError(None, None, f"number not allowed: {node.value}", node.start_mark)
        written = node.value.replace("_", "")
        self.floats[id(value)] = (value, written if ":" not in written else repr(value))
        return value

    def construct_strict_int(self, node: yaml.ScalarNode) -> int:
        try:
            value: int = super().construct_yaml_int(node)
        except (ValueError, IndexError):  # `!!int abc`, `!!int ''`, or thousands of digits
            raise _invalid(node) from None
        if value.bit_length() > _MAX_INT_BITS:  # e.g. thousands of hex digits: no longer printable
            raise _invalid(node)
        return value

    def construct_strict_bool(self, node: yaml.ScalarNode) -> bool:
        try:
            return super().construct_yaml_bool(node)
        except (KeyError, IndexError):  # `!!bool maybe`
            raise _invalid(node) from None

    def construct_text(self, node: yaml.ScalarNode) -> str:
        return str(self.construct_scalar(node))  # timestamps stay the text as written

    def construct_refused(self, node: yaml.Node) -> None:
        raise yaml.constructor.ConstructorError(
            None, None, f"tag {node.tag} is not allowed in a fixture", node.start_mark
        )


def _short(text: str) -> str:
    return repr(text[:40]) + ("…" if len(text) > 40 else "")


def _invalid(node: yaml.ScalarNode) -> yaml.constructor.ConstructorError:
    kind = node.tag.rsplit(":", 1)[-1]
    return yaml.constructor.ConstructorError(None, None, f"invalid {kind} {_short(node.value)}", node.start_mark)


_FixtureLoader.add_constructor("tag:yaml.org,2002:timestamp", _FixtureLoader.construct_text)
_FixtureLoader.add_constructor("tag:yaml.org,2002:float", _FixtureLoader.construct_exact_float)
_FixtureLoader.add_constructor("tag:yaml.org,2002:int", _FixtureLoader.construct_strict_int)
_FixtureLoader.add_constructor("tag:yaml.org,2002:bool", _FixtureLoader.construct_strict_bool)
for _tag in ("binary", "set", "omap", "pairs"):
    _FixtureLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _FixtureLoader.construct_refused)


def _parse_yaml(source: str, text: str, floats: FloatTexts, max_size: int) -> Any:
    loader = _FixtureLoader(text)
    loader.floats, loader.checked, loader.key_problems = floats, set(), set()
    try:
        node = loader.get_single_node()
        if node is None:
            raise InputError(problem(source, "", "empty input (no YAML or JSON document)"))
        if "&" in text:  # anchors exist: aliases may multiply the document
            _check_expansion(node, max_size)
        doc = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        raise InputError(_yaml_problem(source, exc, text)) from None
    except yaml.reader.ReaderError as exc:
        index = exc.position
        if exc.encoding != "unicode":  # libyaml counts UTF-8 bytes
            index = len(text.encode("utf-8")[:index].decode("utf-8", "ignore"))
        character = exc.character if isinstance(exc.character, str) else chr(exc.character)
        message = f"{exc.reason} (character {character!r})"
        raise InputError(problem(source, _line_column(text, index), message)) from None
    except yaml.YAMLError as exc:
        raise InputError(problem(source, "", str(exc))) from None
    except RecursionError:
        raise InputError(problem(source, "", "nested too deeply")) from None
    except ValueError as exc:  # e.g. an integer with thousands of digits
        raise InputError(problem(source, "", f"invalid number: {exc}")) from None
    finally:
        loader.dispose()
    if loader.key_problems:
        ordered = sorted(loader.key_problems)
        raise InputError([problem(source, f"{ln}:{col}", msg) for ln, col, msg in ordered])
    return doc


_OPENED = ("while parsing a flow", "while scanning a simple key", "while scanning a quoted scalar")


def _yaml_problem(source: str, exc: yaml.MarkedYAMLError, text: str) -> Problem:
    """A YAML error located where the user should look, counting lines as editors do.

    The parser notices an unclosed quote or bracket, a missing comma, or a key without
    its colon only at a later token, often on the next line or past the last line: the
    place where the unfinished construct starts is the useful location then, and the
    place it was noticed is added to the message.
    """
    message = " ".join(part for part in (exc.context, exc.problem) if part) or "invalid YAML"
    end = len(text.rstrip())
    mark, opened = exc.problem_mark, exc.context_mark
    if opened is not None and (mark is None or mark.index >= end or (exc.context or "").startswith(_OPENED)):
        if mark is not None and mark.index < end and mark.line != opened.line and mark.column > 0:
            message += f" (noticed at {_line_column(text, mark.index)})"
        mark = opened
    return problem(source, "" if mark is None else _line_column(text, min(mark.index, end)), message)


def _check_expansion(root: yaml.Node, max_size: int) -> None:
    """Refuse alias bombs and recursive aliases before anything walks the expanded data.

    Two bounds on the document as aliases expand it: its nodes, and the characters of
    its scalars (each alias counts its anchor's text again), which may not pass the
    size limit, so a large string referenced many times cannot multiply memory and time.
    Sizes are memoized per node: the walk is linear in the nodes written and stops as
    soon as a bound is passed.
    """
    sizes: dict[int, int] = {}  # expanded node count per node
    chars: dict[int, int] = {}  # expanded scalar characters per node
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, list[yaml.Node] | None]] = [(root, None)]
    while stack:
        node, children = stack.pop()
        key = id(node)
        if children is not None:
            on_path.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in children)
            chars[key] = len(node.value) if isinstance(node, yaml.ScalarNode) else sum(chars[id(c)] for c in children)
            if sizes[key] - len(sizes) > MAX_ALIAS_EXPANSION:
                raise _expansion_error("aliases expand the document too much (alias bomb?)", node)
            if chars[key] > max_size:
                limit = format_limit(max_size)
                raise _expansion_error(
                    f"aliases expand the document past the size limit of {limit} (see --max-size)", node
                )
        elif key not in sizes:
            if key in on_path:
                raise yaml.composer.ComposerError(None, None, "recursive alias", node.start_mark)
            on_path.add(key)
            children = _children(node)
            stack.append((node, children))
            stack.extend((child, None) for child in children if id(child) not in sizes)


def _expansion_error(message: str, node: yaml.Node) -> yaml.composer.ComposerError:
    return yaml.composer.ComposerError(None, None, message, node.start_mark)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []
