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
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ctxkit.errors import InputError
from ctxkit.loading import models
from ctxkit.loading.log_formats import (
    SAMPLING_FIELDS,
    Event,
    Losses,
    anthropic_events,
    choose_dialect,
    kind_of,
    openai_events,
    text_of,
)
from ctxkit.loading.refs import BUILT_FIELDS

DEFAULT_MODELS = {"openai": "gpt-4o", "anthropic": "claude-sonnet-4-5"}


@dataclass
class Imported:
    document: dict[str, Any]
    warnings: list[str]
    comment: str | None  # the line flagging a defaulted model


def build(doc: Any, dialect: str | None, *, model: str | None = None, max_input_tokens: int | None = None) -> Imported:
    """The fixture for a logged body or message list; `dialect` None means: recognise it."""
    body = {"messages": doc} if isinstance(doc, list) else doc
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        raise InputError("expected a request body with `messages`, or a message list")
    _check_text(doc)
    dialect = choose_dialect(doc, dialect)
    losses = Losses()
    system, events = _system_and_events(body, dialect, losses)
    carried = _carried_fields(body, dialect, losses)
    name, comment = _model_name(body, dialect, model)
    if max_input_tokens is None and models.lookup(dialect, name) is None:
        raise InputError(f"model {name!r} is not in the built-in model table: pass --max-input-tokens")
    warnings: list[str] = []
    files: list[dict[str, Any]] = []
    messages, in_flight = _stored(events, files, warnings, losses)
    fixture: dict[str, Any] = {"ctxkit": 1, "model": _model_fields(body, dialect, name, max_input_tokens)}
    fixture["settings"] = _settings(body, dialect, carried, losses)
    # The logged prompt exactly: "" is no system message (R-SYS-5), and no date line.
    fixture["prompts"] = {"system": system or "", "datetime_aware": False}
    raw_tools = body.get("tools") or []
    if not isinstance(raw_tools, list):
        raise InputError(f"/tools: expected a list, got {kind_of(raw_tools)}")
    tools = _tools(raw_tools, dialect, losses)
    if tools:
        fixture["tools"] = tools
    if files:
        fixture["files"] = files
    fixture["messages"] = messages
    if in_flight:
        fixture["in_flight"] = in_flight
    return Imported(fixture, warnings + losses.warnings(), comment)


def _system_and_events(body: dict[str, Any], dialect: str, losses: Losses) -> tuple[str | None, list[Event]]:
    """The system prompt (OpenAI's system messages, Anthropic's `system` field) and the
    conversation as events."""
    if dialect == "openai":
        return openai_events(body["messages"], losses)
    events = anthropic_events(body["messages"], losses)
    if body.get("system") is None:
        return None, events
    system, images = text_of(body["system"], "/system", losses)
    losses.add("image in the system prompt", len(images))
    return system, events


def _carried_fields(body: dict[str, Any], dialect: str, losses: Losses) -> dict[str, Any]:
    """R-FIX-7: the body's other fields, sent again as written; a field ctxkit builds itself
    (`max_tokens`, `system` of an OpenAI body, …) cannot be carried and is counted as lost."""
    known = {"model", "messages", "tools"} | ({"system"} if dialect == "anthropic" else set())
    carried: dict[str, Any] = {}
    for key in [k for k in body if k not in known and k not in SAMPLING_FIELDS]:
        if key in BUILT_FIELDS:
            losses.add(f"request field {key!r}")
        else:
            carried[key] = body[key]
    return carried


def _model_name(body: dict[str, Any], dialect: str, model: str | None) -> tuple[str, str | None]:
    """`--model`, else the body's model, else ctxkit's default for the dialect with a comment
    flagging it."""
    name = model or body.get("model")
    if name:
        return str(name), None
    name = DEFAULT_MODELS[dialect]
    return name, f"# model: the log names no model; {name} is ctxkit's default for {dialect} (pass --model to choose)"


def _model_fields(body: dict[str, Any], dialect: str, name: str, max_input_tokens: int | None) -> dict[str, Any]:
    """The fixture's `model`: the provider is the dialect; an Anthropic body's own
    `max_tokens` is sent again as the output reserve."""
    fields: dict[str, Any] = {"provider": dialect, "name": name}
    if max_input_tokens is not None:
        fields["max_input_tokens"] = max_input_tokens
    max_tokens = body.get("max_tokens")
    if dialect == "anthropic" and type(max_tokens) is int and max_tokens >= 1:
        fields["max_output_tokens"] = max_tokens
    return fields


def _settings(body: dict[str, Any], dialect: str, carried: dict[str, Any], losses: Losses) -> dict[str, Any]:
    """R-FIX-6: a recorded request; R-FIX-7: its other prompt fields. An Anthropic log with no
    block-level `cache_control` had no breakpoint, so ctxkit adds none either (R-TR-8)."""
    settings: dict[str, Any] = {"as_logged": True}
    if dialect == "anthropic":
        marks = _cache_marks(body.get("system")) + sum(_cache_marks(m) for m in body["messages"] if isinstance(m, dict))
        losses.add("cache_control on a content block (the fixture's breakpoint is ctxkit's own, R-TR-8)", marks)
        if not marks:
            settings["prompt_cache"] = False
    if carried:
        settings["request_fields"] = carried
    return settings


def _cache_marks(value: Any) -> int:
    """Content blocks carrying `cache_control` in an Anthropic `system` or message."""
    blocks = value.get("content") if isinstance(value, dict) else value
    if not isinstance(blocks, list):
        return 0
    found = 0
    for b in blocks:
        if isinstance(b, dict):
            found += "cache_control" in b
            found += _cache_marks(b.get("content")) if b.get("type") == "tool_result" else 0
    return found


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
        tool = _tool(t, dialect, losses) if isinstance(t, dict) else None
        if tool is None:
            raise InputError(f"/tools/{n}: expected a tool definition with a name")
        for key in _tool_wrapper_extras(t, dialect):
            losses.add(f"tool definition field {key!r}")
        if tool["name"] in seen:
            losses.add("repeated tool definition")
            continue
        seen.add(tool["name"])
        tools.append(tool)
    return tools


def _tool_wrapper_extras(t: dict[str, Any], dialect: str) -> list[str]:
    """Fields of OpenAI's `{"type": "function", "function": …}` wrapper a fixture cannot hold."""
    if dialect == "anthropic" or "function" not in t:
        return []
    outer = sorted(set(t) - {"type", "function"})
    return ["type", *outer] if t.get("type") != "function" else outer


def _tool(t: dict[str, Any], dialect: str, losses: Losses) -> dict[str, Any] | None:
    """A definition: name, description, parameters, and its other fields (`strict`, a server
    tool's `type`, `cache_control`, …) as request fields sent again as written (R-FIX-7)."""
    fn = t.get("function", t) if dialect == "openai" else t
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
        return None
    out: dict[str, Any] = {"name": fn["name"]}
    params_key = "parameters" if dialect == "openai" else "input_schema"
    for key in ("description", params_key):
        wanted = str if key == "description" else dict
        if isinstance(fn.get(key), wanted):
            out["description" if key == "description" else "parameters"] = fn[key]
        elif key in fn:
            losses.add(f"tool definition field {key!r} of another type")
    fields = {k: v for k, v in fn.items() if k not in ("name", "description", params_key)}
    if dialect == "openai" and fn is t:
        fields.pop("type", None)  # a flat OpenAI definition
    if fields:
        out["request_fields"] = fields
    return out


def _stored(
    events: list[Event], files: list[dict[str, Any]], warnings: list[str], losses: Losses
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The events up to the last user message as stored messages; the rest as `in_flight`."""
    last_user = max((i for i, e in enumerate(events) if e.role == "user"), default=None)
    if last_user is None:
        raise InputError("the log has no user message: there is nothing to answer")
    history = _History(files, losses)
    for e in events[: last_user + 1]:
        history.add(e)
    messages = history.close()
    if history.dropped_texts:
        warnings.append(
            f"{history.dropped_texts} assistant text(s) written beside tool calls were "
            "left out: a later answer in the same run is the stored text"
        )
    return messages, _in_flight(events[last_user + 1 :], losses)


@dataclass
class _Run:
    """Assistant events calling tools, one after another: one stored message whose calls carry
    their round (`turn`, 0 by default and then not written) and their results (`response`)."""

    id: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    side_texts: list[str] = field(default_factory=list)  # texts written beside the calls
    rounds: int = 0

    def add_round(self, e: Event) -> None:
        self.calls += [{**c, "turn": self.rounds} if self.rounds else {**c} for c in e.calls]
        self.rounds += 1
        if e.text:
            self.side_texts.append(e.text)

    def answer(self, e: Event) -> bool:
        """A tool result answers the earliest call with its id still waiting for one."""
        for c in self.calls:
            if c["id"] == e.call_id and "response" not in c:
                c["response"] = e.text
                return True
        return False

    def message(self, answer: str | None) -> dict[str, Any]:
        """The stored message: an answer that ends the run is its text; a run without one
        (the user spoke next) keeps the texts written beside its calls."""
        text = "\n\n".join(self.side_texts) if answer is None else answer
        return {"id": self.id, "role": "assistant", "text": text, "tool_calls": self.calls}


@dataclass
class _History:
    """Stored messages in the log's order: users, answers, and tool-calling runs."""

    files: list[dict[str, Any]]
    losses: Losses
    messages: list[dict[str, Any]] = field(default_factory=list)
    run: _Run | None = None
    dropped_texts: int = 0  # side texts replaced by the answer that ended their run

    def add(self, e: Event) -> None:
        if e.role == "user":
            self._end_run(None)
            self.messages.append(_user(e, len(self.messages) + 1, self.files, self.losses))
        elif e.role == "assistant" and e.calls:
            if self.run is None:
                self.run = _Run(self._next_id())
            self.run.add_round(e)
        elif e.role == "assistant" and self.run is not None:
            self._end_run(e.text)
        elif e.role == "assistant":
            self.messages.append({"id": self._next_id(), "role": "assistant", "text": e.text})
        elif self.run is None or not self.run.answer(e):
            self.losses.add("tool result that answers no earlier call")

    def close(self) -> list[dict[str, Any]]:
        self._end_run(None)
        return self.messages

    def _next_id(self) -> str:
        return f"m{len(self.messages) + 1}"

    def _end_run(self, answer: str | None) -> None:
        if self.run is None:
            return
        if answer is not None:
            self.dropped_texts += len(self.run.side_texts)
        self.messages.append(self.run.message(answer))
        self.run = None


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
                calls.append({**c, "id": new_id})
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
