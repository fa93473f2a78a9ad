"""A request body as it was sent → the prompt items a provider reads (R-LOG-2, R-RPL-4).

Input: a logged call's provider, endpoint and body, and a meter. Output: `Body` — its items
(`items.prompt_items` over `sent.body_payload`, so a body from a log is counted exactly as a
payload ctxkit builds, its images from their own bytes),
where each item's message sits in the body (a JSON pointer), each message's kind, the system
text, and the request settings the provider keys its cache on.

Bodies as sent take every shape the APIs accept; they are brought to the shape ctxkit's own
payloads have before the items are made: Anthropic's `system` or `content` as a string is one
text block; Gemini's `system_instruction` is `systemInstruction` and a content without a role
is the user's; an image given by URL has no data (it costs the unreadable-image base); Ollama's
tool-call arguments given as an object are the JSON text. Two Responses-API shapes are read as chat messages, one
message per input item: `instructions` is the system message, `function_call` an assistant
tool call, `function_call_output` a tool result; OpenTelemetry's normalised messages
(endpoint `otel`) likewise. Cache controls: Anthropic's top-level `cache_control` marks the
last block; the settings a provider keys its cache on (OpenAI `prompt_cache_key`; Anthropic
`tool_choice` and `thinking`, which invalidate the cached messages) are folded into the keys
of the items they invalidate, so a changed setting breaks the prefix there.

Each wire format has its normaliser (`NORMALISERS`); a format registered at run time brings its
own (`register_normaliser`: the body as sent → the shape its reader reads, each message's pointer
and kind recorded in the `BodyShape`), and any other format's body is read as chat messages.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ctxkit import providers
from ctxkit.counting.measure import dumps_args
from ctxkit.translate.costs import ItemMeter
from ctxkit.translate.items import ItemMemo, Prompt, canonical, priming_tokens, prompt_items
from ctxkit.translate.keys import Key, salted_key
from ctxkit.translate.sent import body_payload


@dataclass(frozen=True, slots=True)
class Body:
    items: Prompt
    pointers: tuple[str, ...]  # per payload message (Prompt.message): where it is in the body as sent
    kinds: tuple[str, ...]  # per payload message: system | user | assistant | tool | …
    system: str  # the system texts, joined (for `system_date`)
    settings: dict[str, Any]  # the keyed settings this request sent
    priming: int  # the reply priming the provider adds (R-RPL-4: none for Gemini or after a prefill)
    content_keys: tuple[Key, ...]  # each item's key without the keyed settings (which salt `items`' keys)


def body_items(provider: str, endpoint: str, body: dict[str, Any], *, meter: ItemMeter, memo: ItemMemo) -> Body:
    """The items of one logged request; `KeyError`/`TypeError`/`ValueError` when it is not of its shape."""
    shape = BodyShape()
    spec = providers.spec(provider)
    if endpoint == "responses" and "messages" not in body:
        normal = _responses(body, shape)
    elif endpoint == "otel":
        normal = _otel(body, shape)
    else:
        normal = NORMALISERS.get(spec.format, _chat)(body, shape)
    kind = "openai" if endpoint in ("responses", "otel") else provider
    payload = body_payload(kind, normal)
    items = prompt_items(payload, meter=meter, memo=memo)
    # the settings that change which cached prefix a request can read, and from where on: "all"
    # items (routing) or only the "messages" (Anthropic invalidates the message blocks)
    scope = spec.keyed_from
    content_keys = tuple(i.key for i in items)
    settings = {n: body[n] for n in spec.keyed_settings if body.get(n) is not None}
    if settings:
        salt = "\x00" + canonical(settings)
        first = 1 if scope == "messages" and shape.system_message else 0
        salted = (
            i._replace(key=salted_key(i.key, salt)) if scope == "all" or (m is not None and m >= first) else i
            for i, m in zip(items, items.messages(), strict=True)
        )
        items = items.replaced(tuple(salted))
    if spec.format == "anthropic" and isinstance(body.get("cache_control"), dict) and items:
        items = items.replaced((*items[:-1], items[-1]._replace(breakpoint=True)))  # automatic caching: the last block
    priming = priming_tokens(payload, meter=meter)
    system = "\n".join(shape.system)
    return Body(items, tuple(shape.pointers), tuple(shape.kinds), system, settings, priming, content_keys)


class BodyShape:
    """What normalising a body records on the way: pointers, kinds, system texts, images."""

    def __init__(self) -> None:
        self.pointers: list[str] = []
        self.kinds: list[str] = []
        self.system: list[str] = []
        self.system_message = False

    def message(self, pointer: str, kind: str) -> None:
        self.pointers.append(pointer)
        self.kinds.append(kind)

    @staticmethod
    def image(data: Any) -> str:
        """An image's base64 data as items read it ("" when there is none: it costs the base)."""
        return data if isinstance(data, str) else ""


def _chat(body: dict[str, Any], shape: BodyShape) -> dict[str, Any]:
    """OpenAI, Azure and Ollama chat bodies: one item per message."""
    messages = []
    for n, m in enumerate(body["messages"]):
        m = dict(m)
        role = str(m["role"])
        shape.message(f"/messages/{n}", role)
        if role in ("system", "developer"):
            shape.system.append(_text(m.get("content")))
        content = m.get("content")
        if isinstance(content, list):
            m["content"] = [_openai_part(p, shape) for p in content]
        if isinstance(m.get("images"), list):
            m["images"] = [shape.image(i) for i in m["images"]]
        if isinstance(m.get("tool_calls"), list):  # Ollama sends the arguments as an object
            m["tool_calls"] = [_string_arguments(c) for c in m["tool_calls"]]
        messages.append(m)
    return {**body, "messages": messages}


def _string_arguments(call: Any) -> Any:
    function = call.get("function") if isinstance(call, dict) else None
    if isinstance(function, dict) and not isinstance(function.get("arguments"), str):
        return {**call, "function": {**function, "arguments": dumps_args(function.get("arguments"))}}
    return call


def _openai_part(p: Any, shape: BodyShape) -> Any:
    if isinstance(p, dict) and p.get("type") == "image_url":
        url = p["image_url"]["url"] if isinstance(p.get("image_url"), dict) else str(p.get("image_url", ""))
        head, sep, data = str(url).partition(";base64,")
        canonical_data = shape.image(data if sep else "")
        return {
            **p,
            "image_url": {
                **(p["image_url"] if isinstance(p.get("image_url"), dict) else {}),
                "url": f"{head};base64,{canonical_data}" if sep else url + ";base64,",
            },
        }
    return p


def _anthropic(body: dict[str, Any], shape: BodyShape) -> dict[str, Any]:
    normal = dict(body)
    system = body.get("system")
    if system:
        blocks = [{"type": "text", "text": system}] if isinstance(system, str) else list(system)
        normal["system"] = blocks
        shape.message("/system", "system")
        shape.system_message = True
        shape.system.extend(str(b.get("text", "")) for b in blocks if isinstance(b, dict))
    messages = []
    for n, m in enumerate(body["messages"]):
        content = m["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        messages.append({**m, "content": [_anthropic_block(b, shape) for b in blocks]})
        shape.message(f"/messages/{n}", str(m["role"]))
    normal["messages"] = messages
    return normal


def _anthropic_block(b: Any, shape: BodyShape) -> Any:
    if isinstance(b, dict) and b.get("type") == "image":
        source = b["source"]
        data = source.get("data") if source.get("type") == "base64" else ""
        return {**b, "source": {**source, "data": shape.image(data)}}
    if isinstance(b, dict) and b.get("type") == "tool_result" and isinstance(b.get("content"), list):
        return {**b, "content": [_anthropic_block(x, shape) for x in b["content"]]}
    return b


def _gemini(body: dict[str, Any], shape: BodyShape) -> dict[str, Any]:
    normal = {k: v for k, v in body.items() if k != "system_instruction"}
    system = body.get("systemInstruction", body.get("system_instruction"))
    if isinstance(system, str):
        system = {"parts": [{"text": system}]}
    if system:
        normal["systemInstruction"] = system
        shape.message("/systemInstruction", "system")
        shape.system_message = True
        shape.system.extend(str(p.get("text", "")) for p in system.get("parts", []) if isinstance(p, dict))
    contents = []
    for n, c in enumerate(body["contents"]):
        parts = [_gemini_part(p, shape) for p in c["parts"]]
        role = str(c.get("role") or "user")
        contents.append({**c, "role": role, "parts": parts})
        shape.message(f"/contents/{n}", role)
    normal["contents"] = contents
    return normal


def _gemini_part(p: Any, shape: BodyShape) -> Any:
    if isinstance(p, dict) and isinstance(p.get("inlineData"), dict):
        return {**p, "inlineData": {**p["inlineData"], "data": shape.image(p["inlineData"].get("data"))}}
    return p


def _responses(body: dict[str, Any], shape: BodyShape) -> dict[str, Any]:
    """The Responses API: `instructions`, then one message per input item."""
    messages: list[dict[str, Any]] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": str(body["instructions"])})
        shape.message("/instructions", "system")
        shape.system.append(str(body["instructions"]))
    given = body.get("input")
    items = [{"role": "user", "content": given}] if isinstance(given, str) else list(given or [])
    for n, item in enumerate(items):
        pointer = "/input" if isinstance(given, str) else f"/input/{n}"
        message = _response_item(item, shape)
        if message["role"] in ("system", "developer"):
            shape.system.append(_text(message.get("content")))
        messages.append(message)
        shape.message(pointer, str(message["role"]))
    return {k: v for k, v in body.items() if k not in ("input", "instructions")} | {"messages": messages}


def _response_item(item: dict[str, Any], shape: BodyShape) -> dict[str, Any]:
    kind = item.get("type", "message")
    if kind == "message":
        content = item.get("content")
        if isinstance(content, list):
            content = [_response_part(p, shape) for p in content]
        return {"role": str(item["role"]), "content": content}
    if kind == "function_call":
        call = {"id": item.get("call_id"), "type": "function"}
        call["function"] = {"name": item["name"], "arguments": _string(item.get("arguments", ""))}
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    if kind == "function_call_output":
        return {"role": "tool", "tool_call_id": item.get("call_id"), "content": _string(item.get("output", ""))}
    if kind == "reasoning":
        summary = [s.get("text", "") for s in item.get("summary") or [] if isinstance(s, dict)]
        return {"role": "assistant", "content": "\n".join(summary), "reasoning": item.get("id")}
    return {"role": "assistant", "content": None, "item": item}  # another built-in item: keyed, not counted


def _response_part(p: Any, shape: BodyShape) -> Any:
    if not isinstance(p, dict):
        return p
    if p.get("type") in ("input_text", "output_text"):
        return {"type": "text", "text": p.get("text", "")}
    if p.get("type") == "input_image":
        url = str(p.get("image_url") or "")
        head, sep, data = url.partition(";base64,")
        canonical_data = shape.image(data if sep else "")
        return {
            "type": "image_url",
            "image_url": {"url": f"{head};base64,{canonical_data}" if sep else url + ";base64,"},
        }
    return p


def _otel(body: dict[str, Any], shape: BodyShape) -> dict[str, Any]:
    """OpenTelemetry GenAI messages (`role`, `parts`): one chat message each."""
    messages: list[dict[str, Any]] = []
    system = [p.get("content", "") for p in body.get("system_instructions") or [] if isinstance(p, dict)]
    if system:
        messages.append({"role": "system", "content": "\n".join(map(str, system))})
        shape.message("/system_instructions", "system")
        shape.system.extend(map(str, system))
    for n, m in enumerate(body.get("messages") or []):
        texts, calls = [], []
        for p in m.get("parts") or []:
            kind = p.get("type")
            if kind == "text":
                texts.append(str(p.get("content", "")))
            elif kind == "tool_call":
                args = _string(p.get("arguments", ""))
                calls.append(
                    {"id": p.get("id"), "type": "function", "function": {"name": p["name"], "arguments": args}}
                )
            elif kind == "tool_call_response":
                texts.append(_string(p.get("response", "")))
        message: dict[str, Any] = {"role": str(m["role"]), "content": "\n".join(texts) if texts else None}
        if calls:
            message["tool_calls"] = calls
        messages.append(message)
        shape.message(f"/messages/{n}", str(m["role"]))
        if m["role"] == "system":
            shape.system.extend(texts)
    tools = body.get("tools") or None
    return {"messages": messages, **({"tools": tools} if tools else {})}


Normaliser = Callable[[dict[str, Any], BodyShape], dict[str, Any]]
# A body as sent → the shape of ctxkit's own payloads, per wire format (chat messages: `_chat`).
NORMALISERS: dict[str, Normaliser] = {"openai": _chat, "ollama": _chat, "anthropic": _anthropic, "gemini": _gemini}


def register_normaliser(name: str, normalise: Normaliser) -> None:
    """How logged bodies of a wire format registered at run time are brought to its own shape."""
    NORMALISERS[name] = normalise


def _string(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""
