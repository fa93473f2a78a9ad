"""The break and its cause for a logged call (R-LOG-2): what a body alone can show.

Input: the two calls' views (each body's items, where each item sits in the body, the system
text, the keyed settings) and the common prefix. Output: a `breaks.Break` with one cause of the
closed list — `first_call`, `expired`, `model`, `parameters`, `tools`, `system_date`, `system`,
`edit`, `head_dropped`, `append`, `other` — first match wins. A side of the break is
`{kind, id, segment}`: the message's role (or `tools`), its JSON pointer in the body as sent,
and no segment (a log has no decision record); for `parameters`, kind `setting` and the
setting's name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ctxkit.replay.breaks import Break, _lost
from ctxkit.replay.causes import Cause
from ctxkit.translate.bodies import Body
from ctxkit.translate.items import Item
from ctxkit.translate.keys import Key

CAUSE_RULES = {  # the causes a body alone can show, first match wins, and the rule behind each
    Cause.FIRST_CALL: "R-LOG-2",
    Cause.EXPIRED: "R-RPL-5",
    Cause.MODEL: "R-LOG-2",
    Cause.PARAMETERS: "R-LOG-2",
    Cause.TOOLS: "R-LOG-2",
    Cause.SYSTEM_DATE: "R-LOG-2",
    Cause.SYSTEM: "R-LOG-2",
    Cause.EDIT: "R-LOG-2",
    Cause.HEAD_DROPPED: "R-LOG-2",
    Cause.APPEND: "R-RPL-6",
    Cause.OTHER: "R-RPL-6",
}
SYSTEM_KINDS = frozenset({"system", "developer"})
_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_DAYS = "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday"
# A date or a time of day, in the forms system prompts print them.
_WHEN = re.compile(
    rf"\d{{4}}-\d{{2}}-\d{{2}}(?:[T ]\d{{2}}:\d{{2}}(?::\d{{2}}(?:\.\d+)?)?(?:Z|[+-]\d{{2}}:?\d{{2}})?)?"
    rf"|\d{{1,2}}/\d{{1,2}}/\d{{2,4}}"
    rf"|\b(?:{_MONTHS})(?:\s+\d{{1,2}}(?:st|nd|rd|th)?,?)?\s+\d{{4}}\b"
    rf"|\b\d{{1,2}}\s+(?:{_MONTHS})\s+\d{{4}}\b"
    rf"|\b(?:{_DAYS})\b"
    rf"|\b\d{{1,2}}:\d{{2}}(?::\d{{2}})?(?:\s?[AP]M)?\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class KeyedBody:
    """A logged call as the break finder reads it: its body and each prompt item's key."""

    body: Body
    keys: tuple[Key, ...]

    def side(self, n: int, item: Item | None) -> dict[str, Any] | None:
        """Item `n` (`item`, None past the end) as a break shows it."""
        if item is None:
            return None
        message = self.body.items.message(n)
        if item.role is None or message is None:
            return {"kind": "tools", "id": None, "segment": None}
        return {"kind": self.body.kinds[message], "id": self.body.pointers[message], "segment": None}

    def kind(self, n: int, item: Item) -> str | None:
        """The kind (role) of the message item `n` is in; None for the tool definitions and the
        other request fields before the messages, whatever a message's role is called."""
        message = self.body.items.message(n)
        return None if item.role is None or message is None else self.body.kinds[message]


def first(switched: bool) -> Break:
    """The first call of its provider and model: `model` when its session's previous call used another."""
    cause = Cause.MODEL if switched else Cause.FIRST_CALL
    return Break(cause, CAUSE_RULES[cause], None, 0)


def find(this: KeyedBody, cand: KeyedBody, common: int, *, expired: bool) -> Break:
    """The break against the best candidate (an earlier call of the same provider and model; the
    first call of one has `first` instead)."""
    if expired:
        common = 0  # nothing of the earlier calls is reusable
    # A changed setting salts every key after it (R-LOG-2) but does not make the content new.
    lost = _lost(this.body.items[common:], cand.body.content_keys[common:], this.body.content_keys[common:])
    mine = this.body.items[common] if common < len(this.body.items) else None
    theirs = cand.body.items[common] if common < len(cand.body.items) else None
    if expired:
        return _break(Cause.EXPIRED, common, this.side(common, mine), cand.side(common, theirs), lost)
    if mine is None or theirs is None:
        return _break(
            Cause.APPEND, common if mine is not None else None, this.side(common, mine), cand.side(common, theirs), lost
        )
    changed = [
        k
        for k in sorted(set(this.body.settings) | set(cand.body.settings))
        if this.body.settings.get(k) != cand.body.settings.get(k)
    ]
    if changed and this.body.content_keys[common] == cand.body.content_keys[common]:
        setting = {"kind": "setting", "id": ", ".join(changed), "segment": None}
        return _break(Cause.PARAMETERS, common, setting, setting, lost)
    cause = _cause(this, cand, common, mine, theirs)
    return _break(cause, common, this.side(common, mine), cand.side(common, theirs), lost)


def _cause(this: KeyedBody, cand: KeyedBody, common: int, mine: Item, theirs: Item) -> Cause:
    kinds = (this.kind(common, mine), cand.kind(common, theirs))
    if None in kinds:
        return Cause.TOOLS
    if SYSTEM_KINDS & set(kinds):
        if this.body.system != cand.body.system and masked(this.body.system) == masked(cand.body.system):
            return Cause.SYSTEM_DATE
        return Cause.SYSTEM
    rest, theirs_after = this.keys[common:], cand.keys[common + 1 :]
    if common + 1 < min(len(this.keys), len(cand.keys)) and this.keys[common + 1] == cand.keys[common + 1]:
        return Cause.EDIT  # one message changed in place; what follows is the same
    if theirs.key not in rest and set(rest) & set(theirs_after):
        return Cause.HEAD_DROPPED  # the candidate's message is gone, its later ones carry on
    if theirs.key in rest[1:]:
        return Cause.EDIT  # a message was inserted before the candidate's
    return Cause.OTHER


def masked(text: str) -> str:
    """The text with every date and time of day replaced (system prompts that differ only there)."""
    return _WHEN.sub("<when>", text)


def _break(cause: Cause, item: int | None, this: Any, cand: Any, lost: int) -> Break:
    return Break.of(cause, CAUSE_RULES[cause], item, this, cand, lost)
