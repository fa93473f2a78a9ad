"""`import`: a logged OpenAI or Anthropic request (or message list) → a fixture.

Input: the parsed JSON document and the chosen dialect. Output: the fixture
document (a dict in fixture-format order) and the warnings to print. Tool calls
attach to their assistant message with their results as `response`; a run of
tool calls ending in an answer becomes one stored message; everything after the
last user message becomes `in_flight` (docs/rules.md#commands).
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

from ctxkit.errors import InputError
from ctxkit.loading import models

DEFAULT_MODELS = {"openai": "gpt-4o", "anthropic": "claude-sonnet-4-5"}


@dataclass
class Event:
    role: str  # user | assistant | tool
    text: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)  # {id, name, args}
    call_id: str | None = None
    images: list[tuple[str, str]] = field(default_factory=list)  # (mime, base64)


@dataclass
class Imported:
    document: dict[str, Any]
    warnings: list[str]
    comment: str | None  # the line flagging a defaulted model


def _text_of(content: Any) -> tuple[str, list[tuple[str, str]]]:
    """Text and images of an OpenAI or Anthropic content value."""
    if content is None:
        return "", []
    if isinstance(content, str):
        return content, []
    texts: list[str] = []
    images: list[tuple[str, str]] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            texts.append(str(part.get("text", "")))
        elif kind == "image_url":
            url = (part.get("image_url") or {}).get("url", "")
            head, sep, data = str(url).partition(";base64,")
            if sep and head.startswith("data:"):
                images.append((head[5:], data))
        elif kind == "image" and isinstance(part.get("source"), dict):
            src = part["source"]
            if src.get("type") == "base64":
                images.append((str(src.get("media_type", "")), str(src.get("data", ""))))
    return "\n".join(texts), images


def _args(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def openai_events(messages: list[Any]) -> tuple[str | None, list[Event]]:
    system: list[str] = []
    events: list[Event] = []
    for n, m in enumerate(messages):
        if not isinstance(m, dict) or "role" not in m:
            raise InputError(f"/messages/{n}: not a chat message (no role)")
        role = m["role"]
        text, images = _text_of(m.get("content"))
        if role in ("system", "developer"):
            system.append(text)
        elif role == "user":
            events.append(Event("user", text, images=images))
        elif role == "assistant":
            calls = [
                {
                    "id": str(c.get("id", "")),
                    "name": c.get("function", {}).get("name", ""),
                    "args": _args(c.get("function", {}).get("arguments", "{}")),
                }
                for c in m.get("tool_calls") or []
            ]
            events.append(Event("assistant", text, calls))
        elif role == "tool":
            events.append(Event("tool", text, call_id=str(m.get("tool_call_id", ""))))
        else:
            raise InputError(f"/messages/{n}/role: unsupported role {role!r}")
    return ("\n\n".join(system) if system else None), events


def anthropic_events(messages: list[Any]) -> list[Event]:
    events: list[Event] = []
    for n, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            raise InputError(f"/messages/{n}/role: expected 'user' or 'assistant'")
        content = m.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        if m["role"] == "assistant":
            calls = [
                {"id": str(b.get("id")), "name": b.get("name", ""), "args": b.get("input", {})}
                for b in blocks
                if isinstance(b, dict) and b.get("type") == "tool_use"
            ]
            text, _ = _text_of([b for b in blocks if isinstance(b, dict) and b.get("type") == "text"])
            events.append(Event("assistant", text, calls))
            continue
        rest = []
        for b in blocks:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                result, _ = _text_of(b.get("content"))
                events.append(Event("tool", result, call_id=str(b.get("tool_use_id"))))
            else:
                rest.append(b)
        if rest:
            text, images = _text_of(rest)
            events.append(Event("user", text, images=images))
    return events


def build(doc: Any, dialect: str, *, model: str | None = None, max_input_tokens: int | None = None) -> Imported:
    body = {"messages": doc} if isinstance(doc, list) else doc
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        raise InputError("expected a request body with `messages`, or a message list")
    if dialect == "openai":
        system, events = openai_events(body["messages"])
    else:
        events = anthropic_events(body["messages"])
        system = _text_of(body.get("system"))[0] if body.get("system") is not None else None
    provider = dialect
    name = model or body.get("model")
    comment = None
    if not name:
        name = DEFAULT_MODELS[dialect]
        comment = f"# model: the log names no model; {name} is ctxkit's default for {dialect} (pass --model to choose)"
    if max_input_tokens is None and models.lookup(provider, str(name)) is None:
        raise InputError(f"model {name!r} is not in the built-in model table: pass --max-input-tokens")
    warnings: list[str] = []
    files: list[dict[str, Any]] = []
    messages, in_flight = _stored(events, files, warnings)
    fixture: dict[str, Any] = {"ctxkit": 1, "model": {"provider": provider, "name": str(name)}}
    if max_input_tokens is not None:
        fixture["model"]["max_input_tokens"] = max_input_tokens
    if system is not None:
        fixture["prompts"] = {"system": system, "datetime_aware": False}
    tools = [_tool(t, dialect) for t in body.get("tools") or [] if isinstance(t, dict)]
    if tools:
        fixture["tools"] = tools
    if files:
        fixture["files"] = files
    fixture["messages"] = messages
    if in_flight:
        fixture["in_flight"] = in_flight
    return Imported(fixture, warnings, comment)


def _tool(t: dict[str, Any], dialect: str) -> dict[str, Any]:
    fn = t.get("function", t) if dialect == "openai" else t
    out: dict[str, Any] = {"name": str(fn.get("name", ""))}
    if fn.get("description") is not None:
        out["description"] = fn["description"]
    params = fn.get("parameters") if dialect == "openai" else fn.get("input_schema")
    if isinstance(params, dict):
        out["parameters"] = params
    return out


def _stored(
    events: list[Event], files: list[dict[str, Any]], warnings: list[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    last_user = max((i for i, e in enumerate(events) if e.role == "user"), default=None)
    if last_user is None:
        raise InputError("the log has no user message: there is nothing to answer")
    messages: list[dict[str, Any]] = []
    pending: dict[str, Any] | None = None
    dropped_texts = 0

    def close(answer: str | None) -> None:
        nonlocal pending, dropped_texts
        if pending is None:
            return
        side = pending.pop("side")
        if answer is None:
            pending["text"] = "\n\n".join(side)
        else:
            pending["text"] = answer
            dropped_texts += len(side)
        messages.append(pending)
        pending = None

    for e in events[: last_user + 1]:
        if e.role == "user":
            close(None)
            messages.append(_user(e, len(messages) + 1, files))
        elif e.role == "assistant" and not e.calls:
            if pending is None:
                messages.append({"id": f"m{len(messages) + 1}", "role": "assistant", "text": e.text})
            else:
                close(e.text)
        elif e.role == "assistant":
            if pending is None:
                pending = {
                    "id": f"m{len(messages) + 1}",
                    "role": "assistant",
                    "text": "",
                    "tool_calls": [],
                    "side": [],
                    "turn": 0,
                }
            turn = pending.pop("turn")
            pending["tool_calls"] += [
                {"id": c["id"], "name": c["name"], "args": c["args"], "turn": turn} for c in e.calls
            ]
            pending["turn"] = turn + 1
            if e.text:
                pending["side"].append(e.text)
        else:
            _attach_result(pending, e, warnings)
    if pending is not None:
        pending.pop("turn", None)
    close(None)
    for m in messages:
        m.pop("turn", None)
        for c in m.get("tool_calls", []):
            if c["turn"] == 0:
                del c["turn"]
    if dropped_texts:
        warnings.append(
            f"{dropped_texts} assistant text(s) written beside tool calls were "
            "left out: a later answer in the same run is the stored text"
        )
    return messages, _in_flight(events[last_user + 1 :], warnings)


def _user(e: Event, n: int, files: list[dict[str, Any]]) -> dict[str, Any]:
    m: dict[str, Any] = {"id": f"m{n}", "role": "user", "text": e.text}
    ids = []
    for k, (mime, data) in enumerate(e.images):
        try:
            base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            continue
        fid = f"m{n}-image-{k + 1}"
        ext = mime.split("/")[-1] if "/" in mime else "bin"
        files.append({"id": fid, "name": f"{fid}.{ext}", "kind": "image", "data": data})
        ids.append(fid)
    if ids:
        m["files"] = ids
    return m


def _attach_result(pending: dict[str, Any] | None, e: Event, warnings: list[str]) -> None:
    calls = pending["tool_calls"] if pending else []
    for c in reversed(calls):
        if c["id"] == e.call_id and "response" not in c:
            c["response"] = e.text
            return
    warnings.append(f"a tool result for {e.call_id!r} answers no earlier call: left out")


def _in_flight(events: list[Event], warnings: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    answered = {e.call_id for e in events if e.role == "tool"}
    announced: set[str] = set()
    for e in events:
        if e.role == "assistant":
            calls = [c for c in e.calls if c["id"] in answered]
            if len(calls) < len(e.calls):
                warnings.append(
                    f"{len(e.calls) - len(calls)} in-flight tool call(s) without "
                    "a result were left out (a model is never called with one)"
                )
            if not calls and not e.text:
                continue
            m: dict[str, Any] = {"role": "assistant"}
            if e.text:
                m["text"] = e.text
            if calls:
                m["tool_calls"] = [{"id": c["id"], "name": c["name"], "args": c["args"]} for c in calls]
                announced.update(c["id"] for c in calls)
            out.append(m)
        elif e.role == "tool":
            if e.call_id not in announced:
                warnings.append(f"an in-flight result for {e.call_id!r} answers no call: left out")
                continue
            out.append({"role": "tool", "tool_call_id": e.call_id, "text": e.text})
    return out
