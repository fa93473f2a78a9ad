"""The break and its cause (R-RPL-6): where a call stops matching its best candidate, and why.

Input: the two calls' `MappedCall`s (items mapped back to their working messages), what this call dropped
and capped, and the stored tree's ancestry. Output: `Break` — the item, both sides, the cause from
the closed list with the rule behind it, and the tokens already paid for that could not be reused.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from ctxkit import providers
from ctxkit.assembly.system import format_date
from ctxkit.history.tree import Ancestry
from ctxkit.history.working import Fate, Kind, Origin, Segment, Working
from ctxkit.replay.breakvalue import NO_SIDE, Break
from ctxkit.replay.cache import Keys
from ctxkit.replay.causes import Cause
from ctxkit.replay.earlier import W_SIDE, CallContext, Earlier, Sides, Source
from ctxkit.replay.prefix import Columns, runs
from ctxkit.translate.items import Item, Prompt, canonical

if TYPE_CHECKING:
    from ctxkit.assembly.assemble import Assembly
    from ctxkit.assembly.fates import Fated
    from ctxkit.pipeline import Result

__all__ = [
    "CAUSE_RULES",
    "Break",
    "CallContext",
    "Candidate",
    "Dropped",
    "Earlier",
    "MappedCall",
    "Sides",
    "Source",
    "find",
    "view",
]

CAUSE_RULES = {  # the causes a fixture's replay finds, first match wins, and the rule behind each
    Cause.FIRST_CALL: "R-RPL-1",
    Cause.EXPIRED: "R-RPL-5",
    Cause.MODEL: "R-LOG-2",
    Cause.PARAMETERS: "R-LOG-2",
    Cause.TOOLS: "R-TR-9",
    Cause.SYSTEM_DATE: "R-SYS-2",
    Cause.SYSTEM: "R-SYS-1",
    Cause.SUMMARY: "R-TREE-3",
    Cause.BRANCH: "R-RPL-1",
    Cause.TRUNCATION: "R-ASM-4",
    Cause.PLACEHOLDER: "R-CONV-3",
    Cause.IMAGE_CAP: "R-TR-6",
    Cause.DRIFT: "R-ASM-7",
    Cause.APPEND: "R-RPL-6",
    Cause.OTHER: "R-RPL-6",
}
DRIFTING = frozenset({Origin.CUSTOM_AGENT, Origin.DOCUMENTS, Origin.PROJECT_READ_FILE, Origin.FORGOTTEN_FILES})


@dataclass(slots=True)  # not frozen: made per call (a frozen one sets each field through object.__setattr__)
class MappedCall:
    """This call as the break needs it: its items mapped back to their working messages.

    Only the item at the break is ever mapped back, so a view keeps the assembled list as it is
    and builds that one `Source` on demand. Later calls keep an `Earlier` instead (`trimmed`)."""

    items: Prompt  # its items and where each sits
    keys: Keys  # each item's key, or its number, in order (the cache trie holds the same sequence)
    messages: Sequence[Working]  # the assembled list (Assembly.messages)
    segment_of: Sequence[Segment | None]  # each message's segment, by position
    user: str
    system: str | None
    date: str | None
    model: str = ""  # the model the request names
    settings: tuple[tuple[str, str], ...] = ()  # the keyed settings sent (name, canonical JSON), R-LOG-2
    columns: Columns | None = None  # a replay's columns of its items (`prefix.Numbers.columns`)

    def source(self, index: int) -> Source | None:
        return Source.of(W_SIDE(self.messages[index]), self.segment_of[index])

    def item(self, n: int) -> Item | None:
        items = self.items.items
        return items[n] if n < len(items) else None

    def keys_from(self, n: int) -> Keys:
        return self.keys[n:]

    def lost(self, cand: Candidate, common: int) -> int:
        """`_lost` of this call's items from `common` on against the candidate's, from the columns.

        A key sent m times from the break on here and t times there: `_lost` counts its first
        min(m, t) items here, so the tokens lost are those from `common` on less, for each key
        with m > t, its last m - t items here (`_last_tokens`). Against the last call, when this
        call starts with its first `common` keys, m - t is the whole calls' M - T (the shared
        start holds the key as often on both sides): the keys `columns.surplus` carries, whose
        last items are the new ones where the last call did not send the key at all
        (`Columns.fresh_last`, no search), else looked for from the end (`unplaced`). Against
        another call, when this call sends no key twice and the two hold few items from the break
        on (`_SHORT`: a small window), the tokens lost are those of its items whose key the
        candidate sent, summed in C (`_counted`: a set of the candidate's keys); else m - t is
        what the items in no run the two share hold (`_surplus`). Either way the Python work
        follows what changed, not the window (R-RPL-6, R-RPL-9)."""
        c = self.columns
        if c is None:
            return _lost(self.items[common:], cand.keys_from(common), self.keys_from(common))
        if (
            isinstance(cand, MappedCall)
            and cand.keys is c.last_keys
            and len(c.surplus) <= _FEW
            and (_leads(c.runs, common) or c.keys[:common] == c.last_keys[:common])
        ):
            return c.tokens_from(common) - c.fresh_last - _last_tokens(c.keys, c.tokens, c.unplaced)
        keys, tokens, theirs = c.keys[common:], c.tokens[common:], cand.keys_from(common)
        if not c.repeated and len(keys) + len(theirs) <= _SHORT:  # the items whose key the candidate sent, in C
            return _counted(keys, tokens, theirs, c.repeated)
        surplus = _surplus(keys, theirs)
        if surplus is None:  # little in common: the sets
            return _counted(keys, tokens, theirs, c.repeated)
        return c.tokens_from(common) - _last_tokens(keys, tokens, surplus)

    def source_at(self, n: int) -> Source | None:
        items = self.items
        at = items.source(n) if n < len(items.items) else None
        if at is None or at >= len(self.messages):
            return None
        return self.source(at)

    def trimmed(self, start: int, sides: Sides) -> Earlier | None:
        """This call as later calls keep it, from item `start` on (see `Earlier`); None when
        nothing is left. Its keys are read from the columns' log (`prefix.Numbers.log`) where it
        holds them, so no kept call holds an array of its own (R-RPL-9).

        A kept call is never read at item 0: a call that shares no item with the earlier ones
        compares with the last call (`cache.Cache.add`), whose view is still this `MappedCall`
        (`driver._Loop.forget` makes the call before the last an `Earlier`). So a call whose keys
        the log holds from item 1 on (a sliding window: its system prompt is not where the log
        has it) is kept from item 1 (an `Earlier` read below its start raises, never guesses)."""
        n, c = len(self.keys), self.columns
        if c is not None and start < c.lo == 1:  # see below
            start = 1
        if start >= n:
            sides.skipped(self)  # dropped whole: its runs go on to the next plain view (`Sides.skipped`)
            return None
        found = sides.numbers(self, start)
        call = CallContext(self.user, sides.text(self.system), sides.text(self.date), self.model, self.settings)
        if c is not None and c.log is not None and start >= c.lo:  # its keys read from the shared log
            return Earlier(start, n, c.log, c.at + start, found, sides.table, call)
        if 2 * (n - start) > n:  # most of it: the keys the trie holds too, shared
            return Earlier(start, n, self.keys, start, found, sides.table, call)
        return Earlier(start, n, self.keys[start:], 0, found, sides.table, call)


Candidate = MappedCall | Earlier


@dataclass(slots=True)  # not frozen: made per call (a frozen one sets each field through object.__setattr__)
class Dropped:
    """What this call left out that an earlier one may have sent."""

    fates: Mapping[str, Fated]  # this call's decision record, by working key
    capped: frozenset[str]  # working keys with an image capped by R-TR-6

    def truncated(self, key: str) -> str | None:
        """The rule that left this message out (R-ASM-4, R-ASM-5, R-FILE-3), if it was."""
        fated = self.fates.get(key)
        return fated.rule if fated is not None and fated.fate in (Fate.TRUNCATED, Fate.LAST_N_CUT) else None


def view(
    result: Result, items: Prompt, keys: Keys, user: str, columns: Columns | None = None
) -> tuple[MappedCall, Dropped]:
    a = result.assembly
    segment_of = placed_segments(a)
    system = None
    for w in a.messages:  # the system prompt: the first message, mostly
        if w.kind is Kind.SYSTEM:
            system = w.text
            break
    date = format_date(a.eff.now) if a.eff.now is not None else None
    rows = result.payload.prepared.rows  # image fates and fix-ups: mostly none
    capped = frozenset(r.attached_to for r in rows if r.fate is Fate.IMAGE_CAPPED and r.attached_to) if rows else _NONE
    keyed = providers.spec(result.payload.provider).keyed_settings
    head = result.payload.head  # the body's fields but its messages: not built for a replayed call
    settings = tuple((n, canonical(head[n])) for n in keyed if head.get(n) is not None) if keyed else ()
    here = MappedCall(items, keys, a.messages, segment_of, user, system, date, a.eff.model, settings, columns)
    return here, Dropped(a.fates, capped)


_TOKENS = itemgetter(1)
_NONE: frozenset[str] = frozenset()


def placed_segments(a: Assembly) -> list[Segment | None]:
    """Each assembled message's segment, by position: the assembled list is the segments' lists
    one after another, so this is one run per segment, made in C (a list repeated, not an
    iterator chained item by item), not a fate looked up per message of the window (R-RPL-9)."""
    placed: list[Segment | None] = []
    for segment, messages in a.segments.items():  # a few segments, each one list repeated in C
        placed += [segment] * len(messages)
    if len(placed) != len(a.messages):
        raise AssertionError("the assembled list is not its segments' lists one after another")
    return placed


def _side(item: Item | None, s: Source | None) -> tuple[Any, Any, Any]:
    """A break's side (kind, id, segment; all None: no side): its item and the working message
    behind it (`source_at`)."""
    if item is None:
        return NO_SIDE
    if item.role is None:
        return ("tools", None, None)
    if s is None:
        return (item.role, None, None)
    return (s.kind, s.id, s.segment)


def find(
    this: MappedCall, dropped: Dropped, cand: Candidate | None, common: int, *, expired: bool, ancestry: Ancestry
) -> Break:
    if cand is None:
        return Break(Cause.FIRST_CALL, CAUSE_RULES[Cause.FIRST_CALL], None, 0)
    mine = this.item(common)
    theirs = cand.item(common)
    lost = this.lost(cand, common)
    if expired:
        cause, rule = Cause.EXPIRED, CAUSE_RULES[Cause.EXPIRED]
    elif this.model != cand.model or this.settings != cand.settings:  # the provider keys its cache on these
        if this.model != cand.model:
            cause, changed = Cause.MODEL, ["model"]
        else:
            cause, changed = Cause.PARAMETERS, _changed(dict(this.settings), dict(cand.settings))
        setting = ", ".join(changed)
        return Break(cause, CAUSE_RULES[cause], common, lost, "setting", setting, None, "setting", setting, None)
    s_mine, s_theirs = this.source_at(common), cand.source_at(common)  # the working messages behind, made once
    if not expired:
        cause, rule = _cause(this, dropped, cand, ancestry, mine, theirs, s_mine, s_theirs)
    if mine is None:
        return Break(cause, rule, None, lost)
    return Break(cause, rule, common, lost, *_side(mine, s_mine), *_side(theirs, s_theirs))


def _changed(mine: dict[str, str], theirs: dict[str, str]) -> list[str]:
    """The settings whose value differs between two requests, by name."""
    return [k for k in sorted(set(mine) | set(theirs)) if mine.get(k) != theirs.get(k)]


def _lost(mine: Sequence[Item], theirs: Keys, keys: Keys | None = None) -> int:
    """Tokens of this call's items after the break that the candidate sent after it too (each once).

    The candidate's items before the break were reused; the ones after it were paid for and, where
    this call sends them again anywhere, could not be reused. `keys`: this call's keys as `theirs`
    holds them (numbers in a replay), when not the items' own."""
    mine_keys = list(keys) if keys is not None else [i.key for i in mine]
    if len(set(mine_keys)) == len(mine_keys):  # no key twice: an item counts if the candidate sent its key
        sent = set(theirs)
        return sum(compress(map(_TOKENS, mine), map(sent.__contains__, mine_keys)))
    unused = Counter(theirs)
    lost = 0
    for item, key in zip(mine, keys if keys is not None else [i.key for i in mine], strict=True):
        if unused[key] > 0:
            unused[key] -= 1
            lost += item.tokens
    return lost


_FOUND = {cause: (cause, rule) for cause, rule in CAUSE_RULES.items()}  # a cause with its rule, made once

_FEW = 16  # surplus keys looked for one by one; more (a window that jumped) take `_surplus` or `_counted`
_SHORT = 512  # keys on both sides from the break on, up to which a call sending no key twice takes `_counted`
_ASIDE = 128  # items in no run beyond which `_surplus` gives way to `_counted`


def _surplus(keys: Keys, theirs: Keys) -> list[tuple[int, int]] | None:
    """Each key `keys` holds more often than `theirs`, and how much more, from the items in no
    run the two share (`prefix.runs`: a run holds the same keys on both sides); None when more
    than `_ASIDE` items are in no run."""
    here: list[Any] = []
    there: list[Any] = []
    i0 = j0 = 0
    for i, j, k in [*runs(keys, theirs), (len(keys), len(theirs), 0)]:
        here += keys[i0:i]
        there += theirs[j0:j]
        i0, j0 = i + k, j + k
    if len(here) + len(there) > _ASIDE:
        return None
    more: dict[Any, int] = {}  # a Counter's work without its checks: a few keys, once per call
    for key in here:
        more[key] = more.get(key, 0) + 1
    for key in there:
        if key in more:
            more[key] -= 1
    return [(key, n) for key, n in more.items() if n > 0]


def _leads(shared: Sequence[tuple[int, int, int]], common: int) -> bool:
    """The runs of equal items two calls share (`Columns.runs`) start with the first `common`
    items of both: their keys are equal there without comparing them."""
    return bool(shared) and shared[0][0] == 0 and shared[0][1] == 0 and shared[0][2] >= common


def _last_tokens(keys: Keys, tokens: Sequence[int], surplus: Sequence[tuple[int, int]]) -> int:
    """The tokens of each surplus key's last items (key, how many), each found in C from the end."""
    if not surplus:
        return 0
    back, end, total = keys[::-1], len(keys) - 1, 0
    for key, extra in surplus:
        at = -1
        for _ in range(extra):
            at = back.index(key, at + 1)
            total += tokens[end - at]
    return total


def _counted(keys: Keys, tokens: Sequence[int], theirs: Keys, repeated: frozenset[int]) -> int:
    """`_lost` over key numbers: the tokens of the items whose key the candidate sent, summed in C,
    less, for the keys this call sends more than once (`repeated`, any superset will do) and the
    candidate sent, the items past the candidate's count of that key, counted in Python over
    those items only."""
    sent = set(theirs)
    lost = sum(compress(tokens, map(sent.__contains__, keys)))
    twice = repeated & sent
    if not twice:
        return lost
    unused = Counter(compress(theirs, map(twice.__contains__, theirs)))
    for p in compress(range(len(keys)), map(twice.__contains__, keys)):
        key = keys[p]
        if unused[key] > 0:
            unused[key] -= 1
        else:
            lost -= tokens[p]
    return lost


def _cause(
    this: MappedCall,
    dropped: Dropped,
    cand: Candidate,
    ancestry: Ancestry,
    mine: Item | None,
    theirs: Item | None,
    s_mine: Source | None,
    s_theirs: Source | None,
) -> tuple[Cause, str]:
    """The cause of the break at the item where the two calls part, and its rule: `mine`,
    `theirs`, the item there on each side (`item`); `s_mine`, `s_theirs`, the working messages
    behind it (`source_at`)."""
    found = _FOUND
    if mine is None:
        return found[Cause.APPEND]
    if mine.role is None or (theirs is not None and theirs.role is None):
        return found[Cause.TOOLS]  # the tool-definitions item has no role
    if (s_mine is not None and s_mine.kind is Kind.SYSTEM) or (s_theirs is not None and s_theirs.kind is Kind.SYSTEM):
        if this.system is not None and cand.system is not None and this.date and cand.date and this.date != cand.date:
            if cand.system.replace(cand.date, this.date) == this.system:
                return found[Cause.SYSTEM_DATE]
        return found[Cause.SYSTEM]
    if Origin.SUMMARY in (getattr(s_mine, "origin", None), getattr(s_theirs, "origin", None)):
        return found[Cause.SUMMARY]
    if s_theirs is not None and s_theirs.stored is not None and not ancestry.above(s_theirs.stored, this.user):
        return found[Cause.BRANCH]
    if (
        s_mine is not None
        and s_mine.stored is not None
        and not ancestry.above(s_mine.stored, cand.user)
        and not ancestry.above(cand.user, this.user)
    ):
        return found[Cause.BRANCH]
    if s_theirs is not None and (rule := dropped.truncated(s_theirs.key)) is not None:
        return Cause.TRUNCATION, rule or CAUSE_RULES[Cause.TRUNCATION]
    if s_mine is not None and s_mine.placeholder and s_theirs is not None and s_theirs.kind is Kind.TOOL:
        return found[Cause.PLACEHOLDER]
    if s_theirs is not None and s_theirs.key in dropped.capped:
        return found[Cause.IMAGE_CAP]
    if s_theirs is not None and s_theirs.origin in DRIFTING:
        return found[Cause.DRIFT]
    if theirs is None or s_theirs is None or s_theirs.origin is Origin.REMINDER:
        return found[Cause.APPEND]  # no working message behind it (the image-drop notice), or the reminder: added last
    return found[Cause.OTHER]
