"""Anthropic Messages bodies (R-TR-3, R-TR-8).

Input: a `TranslationInput` and its `Prepared` wire messages. Output: the request body
`{"model", "max_tokens", "system"?, "messages", "tools"?}` with content blocks,
same-role messages merged so roles alternate, `tool_result` blocks first in
their user message, one `cache_control` breakpoint at the end of the cacheable
prefix, and tool ids made valid and unique. Every change the API forces on the
history is reported through `Prepared.fixup`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxkit.translate import anthropic_turns, items
from ctxkit.translate.anthropic_turns import (
    EPHEMERAL,
    ID_PATTERN,
    LEADING_USER_TEXT,
    Blocks,
    result,
    text_bodies,
    use,
)
from ctxkit.translate.common import (
    MESSAGES,
    Prepared,
    Sent,
    Translated,
    TranslationInput,
    WireMessage,
    definitions,
    object_args,
    report_wrapped,
)
from ctxkit.translate.keys import Key

_ID_BAD_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


@dataclass(slots=True)
class _Block:
    body: dict[str, Any]
    origin: int  # index of the wire message it came from (-1: inserted by a fix-up)
    known: tuple[Key, int] | None = None  # its item's (key, tokens), when the memo knew them


@dataclass(slots=True)
class _Turn:
    role: str  # user | assistant
    blocks: list[_Block] = field(default_factory=list)


class ToolIds:
    """Call ids as Anthropic accepts them: `^[a-zA-Z0-9_-]+$`, unique per request.

    Invalid characters become `_`; a repeated or colliding id gets a `_2`, `_3` …
    suffix. A result maps to the id given to the latest call with its original id.
    """

    def __init__(self, originals: list[str]) -> None:
        self._taken = {i for i in originals if ID_PATTERN.match(i)}
        self._current: dict[str, str] = {}
        self._seen: set[str] = set()
        self.renamed: list[tuple[str, str]] = []  # (original, sent) for the report
        self.repeated = 0

    def call(self, original: str) -> str:
        if original in self._seen:
            self.repeated += 1
            sent = self._fresh(_ID_BAD_CHARS.sub("_", original) or "id")
        elif ID_PATTERN.match(original):
            sent = original
        else:
            sent = self._fresh(_ID_BAD_CHARS.sub("_", original) or "id")
            self.renamed.append((original, sent))
        self._seen.add(original)
        self._current[original] = sent
        return sent

    def result(self, original: str) -> str:
        return self._current.get(original) or _ID_BAD_CHARS.sub("_", original) or "id"

    def _fresh(self, base: str) -> str:
        candidate, n = base, 1
        while candidate in self._taken:
            n += 1
            candidate = f"{base}_{n}"
        self._taken.add(candidate)
        return candidate


def _text_blocks(m: WireMessage, origin: int) -> list[_Block]:
    return [_Block(body, origin) for body in text_bodies(m)]


class _Builder:
    def __init__(self, a: TranslationInput, prepared: Prepared) -> None:
        self.a = a
        self.rules = items.request_rules(a.provider, a.model, a.meter)
        self.prepared = prepared
        originals = [c.id for m in prepared.messages for c in m.tool_calls]
        originals += [m.tool_call_id for m in prepared.messages if m.tool_call_id]
        self.ids = ToolIds(originals)
        self.system: list[_Block] = []
        self.turns: list[_Turn] = []
        self.called: list[str] = []  # tool names in first-call order
        self.wrapped: list[str] = []  # call ids whose arguments were not an object

    def add(self, i: int, m: WireMessage) -> None:
        if m.entry is not None:
            fragment = m.entry.fragment
            if fragment is None:
                fragment = m.entry.fragment = anthropic_turns.fragment(m, self.a.meter, self.rules)
            self._add_known(i, m, fragment)
            return
        if m.role == "system":
            self.system.extend(_text_blocks(m, i))
            return
        if m.role == "tool":
            self._append("user", [_Block(result(m.tool_call_id or "", m.text, self.ids.result), i)])
            return
        blocks = _text_blocks(m, i)
        for c in m.tool_calls:
            args, wrapped = object_args(c.args)
            if wrapped:
                self.wrapped.append(c.id)
            blocks.append(_Block(use(self.ids.call(c.id), c.name, args), i))
        self._called(m)
        self._add_blocks(m, blocks)

    def _add_blocks(self, m: WireMessage, blocks: list[_Block]) -> None:
        if not blocks:
            self.prepared.fixup(
                f"anthropic: message {m.key!r} has no non-empty text, image or tool block and is left out",
                rule="R-TR-3",
            )
            return
        self._append("assistant" if m.role == "assistant" else "user", blocks)

    def _called(self, m: WireMessage) -> None:
        for c in m.tool_calls:
            if c.name not in self.called:
                self.called.append(c.name)

    def _add_known(self, i: int, m: WireMessage, fragment: Blocks) -> None:
        """`add` from the memo: only the ids are this request's (R-RPL-9)."""
        blocks = [_Block(body, i, known) for body, known in fragment.blocks]
        if m.role == "system":
            self.system.extend(blocks)
            return
        if m.role == "tool":
            original = m.tool_call_id or ""
            sent = self.ids.result(original)
            if sent != original:
                blocks[0] = _Block({**blocks[0].body, "tool_use_id": sent}, i)
            self._append("user", blocks)
            return
        self.wrapped.extend(fragment.wrapped)
        uses = len(blocks) - len(m.tool_calls)
        for n, c in enumerate(m.tool_calls):
            sent = self.ids.call(c.id)
            if sent != c.id:
                blocks[uses + n] = _Block({**blocks[uses + n].body, "id": sent}, i)
        self._called(m)
        self._add_blocks(m, blocks)

    def _append(self, role: str, blocks: list[_Block]) -> None:
        if not self.turns or self.turns[-1].role != role:
            self.turns.append(_Turn(role))
        self.turns[-1].blocks.extend(blocks)

    def finish(self) -> None:
        for turn in self.turns:
            if turn.role == "user":
                self._results_first(turn)
        if not self.turns or self.turns[0].role != "user":
            self.turns.insert(0, _Turn("user", [_Block({"type": "text", "text": LEADING_USER_TEXT}, -1)]))
            self.prepared.fixup(anthropic_turns.LEADING, rule="R-TR-3")
        self._report_ids()

    def _results_first(self, turn: _Turn) -> None:
        results = [b for b in turn.blocks if b.body["type"] == "tool_result"]
        others = [b for b in turn.blocks if b.body["type"] != "tool_result"]
        if results + others != turn.blocks:
            turn.blocks = results + others
            self.prepared.fixup(anthropic_turns.RESULTS_FIRST, rule="R-TR-3")

    def _report_ids(self) -> None:
        if self.ids.renamed:
            shown = ", ".join(f"{o!r} → {s!r}" for o, s in self.ids.renamed)
            self.prepared.fixup(
                f"anthropic: tool call id(s) changed to match {ID_PATTERN.pattern}: {shown}", rule="R-TR-3"
            )
        if self.ids.repeated:
            self.prepared.fixup(
                f"anthropic: {self.ids.repeated} repeated tool call id(s) get "
                "a numbered suffix (tool_use ids must be unique), their "
                "results follow them",
                rule="R-TR-3",
            )
        report_wrapped(self.prepared, "anthropic", "input", self.wrapped, "R-TR-3")

    def mark_cache_prefix(self, prefix: int, ttl: str | None = None) -> None:
        """R-TR-8: a breakpoint on the last block that came from the cacheable prefix (with
        `settings.cache.ttl`, its lifetime: `5m` or `1h`, R-RPL-5)."""
        blocks = self.system + [b for t in self.turns for b in t.blocks]
        candidates = [b for b in blocks if 0 <= b.origin < prefix]
        if not candidates:
            return
        last = max(b.origin for b in candidates)
        target = [b for b in candidates if b.origin == last][-1]
        target.body = {**target.body, "cache_control": {**EPHEMERAL, "ttl": ttl} if ttl else dict(EPHEMERAL)}


def tools(a: TranslationInput, called: list[str], prepared: Prepared) -> list[dict[str, Any]]:
    """R-TR-9 definitions; without any, each called tool is declared minimally."""
    out = definitions(a, "input_schema", {"type": "object"})
    if out or not called:
        return out
    prepared.fixup(
        "anthropic: the history holds tool calls but the fixture defines no tools: "
        "declared minimally (name and an object input schema): " + ", ".join(called),
        rule="R-TR-3",
    )
    return [{"name": n, "input_schema": {"type": "object"}} for n in called]


def translate(a: TranslationInput, prepared: Prepared) -> Translated:
    head: dict[str, Any] = {"model": a.model, "max_tokens": a.max_output_tokens}
    if a.memo is not None:  # a replay: the last call's turns where the window allows (R-RPL-9)
        rules = items.request_rules(a.provider, a.model, a.meter)
        carried = anthropic_turns.carried(a, prepared, rules)
        if carried is not None:
            return _emitted(head, carried[0], tools(a, carried[1], prepared))
    b = _Builder(a, prepared)
    for i, m in enumerate(prepared.messages):
        b.add(i, m)
    b.finish()
    b.mark_cache_prefix(prepared.cache_prefix_messages, a.settings.cache.ttl)
    messages = [_sent("system", b.system, 0)] if b.system else []
    framing = b.rules.scaled(b.rules.framing)  # a turn's header (R-RPL-4)
    messages += [_sent(t.role, t.blocks, framing) for t in b.turns]
    return _emitted(head, messages, tools(a, b.called, prepared))


def _emitted(head: dict[str, Any], messages: list[Sent], defs: list[dict[str, Any]]) -> Translated:
    """The body's fields around its messages: `system` when there is system text, `tools`."""
    if messages and messages[0].role == "system":
        head["system"] = MESSAGES
    head["messages"] = MESSAGES
    if defs:
        head["tools"] = defs
    return Translated.emitted(head, tuple(messages), _fill)


def _sent(role: str, blocks: list[_Block], frame: int) -> Sent:
    known = [blk.known for blk in blocks]
    return Sent(role, [blk.body for blk in blocks], tuple(blk.origin for blk in blocks), known, frame)


def _fill(messages: Sequence[Sent]) -> dict[str, Any]:
    turns = messages[1:] if messages and messages[0].role == "system" else messages
    out: dict[str, Any] = {"system": messages[0].parts} if turns is not messages else {}
    out["messages"] = [{"role": s.role, "content": s.parts} for s in turns]
    return out
