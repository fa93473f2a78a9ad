"""Anthropic's turns carried from one replayed call to the next (R-RPL-9; the rules: R-TR-3, R-TR-8).

Input: a request's wire messages and its replay's `TranslationMemo` (the runs this window shares
with the last one, the messages that entered and left it). Output: the payload's messages
(`Sent`: the system text, then one per turn), or None when the window needs the whole
translation (`anthropic._Builder`).

A turn is a longest stretch of messages of one role. A turn of the last call whose messages all
came back in one run, with neighbours of other roles, is the same turn: it is taken as it was
(re-indexed when the run moved), and only the turns at the runs' edges and over new messages
are made again. That holds for a window in which Anthropic changes nothing but the merges and
the order inside a turn (results first): every tool id valid and given once, every message
with a block, no image, no call arguments to wrap, a system message only at the start, tool
`Turns.odd` counts the messages that break it, kept up to
date from what entered and left the window; any other window is translated whole.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import repeat
from operator import add
from typing import Any, NamedTuple

from ctxkit.counting.measure import Meter
from ctxkit.counting.wire import WireRules
from ctxkit.history.working import Kind, Working
from ctxkit.translate import items
from ctxkit.translate.common import Prepared, Sent, TranslationInput, WireMessage, object_args

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

    blocks: tuple[tuple[dict[str, Any], tuple[str, int]], ...]
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


class Turns:
    """The last call's turns (positions `starts`/`ends` in its wire messages, `roles`, `sents`
    without the cache mark, `flags`: whether results were moved first) and the window's `odd`
    count. `starts` is None when the last call was translated whole."""

    def __init__(self) -> None:
        self.odd = 0
        self.starts: list[int] | None = None
        self.ends: list[int] = []
        self.roles: list[str] = []
        self.sents: list[Sent | None] = []
        self.flags: list[bool] = []
        self.called: list[str] = []  # the window's tool names in first-call order


def carried(a: TranslationInput, prepared: Prepared, rules: WireRules) -> tuple[list[Sent], list[str]] | None:
    """The payload's messages from the last call's turns and the tools called (in first-call
    order), or None (translate the window whole)."""
    memo = a.memo
    assert memo is not None
    state = memo.format if isinstance(memo.format, Turns) else Turns()
    memo.format = state
    state.odd += sum(map(_odd, memo.entered)) - sum(map(_odd, memo.left))
    if any(w.tool_calls for w in memo.entered) or any(w.tool_calls for w in memo.left):
        calls = (c.name for w in memo.window if w.kind is not Kind.TOOL for c in w.tool_calls)
        state.called = list(dict.fromkeys(calls))
    wires, window = prepared.messages, memo.window
    first = 1 if window and window[0].kind is Kind.SYSTEM else 0
    plain_system = first and window[0].text.strip() and not window[0].tool_calls and not window[0].images
    if state.odd != (1 if plain_system else 0) or memo.repeated or len(wires) != prepared.placed:
        state.starts = None
        return None
    made = _Made(a, wires, rules)
    made.spans(memo.runs, first, state)
    made.fill(prepared)
    state.starts, state.ends, state.roles, state.sents, state.flags = (
        made.starts,
        made.ends,
        made.roles,
        list(made.sents),
        made.flags,
    )
    return made.payload(prepared, first), state.called


class _Made:
    """This call's turns, as spans of its wire messages; a span with no `Sent` yet is made in `fill`."""

    def __init__(self, a: TranslationInput, wires: list[WireMessage], rules: WireRules) -> None:
        self.a, self.wires, self.rules = a, wires, rules
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.roles: list[str] = []
        self.sents: list[Sent | None] = []
        self.flags: list[bool] = []
        self.framing = rules.scaled(rules.framing)  # a turn's header (R-RPL-4)

    def push(self, role: str, start: int, end: int) -> None:
        """A stretch of one role to make: it joins the last turn when that one has its role and ends here."""
        if self.roles and self.roles[-1] == role and self.ends[-1] == start:
            self.ends[-1], self.sents[-1] = end, None
            return
        self.starts.append(start)
        self.ends.append(end)
        self.roles.append(role)
        self.sents.append(None)
        self.flags.append(False)

    def each(self, start: int, end: int) -> None:
        for p in range(start, end):
            self.push(TURN_ROLES.get(self.wires[p].role, "user"), p, p + 1)

    def spans(self, runs: list[tuple[int, int, int]], first: int, old: Turns) -> None:
        """The turns, run by run: new messages one by one, a run's inner turns as slices."""
        at = first
        for i, j, k in runs:
            a, b = max(i, first), i + k
            if a >= b:
                continue
            self.each(at, a)
            at = b
            if old.starts is None or not old.starts or a - (i - j) < old.starts[0]:
                self.each(a, b)
            else:
                self.run(old, a, b, i - j)
        self.each(at, len(self.wires))

    def run(self, old: Turns, a: int, b: int, d: int) -> None:
        """New positions [a, b), the last call's [a - d, b - d): its turns clipped to the run, the
        whole ones taken as they were (moved by d)."""
        assert old.starts is not None
        oa, ob = a - d, b - d
        t, last = bisect_right(old.starts, oa) - 1, bisect_right(old.starts, ob - 1) - 1
        if old.starts[t] < oa or old.ends[t] > ob:  # clipped at the run's start (or both ends)
            self.push(old.roles[t], oa + d, min(old.ends[t], ob) + d)
            t += 1
        end = last if last >= t and old.ends[last] > ob else last + 1
        if t < end and self.roles and self.roles[-1] == old.roles[t] and self.ends[-1] == old.starts[t] + d:
            self.push(old.roles[t], old.starts[t] + d, old.ends[t] + d)
            t += 1
        if t < end:
            self.starts += map(add, old.starts[t:end], repeat(d))
            self.ends += map(add, old.ends[t:end], repeat(d))
            self.roles += old.roles[t:end]
            self.flags += old.flags[t:end]
            self.sents += old.sents[t:end] if d == 0 else [_moved(s, d) for s in old.sents[t:end]]
        if end <= last:  # clipped at the run's end
            self.push(old.roles[last], old.starts[last] + d, ob + d)

    def fill(self, prepared: Prepared) -> None:
        for q, sent in enumerate(self.sents):
            if sent is None:
                self.sents[q], self.flags[q] = self.turn(self.roles[q], self.starts[q], self.ends[q])

    def turn(self, role: str, start: int, end: int) -> tuple[Sent, bool]:
        """A turn's payload message, its results first (R-TR-3), and whether they had to move."""
        blocks = [(body, known, p) for p in range(start, end) for body, known in self.blocks(p)]
        results = [b for b in blocks if b[0]["type"] == "tool_result"]
        ordered = results + [b for b in blocks if b[0]["type"] != "tool_result"] if results else blocks
        moved = ordered != blocks
        parts = [b[0] for b in ordered]
        return Sent(role, parts, tuple(b[2] for b in ordered), [b[1] for b in ordered], self.framing), moved

    def blocks(self, p: int) -> tuple[tuple[dict[str, Any], tuple[str, int]], ...]:
        m = self.wires[p]
        assert m.entry is not None  # a message without images: the memo holds it
        found: Blocks | None = m.entry.fragment
        if found is None:
            found = m.entry.fragment = fragment(m, self.a.meter, self.rules)
        return found.blocks

    def payload(self, prepared: Prepared, first: int) -> list[Sent]:
        """System text, the results-first and leading-user fix-ups, the cache mark (R-TR-8)."""
        sents: list[Sent] = self.sents  # type: ignore[assignment]  # every one made in `fill`
        out = list(sents)
        for _ in range(sum(self.flags)):
            prepared.fixup(RESULTS_FIRST, rule="R-TR-3")
        system = None
        if first:
            blocks = self.blocks(0)
            system = Sent("system", [b for b, _ in blocks], (0,) * len(blocks), [k for _, k in blocks], 0)
        mark = prepared.cache_prefix_messages - 1
        if mark >= first:
            q = bisect_right(self.starts, mark) - 1
            out[q] = _marked(sents[q], mark, self.a.settings.cache.ttl)
        elif mark == 0 and system is not None:
            system = _marked(system, 0, self.a.settings.cache.ttl)
        if not self.roles or self.roles[0] != "user":
            out.insert(0, Sent("user", [{"type": "text", "text": LEADING_USER_TEXT}], (-1,), [None], self.framing))
            prepared.fixup(LEADING, rule="R-TR-3")
        return [system, *out] if system is not None else out


def _moved(s: Sent | None, d: int) -> Sent:
    assert s is not None and s.origins is not None
    return Sent(s.role, s.parts, tuple(map(add, s.origins, repeat(d))), s.known, s.frame)


def _marked(s: Sent, origin: int, ttl: str | None) -> Sent:
    """R-TR-8: the breakpoint on the turn's last block from wire message `origin` (with
    `settings.cache.ttl`, its lifetime)."""
    assert s.origins is not None
    k = len(s.origins) - 1 - s.origins[::-1].index(origin)
    parts = list(s.parts)
    parts[k] = {**parts[k], "cache_control": {**EPHEMERAL, "ttl": ttl} if ttl else dict(EPHEMERAL)}
    return Sent(s.role, parts, s.origins, s.known, s.frame)
