"""Forgotten files (R-FILE-1…3): the read_file list of files no kept message carries, and
the older history evicted until the list fits.

Input: the kept history, the files truncation dropped, the room left. Output: `Eviction`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ctxkit.assembly import project as proj
from ctxkit.counting.measure import Meter
from ctxkit.history import convert as conv
from ctxkit.history.working import Kind, Origin, Working
from ctxkit.loading.config import Effective
from ctxkit.loading.domain import FileKind, FileRecord


@dataclass(slots=True)  # not frozen: one per assembled call, and a frozen one's fields are set by calls
class Eviction:
    """R-FILE-1…3's outcome: the history still kept, what was evicted, and the list."""

    kept: list[Working]
    evicted: list[Working]  # oldest first; a prefix of the history it was given
    listing: Working | None
    found: list[tuple[FileRecord, bool]]  # the files listed: (file, size known)
    left_out: int  # forgotten files that did not fit the list


def forgotten_files(
    eff: Effective,
    meter: Meter,
    converted: conv.Converted,
    kept: list[Working],
    dropped_files: set[str],
    room: int,
) -> Eviction:
    """R-FILE-1…3: list the files no surviving message carries; evict until it fits.

    Linear: the kept cost and the carried files are updated per eviction. A list that
    gains entries never counts fewer tokens, so after an evicted message adds a file
    the last count is a lower bound; the list is rebuilt and re-counted only when even
    that bound fits (one count per fit attempt, not one per evicted file).
    """
    forgotten = _Forgotten(eff, converted, kept, dropped_files)
    carried, known, entries = forgotten.carried, forgotten.known, forgotten.entries
    kept_cost = sum(meter.of(w) for w in kept)
    start = 0
    found = entries()
    if not found:
        return Eviction(kept=kept, evicted=[], listing=None, found=[], left_out=0)
    text = proj.read_file_list(found, eff.templates)
    cost = meter.text(text)
    stale = False  # files joined the list since `cost` was counted: it is a lower bound
    while True:
        if cost + kept_cost <= room:
            if not stale:
                break
            found = entries()  # it may fit now: count the list as it is
            text = proj.read_file_list(found, eff.templates)
            cost, stale = meter.text(text), False
            continue
        if start == len(kept):
            return partial_list(eff, meter, entries() if stale else found, room, evicted=kept)
        w = kept[start]
        start += 1
        kept_cost -= meter.of(w)
        if w.file_id:
            carried[w.file_id] -= 1
            known.add(w.file_id)
            stale = True
    listing = Working("forgotten_files", Kind.USER, text, cost, origin=Origin.FORGOTTEN_FILES)
    return Eviction(kept=kept[start:], evicted=kept[:start], listing=listing, found=found, left_out=0)


class _Forgotten:
    """The files no kept message carries (R-FILE-1), as eviction goes: `carried` counts the kept
    file messages of each file, `known` holds the files of the ones left out."""

    def __init__(self, eff: Effective, converted: conv.Converted, kept: list[Working], dropped: set[str]) -> None:
        self.files = {f.id: f for f in eff.fixture.files}
        self.order = {fid: n for n, fid in enumerate(converted.files_in_order)}
        self.summarized = converted.summarized_files
        self.carried = Counter(w.file_id for w in kept if w.file_id)
        self.known = set(dropped)  # the files of file messages left out

    def entries(self) -> list[tuple[FileRecord, bool]]:
        """The read_file list's entries in order of first appearance: (file, size known)."""
        files, carried, order = self.files, self.carried, self.order
        listed = {fid for fid in self.known if not carried[fid]}
        found = [(files[fid], True) for fid in listed]
        found += [(files[fid], False) for fid in self.summarized if not carried[fid] and fid not in listed]
        found = [(f, k) for f, k in found if f.kind is not FileKind.IMAGE]
        found.sort(key=lambda e: order.get(e[0].id, len(order)))
        return found


def partial_list(
    eff: Effective,
    meter: Meter,
    found: list[tuple[FileRecord, bool]],
    room: int,
    *,
    evicted: list[Working],
) -> Eviction:
    """R-FILE-3: no older history left and the list still does not fit: keep a prefix.

    The longest fitting prefix, found by bisection (O(log n) counts, not O(n)): a longer
    list is the shorter one plus a line break and more lines, so it never counts fewer.
    """

    def cost(n: int) -> tuple[str, int]:
        text = proj.read_file_list(found[:n], eff.templates)
        return text, meter.text(text)

    lo, hi = 0, len(found) - 1  # the longest fitting prefix has lo..hi entries; 0 = no list
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if cost(mid)[1] <= room:
            lo = mid
        else:
            hi = mid - 1
    if lo == 0:
        return Eviction(kept=[], evicted=evicted, listing=None, found=[], left_out=len(found))
    text, tokens = cost(lo)
    listing = Working("forgotten_files", Kind.USER, text, tokens, origin=Origin.FORGOTTEN_FILES)
    return Eviction(kept=[], evicted=evicted, listing=listing, found=found[:lo], left_out=len(found) - lo)
