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
JSON)`, so 1, 1.0 and true stay three values. Two keys are equal exactly when the two JSON
texts are (`tests/test_item_keys.py` checks it against the JSON on generated values).
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from itertools import chain
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
    docstring). An object item's members follow its role in the same tuple."""
    head = role if type(role) is str else frozen(role)
    if isinstance(part, dict):
        fields = without_cache_control(part)  # a copy only when it has one
        if type(fields) is dict and _NAMES.issuperset(map(type, fields)):
            if _FLAT.issuperset(map(type, fields.values())):  # strings and nulls, held as they are: in C
                return (head, _OBJECT, *chain.from_iterable(sorted(fields.items())))
            out: list[Any] = [head, _OBJECT]
            for name in sorted(fields):
                value = fields[name]
                out += (name, value if type(value) is str else frozen(value))
            return tuple(out)
        return (head, *frozen(fields))
    return (head, _PART, frozen(part))


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
