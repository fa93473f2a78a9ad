"""The break and its cause (R-RPL-6): where a call stops matching its best candidate, and why.

Input: the two calls' `View`s (items mapped back to their working messages), what this call dropped
and capped, and the stored tree's ancestry. Output: `Break` — the item, both sides, the cause from
the closed list with the rule behind it, and the tokens already paid for that could not be reused.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from operator import attrgetter
from typing import TYPE_CHECKING, Any, overload

from ctxkit.history.working import Fate, Kind, Origin, Segment, Working
from ctxkit.loading.domain import Fixture, Role
from ctxkit.translate.bodies import KEYED_SETTINGS
from ctxkit.translate.items import Item, canonical

if TYPE_CHECKING:
    from ctxkit.assembly.fates import Fated
    from ctxkit.pipeline import Result

CAUSE_RULES = {
    "first_call": "R-RPL-1",
    "expired": "R-RPL-5",
    "model": "R-LOG-2",
    "parameters": "R-LOG-2",
    "tools": "R-TR-9",
    "system_date": "R-SYS-2",
    "system": "R-SYS-1",
    "summary": "R-TREE-3",
    "branch": "R-RPL-1",
    "truncation": "R-ASM-4",
    "placeholder": "R-CONV-3",
    "image_cap": "R-TR-6",
    "drift": "R-ASM-7",
    "append": "R-RPL-6",
    "other": "R-RPL-6",
}
# What to change, per cause (fixture and log replay): one line each, in the table footer, the JSON
# totals and the report page.
CAUSE_ADVICE = {
    "first_call": "nothing to change: the first call writes what later calls read",
    "expired": "calls further apart than the cache lives: a longer TTL keeps it (Anthropic ttl 1h, OpenAI 24h)",
    "model": "a cache belongs to one model: keep one model for a conversation, or switch where little is cached",
    "parameters": "a setting the provider keys its cache on changed: keep it the same for the whole conversation",
    "tools": "declare every tool up front, in a stable order, rather than adding or removing tools per turn",
    "system_date": "move the date after the cached prefix (the last user message), or print only the day",
    "system": "keep the system prompt fixed; put what changes per call after the cached prefix",
    "summary": "each new summary rewrites the history after it: summarize less often, in larger steps",
    "branch": "an edit starts a new branch: the cache rightly starts again there",
    "edit": "an earlier message changed in place: leave sent messages as they were",
    "truncation": "dropping the oldest messages moves everything after them: drop in larger steps, or summarize",
    "head_dropped": "leading history is gone (truncation or compaction): drop or compact in larger steps",
    "placeholder": "a full tool result became the placeholder a turn later: shorten it once, when first sent",
    "image_cap": "an image sent before is capped now: drop old images for good instead of per call",
    "drift": "a message that changes every turn sits inside the prefix: move it after the cached prefix",
    "append": "healthy: only new content follows what was cached",
    "other": "an earlier item changed: compare the break's two sides",
}
DRIFTING = frozenset({Origin.CUSTOM_AGENT, Origin.DOCUMENTS, Origin.PROJECT_READ_FILE, Origin.FORGOTTEN_FILES})
STORED = frozenset({Origin.MESSAGE, Origin.FILE, Origin.TOOL_CALLS, Origin.TOOL_RESULT, Origin.ANSWER})


@dataclass(frozen=True, slots=True)
class Source:
    """The working message behind a payload message."""

    key: str
    kind: str
    origin: Origin
    id: str | None  # the stored message or file id
    stored: str | None  # the stored message it comes from (for branch checks)
    segment: str | None
    placeholder: bool


@dataclass(frozen=True, slots=True)
class View:
    """What a later call needs to know about an earlier one.

    Only the item at the break is ever mapped back to its working message, so a view keeps the
    assembled list as it is and builds that one `Source` on demand. What is kept per message is
    the assembled list itself and each message's segment (not its `Fated`, made afresh per call);
    a view kept for later calls holds its items packed (`packed`)."""

    items: Sequence[Item]
    keys: tuple[str, ...]  # each item's key, in order (the cache trie holds the same tuple)
    messages: Sequence[Working]  # the assembled list (Assembly.messages)
    segment_of: Sequence[Segment | None]  # each message's segment, by position
    user: str
    system: str | None
    date: str | None
    model: str = ""  # the model the request names
    settings: tuple[tuple[str, str], ...] = ()  # the keyed settings sent (name, canonical JSON), R-LOG-2

    def source(self, index: int) -> Source:
        w, segment = self.messages[index], self.segment_of[index]
        stored = w.source_id if w.origin in STORED else None
        name = str(segment) if segment is not None else None
        return Source(w.key, str(w.kind), w.origin, w.file_id or w.source_id, stored, name, w.placeholder)

    def packed(self) -> View:
        """This view as later calls keep it: the items as columns rather than one tuple each."""
        return replace(self, items=Packed(self.items, self.keys))


_NONE = -1  # a null message or source index, in `Packed`'s integer columns


class Packed(Sequence[Item]):
    """A call's items in columns (R-RPL-9): kept views hold every call's items until the TTL ends,
    all of them when messages carry no times. The keys are the cache trie's tuple; the numbers
    are packed in arrays; an `Item` is made again on access (only at a break)."""

    __slots__ = ("_breakpoints", "_keys", "_message", "_role", "_source", "_tokens")

    def __init__(self, items: Sequence[Item], keys: tuple[str, ...]) -> None:
        self._keys = keys
        self._tokens = array("q", [i.tokens for i in items])
        self._message = array("i", [_NONE if i.message is None else i.message for i in items])
        self._source = array("i", [_NONE if i.source is None else i.source for i in items])
        self._role = tuple(i.role for i in items)
        self._breakpoints = frozenset(n for n, i in enumerate(items) if i.breakpoint)

    def __len__(self) -> int:
        return len(self._keys)

    @overload
    def __getitem__(self, index: int) -> Item: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Item, ...]: ...

    def __getitem__(self, index: int | slice) -> Item | tuple[Item, ...]:
        if isinstance(index, slice):
            return tuple(self[n] for n in range(*index.indices(len(self))))
        n = range(len(self))[index]  # a negative index counts from the end; out of range raises
        message, source = self._message[n], self._source[n]
        return Item(
            self._keys[n],
            self._tokens[n],
            None if message == _NONE else message,
            None if source == _NONE else source,
            self._role[n],
            n in self._breakpoints,
        )


@dataclass(frozen=True, slots=True)
class Dropped:
    """What this call left out that an earlier one may have sent."""

    fates: Mapping[str, Fated]  # this call's decision record, by working key
    capped: frozenset[str]  # working keys with an image capped by R-TR-6

    def truncated(self, key: str) -> str | None:
        """The rule that left this message out (R-ASM-4, R-ASM-5, R-FILE-3), if it was."""
        fated = self.fates.get(key)
        return fated.rule if fated is not None and fated.fate in (Fate.TRUNCATED, Fate.LAST_N_CUT) else None


@dataclass(frozen=True, slots=True)
class Break:
    cause: str
    rule: str
    item: int | None
    this: dict[str, Any] | None
    candidate: dict[str, Any] | None
    lost_tokens: int

    def as_json(self) -> dict[str, Any] | None:
        if self.item is None:
            return None
        return {"item": self.item, "this": self.this, "candidate": self.candidate}


def view(result: Result, items: tuple[Item, ...], keys: tuple[str, ...], user: str) -> tuple[View, Dropped]:
    from ctxkit.assembly.system import format_date

    a = result.assembly
    segment_of = [f.segment if f is not None else None for f in map(a.fates.get, map(_KEY, a.messages))]
    for n, segment in enumerate(segment_of):
        if not segment:  # no decision names it (the system prompt, the reminder): the last segment listing it
            key = a.messages[n].key
            found = (name for name, ws in reversed(a.segments.items()) if any(w.key == key for w in ws))
            segment_of[n] = next(found, None)
    system = next((w.text for w in a.messages if w.kind is Kind.SYSTEM), None)
    date = format_date(a.eff.now) if a.eff.now is not None else None
    capped = frozenset(
        r.key.rsplit("#img", 1)[0] for r in result.payload.prepared.rows if r.fate is Fate.IMAGE_CAPPED and r.key
    )
    keyed = KEYED_SETTINGS.get(result.payload.provider, ((), ""))[0]
    body = result.payload.body
    settings = tuple((n, canonical(body[n])) for n in keyed if body.get(n) is not None)
    here = View(items, keys, a.messages, segment_of, user, system, date, a.eff.model, settings)
    return here, Dropped(a.fates, capped)


_KEY = attrgetter("key")


class Ancestry:
    """Ancestor tests on the stored tree in O(1): entry/exit times of one depth-first walk."""

    def __init__(self, fixture: Fixture) -> None:
        children: dict[str | None, list[str]] = {}
        for m in fixture.messages:
            if m.role is not Role.SUMMARY:
                children.setdefault(m.parent, []).append(m.id)
        self.enter: dict[str, int] = {}
        self.leave: dict[str, int] = {}
        clock = 0
        stack: list[tuple[str, bool]] = [(c, False) for c in reversed(children.get(None, []))]
        while stack:
            node, done = stack.pop()
            clock += 1
            if done:
                self.leave[node] = clock
                continue
            self.enter[node] = clock
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(children.get(node, [])))

    def above(self, ancestor: str, node: str) -> bool:
        """`ancestor` is `node` or on its path from the root."""
        if ancestor not in self.enter or node not in self.enter:
            return False
        return self.enter[ancestor] <= self.enter[node] and self.leave[node] <= self.leave[ancestor]


def _side(v: View, item: Item | None) -> dict[str, Any] | None:
    if item is None:
        return None
    if item.role is None:
        return {"kind": "tools", "id": None, "segment": None}
    s = _source(v, item)
    if s is None:
        return {"kind": item.role, "id": None, "segment": None}
    return {"kind": s.kind, "id": s.id, "segment": s.segment}


def _source(v: View, item: Item | None) -> Source | None:
    if item is None or item.source is None or item.source >= len(v.messages):
        return None
    return v.source(item.source)


def find(this: View, dropped: Dropped, cand: View | None, common: int, *, expired: bool, ancestry: Ancestry) -> Break:
    if cand is None:
        return Break("first_call", CAUSE_RULES["first_call"], None, None, None, 0)
    mine = this.items[common] if common < len(this.items) else None
    theirs = cand.items[common] if common < len(cand.items) else None
    lost = _lost(this.items[common:], cand.keys[common:])
    if expired:
        cause, rule = "expired", CAUSE_RULES["expired"]
    elif this.model != cand.model or this.settings != cand.settings:  # the provider keys its cache on these
        changed = ["model"] if this.model != cand.model else _changed(dict(this.settings), dict(cand.settings))
        cause = "model" if changed == ["model"] else "parameters"
        setting = {"kind": "setting", "id": ", ".join(changed), "segment": None}
        return Break(cause, CAUSE_RULES[cause], common, setting, setting, lost)
    else:
        cause, rule = _cause(this, dropped, cand, mine, theirs, ancestry)
    if mine is None:
        return Break(cause, rule, None, None, None, lost)
    return Break(cause, rule, common, _side(this, mine), _side(cand, theirs), lost)


def _changed(mine: dict[str, str], theirs: dict[str, str]) -> list[str]:
    """The settings whose value differs between two requests, by name."""
    return [k for k in sorted(set(mine) | set(theirs)) if mine.get(k) != theirs.get(k)]


def _lost(mine: Sequence[Item], theirs: tuple[str, ...]) -> int:
    """Tokens of this call's items after the break that the candidate sent after it too (each once).

    The candidate's items before the break were reused; the ones after it were paid for and, where
    this call sends them again anywhere, could not be reused."""
    unused = Counter(theirs)
    lost = 0
    for item in mine:
        if unused[item.key] > 0:
            unused[item.key] -= 1
            lost += item.tokens
    return lost


def _cause(
    this: View, dropped: Dropped, cand: View, mine: Item | None, theirs: Item | None, ancestry: Ancestry
) -> tuple[str, str]:
    def found(cause: str, rule: str | None = None) -> tuple[str, str]:
        return cause, rule or CAUSE_RULES[cause]

    if mine is None:
        return found("append")
    if mine.role is None or (theirs is not None and theirs.role is None):
        return found("tools")  # the tool-definitions item has no role
    s_mine, s_theirs = _source(this, mine), _source(cand, theirs)
    if (s_mine is not None and s_mine.kind == "system") or (s_theirs is not None and s_theirs.kind == "system"):
        if this.system is not None and cand.system is not None and this.date and cand.date and this.date != cand.date:
            if cand.system.replace(cand.date, this.date) == this.system:
                return found("system_date")
        return found("system")
    if Origin.SUMMARY in (getattr(s_mine, "origin", None), getattr(s_theirs, "origin", None)):
        return found("summary")
    if s_theirs is not None and s_theirs.stored is not None and not ancestry.above(s_theirs.stored, this.user):
        return found("branch")
    if (
        s_mine is not None
        and s_mine.stored is not None
        and not ancestry.above(s_mine.stored, cand.user)
        and not ancestry.above(cand.user, this.user)
    ):
        return found("branch")
    if s_theirs is not None and (rule := dropped.truncated(s_theirs.key)) is not None:
        return found("truncation", rule)
    if s_mine is not None and s_mine.placeholder and s_theirs is not None and s_theirs.kind == "tool":
        return found("placeholder")
    if s_theirs is not None and s_theirs.key in dropped.capped:
        return found("image_cap")
    if s_theirs is not None and s_theirs.origin in DRIFTING:
        return found("drift")
    if theirs is None or s_theirs is None or s_theirs.origin is Origin.REMINDER:
        return found("append")  # no working message behind it (the image-drop notice), or the reminder: added last
    return found("other")
