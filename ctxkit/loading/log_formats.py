"""Logged request bodies in OpenAI or Anthropic format → events, and which format a log is in.

Input: the parsed JSON of a logged body or message list. Output: the system
prompt and a flat list of `Event`s (user, assistant with its calls, tool
result); everything that cannot be carried over is an `InputError` naming its
JSON pointer or is counted in `Losses` (one warning line for the import).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ctxkit.errors import InputError

MAX_ARGS_DEPTH = 100  # the fixture format's limit on nested tool arguments
# Request fields that shape only the reply, not the prompt: not part of a fixture, never warned
# about. Every other field the fixture does not hold is carried as a request field (R-FIX-7).
SAMPLING_FIELDS = frozenset(
    {
        "temperature",
        "top_p",
        "top_k",
        "max_tokens",
        "max_completion_tokens",
        "stream",
        "n",
        "seed",
        "stop",
        "stop_sequences",
        "presence_penalty",
        "frequency_penalty",
        "logprobs",
        "top_logprobs",
        "user",
        "metadata",
        "stream_options",
        "service_tier",
        "store",
        "reasoning_effort",
        "logit_bias",
    }
)
KNOWN_MESSAGE_KEYS = {
    "openai": {"role", "content", "tool_calls", "tool_call_id", "name", "refusal"},
    "anthropic": {"role", "content"},
}


class Losses:
    """What an import could not carry over, counted by kind: one warning line at the end."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def add(self, what: str, n: int = 1) -> None:
        if n:
            self.counts[what] += n

    def warnings(self) -> list[str]:
        if not self.counts:
            return []
        listed = "; ".join(f"{n} × {what}" for what, n in sorted(self.counts.items()))
        return [f"not carried over into the fixture: {listed}"]


def detect(doc: Any) -> str | None:
    """Which format a logged body or message list is plainly in: 'openai', 'anthropic', or None."""
    body = {"messages": doc} if isinstance(doc, list) else doc
    if not isinstance(body, dict):
        return None
    signs = {"openai": 0, "anthropic": 0}
    if "system" in body:
        signs["anthropic"] += 1
    tools, messages = body.get("tools"), body.get("messages")
    for t in tools if isinstance(tools, list) else []:
        if isinstance(t, dict) and "input_schema" in t:
            signs["anthropic"] += 1
        elif isinstance(t, dict) and "function" in t:
            signs["openai"] += 1
    for m in messages if isinstance(messages, list) else []:
        if not isinstance(m, dict):
            continue
        if m.get("role") in ("system", "developer", "tool") or "tool_calls" in m or "tool_call_id" in m:
            signs["openai"] += 1
        content = m.get("content")
        for part in content if isinstance(content, list) else []:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind in ("tool_use", "tool_result", "image", "document", "thinking", "redacted_thinking"):
                signs["anthropic"] += 1
            elif kind in ("image_url", "input_audio", "file"):
                signs["openai"] += 1
    if signs["openai"] and not signs["anthropic"]:
        return "openai"
    if signs["anthropic"] and not signs["openai"]:
        return "anthropic"
    return None


def choose_dialect(doc: Any, requested: str | None) -> str:
    """`--from` is optional; a log plainly in the other format is refused, naming the right one."""
    found = detect(doc)
    if requested is None:
        return found or "openai"  # a plain list of user/assistant texts reads the same either way
    if found is not None and found != requested:
        raise InputError(f"this looks like an {found} log, not {requested}: use --from {found} (or leave --from out)")
    return requested


@dataclass
class Event:
    role: str  # user | assistant | tool
    text: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)  # {id, name, args}
    call_id: str | None = None
    images: list[tuple[str, str]] = field(default_factory=list)  # (mime, base64)


def text_of(content: Any, at: str, losses: Losses) -> tuple[str, list[tuple[str, str]]]:
    """Text and images of an OpenAI or Anthropic content value; what cannot be kept is counted."""
    if content is None:
        return "", []
    if isinstance(content, str):
        return content, []
    if not isinstance(content, list):
        raise InputError(f"{at}: expected a string or a list of content parts, got {kind_of(content)}")
    texts: list[str] = []
    images: list[tuple[str, str]] = []
    for n, part in enumerate(content):
        if not isinstance(part, dict):
            raise InputError(f"{at}/{n}: expected a content part (an object), got {kind_of(part)}")
        kind = part.get("type")
        if kind == "text":
            text = part.get("text", "")
            if not isinstance(text, str):
                raise InputError(f"{at}/{n}/text: expected a string, got {kind_of(text)}")
            texts.append(text)
        elif kind == "image_url":
            url = (part.get("image_url") or {}).get("url", "") if isinstance(part.get("image_url"), dict) else ""
            head, sep, data = str(url).partition(";base64,")
            if sep and head.startswith("data:"):
                images.append((head[5:], data))
            else:
                losses.add("image given by URL (ctxkit works offline; embed it as a data URL)")
        elif kind == "image" and isinstance(part.get("source"), dict):
            src = part["source"]
            if src.get("type") == "base64":
                images.append((str(src.get("media_type", "")), str(src.get("data", ""))))
            else:
                losses.add(f"image with a {src.get('type')!r} source (only base64 images are carried over)")
        else:
            losses.add(f"content part of type {str(kind)!r}")
    if len(texts) > 1:
        losses.add("content of several text parts (sent as one text, joined by newlines)")
    return "\n".join(texts), images


def kind_of(value: Any) -> str:
    names = {bool: "a boolean", int: "a number", float: "a number", dict: "an object", list: "a list", str: "a string"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


class _Duplicate(ValueError):
    pass


class _Unwritable(ValueError):
    pass


def _strict_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Duplicate(key)
            seen.add(key)
    return out


def _finite(token: str) -> float:
    value = float(token)
    if value in (float("inf"), float("-inf")):
        raise _Unwritable(f"the number {token} is out of range")
    return value


def _args(raw: Any, at: str) -> Any:
    """A call's arguments: the JSON in an argument string, read as strictly as the log itself
    (errors name the log's own JSON pointer); a string that is not JSON is kept as text."""
    value = raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw, object_pairs_hook=_strict_object, parse_float=_finite, parse_constant=_not_json)
        except RecursionError:
            raise InputError(f"{at}: nested more than {MAX_ARGS_DEPTH} levels deep") from None
        except _Duplicate as exc:
            raise InputError(f"{at}: duplicate key {exc.args[0]!r} in the arguments JSON") from None
        except _Unwritable as exc:
            raise InputError(f"{at}: {exc.args[0]} in the arguments JSON") from None
        except ValueError:
            return raw  # not JSON (NaN included): kept as the text it is
    if _depth(value) > MAX_ARGS_DEPTH:
        raise InputError(f"{at}: nested more than {MAX_ARGS_DEPTH} levels deep")
    if _has_surrogate(value):
        raise InputError(f"{at}: a lone surrogate in the arguments JSON: the text is not valid Unicode")
    return value


def _not_json(token: str) -> Any:
    raise ValueError(token)


def _has_surrogate(value: Any) -> bool:
    """A text in parsed arguments holding a lone surrogate (`\\ud800` escaped inside the string)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if any("\ud800" <= c <= "\udfff" for c in item):
                return True
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if deepest > MAX_ARGS_DEPTH:
            break
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
    return deepest


def _extra_keys(m: dict[str, Any], known: set[str], losses: Losses, what: str) -> None:
    for key in sorted(set(m) - known):
        losses.add(f"{what} field {key!r}")


def openai_events(messages: list[Any], losses: Losses | None = None) -> tuple[str | None, list[Event]]:
    losses = losses if losses is not None else Losses()
    system: list[str] = []
    events: list[Event] = []
    for n, m in enumerate(messages):
        at = f"/messages/{n}"
        if not isinstance(m, dict) or "role" not in m:
            raise InputError(f"{at}: not a chat message (no role)")
        role = m["role"]
        _extra_keys(m, KNOWN_MESSAGE_KEYS["openai"], losses, "message")
        text, images = text_of(m.get("content"), f"{at}/content", losses)
        if images and role != "user":
            losses.add(f"image in a {role} message")
        if role in ("system", "developer"):
            if events:
                losses.add(f"{role} message after the conversation started (sent with the system prompt)")
            elif system:
                losses.add(f"{role} message after another (joined into one system prompt)")
            system.append(text)
        elif role == "user":
            events.append(Event("user", text, images=images))
        elif role == "assistant":
            if m.get("refusal"):
                text = text or str(m["refusal"])
            raw_calls = m.get("tool_calls") or []
            if not isinstance(raw_calls, list):
                raise InputError(f"{at}/tool_calls: expected a list, got {kind_of(raw_calls)}")
            calls = [_openai_call(c, f"{at}/tool_calls/{i}") for i, c in enumerate(raw_calls)]
            events.append(Event("assistant", text, calls))
        elif role == "tool":
            if "tool_call_id" not in m:
                raise InputError(f"{at}: a tool message without tool_call_id")
            events.append(Event("tool", text, call_id=str(m["tool_call_id"])))
        else:
            raise InputError(f"{at}/role: unsupported role {role!r}")
    return ("\n\n".join(system) if system else None), events


def _openai_call(c: Any, at: str) -> dict[str, Any]:
    fn = c.get("function") if isinstance(c, dict) else None
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
        raise InputError(f"{at}: expected a function call with a name")
    if "id" not in c:
        raise InputError(f"{at}: a tool call without an id")
    raw = fn.get("arguments", "{}")
    out = {"id": str(c["id"]), "name": fn["name"], "args": _args(raw, f"{at}/function/arguments")}
    rewritten = json.dumps(out["args"], ensure_ascii=False)  # as translation writes args (R-TR-1)
    if isinstance(raw, str) and not isinstance(out["args"], str) and rewritten != raw:
        out["args_text"] = raw  # R-FIX-7: sent again as the model wrote it
    return out


def anthropic_events(messages: list[Any], losses: Losses | None = None) -> list[Event]:
    """A logged Anthropic request's messages → events: an assistant message is one event (its text
    and tool calls), a user message one event per tool result and one for the rest."""
    losses = losses if losses is not None else Losses()
    events: list[Event] = []
    for n, m in enumerate(messages):
        at = f"/messages/{n}"
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            raise InputError(f"{at}/role: expected 'user' or 'assistant'")
        _extra_keys(m, KNOWN_MESSAGE_KEYS["anthropic"], losses, "message")
        blocks = _anthropic_blocks(m.get("content"), at)
        if m["role"] == "assistant":
            events.append(_anthropic_assistant(blocks, at, losses))
        else:
            events += _anthropic_user(blocks, at, losses)
    return events


def _anthropic_blocks(content: Any, at: str) -> list[dict[str, Any]]:
    """A message's content as blocks (a string is one text block)."""
    if isinstance(content, str) or content is None:
        return [{"type": "text", "text": content or ""}]
    if not isinstance(content, list):
        raise InputError(f"{at}/content: expected a string or a list of blocks, got {kind_of(content)}")
    for i, b in enumerate(content):
        if not isinstance(b, dict):
            raise InputError(f"{at}/content/{i}: expected a block (an object), got {kind_of(b)}")
    return content


def _anthropic_assistant(blocks: list[dict[str, Any]], at: str, losses: Losses) -> Event:
    """An assistant message: its `tool_use` blocks are its calls, the other blocks its text."""
    calls = []
    for i, b in enumerate(blocks):
        if b.get("type") != "tool_use":
            continue
        if not isinstance(b.get("name"), str) or not b["name"] or "id" not in b:
            raise InputError(f"{at}/content/{i}: a tool_use block needs an id and a name")
        calls.append(
            {"id": str(b["id"]), "name": b["name"], "args": _args(b.get("input", {}), f"{at}/content/{i}/input")}
        )
    text, images = text_of([b for b in blocks if b.get("type") != "tool_use"], f"{at}/content", losses)
    if images:
        losses.add("image in an assistant message", len(images))
    return Event("assistant", text, calls)


def _anthropic_user(blocks: list[dict[str, Any]], at: str, losses: Losses) -> list[Event]:
    """A user message: each `tool_result` block is a tool event, in order; the other blocks, one
    user event after them."""
    events: list[Event] = []
    rest = []
    for i, b in enumerate(blocks):
        if b.get("type") != "tool_result":
            rest.append(b)
            continue
        if "tool_use_id" not in b:
            raise InputError(f"{at}/content/{i}: a tool_result block without tool_use_id")
        result, images = text_of(b.get("content"), f"{at}/content/{i}/content", losses)
        if images:
            losses.add("image in a tool result", len(images))
        events.append(Event("tool", result, call_id=str(b["tool_use_id"])))
    if rest:
        text, images = text_of(rest, f"{at}/content", losses)
        events.append(Event("user", text, images=images))
    return events
