"""What translation made of each working message, kept for the next call of a replay (R-RPL-9).

Input: the working messages of one request, one request after another. Output: per working
message, its wire message (`common.prepare`) and, through it, what its provider's translator made
of it (a `Fragment`: the payload dicts with their prompt items' keys and counts), reused while the
same working message comes back (kept until the memo holds two windows' worth); a new wire
message shares the fragment of a recent message of the same content (kind, text, call id and
calls, their arguments compared as sent); and the last request's window, aligned by position, so
that a run of messages shared with it (the window slides at its old end and grows at its new end)
takes its wire messages, and where it did not move its payload messages, as slices.

Only messages without images are kept (an image's parts depend on the window: the cap,
R-TR-6); the rules that read the whole window (the image cap, cache marks, Anthropic's merges
and tool ids, Gemini's call names, a tool result's framing by its call's name, declared tools,
a model's system-message rules) run on every request, over the positions they concern
(`imaged`, `results`) and the calls whose name changed (`renamed`).

A replay's driver owns one `TranslationMemo` and hands it to every call; without one, every
request is translated afresh (and gives the same payload and items).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from itertools import chain, compress, count, repeat
from operator import attrgetter, is_, is_not, itemgetter
from typing import Any, TypeVar

from ctxkit.history.working import Working
from ctxkit.translate.fragments import Fragments
from ctxkit.translate.itemmemo import REACH, bisected

T = TypeVar("T")


class TranslationMemo:
    """Entries by working-message key, for one provider, model, tokenizer and cache setting at a
    time, and the last request's window.

    A wire message is reused only for the working message it was made from (the same object, or
    one equal to it in every field: a message rebuilt for each request, such as an in-flight one);
    a key whose message changed gets a new one. A wire message whose message left the window is
    kept until they are two windows' worth (a window that shrank for a call's in-flight messages
    grows back over it); a new one shares the translator fragment of a message of equal content
    (`Fragments`). The memo holds a few windows, never the history.

    Per request (`begin`): `runs`, the runs of this window's messages that are the last request's
    very objects, as (position now, position then, length), each from a message the memo holds
    (`plain`); `fresh`, the positions in no run; `imaged`, the positions of messages with images
    (`results`, of the tool results, and `answering(ids)` are looked for when asked): their
    translation depends on the rest of the window; `names`, each call id of the window with the
    name of its latest call, and `renamed`, the ids whose name differs from the last request's.
    `carried(values)` takes a list aligned with the last window to this one."""

    def __init__(self) -> None:
        self._context: tuple[object, ...] | None = None
        self._entries: dict[str, tuple[Working, Any]] = {}  # key -> (message, its common.WireMessage)
        self._fragments = Fragments()
        self.window: list[Working] = []  # the last request's working messages, in order
        self.wires: list[Any] = []  # their wire messages, aligned with `window`
        self.sent: list[Any] = []  # a translator's payload message per wire message (OpenAI, Ollama)
        # (the last `sent`, this request's, what works out their runs): see `Payload.runs`
        self.sent_runs: tuple[list[Any], list[Any], Callable[[], list[tuple[int, int, int]]]] | None = None
        self.names: dict[str, str] = {}  # call id -> name of the window's latest call with that id
        self.renamed: set[str] = set()  # call ids whose name is not the last request's
        self._calls: dict[str, int] = {}  # call id -> how many calls of the window have it
        self._answers: dict[str, int] = {}  # call id -> how many tool results of the window answer it
        self.repeated = 0  # how many call ids more than one call of the window has
        self.entered: list[Working] = []  # the messages at the `fresh` positions
        self.left: list[Working] = []  # the last window's messages in no run of this one
        self.format: Any = None  # a translator's own state across requests (Anthropic's turns)
        self.per_context: dict[str, Any] = {}  # what holds while the context does (the translator)
        self.imaged: list[int] = []
        self.runs: list[tuple[int, int, int]] = []
        self.fresh: list[int] = []
        self._prefix = 0  # how many messages from the window's start are cacheable
        self._size = 0

    def begin(self, context: tuple[object, ...], messages: list[Working]) -> None:
        """A new request over `messages` (all of them, in final order)."""
        if context != self._context:
            self._context = context
            self._entries, self.window, self.wires, self.sent, self.names = {}, [], [], [], {}
            self._fragments = Fragments()
            self.imaged, self._prefix, self._calls, self._answers = [], 0, {}, {}
            self.repeated, self.format, self.per_context = 0, None, {}
        old = self.window
        self._size, self.sent_runs = len(messages), None
        self._fragments.limit = len(messages) + 256
        # a run extends while the messages are equal (one rebuilt per request, such as an
        # in-flight one, is equal without being the same object; a message not found is made afresh)
        self.runs = self._runs(messages, old)
        self.fresh, self.entered, self.left = self._between(messages, old)
        entered, left = self.entered, self.left
        self._rename(messages, entered, left)
        self._count_answers(entered, left)
        if self.imaged or any(map(_IMAGES, entered)):
            self.imaged = self._marked(self.imaged, messages, lambda w: bool(w.images))
        self._forget(messages)
        self._prefix = self._cacheable(messages)
        self.window = messages

    def _runs(self, new: list[Working], old: list[Working]) -> list[tuple[int, int, int]]:
        """`itemmemo.runs(new, old, _common)`, a run's first message looked for only where the memo's
        entry for its key holds it (`plain`): not a new message (four a call at 8,000 tokens), one
        with images or a second under one key (made or found as a fresh one: the same payload)."""
        out: list[tuple[int, int, int]] = []
        i, j, n, m = 0, 0, len(new), len(old)
        entries, where, missed = self._entries, None, 0
        while i < n:
            w, held = new[i], entries.get(new[i].key)
            if held is not None and held[0] is w:  # the very object, a little way past the last run
                if j < m and old[j] is w:  # where the last run ended (the window grew or slid by none)
                    at = j
                elif where is not None:
                    at = _found(w, old, j, where)
                else:
                    at = next(compress(count(j), map(is_, repeat(w), old[j : j + REACH])), -1)
                    missed += at < 0
                    if missed >= _MISSES and missed * REACH >= m:  # the scans cost a map of the last window
                        where = dict(zip(map(id, reversed(old)), range(m - 1, -1, -1), strict=True))  # the first wins
                if at >= 0:  # a run of the last window's messages from here: `_common` says how long
                    k = _common(new, i, old, at, min(n - i, m - at))
                    out.append((i, at, k))
                    i, j = i + k - 1, at + k
            i += 1
        return out

    @property
    def results(self) -> list[int]:
        """The positions of this window's tool results (looked for when asked, in C)."""
        return list(compress(count(), map(is_not, map(_CALL_ID, self.window), repeat(None))))

    def answering(self, ids: set[str]) -> Iterator[int]:
        """The positions of this window's tool results that answer one of `ids` (in C), looked for
        only when a result of the last window answers one of them (the others are `fresh`)."""
        new = [w.tool_call_id for w in self.entered if w.tool_call_id in ids]
        if all(self._answers.get(i, 0) <= new.count(i) for i in ids):
            return iter(())
        return compress(count(), map(ids.__contains__, map(_CALL_ID, self.window)))

    def _count_answers(self, entered: list[Working], left: list[Working]) -> None:
        answers = self._answers
        for w in left:
            if w.tool_call_id is not None:
                answers[w.tool_call_id] -= 1
                if not answers[w.tool_call_id]:
                    del answers[w.tool_call_id]
        for w in entered:
            if w.tool_call_id is not None:
                answers[w.tool_call_id] = answers.get(w.tool_call_id, 0) + 1

    def _marked(self, positions: list[int], messages: list[Working], test: Callable[[Working], bool]) -> list[int]:
        """The positions in this window of the messages that pass `test`: the last window's
        `positions` moved with their runs, and the fresh messages tested."""
        out: list[int] = []
        at = 0
        for i, j, k in [*self.runs, (len(messages), 0, 0)]:
            out += [p for p in range(at, i) if test(messages[p])]
            out += [p + i - j for p in positions[bisect_left(positions, j) : bisect_left(positions, j + k)]]
            at = i + k
        return out

    def _cacheable(self, messages: list[Working]) -> int:
        """How many messages from the start are cacheable: a run inside the last window's cacheable
        prefix is; one that holds that prefix's end stops there (equal messages, equal flags); the
        fresh messages and a run past the last prefix are looked at one by one."""
        at, last = 0, self._prefix
        for i, j, k in [*self.runs, (len(messages), 0, 0)]:
            while at < i:
                if not messages[at].cacheable:
                    return at
                at += 1
            if j + k <= last:
                at = i + k
            elif j < last:
                return i + last - j
            else:
                while at < i + k:
                    if not messages[at].cacheable:
                        return at
                    at += 1
        return at

    def _between(self, messages: list[Working], old: list[Working]) -> tuple[list[int], list[Working], list[Working]]:
        """Outside the runs (in order of both lists): the positions of this window in no run
        (`fresh`), their messages (`entered`) and the last window's messages in no run (`left`)."""
        fresh: list[int] = []
        entered: list[Working] = []
        left: list[Working] = []
        at = back = 0
        for i, j, k in self.runs:
            if at < i:
                fresh += range(at, i)
                entered += messages[at:i]
            if back < j:
                left += old[back:j]
            at, back = i + k, j + k
        fresh += range(at, len(messages))
        entered += messages[at:]
        left += old[back:]
        return fresh, entered, left

    def _rename(self, messages: list[Working], entered: list[Working], left: list[Working]) -> None:
        """`names` and `renamed` from the calls that entered and left the window. An id held by
        more than one call, before or after, makes the names again from the whole window (the
        latest call with that id gives its name)."""
        counts, names = self._calls, self.names
        gone = [(c.id, c.name) for c in chain.from_iterable(map(_CALLS, left))]  # messages without calls skipped in C
        came = [(c.id, c.name) for c in chain.from_iterable(map(_CALLS, entered))]
        if gone == came and not self.repeated:
            # no call, or the very calls that left came back (an in-flight message's stored copy):
            # every id is held by one call, before and after, under the same name
            self.renamed = set()
            return
        touched = {i for i, _ in (*gone, *came)}
        if not touched:
            self.renamed = set()
            return
        before = {i: counts.get(i, 0) for i in touched}
        for i, _ in gone:
            counts[i] -= 1
        for i, _ in came:
            counts[i] = counts.get(i, 0) + 1
        for i in touched:
            if not counts[i]:
                del counts[i]
            self.repeated += (counts.get(i, 0) > 1) - (before[i] > 1)
        if max(before.values()) > 1 or max(counts.get(i, 0) for i in touched) > 1:
            old = names
            self.names = {c.id: c.name for w in messages for c in w.tool_calls}
            self.renamed = {i for i, _ in old.items() ^ self.names.items()}
            return
        new = dict(came)  # the latest call of an id gives its name
        self.renamed = {i for i in touched if names.get(i) != new.get(i)}
        for i in touched:
            if i in new:
                names[i] = new[i]
            else:
                names.pop(i, None)

    def carried(self, values: list[T]) -> list[T | None]:
        """`values`, aligned with the last window, aligned with this one: each run's slice, None
        elsewhere (at the positions in `fresh`). The longest run's slice becomes the list, with
        what comes before it put in front (one list of the window's size made, not two)."""
        out: list[T | None] = []
        at = 0
        longest = max(self.runs, key=itemgetter(2), default=None)
        for run in self.runs:
            i, j, k = run
            out += [None] * (i - at)
            if run is longest:
                out, before = values[j : j + k], out  # type: ignore[assignment]  # None goes in front
                out[:0] = before
            else:
                out += values[j : j + k]
            at = i + k
        out += [None] * (self._size - at)
        return out

    def plain(self, w: Working, make: Callable[[Working], Any]) -> Any:
        """The wire message of a message without images in no run: the one made for the message
        itself (the same object, or one equal to it), kept while it is in the window and a while
        after; else `make(w)`, kept, its `entry` the `Fragment` it shares with a recent message of
        the same content (its key and cacheable flag aside: no translator reads them, only the
        wire message, R-TR-8's prefix): an in-flight message stored under its own key, a rebuilt
        system text or reminder, the history's cacheable copy of a question."""
        found = self._entries.get(w.key)
        if found is not None and (found[0] is w or _equal(found[0], w)):
            if found[0] is not w:  # held as this very message from now on (`_runs` looks for it)
                self._entries[w.key] = (w, found[1])
            return found[1]
        wire = make(w)
        self._entries[w.key] = (w, wire)
        wire.entry = self._fragments.get(w)
        return wire

    def keep(self, wires: list[Any]) -> None:
        """The wire messages of this request's window for the next one: `Prepared`'s very list, which
        no one changes (the cap's notice, OpenAI's other first message, a registered translator: copies)."""
        self.wires = wires

    def cacheable_prefix(self) -> int:
        """How many messages from the start are cacheable (R-TR-8's prefix, before the setting)."""
        return self._prefix

    def held(self) -> int:
        """How many working messages the memo holds."""
        return len(self._entries)

    def _forget(self, messages: list[Working]) -> None:
        """Keep the entries of this window's messages, and of those that left it lately: once the
        entries are two windows' worth and more, those of the messages not in this window go."""
        entries = self._entries
        if len(entries) > 2 * len(messages) + 256:
            keys = set(map(_KEY, messages))
            self._entries = {k: e for k, e in entries.items() if k in keys}


_CALL_ID, _KEY, _IMAGES = attrgetter("tool_call_id"), attrgetter("key"), attrgetter("images")
_CALLS = attrgetter("tool_calls")


def _common(new: Sequence[Working], i: int, old: Sequence[Working], j: int, most: int) -> int:
    """How many messages from new[i] equal those from old[j] (at least 1, at most `most`):
    list comparisons (by identity first, in C), bisected; the message just past the matched part
    is compared once, not once per halving (a rebuilt message is equal without being the same
    object, so a comparison that is not by identity costs a call of `Working.__eq__`). A run
    mostly ends just before `most` (the question, rebuilt in-flight messages): all but the last
    `_TAIL` are compared first, one pass over a long window instead of two, and the tail one by
    one (each message compared once, by key first)."""
    if most <= 2:
        return 1 if most == 2 and _differ(new[i + 1], old[j + 1]) else most
    if _differ(new[i + 1], old[j + 1]):
        return 1
    lo, hi = 2, most - _TAIL  # new[i:i+lo] matches; new[i:i+hi] does not (when hi < most - _TAIL)
    if hi > lo and new[i + lo : i + hi] == old[j + lo : j + hi]:
        lo = hi
    elif hi > lo:
        return bisected(new, i, old, j, lo, hi, _differ)
    while lo < most:  # the tail: the next message that is not the very same one (found in C) compared
        lo = next(compress(count(lo), map(is_not, new[i + lo : i + most], old[j + lo : j + most])), most)
        if lo == most or _differ(new[i + lo], old[j + lo]):
            return lo
        lo += 1
    return lo


_TAIL = 8  # how many messages before a run's longest end `_common` looks at last
_MISSES = 2  # held messages not found past the last run (and a window's worth of scans) before a map


def _found(w: Working, old: list[Working], j: int, where: dict[int, int]) -> int:
    """The first position from `j` (less than `REACH` on) of the very object `w` in `old`, or -1,
    read off `where` (each object's first position in `old`); searched only when `w` is also
    before `j` (one object twice in a window: none of a replay's)."""
    p = where.get(id(w), -1)
    if p >= j or p < 0:
        return p if p < j + REACH else -1
    return next(compress(count(j), map(is_, repeat(w), old[j : j + REACH])), -1)


def _differ(a: Working, b: Working) -> bool:
    """`a != b`: the very same object first, then the keys and cacheable flags (`Working.__eq__`
    compares every field, building a tuple of each message's fields; a question's stored copy
    differs from the in-window question by its flag alone, R-TR-8)."""
    return a is not b and (a.key != b.key or a.cacheable != b.cacheable or a != b)


def _equal(a: Working, b: Working) -> bool:
    """`a == b`, told apart by their texts and call ids first (without building each one's
    fields, or writing their arguments as JSON)."""
    if a.cacheable != b.cacheable or (a.text is not b.text and a.text != b.text):  # a stored copy, a system text
        return False
    if a.tool_calls is not b.tool_calls and [c.id for c in a.tool_calls] != [c.id for c in b.tool_calls]:
        return False
    return a == b
