"""What replay keeps of the prompt items from one call to the next (R-RPL-9).

Input: each replayed request's payload messages (`Sent`), in turn. Output: `ItemMemo.lookup`, an
item's key and text tokens by content, made once per distinct item; `ItemMemo.carried`, the
runs of this request's messages whose items are the last request's, found in C. An `Item` holds
no position (where it sits is the `Prompt`'s), so a message that moved with the sliding window
keeps its item objects and a run of them is one slice of the last request's items.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from itertools import compress, count, repeat
from operator import attrgetter, indexOf, is_, is_not, ne
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from ctxkit.counting.wire import WireRules, rules_for
from ctxkit.translate import reading
from ctxkit.translate.costs import ItemMeter, texts_tokens
from ctxkit.translate.keys import Key, item_key, without_cache_control

if TYPE_CHECKING:
    from ctxkit.translate import Payload
    from ctxkit.translate.common import Sent
    from ctxkit.translate.items import Item

Run = tuple[int, int, int]  # (start now, start in the last sequence, length)

_PARTS, _SIGN = attrgetter("parts"), attrgetter("frame", "role")
REACH = 128  # how far past the last run a run's first object is looked for
_NEAR = 8  # how far past a message that differs the next one in place is looked for
T = TypeVar("T")
# how far a run that starts at new[i] = old[j] goes on (at least 1, at most the last argument)
Extend = Callable[[Sequence[T], int, Sequence[T], int, int], int]


class ItemMemo:
    """Keys and text tokens of the items seen so far, by content, and the last request's items.

    Replay translates the same stored messages call after call; with a memo each distinct item
    made of strings and nulls (plain messages, text blocks, tool results, OpenAI tool calls) is
    keyed and counted once, and its key is the same object every time. Items with images or with other
    values (numbers, flags) are keyed and counted afresh. The tokenizer must stay the same while
    a memo is used.
    """

    def __init__(self) -> None:
        self._known: dict[tuple[Any, ...], tuple[Key, int]] = {}
        # the last request's context, payload messages (as translation emitted them) and items,
        # whether it held one item per message and was plain, and which of its messages are not
        # context-free (`context_free`), by position
        self._last: tuple[tuple[object, ...], Sequence[Sent], tuple[Item, ...], bool, bool, list[int]] | None = None
        self._renamed = False  # `carried` took a run of messages that are not the very objects by their parts
        self._rules: tuple[tuple[str, str, str], WireRules] | None = None  # see `rules`
        self._preamble: tuple[tuple[Any, ...], Item | None] | None = None  # see `preamble`

    def preamble(
        self,
        payload: Payload,
        first: Any,
        rules: WireRules,
        meter: ItemMeter,
        make: Callable[[Payload, Sequence[Sent], WireRules, ItemMeter], Item | None],
    ) -> Item | None:
        """`make(payload, payload.messages, rules, meter)`: the definitions item, made again only
        when what it reads changes: the body's fields other than its messages (a replay's calls
        share that dict while its values are the very same objects), the first message's item
        (OpenAI's definitions join an opening system message), the rules or the tokenizer."""
        head = payload.head
        basis = (payload.provider, head, list(head), list(head.values()), first, rules, meter.tokenizer)
        last = self._preamble
        if last is not None and _same_basis(last[0], basis):
            return last[1]
        made = make(payload, payload.messages or (), rules, meter)
        self._preamble = (basis, made)
        return made

    def rules(self, provider: str, model: str, tokenizer: str) -> WireRules:
        """`counting.wire.rules_for(provider, model, tokenizer)`, made again only when one of them
        changes (a replay's calls share them)."""
        basis = (provider, model, tokenizer)
        if self._rules is None or self._rules[0] != basis:
            self._rules = (basis, rules_for(provider, model, tokenizer))
        return self._rules[1]

    def carried(
        self, payload: Payload, messages: Sequence[Sent], meter: ItemMeter, lead: list[Item]
    ) -> tuple[tuple[Item, ...], list[Run], bool]:
        """The last request's items and the runs of `messages` whose items are those of a run of
        the last request's messages, in order (R-RPL-9), and whether the messages of those runs
        are plain (see `keep`).

        A run of the last request's messages at the same places has their items (equal payload
        messages at the same place: the same role, parts, origins, framing). Between two such runs
        (a window that slid: translation made the moved messages again), a message's items
        follow from its content, its framing and its role (translation never changes a message's
        parts once made): a message whose `parts` is the very list a message of the last request
        held, with the same framing and role, has that message's items, wherever it moved. Only
        when the last request had one item per message (OpenAI, Ollama) and the same definitions
        item (`lead`); no run otherwise."""
        last = self._last
        if last is None or last[0] != (payload.provider, payload.model, meter.tokenizer):
            return (), [], True
        _, before, items, single, plain, bound = last
        size = len(lead)
        if not single or len(items) != size + len(before) or items[:size] != tuple(lead):
            return (), [], True
        self._renamed = False
        known = getattr(payload, "runs", None)  # translation's runs of the very same messages (OpenAI, Ollama)
        if known is not None and known[0] is before:
            return items, known[1], plain  # the very objects: their items, wherever they moved
        out: list[Run] = []
        now = then = 0
        for i, j, k in [*_in_place(messages, before), (len(messages), len(before), 0)]:
            if now < i and then < j:  # messages between the runs on both sides: moved ones
                out += self._moved(messages, now, i, before, then, j, bound)
            if k:
                out.append((i, j, k))
            now, then = i + k, j + k
        return items, out, plain and not self._renamed

    def keep(
        self,
        payload: Payload,
        messages: Sequence[Sent],
        meter: ItemMeter,
        out: tuple[Item, ...],
        *,
        single: bool,
        plain: bool = False,
        bound: list[int] | None = None,
    ) -> None:
        """This request's messages and items (the definitions item first; `single`: one item per
        message; `plain`: besides, no message names its origins, see `Prompt.plain`; `bound`: the
        positions of its messages that are not `context_free`, in order, None when not known), for
        the next `carried`."""
        if bound is None:
            bound = [n for n, sent in enumerate(messages) if not context_free(sent)]
        self._last = ((payload.provider, payload.model, meter.tokenizer), messages, out, single, plain, bound)

    def bound(self, j: int, k: int, i: int) -> list[int]:
        """The positions of the last request's messages `j` to `j + k` that are not `context_free`,
        as positions from `i` on (a run of this request's messages equal to those)."""
        assert self._last is not None
        bound = self._last[5]
        if not bound:
            return []
        lo, hi = bisect_left(bound, j), bisect_left(bound, j + k)
        return [p + i - j for p in bound[lo:hi]]

    def _moved(
        self,
        messages: Sequence[Sent],
        now: int,
        i: int,
        before: Sequence[Sent],
        then: int,
        j: int,
        bound: Sequence[int] | None = None,
    ) -> list[Run]:
        """The runs of `messages[now:i]` whose items are those of `before[then:j]`: the very
        messages first (translation keeps a moved message's object while it can; found in C),
        then, between those on both sides, by their parts lists, framing and role.

        A run starts at the very same message and goes on while the messages are equal (compared
        as slices in C), where the last request's message is `context_free` (its items follow
        from its own fields, wherever it stands); at the others (`bound`, their positions in
        `before`; None: any of them) only while they are the very same messages."""
        if i - now == 1 and j - then == 1:  # one message each side (the system prompts, mostly): no search
            x, y = messages[now], before[then]
            if x is not y:  # as `_framed_alike` takes it
                self._renamed = self._renamed or x.origins is not None
                if x.parts is not y.parts or x.frame != y.frame or x.role != y.role:
                    return []
            return [(now, then, 1)]
        out: list[Run] = []
        a, b = now, then
        extend = None if bound is None else _Alike(then, bound) if bound else common_run  # none bound: equal ones
        found = runs(messages[now:i], before[then:j], extend)
        for c, d, k in [*found, (i - now, j - then, 0)]:
            c, d = c + now, d + then
            if a < c and b < d:
                gap, was = messages[a:c], before[b:d]
                if not {id(p) for p in map(_PARTS, was)}.isdisjoint(map(id, map(_PARTS, gap))):
                    alike = _framed_alike(_shape(gap), _shape(was))  # none without a parts list in common
                    out += [(x + a, y + b, length) for x, y, length in alike]
                self._renamed = self._renamed or any(m.origins is not None for m in gap)
            if k:
                out.append((c, d, k))
            a, b = c + k, d + k
        return out

    def lookup(self, role: str, part: Any, meter: ItemMeter, rules: WireRules | None = None) -> tuple[Key, int] | None:
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


def context_free(sent: Sent) -> bool:
    """The message's items follow from its own fields alone: each item's key and tokens and the
    framing are known (`Sent.known`, `Sent.frame`), so `_Maker.make` reads nothing else (its place,
    the request's call names, its images' files). Two equal such messages have equal items."""
    known = sent.known
    return sent.frame is not None and known is not None and len(known) == len(sent.parts) and None not in known


class _Alike:
    """`Extend` for `_moved`: from a run's first message (the very same object on both sides),
    how far the messages are equal and, where the old one is not context-free, the same object."""

    __slots__ = ("bound", "then")

    def __init__(self, then: int, bound: Sequence[int]) -> None:
        self.then, self.bound = then, bound  # `old` is `before[then:]`; `bound`: positions in `before`

    def __call__(self, new: Sequence[Sent], i: int, old: Sequence[Sent], j: int, most: int) -> int:
        length = common_run(new, i, old, j, most)
        bound, start = self.bound, self.then + j
        at = bisect_left(bound, start)
        while at < len(bound) and bound[at] < start + length:
            x = bound[at] - start
            if new[i + x] is not old[j + x]:
                return x
            at += 1
        return length


def _same_basis(last: tuple[Any, ...], now: tuple[Any, ...]) -> bool:
    """The same provider, the very same head dict with the same names and the very same values,
    the very same first item and rules, the same tokenizer (see `ItemMemo.preamble`)."""
    provider, head, names, values, first, rules, tokenizer = last
    return (
        provider == now[0]
        and head is now[1]
        and names == now[2]
        and len(values) == len(now[3])
        and all(map(is_, values, now[3]))
        and first is now[4]
        and rules is now[5]
        and tokenizer == now[6]
    )


def runs(new: Sequence[T], old: Sequence[T], extend: Extend[T] | None = None) -> list[Run]:
    """The runs of `new` that are runs of `old`, in order of both. A run starts at the very same
    object, looked for a little way past the last run (a window slides at its old end and grows at
    its new end), and goes on while `extend` says (by default: while the objects are the same);
    an object not found there is in no run."""
    grow = extend or _same
    out: list[Run] = []
    i, j, n, m = 0, 0, len(new), len(old)
    while i < n and j < m:  # (past the end of `old`, no run)
        found = next(compress(count(j), map(is_, repeat(new[i]), old[j : j + REACH])), -1)
        if found < 0:
            i += 1
            continue
        length = grow(new, i, old, found, min(n - i, m - found))
        out.append((i, found, length))
        i, j = i + length, found + length
    return out


def _same(new: Sequence[T], i: int, old: Sequence[T], j: int, most: int) -> int:
    """How many objects from new[i] are the very objects from old[j] (at most `most`): the first
    place where they differ, found in C (`indexOf` counts without making an int per place)."""
    try:
        return indexOf(map(is_not, new[i : i + most], old[j : j + most]), True)
    except ValueError:
        return most


def _in_place(new: Sequence[Sent], old: Sequence[Sent]) -> list[Run]:
    """The runs of messages equal at the same places in both, the very objects first: a run is
    found by comparing slices in C, and so is the next one after messages that differ."""
    out: list[Run] = []
    i, most = 0, min(len(new), len(old))
    while i < most:
        if new[i] is not old[i]:  # on to the next message that is the same object a little way on, found in C
            i = next(compress(count(i), map(is_, new[i : min(most, i + _NEAR)], old[i : i + _NEAR])), most)
            continue  # none near: the window moved (`_moved` finds the runs from here)
        if i + 1 < most and new[i + 1] is not old[i + 1] and new[i + 1] != old[i + 1]:
            k = 1  # the next one differs (a window that slid: the system prompt alone in place)
        else:
            k = common_run(new, i, old, i, most - i)
        out.append((i, i, k))
        i += k
    return out


def common_prefix(a: Sequence[object], b: Sequence[object]) -> int:
    """How many leading items two sequences share, by comparing slices in C (bisection)."""
    return common_run(a, 0, b, 0, min(len(a), len(b)))


def common_run(a: Sequence[object], i: int, b: Sequence[object], j: int, most: int) -> int:
    """How many items from a[i] on equal those from b[j] on (at most `most`), by comparing slices
    in C (bisection), without copying either sequence first.

    Consecutive calls mostly part a few items before the shorter one's end (the last call's
    reminder or last turn replaced), so the first slices compared end at the last of the final
    `_GUESS` places where both hold equal items: when those are equal, only the few items after
    them are bisected (one pass over the sequences instead of about two)."""
    end = most
    while end > most - _GUESS and end > 0 and a[i + end - 1] is not b[j + end - 1] and a[i + end - 1] != b[j + end - 1]:
        end -= 1
    if a[i : i + end] == b[j : j + end]:
        if end == most:
            return most
        low, high = end, most  # a[i:i+low] == b[j:j+low]; a[i:i+high] != b[j:j+high]
    else:
        low, high = 0, end
    return bisected(a, i, b, j, low, high)


def bisected(
    a: Sequence[T], i: int, b: Sequence[T], j: int, low: int, high: int, differ: Callable[[T, T], bool] | None = None
) -> int:
    """How many items from a[i] on equal those from b[j] on, given that the first `low` do and the
    first `high` do not: bisection over slices compared in C. `differ(x, y)` (x != y, told more
    cheaply than by a slice), when given, is asked of the item at `low` before each halving and
    ends the search there: the same answer, sooner when that item differs."""
    while high - low > 1:
        if differ is not None and differ(a[i + low], b[j + low]):
            return low
        mid = (low + high) // 2
        if a[i + low : i + mid] == b[j + low : j + mid]:
            low = mid
        else:
            high = mid
    return low


_GUESS = 4  # how many places from the end `common_prefix` looks back for equal items


def _framed_alike(now: _Shape, then: _Shape) -> list[Run]:
    """The runs of messages holding the same parts lists (`runs`), split where the framing or
    the role differs (a tool result whose call was renamed)."""
    out: list[Run] = []
    for i, j, k in runs(now.parts, then.parts):
        while k:
            if now.signs[i : i + k] == then.signs[j : j + k]:
                out.append((i, j, k))
                break
            d = next(compress(count(), map(ne, now.signs[i : i + k], then.signs[j : j + k])))
            if d:
                out.append((i, j, d))
            i, j, k = i + d + 1, j + d + 1, k - d - 1
    return out


class _Shape(NamedTuple):
    """A request's payload messages as `carried` compares them: each one's parts list, and its
    framing and role."""

    parts: list[list[Any]]
    signs: list[tuple[int | None, str]]


def _shape(messages: Sequence[Sent]) -> _Shape:
    return _Shape(list(map(_PARTS, messages)), list(map(_SIGN, messages)))


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
