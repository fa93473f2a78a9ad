"""Where consecutive prompts part, found in C: the shared prefix of two sequences and the
replay's item-key numbers (R-RPL-9).

Input: two sequences (items, key numbers); the items of each replayed call in turn. Output: the
length of their common prefix; each item's key number (`Numbers.of`), the same numbers the
cache trie and the break views hold. A call costs, in Python, only the items whose key is new.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from itertools import islice, repeat
from operator import itemgetter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ctxkit.translate.items import Item

__all__ = ["Numbers", "common_prefix", "each"]

_KEY = itemgetter(0)  # an Item's key


def common_prefix(a: Sequence[object], b: Sequence[object]) -> int:
    """How many leading items two sequences share, by comparing slices in C (bisection)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    low, high = 0, n  # a[:low] == b[:low]; a[:high] != b[:high]
    while high - low > 1:
        mid = (low + high) // 2
        if a[low:mid] == b[low:mid]:
            low = mid
        else:
            high = mid
    return low


def each(values: list[Any], value: object) -> Iterator[int]:
    """The positions of `value` in `values`, in order, each found in C (`list.index`); the caller
    may replace each one as it comes."""
    n = -1
    try:
        while True:
            n = values.index(value, n + 1)
            yield n
    except ValueError:
        return


class Numbers:
    """Each distinct item key's number, in order of first appearance (the trie and the views hold
    numbers, 4 bytes an item). Of the last few prompts (calls alternate between a few, such as a
    tool loop's and the questions'), the one sharing the longest prefix lends its numbers; the rest
    are looked up in C, and only a new key is numbered one by one."""

    RECENT = 2

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._recent: list[tuple[Sequence[Item], array[int]]] = []  # newest last

    def of(self, items: Sequence[Item]) -> array[int]:
        shared, lent = 0, array("i")
        for before, numbers in self._recent:  # equal items have equal keys (mostly the same objects)
            if (n := common_prefix(items, before)) > shared:
                shared, lent = n, numbers
        keys = list(map(_KEY, islice(items, shared, None)))
        found = list(map(self._ids.get, keys, repeat(-1)))
        for at in each(found, -1):  # a key not numbered yet (usually a new message or two)
            found[at] = self._ids.setdefault(keys[at], len(self._ids))
        numbers = lent[:shared] + array("i", found)
        self._recent.append((items, numbers))
        if len(self._recent) > self.RECENT:
            del self._recent[0]
        return numbers
