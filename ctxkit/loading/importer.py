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
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ctxkit.errors import InputError
from ctxkit.loading import models

DEFAULT_MODELS = {"openai": "gpt-4o", "anthropic": "claude-sonnet-4-5"}
MAX_ARGS_DEPTH = 100  # the fixture format's limit on nested tool arguments
# Request fields that shape the reply, not the context: not part of a fixture, never warned about.
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
        "parallel_tool_calls",
        "tool_choice",
        "response_format",
        "reasoning_effort",
        "thinking",
        "logit_bias",
    }
)
KNOWN_MESSAGE_KEYS = {
    "openai": {"role", "content", "tool_calls", "tool_call_id", "name", "refusal"},
    "anthropic": {"role", "content"},
}
KNOWN_BLOCK_KEYS = {
    "type",
    "text",
    "image_url",
    "source",
    "id",
    "name",
    "input",
    "tool_use_id",
    "content",
    "cache_control",
    "is_error",
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
    for t in body.get("tools") or []:
        if isinstance(t, dict) and "input_schema" in t:
            signs["anthropic"] += 1
        elif isinstance(t, dict) and "function" in t:
            signs["openai"] += 1
    for m in body.get("messages") or []:
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


@dataclass
class Imported:
    document: dict[str, Any]
    warnings: list[str]
    comment: str | None  # the line flagging a defaulted model


def _text_of(content: Any, at: str, losses: Losses) -> tuple[str, list[tuple[str, str]]]:
    """Text and images of an OpenAI or Anthropic content value; what cannot be kept is counted."""
    if content is None:
        return "", []
    if isinstance(content, str):
        return content, []
    if not isinstance(content, list):
        raise InputError(f"{at}: expected a string or a list of content parts, got {_kind(content)}")
    texts: list[str] = []
    images: list[tuple[str, str]] = []
    for n, part in enumerate(content):
        if not isinstance(part, dict):
            raise InputError(f"{at}/{n}: expected a content part (an object), got {_kind(part)}")
        kind = part.get("type")
        if kind == "text":
            text = part.get("text", "")
            if not isinstance(text, str):
                raise InputError(f"{at}/{n}/text: expected a string, got {_kind(text)}")
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
    return "\n".join(texts), images


def _kind(value: Any) -> str:
    names = {bool: "a boolean", int: "a number", float: "a number", dict: "an object", list: "a list", str: "a string"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _args(raw: Any, at: str) -> Any:
    value = raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except RecursionError:
            raise InputError(f"{at}: nested more than {MAX_ARGS_DEPTH} levels deep") from None
        except ValueError:
            return raw  # not JSON: kept as the text it is
    if _depth(value) > MAX_ARGS_DEPTH:
        raise InputError(f"{at}: nested more than {MAX_ARGS_DEPTH} levels deep")
    return value


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
        text, images = _text_of(m.get("content"), f"{at}/content", losses)
        if images and role != "user":
            losses.add(f"image in a {role} message")
        if role in ("system", "developer"):
            system.append(text)
        elif role == "user":
            events.append(Event("user", text, images=images))
        elif role == "assistant":
            if m.get("refusal"):
                text = text or str(m["refusal"])
            raw_calls = m.get("tool_calls") or []
            if not isinstance(raw_calls, list):
                raise InputError(f"{at}/tool_calls: expected a list, got {_kind(raw_calls)}")
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
    return {
        "id": str(c["id"]),
        "name": fn["name"],
        "args": _args(fn.get("arguments", "{}"), f"{at}/function/arguments"),
    }


def anthropic_events(messages: list[Any], losses: Losses | None = None) -> list[Event]:
    losses = losses if losses is not None else Losses()
    events: list[Event] = []
    for n, m in enumerate(messages):
        at = f"/messages/{n}"
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            raise InputError(f"{at}/role: expected 'user' or 'assistant'")
        _extra_keys(m, KNOWN_MESSAGE_KEYS["anthropic"], losses, "message")
        content = m.get("content")
        if isinstance(content, str) or content is None:
            blocks: list[Any] = [{"type": "text", "text": content or ""}]
        elif isinstance(content, list):
            blocks = content
        else:
            raise InputError(f"{at}/content: expected a string or a list of blocks, got {_kind(content)}")
        for i, b in enumerate(blocks):
            if not isinstance(b, dict):
                raise InputError(f"{at}/content/{i}: expected a block (an object), got {_kind(b)}")
        if m["role"] == "assistant":
            calls = []
            for i, b in enumerate(blocks):
                if b.get("type") != "tool_use":
                    continue
                if not isinstance(b.get("name"), str) or not b["name"] or "id" not in b:
                    raise InputError(f"{at}/content/{i}: a tool_use block needs an id and a name")
                calls.append(
                    {
                        "id": str(b["id"]),
                        "name": b["name"],
                        "args": _args(b.get("input", {}), f"{at}/content/{i}/input"),
                    }
                )
            text, images = _text_of([b for b in blocks if b.get("type") != "tool_use"], f"{at}/content", losses)
            if images:
                losses.add("image in an assistant message", len(images))
            events.append(Event("assistant", text, calls))
            continue
        rest = []
        for i, b in enumerate(blocks):
            if b.get("type") == "tool_result":
                if "tool_use_id" not in b:
                    raise InputError(f"{at}/content/{i}: a tool_result block without tool_use_id")
                result, images = _text_of(b.get("content"), f"{at}/content/{i}/content", losses)
                if images:
                    losses.add("image in a tool result", len(images))
                events.append(Event("tool", result, call_id=str(b["tool_use_id"])))
            else:
                rest.append(b)
        if rest:
            text, images = _text_of(rest, f"{at}/content", losses)
            events.append(Event("user", text, images=images))
    return events


def build(doc: Any, dialect: str | None, *, model: str | None = None, max_input_tokens: int | None = None) -> Imported:
    """The fixture for a logged body or message list; `dialect` None means: recognise it."""
    body = {"messages": doc} if isinstance(doc, list) else doc
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        raise InputError("expected a request body with `messages`, or a message list")
    _check_text(doc)
    dialect = choose_dialect(doc, dialect)
    losses = Losses()
    if dialect == "openai":
        system, events = openai_events(body["messages"], losses)
    else:
        events = anthropic_events(body["messages"], losses)
        system = None
        if body.get("system") is not None:
            system, images = _text_of(body["system"], "/system", losses)
            losses.add("image in the system prompt", len(images))
    known = {"model", "messages", "tools"} | ({"system"} if dialect == "anthropic" else set())
    for key in sorted(set(body) - known - SAMPLING_FIELDS):
        losses.add(f"request field {key!r}")
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
    messages, in_flight = _stored(events, files, warnings, losses)
    fixture: dict[str, Any] = {"ctxkit": 1, "model": {"provider": provider, "name": str(name)}}
    if max_input_tokens is not None:
        fixture["model"]["max_input_tokens"] = max_input_tokens
    if system is not None:
        fixture["prompts"] = {"system": system, "datetime_aware": False}
    raw_tools = body.get("tools") or []
    if not isinstance(raw_tools, list):
        raise InputError(f"/tools: expected a list, got {_kind(raw_tools)}")
    tools = _tools(raw_tools, dialect, losses)
    if tools:
        fixture["tools"] = tools
    if files:
        fixture["files"] = files
    fixture["messages"] = messages
    if in_flight:
        fixture["in_flight"] = in_flight
    return Imported(fixture, warnings + losses.warnings(), comment)


def _check_text(doc: Any) -> None:
    """A lone surrogate (`"\\ud800"`) is not text a fixture can hold: refuse it, naming where."""
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:
        value, at = stack.pop()
        if isinstance(value, str):
            if any("\ud800" <= c <= "\udfff" for c in value):
                raise InputError(f"{at or '/'}: a lone surrogate: the text is not valid Unicode")
        elif isinstance(value, dict):
            for k, v in value.items():
                key = str(k).replace("~", "~0").replace("/", "~1")
                stack.append((k, f"{at}/{key}"))
                stack.append((v, f"{at}/{key}"))
        elif isinstance(value, list):
            stack.extend((v, f"{at}/{n}") for n, v in enumerate(value))


def _tools(raw: list[Any], dialect: str, losses: Losses) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    seen: set[str] = set()
    for n, t in enumerate(raw):
        tool = _tool(t, dialect) if isinstance(t, dict) else None
        if tool is None:
            raise InputError(f"/tools/{n}: expected a tool definition with a name")
        if tool["name"] in seen:
            losses.add("repeated tool definition")
            continue
        seen.add(tool["name"])
        tools.append(tool)
    return tools


def _tool(t: dict[str, Any], dialect: str) -> dict[str, Any] | None:
    fn = t.get("function", t) if dialect == "openai" else t
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
        return None
    out: dict[str, Any] = {"name": fn["name"]}
    if isinstance(fn.get("description"), str):
        out["description"] = fn["description"]
    params = fn.get("parameters") if dialect == "openai" else fn.get("input_schema")
    if isinstance(params, dict):
        out["parameters"] = params
    return out


def _stored(
    events: list[Event], files: list[dict[str, Any]], warnings: list[str], losses: Losses
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
            messages.append(_user(e, len(messages) + 1, files, losses))
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
            _attach_result(pending, e, losses)
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
    return messages, _in_flight(events[last_user + 1 :], losses)


def _user(e: Event, n: int, files: list[dict[str, Any]], losses: Losses) -> dict[str, Any]:
    m: dict[str, Any] = {"id": f"m{n}", "role": "user", "text": e.text}
    ids = []
    for k, (mime, data) in enumerate(e.images):
        try:
            base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            losses.add("image whose base64 data cannot be decoded")
            continue
        fid = f"m{n}-image-{k + 1}"
        ext = mime.split("/")[-1] if "/" in mime else "bin"
        files.append({"id": fid, "name": f"{fid}.{ext}", "kind": "image", "data": data})
        ids.append(fid)
    if ids:
        m["files"] = ids
    return m


def _attach_result(pending: dict[str, Any] | None, e: Event, losses: Losses) -> None:
    calls = pending["tool_calls"] if pending else []
    for c in calls:  # the earliest call with that id still waiting for its result
        if c["id"] == e.call_id and "response" not in c:
            c["response"] = e.text
            return
    losses.add("tool result that answers no earlier call")


def _in_flight(events: list[Event], losses: Losses) -> list[dict[str, Any]]:
    """This turn's loop; a repeated call id is renamed (`id~2`) so each result finds its call."""
    answered = Counter(e.call_id for e in events if e.role == "tool")
    waiting: dict[str, list[str]] = {}  # logged id -> fixture ids waiting for a result, oldest first
    used: set[str] = set()
    out: list[dict[str, Any]] = []
    for e in events:
        if e.role == "assistant":
            calls = []
            for c in e.calls:
                if answered[c["id"]] <= 0:
                    losses.add("in-flight tool call without a result (a model is never called with one)")
                    continue
                answered[c["id"]] -= 1
                new_id, k = c["id"], 1
                while new_id in used:
                    k += 1
                    new_id = f"{c['id']}~{k}"
                if new_id != c["id"]:
                    losses.add("repeated in-flight call id (renamed with a ~N suffix)")
                used.add(new_id)
                waiting.setdefault(c["id"], []).append(new_id)
                calls.append({"id": new_id, "name": c["name"], "args": c["args"]})
            if not calls and not e.text:
                continue
            m: dict[str, Any] = {"role": "assistant"}
            if e.text:
                m["text"] = e.text
            if calls:
                m["tool_calls"] = calls
            out.append(m)
        elif e.role == "tool":
            queue = waiting.get(e.call_id or "")
            if not queue:
                losses.add("in-flight tool result that answers no call")
                continue
            out.append({"role": "tool", "tool_call_id": queue.pop(0), "text": e.text})
    return out
