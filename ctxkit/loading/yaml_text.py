"""YAML text → plain data in JSON's model (R-FIX-5): the YAML half of the syntax stage.

Input: the decoded text of a fixture or templates file. Output: dicts, lists, strings,
ints, floats (their written text kept for exact decimals), booleans and None, or an
`InputError` located at line:column. Loading is safe (no object construction); non-string
and duplicate keys, non-JSON tags, alias bombs (by nodes and by the text they expand to)
and recursive aliases are refused before anything walks the expanded data.
"""

from __future__ import annotations

import math
from typing import Any

import yaml

from ctxkit.errors import InputError, Problem
from ctxkit.loading.files import format_limit
from ctxkit.loading.schema import line_column, problem
from ctxkit.loading.values import FloatTexts

try:  # libyaml when available: the same safe constructor, a faster parser
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

MAX_ALIAS_EXPANSION = 1_000_000  # nodes that aliases may add beyond the nodes written
_STR_TAG = "tag:yaml.org,2002:str"
_MAX_INT_BITS = 14_000  # about 4,200 decimal digits: JSON's parser takes no more, and str() works
_Scalar = yaml.ScalarNode


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


def parse_yaml(source: str, text: str, floats: FloatTexts, max_size: int) -> Any:
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
        raise InputError(problem(source, line_column(text, index), message)) from None
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
            message += f" (noticed at {line_column(text, mark.index)})"
        mark = opened
    return problem(source, "" if mark is None else line_column(text, min(mark.index, end)), message)


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
            if chars[key] > max_size:  # first: when both bounds pass here, the limit the user sets is the news
                limit = format_limit(max_size)
                raise _expansion_error(
                    f"aliases expand the document past the size limit of {limit} (see --max-size)", node
                )
            if sizes[key] - len(sizes) > MAX_ALIAS_EXPANSION:
                raise _expansion_error("aliases expand the document too much (alias bomb?)", node)
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
