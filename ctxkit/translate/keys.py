"""A prompt item's identity (R-RPL-4): a value equal for two items exactly when the canonical
JSON of their role and content is equal.

Input: a role and one item as the body holds it. Output: `item_key(role, part)`, the key the
cache trie and the break finder compare; `canonical` and `compact`, the two JSON spellings
ctxkit writes (sorted and as sent); `salted_key`, a key that also names the settings a logged body
was sent with. A top-level `cache_control` is left out of the key, so a moved cache breakpoint
changes no item.

A key is not the JSON text: it is a tuple that holds the item's very strings (a replay keeps one
key per distinct item for the whole run, and a copy of every message's text in JSON would
double the history's memory). The tuple spells what the JSON says, token by token: an object as
`"{"` then its members in sorted order, each name and value; an array as `"["` then its
values; a string as itself; null as None; any other value (numbers, true, false) as `("#", its
JSON)`, so 1, 1.0 and true stay three values. An object item whose values are all strings and
nulls (most messages) is held as its shape, shared, and its values (`_members`). Two keys are
equal exactly when the two JSON texts are (`tests/test_item_keys.py` checks it against the JSON
on generated values).
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from typing import Any

# `json.dumps` with options builds an encoder per call; these are built once (the same output).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode
_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode

Key = Hashable  # an item's key: `item_key`'s tuple, the definitions item's canonical JSON, or a replay's number

_OBJECT, _ARRAY, _OTHER, _PART = "{", "[", "#", "="  # the tags of a key's tuples
_NAMES = frozenset({str})
_FLAT = frozenset({str, type(None)})  # values a key holds as they are (`frozen`)
_TRUE, _FALSE = (_OTHER, "true"), (_OTHER, "false")


def canonical(value: Any) -> str:
    """Sorted keys, no whitespace, non-ASCII kept: equal values give equal strings."""
    return _CANONICAL(value)


def compact(value: Any) -> str:
    """JSON as sent on the wire: key order kept, no whitespace, non-ASCII kept."""
    return _COMPACT(value)


def item_key(role: str | None, part: Any) -> tuple[Any, ...]:
    """The item's identity: its role and its content without a top-level `cache_control`, equal
    exactly when the canonical JSON of `{"role": ROLE, "item": ITEM}` is (see the module
    docstring). An object item's members follow its role in the same tuple; an object of strings
    and nulls is held as its shape and its values (`_members`)."""
    head = role if type(role) is str else frozen(role)
    if isinstance(part, dict):
        fields = without_cache_control(part)  # a copy only when it has one
        if type(fields) is dict and _NAMES.issuperset(map(type, fields)):
            if _FLAT.issuperset(map(type, fields.values())):  # strings and nulls, held as they are: in C
                shaped = _SHAPES.get((head, *fields))  # by the names as they come: no sort
                if shaped is None:
                    shaped = _shaped(head, fields)
                return (shaped[0], *map(fields.__getitem__, shaped[1]))
            out: list[Any] = [head, _OBJECT]
            for name in sorted(fields):
                value = fields[name]
                out += (name, value if type(value) is str else frozen(value))
            return _spelled(out)
        return _spelled([head, *frozen(fields)])
    return (head, _PART, frozen(part))


def _spelled(out: list[Any]) -> tuple[Any, ...]:
    """An object item's key spelled out, [head, "{", name, value, ...]: as `_members` holds it when
    every value is a string or null (the same key as the same members reach by another way)."""
    values = out[3::2]
    if _FLAT.issuperset(map(type, values)):
        return _members(out[0], out[2::2], values)
    return tuple(out)


def _members(head: Any, names: list[str], values: list[Any]) -> tuple[Any, ...]:
    """An object item's key when every value is a string or null: (its shape, *its values), the
    shape being (`_SHAPE`, head, *names), names in the JSON's order. At least three entries fewer
    than the spelled-out tuple, for the same equality: the shape starts with `_SHAPE`, which no
    spelled key or frozen value holds, so a shaped key equals only a shaped key, of the same head,
    names and values (`tests/test_item_keys.py`)."""
    return ((_SHAPE, head, *names), *values)


def _shaped(head: Any, fields: dict[str, Any]) -> tuple[tuple[Any, ...], tuple[str, ...]]:
    """The shape of the key of an object of strings and nulls and its names in order, kept by
    the head and the names as they come (`_SHAPES`), so keys of the same role and names share
    one shape and are made without sorting."""
    names = tuple(sorted(fields))
    shaped = ((_SHAPE, head, *names), names)
    if len(_SHAPES) < _SHAPES_HELD:
        _SHAPES[(head, *fields)] = shaped
    return shaped


# A shaped key's first entry starts with this 1-tuple (a frozen value is a string, None or a
# tuple starting with a tag string; a spelled key starts with its head): see `_members`.
_SHAPE = ("",)
# (head, *names as an item lists them) -> (shape, names sorted): a value only ever equal to itself,
# so sharing it changes no key; a few per replay (roles x member lists), bounded for safety.
_SHAPES: dict[tuple[Any, ...], tuple[tuple[Any, ...], tuple[str, ...]]] = {}
_SHAPES_HELD = 4096


def frozen(value: Any) -> Any:
    """A value as a key holds it: a string itself, null as None, an object or array as a tuple of
    its tag and contents, anything else as its JSON text, tagged."""
    kind = type(value)
    if kind is str or value is None:
        return value
    if isinstance(value, str):
        return str.__str__(value)  # a subclass of str: JSON writes its characters
    if isinstance(value, dict):
        out: list[Any] = [_OBJECT]
        for name, inner in sorted(value.items(), key=_first):  # json's order (an error where it errs)
            out += (_name(name), frozen(inner))
        return tuple(out)
    if isinstance(value, (list, tuple)):
        return (_ARRAY, *map(frozen, value))
    if kind is bool:
        return _TRUE if value else _FALSE
    if kind is int:
        return (_OTHER, int.__repr__(value))  # what json writes for an int
    if kind is float and value - value == 0.0:  # finite: json writes float.__repr__ (NaN, Infinity below)
        return (_OTHER, float.__repr__(value))
    return (_OTHER, canonical(value))


def salted_key(key: Key, salt: str) -> Key:
    """`key` as a logged body sent with other cache-keyed settings has it (`salt` starts with a
    NUL, which no item key's second entry does, so a salted key equals no item's)."""
    return (key, salt)


def without_cache_control(part: Any) -> Any:
    """The item as its key reads it: a top-level `cache_control` removed (a copy only then)."""
    if isinstance(part, dict) and "cache_control" in part:
        return {k: v for k, v in part.items() if k != "cache_control"}
    return part


def _first(pair: tuple[Any, Any]) -> Any:
    return pair[0]


def _name(name: Any) -> str:
    """An object member's name as JSON writes it (a number, true, false or null spelled)."""
    if isinstance(name, str):
        return str.__str__(name)
    if name is None or isinstance(name, (int, float)):
        return canonical(name)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(name).__name__}")
