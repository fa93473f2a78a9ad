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

from typing import Any

from ctxkit.translate.common import (
    Prepared,
    Translated,
    TranslationInput,
    WireMessage,
    definitions,
    object_args,
    report_wrapped,
)


def _parts(m: WireMessage) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for p in m.parts:
        if p.image is not None:
            out.append({"inlineData": {"mimeType": p.mime, "data": p.b64}})
        elif p.text:  # a part must carry data: an empty text is no part
            out.append({"text": p.text})
    return out


class _Builder:
    def __init__(self, prepared: Prepared) -> None:
        self.prepared = prepared
        self.system: list[dict[str, Any]] = []
        self.system_origin = -1  # the wire message of the first system part
        self.contents: list[dict[str, Any]] = []
        self.origins: list[list[int]] = []  # per content, the wire message of each part
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
        elif m.role == "tool":
            self._tool_result(i, m)
        elif m.role == "assistant":
            self._append(i, "model", _parts(m) + self._calls(m))
        else:
            parts = _parts(m)
            self.seen_user = self.seen_user or bool(parts)
            self._append(i, "user", parts)

    def _calls(self, m: WireMessage) -> list[dict[str, Any]]:
        if not self.seen_user:
            self.left_out[0] += len(m.tool_calls)
            return []
        out = []
        for c in m.tool_calls:
            args, wrapped = object_args(c.args)
            if wrapped:
                self.wrapped.append(c.id)
            self.names[c.id] = c.name
            if c.name not in self.called:
                self.called.append(c.name)
            out.append({"functionCall": {"name": c.name, "args": args}})
        return out

    def _tool_result(self, i: int, m: WireMessage) -> None:
        name = self.names.get(m.tool_call_id or "")
        if name is None:  # its call was left out (or never made): so is the result
            self.left_out[1] += 1
            return
        response = {"name": name, "response": {"content": m.text}}
        self._append(i, "user", [{"functionResponse": response}])

    def _append(self, i: int, role: str, parts: list[dict[str, Any]]) -> None:
        if not parts:
            return
        if self.contents and self.contents[-1]["role"] == role:
            self.contents[-1]["parts"].extend(parts)
            self.origins[-1] += [i] * len(parts)
        else:
            self.contents.append({"role": role, "parts": parts})
            self.origins.append([i] * len(parts))

    def report(self) -> None:
        calls, responses = self.left_out
        if calls or responses:
            self.prepared.fixup(
                f"gemini: {calls} function call(s) and {responses} function response(s) before "
                "the first user content are left out (a function-call turn must follow a user "
                "or function-response turn)",
                rule="R-TR-4",
            )
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


def translate(a: TranslationInput, prepared: Prepared) -> Translated:
    b = _Builder(prepared)
    for i, m in enumerate(prepared.messages):
        b.add(i, m)
    b.report()
    body: dict[str, Any] = {}
    origins: list[tuple[int, ...]] = [(b.system_origin,)] if b.system else []
    if b.system:
        body["systemInstruction"] = {"parts": b.system}
    body["contents"] = b.contents
    origins += [tuple(o) for o in b.origins]
    decls = function_declarations(a, b.called, prepared)
    if decls:
        body["tools"] = [{"functionDeclarations": decls}]
    return Translated(body, tuple(origins))
