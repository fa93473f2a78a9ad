"""Where consecutive prompts part and where they agree, found in C: the shared prefix of two
sequences, the runs of one that are runs of the other, and the replay's item-key numbers (R-RPL-9).

Input: two sequences (items, key numbers); the items of each replayed call in turn. Output: the
length of their common prefix; the runs of equal items the two share (`runs`), wherever
they moved; each item's key number (`Numbers.of`), the same numbers the cache trie and the break
views hold. A call costs, in Python, one step per run and per item the last call did not send.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from itertools import islice, repeat
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from ctxkit.translate.itemmemo import REACH, Run, common_prefix

if TYPE_CHECKING:
    from ctxkit.translate.items import Item

__all__ = ["Numbers", "common_prefix", "each", "runs"]

_KEY = itemgetter(0)  # an Item's key


def runs(new: Sequence[object], old: Sequence[object]) -> list[Run]:
    """The runs of `new` equal to runs of `old`, in order of both. A run starts at an equal item,
    looked for a little way past the last run (a window slides at its old end and grows at its
    new end), and goes on while the items are equal; both are found in C (`list.index`, slices
    compared by bisection), so a run costs about as much as comparing its items' pointers."""
    out: list[Run] = []
    i, j, n, m = 0, 0, len(new), len(old)
    while i < n:
        try:
            found = old.index(new[i], j, j + REACH)
        except ValueError:
            i += 1
            continue
        length = common_prefix(new[i : i + m - found], old[found:])
        out.append((i, found, length))
        i, j = i + length, found + length
    return out


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
    numbers, 4 bytes an item). The runs of items the last prompt sent too (the same objects) take
    its numbers as slices; the rest are looked up in C, and only a new key is numbered one by one."""

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._last: tuple[Sequence[Item], array[int]] = ((), array("i"))

    def of(self, items: Sequence[Item]) -> array[int]:
        before, lent = self._last
        numbers, at = array("i"), 0
        for i, j, k in [*runs(items, before), (len(items), 0, 0)]:
            if at < i:
                numbers += self._looked(items, at, i)
            numbers += lent[j : j + k]
            at = i + k
        self._last = (items, numbers)
        return numbers

    def _looked(self, items: Sequence[Item], start: int, end: int) -> array[int]:
        keys = list(map(_KEY, islice(items, start, end)))
        found = list(map(self._ids.get, keys, repeat(-1)))
        for at in each(found, -1):  # a key not numbered yet (usually a new message or two)
            found[at] = self._ids.setdefault(keys[at], len(self._ids))
        return array("i", found)
