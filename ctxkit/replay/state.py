"""What a replay carries from one call to the next (R-RPL-9): `State`, owned by the driver.

Input: what each call's assembly asks for (`assembly.assemble.Incremental`: a meter, the
branch, its working messages, truncation, cacheable copies). Output: the values the plain
steps give, from work shared by the calls:

* `counts`: each distinct text's token count, for every call's `Meter`;
* `paths`: branch lookups, each call's path extending the last; `select` gives the planner and
  assembly of one call the same `Branch`;
* the window (`replay.arrays.Arrays`, which `State` is): each stored message's working messages
  and cacheable copies along the current root path with running sums of their costs, so that
  truncation (R-ASM-4) is two bisections instead of a walk over the window; what lies well below
  the lowest message a call reads is forgotten and made again if a window reaches back;
* `items`: each distinct prompt item's key and tokens (`translate.items.ItemMemo`);
* `translation`: what translation made of each working message (`translate.memo.TranslationMemo`).

It is the only object that holds work across calls: assembly, conversion and counting keep
nothing between calls themselves (tests/test_replay_sharing.py checks both that and that every
call equals the call assembled afresh).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import MutableMapping, Set
from datetime import datetime
from operator import attrgetter, is_, itemgetter

from ctxkit.assembly.assemble import Fixed, fixed_parts, today
from ctxkit.assembly.assemble import decided as decided_afresh
from ctxkit.assembly.fates import Fated
from ctxkit.assembly.system import Turn, turn_state
from ctxkit.assembly.truncation import Answered, Truncation, kept_fate
from ctxkit.assembly.truncation import drop_orphans as drop_orphans_afresh
from ctxkit.assembly.truncation import truncate as truncate_afresh
from ctxkit.counting.measure import Counts, Meter, meter_for
from ctxkit.history import convert, tree
from ctxkit.history.working import Copier, Record, Working
from ctxkit.loading.config import Effective, Options, resolve
from ctxkit.loading.domain import Fixture, InFlightMessage, StoredMessage, TurnOverrides
from ctxkit.replay.arrays import Arrays
from ctxkit.replay.pieces import Piece, Span, runs
from ctxkit.replay.window import WindowConversion
from ctxkit.translate.items import ItemMemo
from ctxkit.translate.memo import TranslationMemo

_KEY = attrgetter("key")
_copy_effective = Copier(Effective).changing("fixture", "now", "leaf")  # per call: cheaper than field by field
_FIXED_KEPT = 8  # fixed parts kept: a few turn states (R-TURN-2) of the current date
_NOTHING = Answered(kept=[], in_turn=[], orphans=[])  # R-ASM-8 over no message before the run: only read
_NONE: frozenset[str | None] = frozenset()  # no call announced before the kept run


class State(Arrays):
    """One replay's incremental state (see the module docstring); implements `Incremental`."""

    def __init__(self) -> None:
        super().__init__()
        self.counts = Counts()
        self.paths = tree.Paths()
        self._selected: tuple[tuple[StoredMessage, ...], str | None, tree.Branch] | None = None
        self.items = ItemMemo()
        self.translation = TranslationMemo()
        self._basis: tuple[object, ...] | None = None
        self._effective: tuple[Options | None, Effective] | None = None  # the last call's options and settings
        self._settings: tuple[object, ...] | None = None  # the last call's settings as a part kept holds them
        self._fixed: list[tuple[str, Turn, tuple[object, ...], Fixed, tuple[str, ...]]] = []  # newest first
        self._turned: dict[int, tuple[tuple[InFlightMessage, ...], TurnOverrides, Turn]] = {}  # by in-flight count
        self._turns: dict[
            Turn, Turn
        ] = {}  # each turn state seen, by value (ints and bools, as `turn_state` makes them)
        self._flying: dict[int, tuple[InFlightMessage, Working]] = {}  # in-flight index → its working message
        self._dated: tuple[datetime | None, str] = (None, "")  # the last call's clock and the date it shows
        self._dates: dict[str, str] = {}

    # --- Incremental ----------------------------------------------------------------------

    def effective(self, fixture: Fixture, options: Options | None) -> Effective:
        """`resolve(fixture, options)`. A replay's calls differ in their messages, leaf, turn and
        clock only: what the settings are resolved from (the options, the model fields, templates,
        tools and tokenizer, the same objects from call to call) is resolved once, and each call
        gets it with its own fixture, clock and leaf."""
        last = self._effective
        if (
            last is not None
            and options is last[0]
            and (options is None or options.leaf is None)
            and fixture.model is last[1].fixture.model
            and fixture.templates is last[1].fixture.templates
            and fixture.tools is last[1].fixture.tools
            and fixture.tokenizer == last[1].fixture.tokenizer
        ):
            now = (options.now if options is not None else None) or fixture.now
            return _copy_effective(last[1], fixture, now, fixture.leaf)
        eff = resolve(fixture, options)
        self._effective = (options, eff)
        return eff

    def meter(self, eff: Effective) -> Meter:
        return meter_for(eff, self.counts)

    def branch(self, eff: Effective) -> tree.Branch:
        return self.select(eff.fixture, eff.leaf)

    def select(self, fixture: Fixture, leaf: str | None) -> tree.Branch:
        """`tree.select(fixture, leaf)`; the last one is kept: the planner and assembly ask for the
        same branch of each call (a branch depends on the stored messages and the leaf alone)."""
        last = self._selected
        if last is not None and last[0] is fixture.messages and last[1] == leaf:
            return last[2]
        branch = tree.select(fixture, leaf, paths=self.paths)
        self._selected = (fixture.messages, leaf, branch)
        return branch

    def converted(self, branch: tree.Branch, eff: Effective) -> convert.Converted:
        fixture, settings = eff.fixture, eff.fixture.settings
        basis = (
            fixture.files,
            settings.tool_result_placeholder_tokens,
            settings.as_logged,
            eff.templates,
            eff.tokenizer,
            eff.supports_images,
        )
        if basis != self._basis:  # what a conversion or a cost depends on changed: start afresh
            self._basis, self._done, self._copies = basis, {}, {}
            self.files = {f.id: f for f in fixture.files}
            self._reset_window()
        self._made = (fixture, eff.templates)
        return WindowConversion(branch, fixture, eff.templates, self)

    def fixed_parts(self, eff: Effective, meter: Meter, record: Record) -> Fixed:
        """R-ASM-2's fixed parts, made again only when what they are made from changes: the date
        the system prompt shows, the turn state (R-TURN-2) and the call's settings (the same for
        most calls of a replay); the warnings they gave are given again."""
        f = eff.fixture
        date, turn = self._today(eff), self._turn(f)
        settings = (
            eff.provider,
            eff.model,
            eff.tokenizer,
            eff.max_input_tokens,
            eff.supports_images,
            eff.tool_names,
            eff.now is None,
            eff.templates,
            f.prompts,
            f.settings,
            f.user_info,
            f.files,
            f.project_files,
            f.source,
        )
        fixed, last = self._fixed, self._settings
        if last is None or not all(map(is_, settings, last)):  # not the last call's objects (a few calls):
            last = next((e[2] for e in fixed if all(map(is_, settings, e[2]))), None)  # those of a part kept,
            last = last or next((e[2] for e in fixed if e[2] == settings), None) or settings  # or equal ones
            self._settings = last
        found: tuple[str, Turn, tuple[object, ...], Fixed, tuple[str, ...]] | None = None
        for entry in fixed:  # the date, turn state and settings are shared objects (`_today`, `_turn`)
            if entry[0] is date and entry[1] is turn and entry[2] is last:
                found = entry
                break
        else:
            found = next((e for e in fixed if e[2] is last and e[0] == date and e[1] == turn), None)
        if found is None:
            made = Record()
            found = (date, turn, last, fixed_parts(eff, meter, made), tuple(made.warnings))
            del fixed[_FIXED_KEPT - 1 :]
            fixed.insert(0, found)
        for text in found[4]:
            record.warn(text)
        return found[3]

    def _today(self, eff: Effective) -> str:
        """`today(eff)` (R-SYS-2), formatted again only for another clock object than the last call's
        (a question's calls share theirs): the very string, so the fixed parts' basis matches by identity."""
        now = eff.now
        if now is None or now is not self._dated[0]:  # None: the real clock, read afresh
            date = today(eff)
            self._dated = (now, self._dates.setdefault(date, date))  # one string per date (a few)
        return self._dated[1]

    def _turn(self, f: Fixture) -> Turn:
        """`turn_state(f)` (R-TURN-2), worked out again only when the in-flight messages or the
        overrides are other objects than the last ones of as many messages (the calls without
        a loop share the empty one; a question's calls share their loop's messages)."""
        last = self._turned.get(len(f.in_flight))
        if last is not None and f.turn is last[1] and all(map(is_, f.in_flight, last[0])):
            return last[2]
        turn = turn_state(f)
        turn = self._turns.setdefault(
            turn, turn
        )  # one object per turn state: the fixed parts' basis matches by identity
        self._turned[len(f.in_flight)] = (f.in_flight, f.turn, turn)
        return turn

    def truncate(self, converted: convert.Converted, first: int, room: int, meter: Meter) -> Truncation:
        """R-ASM-4 as `truncation.truncate` walks it, from running sums: the longest run of newest
        messages that fits is found by bisection (costs are never negative, so the first misfit
        walking back is where the running sum first exceeds the room)."""
        if not isinstance(converted, WindowConversion) or converted.state is not self or not converted.synced():
            return truncate_afresh(converted, first, room, meter)
        last = converted.units - 1  # the last user message's files: a few
        if first >= last:
            return truncate_afresh(converted, first, room, meter)
        pinned = converted.pinned
        used = sum(map(meter.of, pinned)) if pinned else 0  # the last user message's files: mostly none
        if used > room:  # truncation stops among them: the walk
            return truncate_afresh(converted, last, room, meter)
        head = converted.head_units
        base, lo, n = converted.base, max(first - head, 0), converted.end - converted.base
        start, stop = self.ends[base + lo], self.ends[base + n]
        sums = self._sums_to(stop, meter)
        s = bisect_left(sums, sums[stop] - (room - used), start, stop)
        i = bisect_right(self.ends, s - 1, base + lo, base + n + 1) - 1 if s > start else base + lo
        self._reach(i, stop, meter)  # path[i] is the oldest message this call reads
        kept = self.works[s:stop]
        kept += pinned
        if s > start:  # works[s - 1] does not fit: the start of its message's unit is left out
            self.noted.note_run(kept, self.works, 0, s, stop)
            return Truncation(kept=kept, head=self.works[self.ends[i] : s], end=head + i - base)
        used += sums[stop] - sums[start]
        if first == 0 and head:  # the summary, the oldest unit
            (summary,) = converted.unit(0)
            if used + meter.of(summary) > room:
                self.noted.note_run(kept, self.works, 0, s, stop)
                return Truncation(kept=kept, head=[summary], end=0)
            kept.insert(0, summary)
        self.noted.note_run(kept, self.works, len(kept) - len(pinned) - (stop - s), s, stop)
        return Truncation(kept=kept, head=[], end=first)

    def cacheable(self, ws: list[Working]) -> list[Working]:
        """Each message's copy, made once: a run of the window's messages (the kept history is
        one, but for the summary before it and the last user message's files after it) is a slice
        of the copies made with them."""
        pieces = self._pieces(ws, self.works)
        first = pieces[0] if pieces else (0, -1, 0)
        out: list[Working] = self.copies[first[1] : first[1] + first[2]] if first[1] >= 0 else []  # one pass
        for i, n, k in pieces[1:] if first[1] >= 0 else pieces:
            if n < 0:
                out.append(self._copy(ws[i]))
            else:
                out += self.copies[n : n + k]
        self.noted.note(out, self.copies, pieces)
        return out

    def drop_orphans(self, kept: list[Working], in_turn: list[Working]) -> Answered:
        """R-ASM-8 as `truncation.drop_orphans` walks it: the longest run of the window's messages in
        `kept` (the kept history) loses the results `Announcements` finds unannounced in it, from
        positions recorded once; what comes before and after the run is walked as before."""
        runs = [r for r in self._pieces(kept, self.works) if r[1] >= 0]
        if not runs or self.answers.odd:
            return drop_orphans_afresh(kept, in_turn)
        i, a, k = runs[0] if len(runs) == 1 else max(runs, key=itemgetter(2))
        b, works, answers = a + k, self.works, self.answers
        before: Set[str | None]
        if i:  # the summary before the run
            head = drop_orphans_afresh(kept[:i], [])
            before = {c.id for w in head.kept for c in w.tool_calls}
        else:
            head, before = _NOTHING, _NONE
        lost = answers.orphans(a, b, works, before)
        if i + k == len(kept) and not in_turn:  # nothing after the run (most calls): nothing to walk
            if not lost and not head.orphans:  # nothing left out: the very list, as the step before noted it
                return Answered(kept=kept, in_turn=[], orphans=[])
            rest = Answered(kept=[], in_turn=[], orphans=[])
        else:

            def announced(call: str | None) -> bool:
                return call in before or answers.announced(call, a, b)

            rest = drop_orphans_afresh(kept[i + k :], in_turn, announced)
        if not lost and not head.orphans and not rest.orphans:  # nothing left out (most calls): the very list,
            return Answered(kept=kept, in_turn=rest.in_turn, orphans=[])  # as the step before noted it
        run, start = head.kept if i else [], a  # (not the shared empty one: extended below)
        pieces = [(j, -1, 1) for j in range(len(run))]
        for n in (*lost, b):
            if n > start:
                pieces.append((len(run), start, n - start))
                run += works[start:n]
            start = n + 1
        pieces += [(j, -1, 1) for j in range(len(run), len(run) + len(rest.kept))]
        run += rest.kept
        self.noted.note(run, works, pieces)
        orphans = head.orphans + [works[n] for n in lost] + rest.orphans
        return Answered(kept=run, in_turn=rest.in_turn, orphans=orphans)

    def decided(
        self, head: list[Working], evicted: list[Working], orphans: list[Working], kept: list[Working]
    ) -> MutableMapping[str, Fated]:
        """The fates decided one by one (`assemble.decided`), each made once with the window. When
        the messages they decide are a stretch of the window (the start of the unit where
        truncation stopped, R-ASM-4, then the kept history, one run of the window's copies but for
        R-FILE-3's and R-ASM-8's few; the summary and the last user message's files besides: all
        calls but a few), the record is a `pieces.Span` over the window's fates by position: no
        dict is made per call (a call looks up a few of them)."""
        pieces = self._pieces(kept, self.copies)
        span = self._span(head, evicted, orphans, kept, pieces)
        if span is not None:
            return span
        return self._made_into(decided_afresh(head, evicted, orphans, {}), kept, pieces)

    def _span(
        self,
        head: list[Working],
        evicted: list[Working],
        orphans: list[Working],
        kept: list[Working],
        pieces: list[Piece],
    ) -> Span | None:
        """`decided`'s record as a span of the window, if its window messages tile one stretch
        `works[h:b]`: `head` at its start, then the kept runs and the messages left out between
        them (their fates in the span's `extra`, with the messages the window does not hold)."""
        works, at = self.works, self.at

        def make() -> dict[str, Fated]:
            return self._made_into(decided_afresh(head, evicted, orphans, {}), kept, pieces)

        if not evicted and not orphans and len(pieces) == 1 and pieces[0][1] >= 0:  # most calls: one run
            _, a, k = pieces[0]
            h = a - len(head)
            if h >= 0 and all(map(is_, head, works[h:a])):
                return self.span(h, a, a + k, {}, make)
        tiles = [(n, n + k) for _, n, k in pieces if n >= 0]
        out: dict[str, int] = {}  # the window's messages left out of the kept runs, by key
        for w in (*evicted, *orphans):
            n = at.get(w.key, -1)
            if n >= 0 and works[n] is w:
                tiles.append((n, n + 1))
                out[w.key] = n
        if not tiles:
            return None
        if len(tiles) > 1:
            tiles.sort()
            if any(t[1] != u[0] for t, u in zip(tiles, tiles[1:], strict=False)):
                return None
        a, b = tiles[0][0], tiles[-1][1]
        h = a - len(head)
        if h < 0 or not all(map(is_, head, works[h:a])):  # the head is not the window's just before
            h = a
        extra = decided_afresh(head if h == a else [], evicted, orphans, {})
        for i, n, _ in pieces:
            if n < 0:
                extra[kept[i].key] = kept_fate(kept[i])
        for key in extra:  # a fate of its own where the window holds another message: no span
            n = at.get(key, -1)
            if h <= n < b and out.get(key) != n:
                return None
        return self.span(h, a, b, extra, make)

    def kept_fates(self, kept: list[Working]) -> dict[str, Fated]:
        """Each kept message's fate (R-ASM-4, R-CONV-3), made once with the window."""
        return self._made_into({}, kept, self._pieces(kept, self.copies))

    def _made_into(self, found: dict[str, Fated], kept: list[Working], pieces: list[Piece]) -> dict[str, Fated]:
        """`found` with each kept message's fate added after what it holds (`kept_fates`), from
        `kept`'s pieces over the window's copies."""
        works, fated = self.works, self.fated
        for i, n, k in pieces:
            if n < 0:
                found[kept[i].key] = kept_fate(kept[i])
            else:
                found.update(zip(map(_KEY, works[n : n + k]), fated[n : n + k], strict=True))
        return found

    def _pieces(self, ws: list[Working], ref: list[Working]) -> list[Piece]:
        """`ws` in pieces (`pieces.runs`), or as the step that made it noted them (that very list:
        read, never changed)."""
        noted = self.noted.of(ws, ref)
        return noted if noted is not None else list(runs(ws, ref, self.at))

    # --- shared work ----------------------------------------------------------------------

    def in_flight(self, m: InFlightMessage) -> Working:
        """`convert.in_flight`, once per in-flight message: a question's calls share their loop's
        messages (so each is costed once, and translation sees the same message again)."""
        found = self._flying.get(m.index)
        if found is None or found[0] is not m:
            found = self._flying[m.index] = (m, convert.in_flight(m))
        return found[1]
