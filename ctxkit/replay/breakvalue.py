"""A call's break as a row keeps it (R-RPL-6): the cause, its rule, the item, the tokens lost and
the two sides, each side's three values kept as fields and made a dict when read.

Input: the values `breaks.find` (or `logbreaks.find`) works out. Output: `Break`, read by the
rows' JSON (`as_json`) and the reports. A replay keeps one per call for the whole run (R-RPL-9).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ctxkit.replay.causes import Cause

__all__ = ["NO_SIDE", "Break", "Side"]


@dataclass(slots=True, unsafe_hash=True)  # not frozen: made per call (never changed once made)
class Break:
    """A call's break. Its two sides (`this`, `candidate`: each {"kind", "id", "segment"}, or None)
    are kept as three fields each and made as dicts when read: a row keeps its break for the
    whole replay, and two dicts cost about 370 bytes more than six fields (R-RPL-9)."""

    cause: Cause
    rule: str
    item: int | None
    lost_tokens: int
    this_kind: Any = None  # `this`'s fields; None: no side
    this_id: str | None = None
    this_segment: Any = None
    candidate_kind: Any = None  # `candidate`'s
    candidate_id: str | None = None
    candidate_segment: Any = None

    @classmethod
    def of(cls, cause: Cause, rule: str, item: int | None, this: Side, candidate: Side, lost_tokens: int) -> Break:
        """A break from its sides as dicts (or None)."""
        return cls(cause, rule, item, lost_tokens, *_fields(this), *_fields(candidate))

    @property
    def this(self) -> dict[str, Any] | None:
        if self.this_kind is None:
            return None
        return {"kind": self.this_kind, "id": self.this_id, "segment": self.this_segment}

    @property
    def candidate(self) -> dict[str, Any] | None:
        if self.candidate_kind is None:
            return None
        return {"kind": self.candidate_kind, "id": self.candidate_id, "segment": self.candidate_segment}

    def as_json(self) -> dict[str, Any] | None:
        if self.item is None:
            return None
        return {"item": self.item, "this": self.this, "candidate": self.candidate}


Side = dict[str, Any] | None  # a break's side as it reads: {"kind", "id", "segment"}
NO_SIDE = (None, None, None)


def _fields(side: Side) -> tuple[Any, Any, Any]:
    """A side's (kind, id, segment); a side's kind is never None (a role, a `Kind`, "tools", "setting")."""
    if side is None:
        return NO_SIDE
    if side["kind"] is None:
        raise ValueError("a break's side has a kind")
    return side["kind"], side["id"], side["segment"]
