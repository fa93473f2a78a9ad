"""Provider prompt-cache rules, applied to a sequence of calls (R-RPL-5).

Input: each call's prompt items and clock, the provider's row of `data/cache_rules.json` with the
fixture's `settings.cache` overrides. Output: per call the best candidate (the earlier call within
the TTL with the longest common prefix), the prefix tokens, the cached and written tokens and the
provider `limit`. Earlier prompts live in one trie of items, so a call costs its own length, not the
number of earlier calls; the trie is path-compressed, so it grows by at most two edges per call.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ctxkit.loading.domain import CacheRules
from ctxkit.translate.items import Item


@dataclass(frozen=True, slots=True)
class Rules:
    mode: str  # automatic | explicit | implicit | previous
    min_tokens: int
    increment: int
    lookback: int | None
    ttl_seconds: int


@functools.cache
def _table() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((Path(__file__).parents[1] / "data" / "cache_rules.json").read_text("utf-8"))
    return data


def rules(provider: str, model: str, overrides: CacheRules) -> Rules:
    """The provider's row, the model's own minimum, then the fixture's overrides."""
    row = _table()[provider]
    minimum = row["min_tokens"]
    for prefix, value in row.get("min_tokens_by_model", ()):
        if model.startswith(prefix):
            minimum = value
            break
    return Rules(
        mode=row["mode"],
        min_tokens=overrides.min_tokens if overrides.min_tokens is not None else minimum,
        increment=overrides.increment if overrides.increment is not None else row["increment"],
        lookback=overrides.lookback if overrides.lookback is not None else row["lookback"],
        ttl_seconds=overrides.ttl_seconds if overrides.ttl_seconds is not None else row["ttl_seconds"],
    )


@dataclass(frozen=True, slots=True)
class Hit:
    candidate: int | None  # the best candidate's index
    expired: bool  # earlier calls exist but none within the TTL
    common: int  # equal leading items with the best candidate
    prefix_tokens: int
    cached_tokens: int
    write_tokens: int
    limit: str | None  # minimum | increment | lookback | None


@dataclass(slots=True)
class _Edge:
    """A run of items that every prompt through it shares (a radix-trie edge: path compression).

    The run is `keys[start:end]` of the first prompt that made it (no copy). Every prompt through
    any item of the run goes through all of it (a prompt that leaves or ends inside a run splits
    it), so `latest` is one number per run; the few items that carried a breakpoint keep theirs in
    `marks` (offset in the run → [stored, marked]). A call adds at most two edges, where an item
    per node would add one node per item of the window (R-RPL-9)."""

    keys: tuple[str, ...]
    start: int
    end: int
    children: dict[str, _Edge] = field(default_factory=dict)
    latest: int = -1  # the latest call whose prompt runs through this edge
    marks: dict[int, list[int]] | None = None  # Anthropic: [latest call that stored, latest marked]

    def split(self, offset: int) -> None:
        """Keep the first `offset` items here; the rest becomes this edge's only child."""
        cut = self.start + offset
        tail = _Edge(self.keys, cut, self.end, self.children, self.latest)
        if self.marks:
            tail.marks = {o - offset: m for o, m in self.marks.items() if o >= offset} or None
            self.marks = {o: m for o, m in self.marks.items() if o < offset} or None
        self.end = cut
        self.children = {self.keys[cut]: tail}


@dataclass(frozen=True, slots=True)
class _Path:
    """What a call shares with the earlier prompts still within the TTL."""

    common: int  # equal leading items
    latest: int  # the latest call through the last of them (-1 when none)
    marks: list[tuple[int, int, int]]  # (depth, stored, marked) of marked items within, deepest first


class Cache:
    """Feed calls in order with `add`; each returns that call's `Hit`."""

    def __init__(self, r: Rules) -> None:
        self.rules = r
        self.root = _Edge((), 0, 0)
        self.clocks: list[datetime | None] = []
        self.window_start = 0  # the oldest call still within the TTL of the newest

    def add(self, items: tuple[Item, ...], clock: datetime | None, keys: tuple[str, ...] | None = None) -> Hit:
        """`keys` (each item's key, in order) may be passed when the caller already has them."""
        index = len(self.clocks)
        if self.clocks and _gap(self.clocks[-1], clock) > self.rules.ttl_seconds:
            self.window_start = index
        self.clocks.append(clock)
        first = self.window_start
        if self.rules.mode == "previous":
            first = max(first, index - 1)
        if keys is None:
            keys = tuple(item.key for item in items)
        path = self._walk(keys, first)
        common = path.common
        candidate = path.latest if common else (index - 1 if index > first else None)
        prefix = sum(i.tokens for i in items[:common])
        hit = self._apply(index, items, path, first, candidate, prefix)
        self._insert(index, items, keys)
        return hit

    def _walk(self, keys: tuple[str, ...], first: int) -> _Path:
        edge, depth, latest = self.root, 0, -1
        marks: list[tuple[int, int, int]] = []
        n = len(keys)
        while depth < n:
            child = edge.children.get(keys[depth])
            if child is None or child.latest < first:
                break
            run = _matched(child, keys, depth)
            if child.marks:
                marks.extend((depth + o + 1, m[0], m[1]) for o, m in child.marks.items() if o < run)
            depth += run
            latest = child.latest
            if run < child.end - child.start:
                break
            edge = child
        marks.sort(reverse=True)
        return _Path(depth, latest, marks)

    def _insert(self, index: int, items: tuple[Item, ...], keys: tuple[str, ...]) -> None:
        edge, depth, n = self.root, 0, len(keys)
        runs: list[tuple[int, _Edge]] = []  # (depth at its start, edge) along this prompt
        while depth < n:
            child = edge.children.get(keys[depth])
            if child is None:
                child = edge.children[keys[depth]] = _Edge(keys, depth, n)
                run = n - depth
            else:
                run = _matched(child, keys, depth)
                if run < child.end - child.start:
                    child.split(run)
            child.latest = index
            runs.append((depth, child))
            depth += run
            edge = child
        tokens = 0
        for position, item in enumerate(items):
            tokens += item.tokens
            if item.breakpoint:
                start, run_edge = next((s, e) for s, e in reversed(runs) if s <= position)
                if run_edge.marks is None:
                    run_edge.marks = {}
                mark = run_edge.marks.setdefault(position - start, [-1, -1])
                mark[1] = index
                if tokens >= self.rules.min_tokens:
                    mark[0] = index

    def _apply(
        self, index: int, items: tuple[Item, ...], path: _Path, first: int, candidate: int | None, prefix: int
    ) -> Hit:
        r = self.rules
        expired = index > 0 and index == first and r.mode != "previous" or (index > 0 and not path and index > first)
        expired = index > 0 and first == index
        if r.mode == "explicit":
            return self._anthropic(items, path, first, candidate, prefix, expired)
        cached, limit = prefix, None
        if prefix and prefix < r.min_tokens:
            cached, limit = 0, "minimum"
        elif r.increment > 1 and prefix % r.increment:
            cached, limit = prefix - prefix % r.increment, "increment"
        return Hit(None if expired else candidate, expired, path.common, prefix, cached, 0, limit)

    def _anthropic(
        self,
        items: tuple[Item, ...],
        path: _Path,
        first: int,
        candidate: int | None,
        prefix: int,
        expired: bool,
    ) -> Hit:
        """Read the longest stored prefix within the lookback of a breakpoint; write up to the last one."""
        r = self.rules
        lookback = r.lookback if r.lookback is not None else len(items)
        breakpoints = [n for n, item in enumerate(items) if item.breakpoint]
        ends = [0]
        for item in items:
            ends.append(ends[-1] + item.tokens)
        read_end, beyond, unstored = 0, False, False
        for depth, stored, marked in path.marks:  # deepest first; unmarked items store nothing
            end = depth - 1  # the stored prefix ends at item `end`
            if not any(end <= b for b in breakpoints):
                continue
            if stored >= first:
                if any(b - lookback <= end <= b for b in breakpoints):
                    read_end = depth
                    break
                beyond = True
            elif marked >= first:
                unstored = True
        read = ends[read_end]
        written = 0
        if breakpoints:
            upto = ends[breakpoints[-1] + 1]
            if upto >= r.min_tokens:
                written = upto - read
        limit = None
        if read < prefix:
            limit = "lookback" if beyond else ("minimum" if unstored else None)
        return Hit(None if expired else candidate, expired, path.common, prefix, read, written, limit)


def _matched(edge: _Edge, keys: tuple[str, ...], depth: int) -> int:
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
