"""The replay window's arrays along the current root path (R-RPL-9): `Arrays`, the part of
`replay.state.State` that holds each stored message's working messages by position.

Input: the root path a call's branch runs over and its stored messages' conversions. Output: the
working messages of `path[:upto]` in order (`works`), their cacheable copies, key positions, fates
by position, tool calls and results by position (`answers.Announcements`), how many working
messages each path prefix makes (`ends`) and the running sums of their costs (`sums`), extended
as the conversation grows and cut back where an edit leaves the path.

Forgetting by recency: what lies well below the lowest message a call reads (`path[:floor]`) is
forgotten in bulk (its conversions, cacheable copies, shared costs and key positions; `ends`,
`sums`, path positions and fates by position stay, a few bytes a message) and made again in place,
as new but equal objects, when a later window reaches back (`_reach`, `_refill`, `restore`).
"""

from __future__ import annotations

import weakref
from array import array
from bisect import bisect_right
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ctxkit.assembly.fates import Fated
from ctxkit.assembly.truncation import SameFate, kept_as
from ctxkit.counting.measure import Counts, Meter
from ctxkit.history import convert, tree
from ctxkit.history.working import Copier, Fate, Kind, Working
from ctxkit.loading.domain import FileRecord, Fixture, StoredMessage
from ctxkit.loading.templates import Templates
from ctxkit.replay.answers import Announcements
from ctxkit.replay.pieces import Noted, Span

if TYPE_CHECKING:
    from ctxkit.replay.window import WindowConversion

_KEEP = 256  # working messages kept below the lowest a call reached, besides as many as its window
_SWEEP = 512  # stored messages forgotten at once (in bulk: a sweep walks them)
_GONE = Working("~forgotten", Kind.USER, "", 0)
_cacheable = Copier(Working).changing(
    "cacheable"
)  # once per window message  # where `works` and `copies` forgot a message


class Arrays:
    """The window's arrays (see the module docstring); `State` is one."""

    counts: Counts  # the replay's shared counts (`State`)
    paths: tree.Paths  # the replay's branch lookups (`State`): their positions index `path` too

    def __init__(self) -> None:
        self.files: dict[str, FileRecord] = {}  # each file by id, for the basis's files
        self._done: dict[str, tuple[StoredMessage, tuple[Working, ...]]] = {}  # message id → its working messages
        self._copies: dict[str, tuple[Working, Working]] = {}  # key → (message, its cacheable copy)
        self._made: tuple[Fixture, Templates] | None = None  # what the current call converts with
        self._costs: dict[str, tuple[Working, int]] | None = None  # the shared costs by key (`Counts`)
        self._lent: list[weakref.ref[Span]] = []  # the spans given out since the arrays last changed
        self._reset_window()

    def _reset_window(self) -> None:
        self._reclaim()
        self.path: list[StoredMessage] = []  # the root path the window's arrays run over (positions: `index`)
        self.works: list[Working] = []  # the working messages of `path`, in order
        self.copies: list[Working] = []  # their cacheable copies, made with them
        self.at: dict[str, int] = {}  # a working message's key → its index in `works`
        self.ends = array("q", [0])  # ends[k]: how many working messages path[:k] make
        self.sums = array("q", [0])  # sums[n]: the cost of works[:n] (computed as far as truncation asked)
        self.answers = Announcements()  # the window's tool calls and results by position (R-ASM-8)
        self.fated: list[Fated] = []  # each window message's fate when kept (`kept_fate`)
        self.truncated: list[Fated] = []  # each window message's fate when truncation leaves it out
        self._kept_as, self._truncated_as = kept_as(), SameFate(Fate.TRUNCATED, "R-ASM-4", None)  # one per notes
        self.noted = Noted()  # the last list a step gave, in pieces
        self.floor = 0  # path[:floor]'s working messages forgotten: `_GONE` in `works` and `copies`

    def _copy(self, w: Working) -> Working:
        found = self._copies.get(w.key)
        if found is None or found[0] is not w:
            found = self._copies[w.key] = (w, _cacheable(w, True))  # `w.with_(cacheable=True)`
        return found[1]

    def message(
        self, m: StoredMessage, files: dict[str, FileRecord], fixture: Fixture, templates: Templates
    ) -> tuple[Working, ...]:
        """`convert.message`, once per stored message while the window is near it (a message of
        the forgotten part of the path, `path[:floor]`, is converted again and not kept)."""
        found = self._done.get(m.id)
        if found is not None and found[0] is m:
            return found[1]
        produced = convert.message(m, files, fixture, templates)
        at = self.index(m.id)
        if at is None or at >= self.floor or self.path[at] is not m:
            self._done[m.id] = (m, produced)
        return produced

    def index(self, message_id: str) -> int | None:
        """The message's index on `path`, if it is on it, from the branch lookups' positions
        (`tree.Paths`, no index of its own): None also while the last branch selected leaves `path`
        (an edit, until the window follows it) — the callers then take the message as not on it."""
        paths, path = self.paths, self.path
        if not paths.extends(path):
            return None
        at = paths.index(message_id)
        return at if at is not None and at < len(path) else None

    def sync(self, path: Sequence[StoredMessage], upto: int, converted: WindowConversion) -> None:
        """Make the window's arrays run over `path[:upto]`: keep what the last calls' path shares
        with it (root paths that share a message share everything above it), convert the rest."""
        mine = self.path
        common = min(len(mine), upto)
        of, at = path.under[:2] if isinstance(path, tree.Stretch) else (path, 0)  # read by position, in C
        if common and of[at + common - 1] is not mine[common - 1]:  # an edit left the path: find where
            lo, hi = 0, common - 1  # path[k - 1] is mine[k - 1] holds for k <= lo, fails for k > hi
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if path[mid - 1] is mine[mid - 1]:
                    lo = mid
                else:
                    hi = mid - 1
            common = lo
            self._refill(common)  # the messages cut back are looked at: none is forgotten
            del mine[common:]
            del self.ends[common + 1 :]
            self._cut(self.ends[common])
        if len(mine) >= upto:
            return
        files, fixture, templates = converted._files, converted._fixture, converted._templates
        done, extend, ends = self._done, self._extend, self.ends
        for k in range(len(mine), upto):
            m = of[at + k]
            found = done.get(m.id)  # `message(m, ...)`: a message the window reaches is kept converted
            if found is None or found[0] is not m:
                found = done[m.id] = (m, convert.message(m, files, fixture, templates))
            extend(found[1])
            ends.append(len(self.works))
            mine.append(m)

    def _append(self, w: Working) -> None:
        """A working message at the window's end, with what is kept of it by position."""
        self._extend((w,))

    def _extend(self, ws: tuple[Working, ...]) -> None:
        """`_append` of each of `ws` (one stored message's working messages), in order."""
        answers, works, at, copy = self.answers, self.works, self.at, self._copy
        kept_as, truncated_as = self._kept_as, self._truncated_as
        for w in ws:
            n = len(works)
            answers.append(n, w)
            self.fated.append(kept_as[w.placeholder][w.notes])  # `kept_fate(w)`, shared
            self.truncated.append(truncated_as[w.notes])
            at[w.key] = n
            works.append(w)
            self.copies.append(copy(w))

    def _cut(self, end: int) -> None:
        """The window's working messages from `end` on forgotten."""
        self._reclaim()
        self.answers.cut(end, self.works[end:])
        self.noted.forget()
        for w in self.works[end:]:
            del self.at[w.key]
        del self.fated[end:]
        del self.truncated[end:]
        del self.works[end:]
        del self.copies[end:]
        del self.sums[end + 1 :]

    def span(self, h: int, a: int, b: int, extra: dict[str, Fated], make: Callable[[], dict[str, Fated]]) -> Span:
        """A call's fates read off the arrays (`pieces.Span`) until they change: a span still in
        use then takes its entries as a dict (`_reclaim`)."""
        span = Span((self.truncated, self.fated, self.at), h, a, b, extra, make)
        lent = self._lent
        if lent and lent[-1]() is None:  # the last call's, gone with its result (most calls)
            lent.pop()
        lent.append(weakref.ref(span))
        return span

    def _reclaim(self) -> None:
        """Before the arrays change (other than at their end): each span given out and still in
        use (a result kept) takes its entries as a dict of its own."""
        for ref in self._lent:
            span = ref()
            if span is not None:
                span.detach()
        self._lent.clear()

    # --- forgetting by recency ---------------------------------------------------------------

    def _reach(self, k: int, stop: int, meter: Meter) -> None:
        """A call reads the window from `path[k]` (to `works[stop]`): what it reads is made again
        where it was forgotten, and what lies well below it (more than its window again and
        `_KEEP`) is forgotten, `_SWEEP` messages or more at once."""
        if k < self.floor:
            self._refill(k)
            return
        low = self.ends[k] - max(stop - self.ends[k], _KEEP)
        if low <= 0:
            return
        below = bisect_right(self.ends, low) - 1  # path[:below] make no working message past `low`
        if below - self.floor >= _SWEEP:
            self._costs = self.counts.messages(meter.tokenizer)
            self._forget(below)

    def _forget(self, k: int) -> None:
        """`path[floor:k]` forgotten: their conversions, cacheable copies and shared costs (made
        again if a later window reaches them: a branch, a window that grows)."""
        self._reclaim()
        a, b = self.ends[self.floor], self.ends[k]
        costs, copies, at = self._costs, self._copies, self.at
        for w in self.works[a:b]:
            del at[w.key]
            copies.pop(w.key, None)
            if costs is not None and (cost := costs.get(w.key)) is not None and cost[0] is w:
                del costs[w.key]
        for m in self.path[self.floor : k]:
            self._done.pop(m.id, None)
        self.works[a:b] = [_GONE] * (b - a)
        self.copies[a:b] = [_GONE] * (b - a)
        self.floor = k

    def restore(self, k: int) -> None:
        """The window's working messages from `path[k]` on are there (made again where forgotten)."""
        self._refill(k)

    def _refill(self, k: int) -> None:
        """`path[k:floor]` made again (the same working messages, new objects), in place."""
        if k >= self.floor:
            return
        assert self._made is not None
        self._reclaim()
        fixture, templates = self._made
        old, self.floor = self.floor, k
        for j in range(k, old):
            n = self.ends[j]
            for w in self.message(self.path[j], self.files, fixture, templates):
                self.works[n], self.copies[n], self.at[w.key] = w, self._copy(w), n
                n += 1

    def _sums_to(self, stop: int, meter: Meter) -> array[int]:
        sums, works = self.sums, self.works
        for n in range(len(sums) - 1, stop):
            sums.append(sums[-1] + meter.of(works[n]))
        return sums
