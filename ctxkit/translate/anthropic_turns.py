"""Anthropic's turns carried from one replayed call to the next (R-RPL-9; the rules: R-TR-3, R-TR-8).

Input: a request's wire messages and its replay's `TranslationMemo` (the runs this window shares
with the last one, the messages that entered and left it). Output: the payload's messages
(`Sent`: the system text, then one per turn), or None when the window needs the whole
translation (`anthropic._Builder`).

The turns are carried as `turns.Carry` carries them, for a window in which Anthropic changes
nothing but the merges and the order inside a turn (results first): every tool id valid and
given once, every message with a block, no image, no call arguments to wrap, a system message
only at the start. `turns.Turns.odd` counts the messages that break it; any other window is
translated whole, which also gives the next call its turns afresh.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import Any, NamedTuple

from ctxkit.counting.measure import Meter
from ctxkit.counting.wire import WireRules
from ctxkit.history.working import Kind, Working
from ctxkit.translate import items, turns
from ctxkit.translate.common import Prepared, Sent, TranslationInput, WireMessage, object_args
from ctxkit.translate.keys import Key

ID_PATTERN = re.compile(r"^[a-zA-Z0-9_-]+$")
LEADING_USER_TEXT = "(earlier conversation)"  # opens a history that starts with the assistant
EPHEMERAL = {"type": "ephemeral"}
TURN_ROLES = {"system": "system", "assistant": "assistant"}  # a wire role's turn (else: user)
RESULTS_FIRST = "anthropic: tool_result blocks are moved before the other content of their user message"
LEADING = (
    f"anthropic: the history starts with an assistant message; a user message {LEADING_USER_TEXT!r} "
    "is inserted before it (the first message must be a user message)"
)


class Blocks(NamedTuple):
    """A working message's blocks, made once (R-RPL-9): each with its item's key and tokens.

    A `tool_use` or `tool_result` block holds the id as written; a request that must change it
    (`anthropic.ToolIds`) gets a copy with the id it sends, keyed afresh."""

    blocks: tuple[tuple[dict[str, Any], tuple[Key, int]], ...]
    wrapped: tuple[str, ...]  # call ids whose arguments were not an object


def text_bodies(m: WireMessage) -> list[dict[str, Any]]:
    """A message's image and text blocks; the API rejects empty and whitespace-only text blocks."""
    out: list[dict[str, Any]] = []
    for p in m.parts:
        if p.image is not None:
            out.append({"type": "image", "source": {"type": "base64", "media_type": p.mime, "data": p.b64}})
        elif p.text.strip():
            out.append({"type": "text", "text": p.text})
    return out


def use(sent_id: str, name: str, args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": sent_id, "name": name, "input": args}


def result(tool_use_id: str, text: str, sent: Any) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": sent(tool_use_id)}
    if text.strip():
        block["content"] = text
    return block


def fragment(m: WireMessage, meter: Meter, rules: WireRules) -> Blocks:
    """The message's blocks with the ids as written, each with its item's key and tokens."""
    role = TURN_ROLES.get(m.role, "user")
    wrapped: list[str] = []
    if m.role == "tool":
        bodies = [result(m.tool_call_id or "", m.text, str)]
    else:
        bodies = text_bodies(m)
        for c in m.tool_calls:
            args, was_wrapped = object_args(c.args)
            if was_wrapped:
                wrapped.append(c.id)
            bodies.append(use(c.id, c.name, args))
    return Blocks(tuple((b, items.known(role, b, meter, rules)) for b in bodies), tuple(wrapped))


def _odd(w: Working) -> bool:
    """A message the carried turns do not take (see the module's text); a system message counts."""
    if w.images or w.kind is Kind.SYSTEM:
        return True
    if w.kind is Kind.TOOL:
        return not ID_PATTERN.match(w.tool_call_id or "")
    if not w.tool_calls:
        return not w.text.strip()
    return any(not ID_PATTERN.match(c.id) or not isinstance(c.args, dict) for c in w.tool_calls)


def carried(a: TranslationInput, prepared: Prepared, rules: WireRules) -> tuple[list[Sent], list[str]] | None:
    """The payload's messages from the last call's turns and the tools called (in first-call
    order), or None (translate the window whole)."""
    memo = a.memo
    assert memo is not None
    state = turns.state(memo, _odd)
    wires, window = prepared.messages, memo.window
    first = 1 if window and window[0].kind is Kind.SYSTEM else 0
    plain_system = first and window[0].text.strip() and not window[0].tool_calls and not window[0].images
    if state.odd != (1 if plain_system else 0) or memo.repeated or len(wires) != prepared.placed:
        state.starts = None
        return None
    made = _Made(a, wires, rules)
    carry = turns.Carry(wires, _role, made.turn)
    carry.spans(memo.runs, first, state)
    sents = carry.fill()
    carry.keep(state)
    return made.payload(prepared, first, carry, sents), state.called


def _role(m: WireMessage) -> str:
    return TURN_ROLES.get(m.role, "user")


class _Made:
    """How this call makes a turn, and the payload around its turns."""

    def __init__(self, a: TranslationInput, wires: list[WireMessage], rules: WireRules) -> None:
        self.a, self.wires, self.rules = a, wires, rules
        self.framing = rules.scaled(rules.framing)  # a turn's header (R-RPL-4)

    def turn(self, role: str, start: int, end: int) -> tuple[Sent, bool]:
        """A turn's payload message, its results first (R-TR-3), and whether they had to move."""
        blocks = [(body, known, p) for p in range(start, end) for body, known in self.blocks(p)]
        results = [b for b in blocks if b[0]["type"] == "tool_result"]
        ordered = results + [b for b in blocks if b[0]["type"] != "tool_result"] if results else blocks
        moved = ordered != blocks
        parts = [b[0] for b in ordered]
        return Sent(role, parts, tuple(b[2] for b in ordered), [b[1] for b in ordered], self.framing), moved

    def blocks(self, p: int) -> tuple[tuple[dict[str, Any], tuple[Key, int]], ...]:
        m = self.wires[p]
        assert m.entry is not None  # a message without images: the memo holds it
        found: Blocks | None = m.entry.fragment
        if found is None:
            found = m.entry.fragment = fragment(m, self.a.meter, self.rules)
        return found.blocks

    def payload(self, prepared: Prepared, first: int, carry: turns.Carry, sents: list[Sent]) -> list[Sent]:
        """System text, the results-first and leading-user fix-ups, the cache mark (R-TR-8)."""
        out = list(sents)
        for _ in range(sum(carry.flags)):
            prepared.fixup(RESULTS_FIRST, rule="R-TR-3")
        system = None
        if first:
            blocks = self.blocks(0)
            system = Sent("system", [b for b, _ in blocks], (0,) * len(blocks), [k for _, k in blocks], 0)
        mark = prepared.cache_prefix_messages - 1
        if mark >= first:
            q = bisect_right(carry.starts, mark) - 1
            out[q] = _marked(sents[q], mark, self.a.settings.cache.ttl)
        elif mark == 0 and system is not None:
            system = _marked(system, 0, self.a.settings.cache.ttl)
        if not carry.roles or carry.roles[0] != "user":
            out.insert(0, Sent("user", [{"type": "text", "text": LEADING_USER_TEXT}], (-1,), [None], self.framing))
            prepared.fixup(LEADING, rule="R-TR-3")
        return [system, *out] if system is not None else out


def _marked(s: Sent, origin: int, ttl: str | None) -> Sent:
    """R-TR-8: the breakpoint on the turn's last block from wire message `origin` (with
    `settings.cache.ttl`, its lifetime)."""
    assert s.origins is not None
    k = len(s.origins) - 1 - s.origins[::-1].index(origin)
    parts = list(s.parts)
    parts[k] = {**parts[k], "cache_control": {**EPHEMERAL, "ttl": ttl} if ttl else dict(EPHEMERAL)}
    return Sent(s.role, parts, s.origins, s.known, s.frame)
