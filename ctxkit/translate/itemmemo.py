"""What replay keeps of the prompt items from one call to the next (R-RPL-9).

Input: each replayed request's payload messages (`Sent`), in turn. Output: `ItemMemo.lookup`, an
item's key and text tokens by content, made once per distinct item; `ItemMemo.carried`, the
runs of this request's messages whose items are the last request's, found in C. An `Item` holds
no position (where it sits is the `Prompt`'s), so a message that moved with the sliding window
keeps its item objects and a run of them is one slice of the last request's items.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress, count, islice, repeat
from operator import attrgetter, is_, is_not, ne, or_
from typing import TYPE_CHECKING, Any

from ctxkit.counting.wire import WireRules
from ctxkit.translate import reading
from ctxkit.translate.costs import ItemMeter, texts_tokens
from ctxkit.translate.keys import item_key, without_cache_control

if TYPE_CHECKING:
    from ctxkit.translate import Payload
    from ctxkit.translate.common import Sent
    from ctxkit.translate.items import Item

Run = tuple[int, int, int]  # (first message now, first message in the last request, length)

_PARTS, _SIGN = attrgetter("parts"), attrgetter("frame", "role")
_REACH = 128  # how far past the last run a run's first message is looked for


class ItemMemo:
    """Keys and text tokens of the items seen so far, by content, and the last request's items.

    Replay translates the same stored messages call after call; with a memo each distinct item
    made of strings and nulls (plain messages, text blocks, tool results, OpenAI tool calls) is
    written as canonical JSON and counted once, and its key is the same string object every time
    (the cache trie then compares keys without rehashing them). Items with images or with other
    values (numbers, flags) are keyed and counted afresh. The tokenizer must stay the same while
    a memo is used.
    """

    def __init__(self) -> None:
        self._known: dict[tuple[Any, ...], tuple[str, int]] = {}
        # the last request's context, payload messages (as translation emitted them) and items
        self._last: tuple[tuple[object, ...], Sequence[Sent], list[Item]] | None = None

    def carried(
        self, payload: Payload, messages: Sequence[Sent], meter: ItemMeter, lead: list[Item]
    ) -> tuple[list[Item], list[Run]]:
        """The last request's items and the runs of `messages` whose items are those of a run of
        the last request's messages, in order (R-RPL-9).

        A payload message's items follow from its content, its framing and its role (translation
        never changes a message's parts once made): a message whose `parts` is the very list a
        message of the last request held, with the same framing and role, has that message's
        items, wherever it moved. Only when the last request had one item per message (OpenAI,
        Ollama) and the same definitions item (`lead`); no run otherwise."""
        last = self._last
        if last is None or last[0] != (payload.provider, payload.model, meter.tokenizer):
            return [], []
        _, before, items = last
        size = len(lead)
        if len(items) != size + len(before) or items[:size] != lead:
            return [], []
        return items, _runs(messages, before)

    def keep(self, payload: Payload, messages: Sequence[Sent], meter: ItemMeter, out: list[Item]) -> None:
        """This request's messages and items (the definitions item first), for the next `carried`."""
        self._last = ((payload.provider, payload.model, meter.tokenizer), messages, out)

    def lookup(self, role: str, part: Any, meter: ItemMeter, rules: WireRules | None = None) -> tuple[str, int] | None:
        """(key, tokens of the texts) of an item the memo can hold, or None for any other item."""
        if type(part) is not dict:
            return None
        fields = part if "cache_control" not in part else without_cache_control(part)
        values = fields.values()
        if _FLAT.issuperset(map(type, values)):
            memo_key: tuple[Any, ...] = (role, *fields, *values)  # keys and values come in the same order
        else:
            nested = _frozen(fields)
            if nested is None or next(reading.images(part), None) is not None:
                return None  # an image's cost is its file's, not its bytes': never shared by content
            memo_key = (role, nested)
        found = self._known.get(memo_key)
        if found is None:
            found = self._known[memo_key] = (item_key(role, part), texts_tokens(part, meter, rules))
        return found

    def held(self) -> int:
        """How many distinct items the memo holds."""
        return len(self._known)


def _runs(new: Sequence[Sent], old: Sequence[Sent]) -> list[Run]:
    """The runs of `new` whose messages hold the parts lists of a run of `old` (by identity) with
    the same framing and role, in order of both. A run starts at the same parts list, looked for a
    little way past the last run (the window slides at its old end and grows at its new end; a
    message not found there is made afresh, which gives the same items)."""
    runs: list[Run] = []
    theirs = list(map(_PARTS, old))
    i, j, n, m = 0, 0, len(new), len(old)
    while i < n:
        parts = new[i].parts
        found = next(compress(count(j), map(is_, repeat(parts), islice(theirs, j, j + _REACH))), -1)
        if found < 0:
            i += 1
            continue
        most = min(n - i, m - found)
        # the very messages first (a run that did not move), then the same parts framed alike
        length = next(compress(count(), map(is_not, islice(new, i, None), islice(old, found, None))), most)
        if length < most:
            a, b = islice(new, i + length, None), islice(old, found + length, None)
            moved = map(is_not, map(_PARTS, a), islice(theirs, found + length, None))
            signs = map(ne, map(_SIGN, islice(new, i + length, None)), map(_SIGN, b))
            length += next(compress(count(), map(or_, moved, signs)), most - length)
        if length:
            runs.append((i, found, length))
            i, j = i + length, found + length
        else:  # the same parts, framed otherwise (a tool result whose call was renamed)
            i, j = i + 1, found + 1
    return runs


_FLAT = frozenset({str, type(None)})


def _frozen(value: Any) -> tuple[Any, ...] | None:
    """A hashable copy of a dict of strings, nulls, dicts and lists, equal only for equal values
    of the same types (a list and a dict never freeze alike); None when anything else is inside."""
    if type(value) is dict:
        inner = [v if v is None or type(v) is str else _frozen(v) for v in value.values()]
        if any(f is None for f, v in zip(inner, value.values(), strict=True) if v is not None):
            return None
        return ("{", *value, *inner)
    if type(value) is list:
        items = [v if v is None or type(v) is str else _frozen(v) for v in value]
        if any(f is None for f, v in zip(items, value, strict=True) if v is not None):
            return None
        return ("[", *items)
    return None
