"""Where consecutive prompts part and where they agree, found in C: the shared prefix of two
sequences, the runs of one that are runs of the other, and the replay's item-key numbers (R-RPL-9).

Input: two sequences (items, key numbers); the items of each replayed call in turn. Output: the
length of their common prefix; the runs of equal items the two share (`runs`), wherever
they moved; each item's key number (`Numbers.of`), the same numbers the cache trie and the break
views hold. A call costs, in Python, one step per run and per item the last call did not send.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Iterator, Sequence
from itertools import repeat
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from ctxkit.translate.itemmemo import REACH, Run, common_prefix, common_run

if TYPE_CHECKING:
    from ctxkit.translate.items import Item

__all__ = ["Columns", "Numbers", "common_prefix", "each", "runs"]

_KEY, _TOKENS, _BREAKPOINT = itemgetter(0), itemgetter(1), itemgetter(3)  # of an Item
# numbers in a log past which a new one starts (an old one is freed with the last edge or call holding it)
LOG_LIMIT = 1 << 18


def runs(new: Sequence[object], old: Sequence[object]) -> list[Run]:
    """The runs of `new` equal to runs of `old`, in order of both. A run starts at an equal item,
    looked for a little way past the last run (a window slides at its old end and grows at its
    new end), and goes on while the items are equal; both are found in C (`list.index`, slices
    compared by bisection), so a run costs about as much as comparing its items' pointers."""
    out: list[Run] = []
    i, j, n, m = 0, 0, len(new), len(old)
    while i < n and j < m:  # (past the end of `old`, no run)
        try:
            found = old.index(new[i], j, j + REACH)
        except ValueError:
            i += 1
            continue
        length = common_run(new, i, old, found, min(n - i, m - found))
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


class Columns(NamedTuple):
    """A prompt's items as the cache and the breaks read them, one column each, and what they
    share with the last call's (R-RPL-9)."""

    keys: array[int]  # each item's key number (`Numbers`)
    tokens: array[int]  # each item's tokens
    marks: bytes  # 1 where the item carries a cache breakpoint, else 0
    before: Sequence[Item] = ()  # the last call's items
    runs: Sequence[Run] = ()  # the runs of equal items this call shares with `before` (`runs`)
    last_keys: array[int] | None = None  # the last call's key numbers
    surplus: Sequence[tuple[int, int]] = ()  # each key this call sends more often than the last call, and how much more
    repeated: frozenset[int] = frozenset()  # the keys this call sends more than once
    total: int = 0  # the sum of `tokens`, carried: the last call's less the items that left plus the new ones
    # of `surplus`, the keys the last call did not send: all their items are new ones, so their
    # last items are known here; these are their tokens (`fresh_last`) and the other surplus keys
    # (`unplaced`, whose last items are looked for: `breaks._last_tokens`)
    fresh_last: int = 0
    unplaced: Sequence[tuple[int, int]] = ()
    # where the keys sit in `Numbers.log`: `keys[x] == log[at + x]` for `lo <= x < len(keys)`
    log: array[int] | None = None
    at: int = 0
    lo: int = 0

    @property
    def logged(self) -> tuple[array[int], int, int] | None:
        """(log, at, lo), see above; None when the keys are in no log."""
        return None if self.log is None else (self.log, self.at, self.lo)

    def tokens_from(self, n: int) -> int:
        """The tokens of the items from `n` on, summed over the shorter side of `n` (`total`)."""
        tokens = self.tokens
        if 2 * n >= len(tokens):
            return sum(tokens[n:])
        return self.total - sum(tokens[:n])

    @property
    def distinct(self) -> bool:
        """No key twice in this call."""
        return not self.repeated

    def marked(self) -> list[int]:
        """The positions of the items that carry a breakpoint, each found in C."""
        out, n = [], self.marks.find(1)
        while n >= 0:
            out.append(n)
            n = self.marks.find(1, n + 1)
        return out


class Numbers:
    """Each distinct item key's number, in order of first appearance (the trie and the views hold
    numbers, 4 bytes an item). The runs of items the last prompt sent too (equal items) take
    its columns (numbers, tokens, breakpoints) as slices; the rest are looked up in C, and only a
    new key is numbered one by one. The last call's keys are kept counted (`_counts`), carried
    the same way: the items in no run leave or join them, and the keys whose count changed say
    which keys a call sends more often than the last one (`Columns.surplus`) and which it sends
    twice (`Columns.repeated`)."""

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        # every call's key numbers, each placed once where the window slides: a call whose last run of
        # the last call's items reaches the log's end appends only its items after that run
        # (`_placed`); the trie's edges and the kept calls hold runs of it, not a call's own array
        self.log = array("i")
        self._last: tuple[Sequence[Item], Columns] = ((), Columns(array("i"), array("q"), b""))
        self._counts: dict[int, int] = {}  # the last call's key numbers, each with how often it sent it
        self._repeated: set[int] = set()  # the last call's keys it sent more than once
        self._twice: frozenset[int] = frozenset()  # the same, as the last call's columns hold it

    def of(self, items: Sequence[Item]) -> array[int]:
        return self.columns(items).keys

    def columns(self, items: Sequence[Item], carried: tuple[Sequence[Item], Sequence[Run]] | None = None) -> Columns:
        """`carried`: the last items and the runs of them `items` are, when the caller knows them
        (`Prompt.carried`, the item memo's); taken when those are the items of this object's last
        call, else the runs are found (`runs`)."""
        before, lent = self._last
        shared = carried[1] if carried is not None and carried[0] is before else runs(items, before)
        last_keys, last_tokens, last_marks = lent.keys, lent.tokens, lent.marks
        numbers, tokens, marks = array("i"), array("q"), []
        joined: list[int] = []  # the keys of the items in no run, in order
        costs: list[int] = []  # and their tokens
        left = array("i")  # the keys of the last call's items in no run
        total, at, then = lent.total, 0, 0
        for i, j, k in [*shared, (len(items), len(before), 0)]:
            if at < i:  # this call's items in no run
                piece = items[at:i]
                found = self._looked(piece)
                numbers.extend(found)
                joined += found
                new = array("q", map(_TOKENS, piece))
                tokens += new
                costs += new
                total += sum(new)
                marks.append(bytes(map(_BREAKPOINT, piece)))
            if then < j:  # the last call's items in no run
                left += last_keys[then:j]
                total -= sum(last_tokens[then:j])
            numbers += last_keys[j : j + k]
            tokens += last_tokens[j : j + k]
            marks.append(last_marks[j : j + k])
            at, then = i + k, j + k
        surplus, had = self._recount(left, joined)
        fresh_last, unplaced = 0, surplus
        if had is None:  # every key that joined is one the last call did not send, each once
            fresh_last, unplaced = sum(costs), []
        elif surplus:  # a key the last call did not send: its items here are all new ones
            fresh_last = sum(cost for cost, key in zip(costs, joined, strict=True) if not had[key])
            unplaced = [s for s in surplus if had[s[0]]]
        marked, twice = b"".join(marks), self._twice
        log, at, lo = self._placed(numbers, shared, lent)
        made = Columns(
            numbers, tokens, marked, before, shared, lent.keys, surplus, twice, total, fresh_last, unplaced, log, at, lo
        )
        self._last = (items, made)
        return made

    def _recount(self, left: Sequence[int], joined: list[int]) -> tuple[list[tuple[int, int]], dict[int, int] | None]:
        """The counts carried from the last call to this one: the keys of the last call's items
        in no run leave them, this call's join them. Returns each key this call sends more often
        than the last, and how much more (`Columns.surplus`), and the last call's count of each
        key that left or joined, or None when the window slid (`_slid`: each joined key once
        more, none of them sent by the last call); `_twice` follows."""
        counts, repeated = self._counts, self._repeated
        if _slid(counts, left, joined):  # each key that left was sent once, each that joined is new: in C
            deque(map(counts.pop, left), 0)
            counts.update(dict.fromkeys(joined, 1))
            return list(zip(joined, repeat(1))), None
        was = {key: counts.get(key, 0) for key in (*left, *joined)}  # the last call's counts of the keys that change
        for key in left:
            if counts[key] > 1:
                counts[key] -= 1
            else:
                del counts[key]
        for key in joined:
            counts[key] = counts.get(key, 0) + 1
        surplus, moved = [], False
        for key, had in was.items():
            now = counts.get(key, 0)
            if now > had:
                surplus.append((key, now - had))
            if (now > 1) is not (key in repeated):
                moved = True
                if now > 1:
                    repeated.add(key)
                else:
                    repeated.discard(key)
        if moved:
            self._twice = frozenset(repeated)
        return surplus, was

    def _placed(self, numbers: array[int], shared: Sequence[Run], lent: Columns) -> tuple[array[int], int, int]:
        """Where this call's key numbers sit in the log, placed now: (log, at, lo) as `Columns`
        holds them. When this call's last run (of the last call's items) ends where the log ends
        (the last call's end, most calls), the run is already there from where the last call is
        logged (and the items before it that the log holds before it, mostly the system prompt), and
        only the items after it are appended; else the whole call is appended (past
        `LOG_LIMIT`, to a new log)."""
        log = self.log
        if shared and lent.log is log:
            i, j, k = shared[-1]
            if j + k > lent.lo and lent.at + j + k == len(log):
                log += numbers[i + k :]
                at, lo = lent.at + j - i, i + max(lent.lo - j, 0)
                while lo and at + lo > 0 and log[at + lo - 1] == numbers[lo - 1]:  # the system prompt, mostly
                    lo -= 1
                return log, at, lo
        if len(log) >= LOG_LIMIT:
            log = self.log = array("i")
        at = len(log)
        log += numbers
        return log, at, 0

    def _looked(self, items: Sequence[Item]) -> list[int]:
        """The items' key numbers, a key not numbered yet numbered now (usually a new message or two)."""
        keys = list(map(_KEY, items))
        found = list(map(self._ids.get, keys, repeat(-1)))
        for at in each(found, -1):
            found[at] = self._ids.setdefault(keys[at], len(self._ids))
        return found


def _slid(counts: dict[int, int], left: Sequence[int], joined: list[int]) -> bool:
    """The counts change as a window that slid changes them: each key that left was sent once by
    the last call (so no key left twice), and the keys that joined are new ones, each once. Then
    no key is or was sent twice and each joined key is sent once more (`Numbers._recount`)."""
    return (
        list(map(counts.get, left)).count(1) == len(left)
        and not any(map(counts.__contains__, joined))
        and len(set(joined)) == len(joined)
    )
