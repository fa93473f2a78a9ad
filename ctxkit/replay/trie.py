"""The earlier prompts of a replay as one path-compressed trie of item keys (R-RPL-5, R-RPL-9).

Input: each call's item keys in order (strings, or the replay's numbers for them), how many it
shares with the last call, and the items after which it stores a prefix. Output: what a prompt
shares with the earlier ones (`Trie.walk`: the equal leading items, the latest call through them
and the breakpoints on the way); which earlier calls a call overtook, and down to which depth
(`Trie.insert`). The cache's rules (`replay/cache.py`) read these; this module knows no provider.

A call costs its own length, not the number of earlier calls, and the trie grows by at most two
edges per call (a prompt that goes on from the end of a leaf grows that leaf). The last call's
path is kept (`depths`, `edges`: each edge it runs through and the depth where it starts;
`marks`: its marked items by position), so the next call follows it down to the items both
share without a look, and only the edges it leaves get the last call's number then. The paths of
the few calls before it are kept too (`paths`): a call that comes back to one of them (calls that
alternate between two system prompts, a question's and a tool turn's) follows it from the edge
where it joins it, compared in C, instead of edge by edge (`_along`).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from operator import itemgetter

from ctxkit.translate.itemmemo import common_prefix

Keys = Sequence[Hashable]  # a prompt's item keys in order: strings, or the replay's numbers for them
CURRENT = 1 << 62  # an edge's `latest` while it lies on the last call's path: that call (`Trie.last`)
_FIRST = itemgetter(0)
PATHS = 16  # how many earlier calls' paths are kept besides the last one's (`Trie.paths`)
LEAF: dict[Hashable, Edge] = {}  # a leaf's children: none (one shared dict, never written: see `_descend`)


@dataclass(slots=True)
class Edge:
    """A run of items that every prompt through it shares (a radix-trie edge: path compression).

    The run is `keys[start:end]` of the first prompt that made it (no copy). Every prompt through
    any item of the run goes through all of it (a prompt that leaves or ends inside a run splits
    it), so `latest` is one number per run; the few items that carried a breakpoint keep theirs in
    `marks` (offset in the run → [stored, marked, writer]). A call adds at most two edges, where
    an item per node would add one node per item of the window (R-RPL-9)."""

    keys: Keys
    start: int
    end: int
    children: dict[Hashable, Edge]  # a leaf's: `LEAF` (shared, never written: a dict each was 64 bytes an edge)
    latest: int = -1  # the latest call whose prompt runs through this edge
    marks: dict[int, list[int]] | None = None  # breakpoints: [latest call that stored, latest marked, writer]

    def split(self, offset: int) -> None:
        """Keep the first `offset` items here; the rest becomes this edge's only child."""
        cut = self.start + offset
        tail = Edge(self.keys, cut, self.end, self.children, self.latest)
        if self.marks:
            tail.marks = {o - offset: m for o, m in self.marks.items() if o >= offset} or None
            self.marks = {o: m for o, m in self.marks.items() if o < offset} or None
        self.end = cut
        self.children = {self.keys[cut]: tail}

    def grow(self, keys: Keys, depth: int, log: Log | None = None) -> None:
        """A leaf the prompt `keys` runs through from `depth` on and goes beyond: the run becomes
        the rest of that prompt (every prompt through it is then in it, its latest the same), in
        `log` when the prompt's keys are there from `depth` on (see `Trie.insert`)."""
        if log is not None and depth >= log[2]:
            self.keys, self.start, self.end = log[0], log[1] + depth, log[1] + len(keys)
            return
        run = len(keys) - depth
        if 2 * run > len(keys):
            self.keys, self.start, self.end = keys, depth, len(keys)
        else:
            self.keys, self.start, self.end = keys[depth:], 0, run


@dataclass(slots=True)  # not frozen: made per call (a frozen one sets each field through object.__setattr__)
class Walked:
    """What a call shares with the earlier prompts still within the TTL."""

    common: int  # equal leading items
    latest: int  # the latest call through the last of them (-1 when none)
    marks: list[tuple[int, int, int, int]]  # (depth, stored, marked, writer) of marked items, deepest first


class Trie:
    """The prompts inserted since the last `reset`, and the last one's path."""

    def __init__(self) -> None:
        self.last = -1  # the last call inserted (kept across a reset: the edges it left get it)
        self.remember = True  # keep the paths of recent calls (`paths`); off: every walk edge by edge
        self.reset()

    def reset(self) -> None:
        """An empty trie (nothing earlier can be a hit again: memory follows the TTL)."""
        self.root = Edge((), 0, 0, LEAF)
        self.keys: Keys = ()
        self.depths: list[int] = []
        self.edges: list[Edge] = []
        self.marks: list[tuple[int, list[int]]] = []
        # the recent calls' paths as each left it (keys, depths, edges, marks), by call: see `_along`
        self.paths: dict[int, Path] = {}

    def walk(self, keys: Keys, first: int, shared: int = 0) -> Walked:
        """What `keys` shares with the prompts of calls `first` on; `shared`: its items equal to the
        last call's, whose path is then followed without a look (every edge on it is the last call's)."""
        edge, depth, latest = self.root, 0, -1
        marks: list[tuple[int, int, int, int]] = []
        n = len(keys)
        if shared:
            j = bisect_left(self.depths, shared) - 1  # the last edge starting before `shared`
            edge, depth, latest = self.edges[j], shared, self.last
            upto = bisect_left(self.marks, shared, key=_FIRST)
            marks = [(p + 1, m[0], m[1], m[2]) for p, m in self.marks[:upto]]
            if self.depths[j] + edge.end - edge.start > shared:  # it parts inside that edge
                n = depth
        while depth < n:
            child = edge.children.get(keys[depth])
            if child is None or (through := self.last if child.latest == CURRENT else child.latest) < first:
                break
            saved = self.paths.get(child.latest) if self.paths else None
            if saved is not None and (along := _along(saved, child, keys, depth)) is not None:
                k, common, p = along  # down that call's path: only where it parts is looked at
                _, depths, edges, kept = saved
                lo, hi = bisect_left(kept, depth, key=_FIRST), bisect_left(kept, common, key=_FIRST)
                marks.extend((q + 1, m[0], m[1], m[2]) for q, m in kept[lo:hi])
                latest, start = through, depths[p]
                if start == common:  # it leaves that path where edge p starts
                    edge, depth = edges[p - 1], common
                    continue
                edge, depth = edges[p], common
                if common - start < edge.end - edge.start:  # it parts inside edge p
                    break
                continue
            run = matched(child, keys, depth)
            if child.marks:
                marks.extend((depth + o + 1, m[0], m[1], m[2]) for o, m in child.marks.items() if o < run)
            depth += run
            latest = through
            if run < child.end - child.start:
                break
            edge = child
        marks.sort(reverse=True)
        return Walked(depth, latest, marks)

    def insert(self, index: int, keys: Keys, shared: int, log: Log | None = None) -> dict[int, int]:
        """Call `index`'s prompt, which shares its first `shared` items with the last call's; the
        earlier calls it overtook, each with the depth down to which it did. `log`: (values, at,
        lo), an append-only log that holds the prompt's keys from item `lo` on (`keys[x] ==
        values[at + x]`, a replay's key numbers: `prefix.Numbers`): an edge made from `lo` on holds
        its run there, so no edge keeps the call's own keys (consecutive prompts share one log)."""
        overtaken: dict[int, int] = {}
        edge, depth = self._leave(keys, shared, overtaken, log)
        beyond = len(self.marks)
        while depth < len(keys):
            edge, depth = self._descend(edge, keys, depth, overtaken, log)
        if len(self.marks) > beyond:
            self.marks.sort(key=_FIRST)
        self.keys, self.last = keys, index
        return overtaken

    def mark(self, index: int, points: list[int], stored: Sequence[bool], wrote: Sequence[bool]) -> None:
        """Call `index` marked the items at `points` (just inserted): each stores its prefix when
        `stored`, and this call wrote it when `wrote` (both by point)."""
        for position, keeps, writes in zip(points, stored, wrote, strict=True):
            at = bisect_right(self.depths, position) - 1
            run_edge = self.edges[at]
            if run_edge.marks is None:
                run_edge.marks = {}
            offset = position - self.depths[at]
            mark = run_edge.marks.get(offset)
            if mark is None:
                mark = run_edge.marks[offset] = [-1, -1, -1]
                self.marks.insert(bisect_left(self.marks, position, key=_FIRST), (position, mark))
            mark[1] = index
            if keeps:
                mark[0] = index
                if writes:
                    mark[2] = index

    def _leave(self, keys: Keys, shared: int, overtaken: dict[int, int], log: Log | None) -> tuple[Edge, int]:
        """Where the new prompt parts from the last one's path: the edges it leaves get the last
        call's number; the path is cut back to the edge and depth the new prompt goes on from."""
        edges, depths = self.edges, self.depths
        if self.remember and edges:  # kept as it is: the lists below are new ones, never these
            self.paths[self.last] = (self.keys, depths, edges, self.marks)
            if len(self.paths) > PATHS:
                del self.paths[next(iter(self.paths))]
        j = bisect_left(depths, shared) - 1 if shared else -1  # the last edge both paths run through
        for left in edges[j + 1 :]:  # the last call was the latest through them
            left.latest = self.last
        if j < 0:
            self.edges, self.depths, self.marks = [], [], []
            return self.root, 0
        edge, depth = edges[j], shared
        if depths[j] + edge.end - edge.start > shared:  # it parts inside that edge
            edge.latest = self.last
            edge.split(shared - depths[j])
            edge.latest = CURRENT
        elif not edge.children and shared < len(keys):  # it goes on from the end of the last call's leaf
            edge.grow(keys, depths[j], log)
            depth = len(keys)
        overtaken[self.last] = shared
        self.edges, self.depths = edges[: j + 1], depths[: j + 1]
        self.marks = self.marks[: bisect_left(self.marks, shared, key=_FIRST)]
        return edge, depth

    def _descend(
        self, edge: Edge, keys: Keys, depth: int, overtaken: dict[int, int], log: Log | None
    ) -> tuple[Edge, int]:
        """One edge down from `edge` at `depth`: a new one, or an earlier one split or grown."""
        n = len(keys)
        child = edge.children.get(keys[depth])
        if child is None:
            child, run = _leaf(keys, depth, log), n - depth
            if edge.children is LEAF:  # its first child: a dict of its own
                edge.children = {}
            edge.children[keys[depth]] = child
        else:
            run = -1
            saved = self.paths.get(child.latest) if self.paths else None
            if saved is not None and (along := _along(saved, child, keys, depth)) is not None:
                k, common, p = along  # the edges of that path before edge p, taken whole
                _, depths, edges, kept = saved
                if p > k:
                    end = depths[p]
                    taken = edges[k:p]
                    overtaken[child.latest] = end
                    for e in taken:
                        e.latest = CURRENT
                    self.edges += taken
                    self.depths += depths[k:p]
                    self.marks += kept[bisect_left(kept, depth, key=_FIRST) : bisect_left(kept, end, key=_FIRST)]
                    if end == common:  # it leaves that path where edge p starts
                        return edges[p - 1], end
                    child, depth = edges[p], end
                run = common - depth  # into edge p: its items are that call's
            if run < 0:
                run = matched(child, keys, depth)
            overtaken[child.latest] = depth + run  # going down: the deepest depth stays
            if run < child.end - child.start:
                child.split(run)
            elif not child.children and depth + run < n:  # a leaf it goes on from: one edge, not two
                child.grow(keys, depth, log)
                run = n - depth
            if child.marks:
                self.marks.extend((depth + o, m) for o, m in child.marks.items())
        child.latest = CURRENT
        self.depths.append(depth)
        self.edges.append(child)
        return child, depth + run


Path = tuple[Keys, list[int], list[Edge], list[tuple[int, list[int]]]]  # see `Trie.paths`
Log = tuple[Keys, int, int]  # a prompt's keys from item lo on in a shared log: (values, at, lo), see `Trie.insert`


def _leaf(keys: Keys, depth: int, log: Log | None) -> Edge:
    """A new leaf for the prompt `keys` from `depth` on."""
    n = len(keys)
    if log is not None and depth >= log[2]:  # its run is in the log
        return Edge(log[0], log[1] + depth, log[1] + n, LEAF)
    if 2 * (n - depth) > n:  # most of the prompt: the edge shares its keys (a view holds them)
        return Edge(keys, depth, n, LEAF)
    return Edge(keys[depth:], 0, n - depth, LEAF)  # a short new run: copied, so the prompt's keys are not kept for it


def _along(path: Path, child: Edge, keys: Keys, depth: int) -> tuple[int, int, int] | None:
    """Where `keys` parts from a recent call's path that it joins at `child` (at `depth`): (the
    child's index on that path, the equal leading items, the path's last edge starting at or before
    them); None when `child` is not on that path at `depth` any more.

    `child`'s latest call is that call, so no later prompt went through `child` nor any edge below
    it: from `child` on, that path is as the call left it (every edge below it still that call's
    latest, no edge split or grown, no breakpoint added), and the items it shares are found by
    comparing the two prompts in C."""
    theirs, depths, edges, _ = path
    k = bisect_left(depths, depth)
    if k == len(depths) or depths[k] != depth or edges[k] is not child:
        return None
    common = depth + common_prefix(keys[depth:], theirs[depth:])
    return k, common, bisect_right(depths, common) - 1


def matched(edge: Edge, keys: Keys, depth: int) -> int:
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
