"""Provider prompt-cache rules, applied to a sequence of calls (R-RPL-5).

Input: each call's prompt items and clock, the provider's row of `data/cache_rules.json` with the
fixture's `settings.cache` overrides. Output: per call the best candidate (the earlier call within
the TTL with the longest common prefix), the prefix tokens, the cached and written tokens and the
provider `limit`. Earlier prompts live in one trie of items, so a call costs its own length, not the
number of earlier calls.
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
class _Node:
    children: dict[str, _Node] = field(default_factory=dict)
    latest: int = -1  # the latest call whose prompt runs through this node
    stored: int = -1  # Anthropic: the latest call that stored the prefix ending here
    marked: int = -1  # Anthropic: the latest call with a breakpoint here (stored or not)


class Cache:
    """Feed calls in order with `add`; each returns that call's `Hit`."""

    def __init__(self, r: Rules) -> None:
        self.rules = r
        self.root = _Node()
        self.clocks: list[datetime | None] = []
        self.window_start = 0  # the oldest call still within the TTL of the newest

    def add(self, items: tuple[Item, ...], clock: datetime | None) -> Hit:
        index = len(self.clocks)
        if self.clocks and _gap(self.clocks[-1], clock) > self.rules.ttl_seconds:
            self.window_start = index
        self.clocks.append(clock)
        first = self.window_start
        if self.rules.mode == "previous":
            first = max(first, index - 1)
        path = self._walk(items, first)
        common = len(path)
        candidate = path[-1].latest if path else (index - 1 if index > first else None)
        prefix = sum(i.tokens for i in items[:common])
        hit = self._apply(index, items, path, first, candidate, prefix)
        self._insert(index, items)
        return hit

    def _walk(self, items: tuple[Item, ...], first: int) -> list[_Node]:
        path: list[_Node] = []
        node = self.root
        for item in items:
            child = node.children.get(item.key)
            if child is None or child.latest < first:
                break
            path.append(child)
            node = child
        return path

    def _insert(self, index: int, items: tuple[Item, ...]) -> None:
        node = self.root
        tokens = 0
        for item in items:
            child = node.children.get(item.key)
            if child is None:
                child = node.children[item.key] = _Node()
            child.latest = index
            tokens += item.tokens
            if item.breakpoint:
                child.marked = index
                if tokens >= self.rules.min_tokens:
                    child.stored = index
            node = child

    def _apply(
        self, index: int, items: tuple[Item, ...], path: list[_Node], first: int, candidate: int | None, prefix: int
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
        return Hit(None if expired else candidate, expired, len(path), prefix, cached, 0, limit)

    def _anthropic(
        self,
        items: tuple[Item, ...],
        path: list[_Node],
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
        for depth in range(len(path), 0, -1):
            node, end = path[depth - 1], depth - 1  # the stored prefix ends at item `end`
            if not any(end <= b for b in breakpoints):
                continue
            if node.stored >= first:
                if any(b - lookback <= end <= b for b in breakpoints):
                    read_end = depth
                    break
                beyond = True
            elif node.marked >= first:
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
        return Hit(None if expired else candidate, expired, len(path), prefix, read, written, limit)


def _gap(before: datetime | None, after: datetime | None) -> float:
    """Seconds between two calls' clocks; unknown or backwards clocks count as no gap."""
    if before is None or after is None:
        return 0.0
    return max(0.0, (after - before).total_seconds())
