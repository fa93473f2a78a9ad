"""A prompt item's identity as a string (R-RPL-4): canonical JSON of its role and content.

Input: a role and one item as the body holds it. Output: `item_key(role, part)`, the string the
cache trie and the break finder compare; `canonical` and `compact`, the two JSON spellings
ctxkit writes (sorted and as sent). A top-level `cache_control` is left out of the key, so a
moved cache breakpoint changes no item.
"""

from __future__ import annotations

import json
from typing import Any

# `json.dumps` with options builds an encoder per call; these are built once (the same output).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode
_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def canonical(value: Any) -> str:
    """Sorted keys, no whitespace, non-ASCII kept: equal values give equal strings."""
    return _CANONICAL(value)


def compact(value: Any) -> str:
    """JSON as sent on the wire: key order kept, no whitespace, non-ASCII kept."""
    return _COMPACT(value)


def item_key(role: str, part: Any) -> str:
    """The item's identity: `{"role": ROLE, "item": ITEM}` without its `cache_control`, canonical."""
    return canonical({"role": role, "item": without_cache_control(part)})


def without_cache_control(part: Any) -> Any:
    """The item as its key reads it: a top-level `cache_control` removed (a copy only then)."""
    if isinstance(part, dict) and "cache_control" in part:
        return {k: v for k, v in part.items() if k != "cache_control"}
    return part
