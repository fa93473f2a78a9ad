"""Gemini generateContent bodies (R-TR-4), in the camelCase of Google's discovery document.

Input: a `TranslationInput` and its `Prepared` wire messages. Output: the request body
`{"systemInstruction"?, "contents", "tools"?}`. Roles are `user` and `model`;
tool results travel as `functionResponse` parts in a `user` content (the
discovery document allows only these two roles); consecutive contents of one
role are merged. Function calls and responses before the first user content are
left out (a function-call turn must follow a user or function-response turn),
and tools called without a definition are declared by name only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from ctxkit.counting.measure import Meter
from ctxkit.counting.wire import WireRules
from ctxkit.history.working import Kind, Working
from ctxkit.translate import items, turns
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


def _parts(m: WireMessage) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for p in m.parts:
        if p.image is not None:
            out.append({"inlineData": {"mimeType": p.mime, "data": p.b64}})
        elif p.text:  # a part must carry data: an empty text is no part
            out.append({"text": p.text})
    return out


class _Fragment(NamedTuple):
    """A working message's parts, made once (R-RPL-9), each with its item's (key, tokens):
    its own parts, then its function calls (sent only after the first user content) or, for a
    tool result, the response under the name its call had when the fragment was made."""

    parts: tuple[tuple[dict[str, Any], tuple[Key, int]], ...]
    calls: tuple[tuple[dict[str, Any], tuple[Key, int]], ...]
    wrapped: tuple[str, ...]
    name: str | None = None  # a tool result's: the name its response was made with


Known = tuple[Key, int] | None


class _Builder:
    def __init__(self, a: TranslationInput, prepared: Prepared) -> None:
        self.a = a
        self.rules = items.request_rules(a.provider, a.model, a.meter)
        self.prepared = prepared
        self.system: list[dict[str, Any]] = []
        self.system_origin = -1  # the wire message of the first system part
        self.contents: list[dict[str, Any]] = []
        self.origins: list[list[int]] = []  # per content, the wire message of each part
        self.known: list[list[Known]] = []  # per content, each part's (key, tokens) when known
        self.names: dict[str, str] = {}  # call id → name of the latest call with that id
        self.called: list[str] = []
        self.seen_user = False
        self.left_out = [0, 0]  # leading function calls, function responses
        self.wrapped: list[str] = []

    def add(self, i: int, m: WireMessage) -> None:
        if m.role == "system":
            parts = _parts(m)
            if parts and not self.system:
                self.system_origin = i
            self.system.extend(parts)
        elif m.entry is not None:
            self._add_known(i, m)
        elif m.role == "tool":
            self._tool_result(i, m)
        elif m.role == "assistant":
            self._append(i, "model", _parts(m) + self._calls(m))
        else:
            parts = _parts(m)
            self.seen_user = self.seen_user or bool(parts)
            self._append(i, "user", parts)

    def _add_known(self, i: int, m: WireMessage) -> None:
        """`add` from the memo: whether calls are sent and under which name a result goes are
        this request's (R-RPL-9)."""
        assert m.entry is not None
        fragment: _Fragment | None = m.entry.fragment
        if fragment is None or (m.role == "tool" and fragment.name != self.names.get(m.tool_call_id or "")):
            fragment = m.entry.fragment = self._fragment(m)
        if m.role == "tool":
            if fragment.name is None:
                self.left_out[1] += 1
            else:
                self._append(i, "user", *_unzip(fragment.parts))
            return
        if m.role != "assistant":
            self.seen_user = self.seen_user or bool(fragment.parts)
            self._append(i, "user", *_unzip(fragment.parts))
            return
        parts = fragment.parts
        if not self.seen_user:
            self.left_out[0] += len(m.tool_calls)
        else:
            self.wrapped.extend(fragment.wrapped)
            for c in m.tool_calls:
                self._call(c.id, c.name)
            parts += fragment.calls
        self._append(i, "model", *_unzip(parts))

    def _fragment(self, m: WireMessage) -> _Fragment:
        return _fragment(m, self.names.get(m.tool_call_id or ""), self.a.meter, self.rules)

    def _call(self, call_id: str, name: str) -> None:
        self.names[call_id] = name
        if name not in self.called:
            self.called.append(name)

    def _calls(self, m: WireMessage) -> list[dict[str, Any]]:
        if not self.seen_user:
            self.left_out[0] += len(m.tool_calls)
            return []
        out = []
        for c in m.tool_calls:
            args, wrapped = object_args(c.args)
            if wrapped:
                self.wrapped.append(c.id)
            self._call(c.id, c.name)
            out.append({"functionCall": {"name": c.name, "args": args}})
        return out

    def _tool_result(self, i: int, m: WireMessage) -> None:
        name = self.names.get(m.tool_call_id or "")
        if name is None:  # its call was left out (or never made): so is the result
            self.left_out[1] += 1
            return
        self._append(i, "user", [_response(name, m.text)])

    def _append(self, i: int, role: str, parts: list[dict[str, Any]], known: list[Known] | None = None) -> None:
        if not parts:
            return
        known = known if known is not None else [None] * len(parts)
        if self.contents and self.contents[-1]["role"] == role:
            self.contents[-1]["parts"].extend(parts)
            self.origins[-1] += [i] * len(parts)
            self.known[-1] += known
        else:
            self.contents.append({"role": role, "parts": list(parts)})
            self.origins.append([i] * len(parts))
            self.known.append(list(known))

    def report(self) -> None:
        calls, responses = self.left_out
        if calls or responses:
            self.prepared.fixup(_left_out(calls, responses), rule="R-TR-4")
        report_wrapped(self.prepared, "gemini", "args", self.wrapped, "R-TR-4")


def function_declarations(a: TranslationInput, called: list[str], prepared: Prepared) -> list[dict[str, Any]]:
    """R-TR-9 definitions, then each called tool without one, by name only."""
    out = definitions(a, "parameters")
    defined = {d["name"] for d in out}
    missing = [n for n in called if n not in defined]
    if missing:
        prepared.fixup(
            "gemini: tools called in the history without a definition are declared by name only: " + ", ".join(missing),
            rule="R-TR-4",
        )
        out.extend({"name": n} for n in missing)
    return out


def _left_out(calls: int, responses: int) -> str:
    return (
        f"gemini: {calls} function call(s) and {responses} function response(s) before "
        "the first user content are left out (a function-call turn must follow a user "
        "or function-response turn)"
    )


def _fragment(m: WireMessage, name: str | None, meter: Meter, rules: WireRules) -> _Fragment:
    """A message's parts and calls (a tool result: its response under `name`, its call's)."""

    def known(role: str, parts: list[dict[str, Any]]) -> tuple[tuple[dict[str, Any], tuple[Key, int]], ...]:
        return tuple((p, items.known(role, p, meter, rules)) for p in parts)

    if m.role == "tool":
        return _Fragment(known("user", [_response(name, m.text)] if name is not None else []), (), (), name)
    role = "model" if m.role == "assistant" else "user"
    calls = [object_args(c.args) for c in m.tool_calls]
    wrapped = tuple(c.id for c, (_, was) in zip(m.tool_calls, calls, strict=True) if was)
    made = [{"functionCall": {"name": c.name, "args": args}} for c, (args, _) in zip(m.tool_calls, calls, strict=True)]
    return _Fragment(known(role, _parts(m)), known(role, made), wrapped)


def translate(a: TranslationInput, prepared: Prepared) -> Translated:
    carried = _carried(a, prepared) if a.memo is not None else None  # a replay (R-RPL-9)
    if carried is not None:
        return _emitted(a, prepared, *carried)
    b = _Builder(a, prepared)
    for i, m in enumerate(prepared.messages):
        b.add(i, m)
    b.report()
    system = Sent("system", [{"parts": b.system}], (b.system_origin,), None, 0) if b.system else None
    contents = [
        Sent(c["role"], c["parts"], tuple(o), k, 0) for c, o, k in zip(b.contents, b.origins, b.known, strict=True)
    ]
    return _emitted(a, prepared, system, contents, b.called)


def _emitted(
    a: TranslationInput, prepared: Prepared, system: Sent | None, contents: list[Sent], called: list[str]
) -> Translated:
    head: dict[str, Any] = {}
    if system is not None:
        head["systemInstruction"] = MESSAGES
    head["contents"] = MESSAGES
    decls = function_declarations(a, called, prepared)
    if decls:
        head["tools"] = [{"functionDeclarations": decls}]
    return Translated.emitted(head, tuple([system, *contents] if system is not None else contents), _fill)


def _odd(w: Working) -> bool:
    """A message Gemini's carried contents do not take (`_carried`); a system message counts."""
    if w.images or w.kind is Kind.SYSTEM:
        return True
    if w.kind is Kind.ASSISTANT:
        return (not w.text and not w.tool_calls) or any(not isinstance(c.args, dict) for c in w.tool_calls)
    return bool(w.tool_calls) or (w.kind is not Kind.TOOL and not w.text)


def _carried(a: TranslationInput, prepared: Prepared) -> tuple[Sent | None, list[Sent], list[str]] | None:
    """System instruction, contents and called tools from the last call's contents (`turns`), or
    None (translate the window whole). Only where Gemini changes nothing but the merges: every
    message gives a part, every result after the first user content follows its call there
    (each id called once), no image, no arguments to wrap, system text only first (R-TR-4). The
    lead (the messages before the first user content: their calls and results left out) is
    made for each call."""
    memo = a.memo
    assert memo is not None
    state = turns.state(memo, _odd)
    if not isinstance(state.held, turns.Results):
        state.held = turns.Results()
    ids = state.held
    ids.update(memo.entered, memo.left)
    wires, window = prepared.messages, memo.window
    first = 1 if window and window[0].kind is Kind.SYSTEM else 0
    user = next((p for p in range(first, len(window)) if window[p].kind in (Kind.USER, Kind.REMINDER)), first)
    led, ids.led = ids.led, user > first
    ids.good = not memo.repeated and turns.ordered(memo.fresh, window, ids, memo.renamed, user, led or ids.led)
    plain_system = first and window[0].text and not window[0].images
    if (
        state.odd != (1 if plain_system else 0)
        or memo.repeated
        or len(wires) != prepared.placed
        or user >= len(window)
        or window[user].kind not in (Kind.USER, Kind.REMINDER)
        or not ids.good
    ):
        state.starts = None
        return None
    rules = items.request_rules(a.provider, a.model, a.meter)
    carry = turns.Carry(
        wires, _role, lambda role, start, end: _content(role, wires[start:end], start, memo.names, a.meter, rules)
    )
    carry.spans(memo.runs, user, state)
    contents = carry.fill()
    carry.keep(state)
    system = Sent("system", [{"parts": _parts(wires[0])}], (0,), None, 0) if first else None
    called = state.called
    if user > first:
        contents = [*_lead(wires, first, user, memo.names, a.meter, rules, prepared), *contents]
        if any(w.tool_calls for w in window[first:user]):  # calls of the lead are not sent
            called = list(dict.fromkeys(c.name for w in window[user:] for c in w.tool_calls))
    return system, contents, called


def _lead(
    wires: list[WireMessage],
    first: int,
    user: int,
    names: dict[str, str],
    meter: Meter,
    rules: WireRules,
    prepared: Prepared,
) -> list[Sent]:
    """The contents before the first user content: the assistant's own parts (R-TR-4: its calls
    and the results are left out, and said so)."""
    parts: list[dict[str, Any]] = []
    origins: list[int] = []
    known: list[Known] = []
    calls = responses = 0
    for p in range(first, user):
        m = wires[p]
        if m.role == "tool":
            responses += 1
            continue
        calls += len(m.tool_calls)
        for body, k in _known_parts(m, names, meter, rules)[: -len(m.tool_calls) or None]:
            parts.append(body)
            origins.append(p)
            known.append(k)
    if calls or responses:
        prepared.fixup(_left_out(calls, responses), rule="R-TR-4")
    return [Sent("model", parts, tuple(origins), known, 0)] if parts else []


def _role(m: WireMessage) -> str:
    return "model" if m.role == "assistant" else "user"


def _content(
    role: str, wires: list[WireMessage], start: int, names: dict[str, str], meter: Meter, rules: WireRules
) -> tuple[Sent, bool]:
    """A content over `wires` (from wire message `start` on): their parts, merged."""
    parts: list[dict[str, Any]] = []
    origins: list[int] = []
    known: list[Known] = []
    for p, m in enumerate(wires, start):
        for body, k in _known_parts(m, names, meter, rules):
            parts.append(body)
            origins.append(p)
            known.append(k)
    return Sent(role, parts, tuple(origins), known, 0), False


def _known_parts(
    m: WireMessage, names: dict[str, str], meter: Meter, rules: WireRules
) -> tuple[tuple[dict[str, Any], tuple[Key, int]], ...]:
    """A message's parts with their items' (key, tokens), its calls after its own parts."""
    assert m.entry is not None  # a message without images: the memo holds it
    found: _Fragment | None = m.entry.fragment
    name = names.get(m.tool_call_id or "") if m.role == "tool" else None
    if found is None or (m.role == "tool" and found.name != name):
        found = m.entry.fragment = _fragment(m, name, meter, rules)
    return found.parts + found.calls if m.role == "assistant" else found.parts


def _fill(messages: Sequence[Sent]) -> dict[str, Any]:
    contents = messages[1:] if messages and messages[0].role == "system" else messages
    out: dict[str, Any] = {"systemInstruction": messages[0].parts[0]} if contents is not messages else {}
    out["contents"] = [{"role": s.role, "parts": s.parts} for s in contents]
    return out


def _response(name: str, text: str) -> dict[str, Any]:
    return {"functionResponse": {"name": name, "response": {"content": text}}}


def _unzip(
    known: tuple[tuple[dict[str, Any], tuple[Key, int]], ...],
) -> tuple[list[dict[str, Any]], list[Known]]:
    return [p for p, _ in known], [k for _, k in known]
