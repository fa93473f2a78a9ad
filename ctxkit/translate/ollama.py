"""Ollama /api/chat bodies (R-TR-2).

Input: a `TranslationInput` and its `Prepared` wire messages. Output: the request body
`{"model", "messages", "stream": false, "options": {"num_ctx"}, "tools"?}`.
Images travel as base64 strings in the message's `images` list (their labels
stay in the text). Tool history is flattened to text, as the design does for
Ollama: call lines on the assistant message, each result as a user message.
"""

from __future__ import annotations

from typing import Any

from ctxkit.counting.measure import dumps_args
from ctxkit.translate.common import MESSAGES, Prepared, Translated, TranslationInput, WireMessage
from ctxkit.translate.openai import fill, sent_messages
from ctxkit.translate.openai import tools as openai_tools


def call_line(name: str, call_id: str, args: Any) -> str:
    return f"[Tool Call] name={name} id={call_id} args={dumps_args(args)}"


def result_text(call_id: str, content: str) -> str:
    return f"[Tool Result] id={call_id}\n{content}"


def message(m: WireMessage) -> dict[str, Any]:
    if m.role == "tool":
        return {"role": "user", "content": result_text(m.tool_call_id or "", m.text)}
    images = [p.b64 for p in m.parts if p.image is not None]
    texts = [p.text for p in m.parts if p.image is None and p.text]  # labels, markers too
    texts += [call_line(c.name, c.id, c.args) for c in m.tool_calls]  # no leading blank line
    out: dict[str, Any] = {"role": m.role, "content": "\n".join(texts)}
    if images:
        out["images"] = images
    return out


def translate(a: TranslationInput, prepared: Prepared) -> Translated:
    head: dict[str, Any] = {
        "model": a.model,
        "messages": MESSAGES,
        "stream": False,
        "options": {"num_ctx": a.max_input_tokens},
    }
    defs = openai_tools(a)
    if defs:
        head["tools"] = defs
    return Translated.emitted(head, sent_messages(a, prepared, message), fill)
