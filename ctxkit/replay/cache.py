"""Provider prompt-cache rules, applied to a sequence of calls (R-RPL-5).

Input: each call's prompt items and clock, the provider's row of `data/cache_rules.json` with the
fixture's `settings.cache` overrides. Output: per call the best candidate (the earlier call within
the TTL with the longest common prefix), the prefix tokens, the cached and written tokens and the
provider `limit`. Earlier prompts live in one path-compressed trie of item keys (`replay/trie.py`),
so a call costs its own length, not the number of earlier calls. Consecutive calls share most of
their items: a call is compared with the previous one first (in C, by bisecting slices) and walks
the trie only from where the two part, so what a call costs follows what changed (R-RPL-9).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import accumulate, compress, islice
from operator import itemgetter

from ctxkit.loading.cache_rules import Mode, Rules, rules
from ctxkit.replay.prefix import Columns
from ctxkit.replay.trie import Keys, Trie, Walked
from ctxkit.translate.itemmemo import common_run
from ctxkit.translate.items import Item

__all__ = ["Cache", "Hit", "Keys", "Limit", "Mode", "Rules", "rules"]

_KEY, _TOKENS, _BREAKPOINT = itemgetter(0), itemgetter(1), itemgetter(3)  # of an Item


class Limit(enum.StrEnum):
    """Why a call cached fewer tokens than it shares with its best candidate (R-RPL-5)."""

    MINIMUM = "minimum"  # the shared (or the stored) prefix is under the model's minimum
    INCREMENT = "increment"  # cached in steps: the rest of the last step is not
    LOOKBACK = "lookback"  # a stored prefix matches beyond the lookback of every breakpoint of the call
    UNCACHED = "uncached"  # the model caches nothing


@dataclass(slots=True)  # not frozen: made per call (a frozen one sets each field through object.__setattr__)
class Hit:
    candidate: int | None  # the best candidate's index
    expired: bool  # earlier calls exist but none within the TTL
    common: int  # equal leading items with the best candidate
    prefix_tokens: int
    cached_tokens: int
    write_tokens: int
    limit: Limit | None


class Cache:
    """Feed calls in order with `add`; each returns that call's `Hit`.

    After the last call, `unread_writes(index)` says whether a call's write was never read by a
    later call while it was alive (R-RPL-7: a write that never pays back).

    Earlier prompts live in `self.trie` (`replay/trie.py`); a call is compared with the last one
    first and walks the trie only from where the two part. `incremental = False` walks every call
    from the root instead (the plain way, the tests' oracle)."""

    def __init__(self, r: Rules) -> None:
        self.rules = r
        self.clocks: list[datetime | None] = []
        self.window_start = 0  # the oldest call still within the TTL of the newest
        self._paid: set[int] = set()  # calls whose write a later call read
        self.overtaken: dict[int, int] = {}  # see `add`
        self.trie = Trie()
        self.incremental = True

    @property
    def incremental(self) -> bool:
        """Compare each call with the last one and follow the recent calls' paths (`Trie.paths`);
        False: every walk from the root, edge by edge (the plain way, the tests' oracle)."""
        return self.trie.remember

    @incremental.setter
    def incremental(self, on: bool) -> None:
        self.trie.remember = on

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
            self.trie.reset()
        self.clocks.append(clock)
        first = self.window_start
        if self.rules.mode is Mode.PREVIOUS:
            first = max(first, index - 1)
        if keys is None:
            keys = tuple(map(_KEY, items))
        shared = _shared(keys, self.trie.keys, columns) if self.incremental else 0
        path = self.trie.walk(keys, first, shared)
        common = path.common
        candidate = path.latest if common else (index - 1 if index > first else None)
        tokens = columns.tokens if columns is not None else None
        if columns is not None:
            prefix = columns.total - columns.tokens_from(common)
        else:
            prefix = sum(map(_TOKENS, islice(items, common)))
        points = self._breakpoints(items, columns)
        ends = _ends(items, tokens) if points or self.rules.mode.stores else []
        hit, read = self._apply(index, items, path, first, candidate, prefix, points, ends)
        if self.rules.mode is Mode.PREVIOUS:  # only this prompt can be a hit for the next call
            self.trie.reset()
            shared = 0
        self.overtaken = self.trie.insert(index, keys, shared, columns.logged if columns is not None else None)
        if points:
            stored = [ends[p + 1] >= self.rules.min_tokens for p in points]
            self.trie.mark(index, points, stored, [p >= read for p in points])  # beyond what it read: it wrote
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

    def _apply(
        self,
        index: int,
        items: Sequence[Item],
        path: Walked,
        first: int,
        candidate: int | None,
        prefix: int,
        points: list[int],
        ends: list[int],
    ) -> tuple[Hit, int]:
        """The call's hit, and how many of its items it read from a stored prefix (0 unless the
        provider stores prefixes). `ends[n]`: the first n items' tokens."""
        r = self.rules
        expired = index > 0 and first == index
        if r.mode.stores:
            return self._stored(items, path, first, None if expired else candidate, prefix, expired, points, ends)
        cached, limit = prefix, None
        if r.mode is Mode.NONE and prefix:
            cached, limit = 0, Limit.UNCACHED
        elif prefix and prefix < r.min_tokens:
            cached, limit = 0, Limit.MINIMUM
        elif r.increment > 1 and prefix % r.increment:
            cached, limit = prefix - prefix % r.increment, Limit.INCREMENT
        return Hit(None if expired else candidate, expired, path.common, prefix, cached, 0, limit), 0

    def _stored(
        self,
        items: Sequence[Item],
        path: Walked,
        first: int,
        candidate: int | None,
        prefix: int,
        expired: bool,
        points: list[int],
        ends: list[int],
    ) -> tuple[Hit, int]:
        """Read the longest stored prefix this call may reach; write up to its last breakpoint.

        explicit (Anthropic): a stored prefix ending within `lookback` positions of one of this
        call's breakpoints, the breakpoint's own position counting as the first, a run of
        `tool_use` (or `tool_result`) blocks as one position. breakpoints (OpenAI GPT-5.6): an exact
        match at any of the latest `considered` stored breakpoints on this prompt, no lookback."""
        r = self.rules
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
        read = ends[read_end]
        written = 0
        if points:
            upto = ends[points[-1] + 1]
            if upto >= r.min_tokens:
                written = max(0, upto - read)
        limit = None
        if read < prefix:
            limit = Limit.LOOKBACK if beyond else (Limit.MINIMUM if unstored else None)
        return Hit(candidate, expired, path.common, prefix, read, written, limit), read_end


def _shared(keys: Keys, last: Keys, columns: Columns | None) -> int:
    """`common_prefix(keys, last)`: the leading items this call shares with the last one. When the
    columns' first run of items the two calls share starts both (`Columns.runs`, the item memo's),
    its keys are known equal, and only what follows it is compared (mostly one item, the place
    where the prompts part)."""
    start, most = 0, min(len(keys), len(last))
    if columns is not None and columns.last_keys is last and columns.runs:
        i, j, k = columns.runs[0]
        if i == 0 and j == 0:
            start = k
    if start >= most or keys[start] != last[start]:
        return min(start, most)
    return start + common_run(keys, start, last, start, most - start)


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


def _gap(before: datetime | None, after: datetime | None) -> float:
    """Seconds between two calls' clocks; unknown or backwards clocks count as no gap."""
    if before is None or after is None:
        return 0.0
    return max(0.0, (after - before).total_seconds())
