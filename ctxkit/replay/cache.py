"""Provider prompt-cache rules, applied to a sequence of calls (R-RPL-5).

Input: each call's prompt items and clock, the provider's row of `data/cache_rules.json` with the
fixture's `settings.cache` overrides. Output: per call the best candidate (the earlier call within
the TTL with the longest common prefix), the prefix tokens, the cached and written tokens and the
provider `limit`. Earlier prompts live in one trie of items, so a call costs its own length, not the
number of earlier calls; the trie is path-compressed, so it grows by at most two edges per call
(a prompt that goes on from the end of a leaf grows that leaf).
Consecutive calls share most of their items: a call is compared with the previous one first (in C,
by bisecting slices), walks the trie only from where the two part, and marks as the latest only the
edges that leave the previous call's path, so what a call costs follows what changed (R-RPL-9).
"""

from __future__ import annotations

import enum
from bisect import bisect_left, bisect_right
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import accumulate, compress, islice
from operator import itemgetter

from ctxkit.loading.cache_rules import Mode, Rules, rules
from ctxkit.replay.prefix import Columns, common_prefix
from ctxkit.translate.items import Item

__all__ = ["Cache", "Hit", "Keys", "Limit", "Mode", "Rules", "rules"]

Keys = Sequence[Hashable]  # a prompt's item keys in order: strings, or the replay's numbers for them
_KEY, _TOKENS, _BREAKPOINT, _FIRST = itemgetter(0), itemgetter(1), itemgetter(3), itemgetter(0)  # of an Item
_CURRENT = 1 << 62  # an edge's `latest` while it lies on the last call's path: that call (`Cache._last`)


class Limit(enum.StrEnum):
    """Why a call cached fewer tokens than it shares with its best candidate (R-RPL-5)."""

    MINIMUM = "minimum"  # the shared (or the stored) prefix is under the model's minimum
    INCREMENT = "increment"  # cached in steps: the rest of the last step is not
    LOOKBACK = "lookback"  # a stored prefix matches beyond the lookback of every breakpoint of the call
    UNCACHED = "uncached"  # the model caches nothing


@dataclass(frozen=True, slots=True)
class Hit:
    candidate: int | None  # the best candidate's index
    expired: bool  # earlier calls exist but none within the TTL
    common: int  # equal leading items with the best candidate
    prefix_tokens: int
    cached_tokens: int
    write_tokens: int
    limit: Limit | None


@dataclass(slots=True)
class _Edge:
    """A run of items that every prompt through it shares (a radix-trie edge: path compression).

    The run is `keys[start:end]` of the first prompt that made it (no copy). Every prompt through
    any item of the run goes through all of it (a prompt that leaves or ends inside a run splits
    it), so `latest` is one number per run; the few items that carried a breakpoint keep theirs in
    `marks` (offset in the run → [stored, marked]). A call adds at most two edges, where an item
    per node would add one node per item of the window (R-RPL-9)."""

    keys: Keys
    start: int
    end: int
    children: dict[Hashable, _Edge] = field(default_factory=dict)
    latest: int = -1  # the latest call whose prompt runs through this edge
    marks: dict[int, list[int]] | None = None  # breakpoints: [latest call that stored, latest marked, writer]

    def split(self, offset: int) -> None:
        """Keep the first `offset` items here; the rest becomes this edge's only child."""
        cut = self.start + offset
        tail = _Edge(self.keys, cut, self.end, self.children, self.latest)
        if self.marks:
            tail.marks = {o - offset: m for o, m in self.marks.items() if o >= offset} or None
            self.marks = {o: m for o, m in self.marks.items() if o < offset} or None
        self.end = cut
        self.children = {self.keys[cut]: tail}

    def grow(self, keys: Keys, depth: int) -> None:
        """A leaf the prompt `keys` runs through from `depth` on and goes beyond: the run becomes
        the rest of that prompt (every prompt through it is then in it, its latest the same)."""
        run = len(keys) - depth
        if 2 * run > len(keys):
            self.keys, self.start, self.end = keys, depth, len(keys)
        else:
            self.keys, self.start, self.end = keys[depth:], 0, run


@dataclass(frozen=True, slots=True)
class _Path:
    """What a call shares with the earlier prompts still within the TTL."""

    common: int  # equal leading items
    latest: int  # the latest call through the last of them (-1 when none)
    marks: list[tuple[int, int, int, int]]  # (depth, stored, marked, writer) of marked items, deepest first


class Cache:
    """Feed calls in order with `add`; each returns that call's `Hit`.

    After the last call, `unread_writes(index)` says whether a call's write was never read by a
    later call while it was alive (R-RPL-7: a write that never pays back).

    The last call's path is kept (`_depths`, `_edges`: each edge it runs through and the depth
    where it starts; `_marks`: its marked items by position): the next call reuses it down to
    the items both share. An edge on it has `latest == _CURRENT` (the last call); an edge the
    next call leaves gets the last call's number then. `incremental = False` walks every call
    from the root instead (the plain way, the tests' oracle)."""

    def __init__(self, r: Rules) -> None:
        self.rules = r
        self.clocks: list[datetime | None] = []
        self.window_start = 0  # the oldest call still within the TTL of the newest
        self._read = 0  # items the current call read (its stored prefix), for `_insert`
        self._tokens: Sequence[int] | None = None  # the current call's tokens column, when given
        self._paid: set[int] = set()  # calls whose write a later call read
        self.overtaken: dict[int, int] = {}  # see `add`
        self.incremental = True
        self._last = -1  # the last call inserted
        self._reset()

    def _reset(self) -> None:
        """An empty trie (nothing earlier can be a hit again: memory follows the TTL)."""
        self.root = _Edge((), 0, 0)
        self._keys: Keys = ()
        self._depths: list[int] = []
        self._edges: list[_Edge] = []
        self._marks: list[tuple[int, list[int]]] = []

    def add(
        self, items: Sequence[Item], clock: datetime | None, keys: Keys | None = None, columns: Columns | None = None
    ) -> Hit:
        """`keys` (each item's key, in order) may be passed when the caller already has them;
        `columns` (a replay's, `prefix.Columns`), the items' tokens and breakpoints as columns.

        Afterwards `overtaken` maps each earlier call this one overtook to the depth down to which
        it did: that call is no longer the latest through its items before that depth, so no later
        call can break against it there (its view may be trimmed to the rest, R-RPL-9)."""
        index = len(self.clocks)
        if self.clocks and _gap(self.clocks[-1], clock) > self.rules.ttl_seconds:
            self.window_start = index
            self._reset()
        self.clocks.append(clock)
        first = self.window_start
        if self.rules.mode is Mode.PREVIOUS:
            first = max(first, index - 1)
        if keys is None:
            keys = tuple(map(_KEY, items))
        shared = common_prefix(keys, self._keys) if self.incremental else 0
        path = self._walk(keys, first, shared)
        common = path.common
        candidate = path.latest if common else (index - 1 if index > first else None)
        self._tokens = tokens = columns.tokens if columns is not None else None  # for `_ends`
        prefix = sum(islice(tokens, common)) if tokens is not None else sum(map(_TOKENS, islice(items, common)))
        points = self._breakpoints(items, columns)
        self._read = 0
        hit = self._apply(index, items, path, first, candidate, prefix, points)
        if self.rules.mode is Mode.PREVIOUS:  # only this prompt can be a hit for the next call
            self._reset()
            shared = 0
        self.overtaken = self._insert(index, items, keys, points, shared)
        self._keys = keys
        return hit

    @property
    def keep_from(self) -> int:
        """The oldest call a later call may still compare with (TTL; Ollama: the latest only)."""
        if self.rules.mode is Mode.PREVIOUS:
            return max(self.window_start, len(self.clocks) - 1)
        return self.window_start

    def unread_write(self, index: int) -> bool:
        """The call wrote to the cache and no later call read what it wrote (call after the last)."""
        return index not in self._paid

    def _breakpoints(self, items: Sequence[Item], columns: Columns | None = None) -> list[int]:
        """The items after which this request stores a prefix (explicit and breakpoints modes).

        Anthropic: each block with `cache_control`. OpenAI GPT-5.6: the implicit breakpoint at the end
        of the newest message that is not the assistant's, and the latest marked ones, at most
        `max_writes` in all."""
        marked = columns.marked() if columns else list(compress(range(len(items)), map(_BREAKPOINT, items)))
        if self.rules.mode is not Mode.BREAKPOINTS:
            return marked
        implicit = next((n for n in range(len(items) - 1, -1, -1) if items[n].role not in (None, "assistant")), None)
        room = (self.rules.max_writes or len(items) + 1) - (implicit is not None)
        chosen = set(marked[-room:] if room > 0 else [])
        if implicit is not None:
            chosen.add(implicit)
        return sorted(chosen)

    def _walk(self, keys: Keys, first: int, shared: int = 0) -> _Path:
        """What `keys` shares with the prompts in the trie; `shared`: its items equal to the last
        call's, whose path is then followed without a look (every edge on it is the last call's)."""
        edge, depth, latest = self.root, 0, -1
        marks: list[tuple[int, int, int, int]] = []
        n = len(keys)
        if shared:
            j = bisect_left(self._depths, shared) - 1  # the last edge starting before `shared`
            edge, depth, latest = self._edges[j], shared, self._last
            upto = bisect_left(self._marks, shared, key=_FIRST)
            marks = [(p + 1, m[0], m[1], m[2]) for p, m in self._marks[:upto]]
            if self._depths[j] + edge.end - edge.start > shared:  # it parts inside that edge
                n = depth
        while depth < n:
            child = edge.children.get(keys[depth])
            if child is None or (through := self._last if child.latest == _CURRENT else child.latest) < first:
                break
            run = _matched(child, keys, depth)
            if child.marks:
                marks.extend((depth + o + 1, m[0], m[1], m[2]) for o, m in child.marks.items() if o < run)
            depth += run
            latest = through
            if run < child.end - child.start:
                break
            edge = child
        marks.sort(reverse=True)
        return _Path(depth, latest, marks)

    def _insert(self, index: int, items: Sequence[Item], keys: Keys, points: list[int], shared: int) -> dict[int, int]:
        edges, depths, marks = self._edges, self._depths, self._marks
        overtaken: dict[int, int] = {}
        edge, depth, n = self.root, 0, len(keys)
        j = bisect_left(depths, shared) - 1 if shared else -1  # the last edge both paths run through
        for left in edges[j + 1 :]:  # the edges this call leaves: the last call was the latest through them
            left.latest = self._last
        if j >= 0:
            edge, depth = edges[j], shared
            if depths[j] + edge.end - edge.start > shared:  # it parts inside that edge
                edge.latest = self._last
                edge.split(shared - depths[j])
                edge.latest = _CURRENT
            elif not edge.children and shared < n:  # it goes on from the end of the last call's leaf
                edge.grow(keys, depths[j])
                depth = n
            overtaken[self._last] = shared
            edges, depths = edges[: j + 1], depths[: j + 1]
            marks = marks[: bisect_left(marks, shared, key=_FIRST)]
        else:
            edges, depths, marks = [], [], []
        beyond = len(marks)
        while depth < n:
            child = edge.children.get(keys[depth])
            if child is None:
                run = n - depth
                if 2 * run > n:  # most of the prompt: the edge shares its keys (a view holds them)
                    child = _Edge(keys, depth, n)
                else:  # a short new run: copied, so the prompt's keys are not kept for it
                    child = _Edge(keys[depth:], 0, run)
                edge.children[keys[depth]] = child
            else:
                run = _matched(child, keys, depth)
                overtaken[child.latest] = depth + run  # going down: the deepest depth stays
                if run < child.end - child.start:
                    child.split(run)
                elif not child.children and depth + run < n:  # a leaf it goes on from: one edge, not two
                    child.grow(keys, depth)
                    run = n - depth
                if child.marks:
                    marks.extend((depth + o, m) for o, m in child.marks.items())
            child.latest = _CURRENT
            depths.append(depth)
            edges.append(child)
            depth += run
            edge = child
        if len(marks) > beyond:
            marks.sort(key=_FIRST)
        self._edges, self._depths, self._marks, self._last = edges, depths, marks, index
        if not points:
            return overtaken
        ends = _ends(items, self._tokens)
        for position in points:
            at = bisect_right(depths, position) - 1
            run_edge = edges[at]
            if run_edge.marks is None:
                run_edge.marks = {}
            offset = position - depths[at]
            mark = run_edge.marks.get(offset)
            if mark is None:
                mark = run_edge.marks[offset] = [-1, -1, -1]
                marks.insert(bisect_left(marks, position, key=_FIRST), (position, mark))
            mark[1] = index
            if ends[position + 1] >= self.rules.min_tokens:
                mark[0] = index
                if position >= self._read:  # beyond what this call read: it wrote this prefix
                    mark[2] = index
        return overtaken

    def _apply(
        self,
        index: int,
        items: Sequence[Item],
        path: _Path,
        first: int,
        candidate: int | None,
        prefix: int,
        points: list[int],
    ) -> Hit:
        r = self.rules
        expired = index > 0 and first == index
        if r.mode.stores:
            return self._stored(items, path, first, None if expired else candidate, prefix, expired, points)
        cached, limit = prefix, None
        if r.mode is Mode.NONE and prefix:
            cached, limit = 0, Limit.UNCACHED
        elif prefix and prefix < r.min_tokens:
            cached, limit = 0, Limit.MINIMUM
        elif r.increment > 1 and prefix % r.increment:
            cached, limit = prefix - prefix % r.increment, Limit.INCREMENT
        return Hit(None if expired else candidate, expired, path.common, prefix, cached, 0, limit)

    def _stored(
        self,
        items: Sequence[Item],
        path: _Path,
        first: int,
        candidate: int | None,
        prefix: int,
        expired: bool,
        points: list[int],
    ) -> Hit:
        """Read the longest stored prefix this call may reach; write up to its last breakpoint.

        explicit (Anthropic): a stored prefix ending within `lookback` positions of one of this
        call's breakpoints, the breakpoint's own position counting as the first, a run of
        `tool_use` (or `tool_result`) blocks as one position. breakpoints (OpenAI GPT-5.6): an exact
        match at any of the latest `considered` stored breakpoints on this prompt, no lookback."""
        r = self.rules
        ends = _ends(items, self._tokens)
        lookback = r.lookback if r.mode is Mode.EXPLICIT else None
        positions = _positions(items) if lookback is not None else None
        window = lookback or 0
        read_end, beyond, unstored, considered = 0, False, False, 0
        for depth, stored, marked, _ in path.marks:  # deepest first; unmarked items store nothing
            end = depth - 1  # the stored prefix ends at item `end`
            if stored >= first:
                considered += 1
                if r.considered is not None and considered > r.considered:
                    beyond = True
                    break
                if positions is None or any(end <= b and positions[b] - positions[end] < window for b in points):
                    read_end = depth
                    break
                beyond = True
            elif marked >= first:
                unstored = True
        for depth, stored, _, writer in path.marks:  # what it read, each earlier write in it paid back
            if depth <= read_end and stored >= first and writer >= 0:
                self._paid.add(writer)
        self._read = read_end
        read = ends[read_end]
        written = 0
        if points:
            upto = ends[points[-1] + 1]
            if upto >= r.min_tokens:
                written = max(0, upto - read)
        limit = None
        if read < prefix:
            limit = Limit.LOOKBACK if beyond else (Limit.MINIMUM if unstored else None)
        return Hit(candidate, expired, path.common, prefix, read, written, limit)


def _ends(items: Sequence[Item], tokens: Sequence[int] | None) -> list[int]:
    """`ends[n]` = the first n items' tokens (`tokens`: each item's, when the caller has the column)."""
    return list(accumulate(tokens if tokens is not None else map(_TOKENS, items), initial=0))


def _positions(items: Sequence[Item]) -> list[int]:
    """Each item's lookback position: a run of `tool_use` (or of `tool_result`) blocks is one."""
    out, position, before = [], -1, None
    for item in items:
        if item.run is None or item.run != before:
            position += 1
        out.append(position)
        before = item.run
    return out


def _matched(edge: _Edge, keys: Keys, depth: int) -> int:
    """Equal leading items of the edge's run and `keys[depth:]` (its first item is known equal)."""
    size = min(edge.end - edge.start, len(keys) - depth)
    theirs = edge.keys
    if theirs[edge.start : edge.start + size] == keys[depth : depth + size]:  # the usual case, compared in C
        return size
    offset = edge.start - depth
    n = 1
    while theirs[offset + depth + n] == keys[depth + n]:
        n += 1
    return n


def _gap(before: datetime | None, after: datetime | None) -> float:
    """Seconds between two calls' clocks; unknown or backwards clocks count as no gap."""
    if before is None or after is None:
        return 0.0
    return max(0.0, (after - before).total_seconds())
