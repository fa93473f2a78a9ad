"""OpenAI and Azure OpenAI chat completions bodies (R-TR-1, R-TR-7).

Input: a `TranslationInput` and its `Prepared` wire messages. Output: the request
body `{"model", "messages", "tools"?}`.
"""

from __future__ import annotations

import re
from typing import Any

from ctxkit.counting.measure import call_args_text
from ctxkit.translate.common import Part, Prepared, Translated, TranslationInput, WireMessage, definitions

REASONING = re.compile(r"(?:^|[ /-])(?:o1|o3|o4|gpt-5(?:\.\d+)?)(?:$|[ /-])")
NO_SYSTEM_MESSAGE = frozenset({"o1-mini", "o1-preview"})
MARKDOWN_PREFIX = "Formatting re-enabled. "


def is_reasoning_model(name: str) -> bool:
    """R-TR-7: o1, o3, o4, gpt-5 or gpt-5.N delimited by start/end, space, - or /."""
    return REASONING.search(name) is not None


def _base_name(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def content(m: WireMessage) -> str | list[dict[str, Any]]:
    """A string, or content parts for a message that had images (R-TR-1), even
    when every image became a text marker (R-TR-5) or a budget-only label."""
    if not m.had_images and not any(p.image for p in m.parts):
        return m.text
    parts: list[dict[str, Any]] = []
    for p in m.parts:
        if p.image is None:
            if p.text:
                parts.append({"type": "text", "text": p.text})
        else:
            parts.append({"type": "image_url", "image_url": {"url": p.data_url}})
    return parts


def message(m: WireMessage) -> dict[str, Any]:
    if m.role == "tool":
        return {"role": "tool", "tool_call_id": m.tool_call_id, "content": m.text}
    if m.role == "assistant":
        out: dict[str, Any] = {"role": "assistant", "content": m.text or None}
        if m.tool_calls:
            out["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": call_args_text(c)}}
                for c in m.tool_calls
            ]
        return out
    return {"role": m.role, "content": content(m)}


def tools(a: TranslationInput) -> list[dict[str, Any]]:
    return [{"type": "function", "function": d} for d in definitions(a, "parameters")]


def translate(a: TranslationInput, prepared: Prepared) -> Translated:
    first = prepared.messages[0] if prepared.messages else None
    if first is not None and first.role == "system":
        if is_reasoning_model(a.model) and not a.settings.as_logged:  # R-FIX-6: the logged text as sent
            first.parts[0] = Part(MARKDOWN_PREFIX + first.parts[0].text)
        if _base_name(a.model) in NO_SYSTEM_MESSAGE:
            first.role = "user"
            prepared.fixup(
                f"model {a.model!r} takes no system message: the system text is sent as the first user message",
                rule="R-TR-1",
            )
    body: dict[str, Any] = {"model": a.model, "messages": [message(m) for m in prepared.messages]}
    defs = tools(a)
    if defs:
        body["tools"] = defs
    return Translated(body, tuple((n,) for n in range(len(prepared.messages))))
