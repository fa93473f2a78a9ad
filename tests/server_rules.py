"""Rules a provider's server enforces that its published schema cannot express.

`check(provider, body)` returns one line per violation (empty when the body
would be accepted). Sources: the providers' API documentation and their
documented error messages (Anthropic "tool_use ids were found without
tool_result blocks immediately after", Gemini "the number of function response
parts is equal to the number of function call parts", OpenAI "messages with role
'tool' must be a response to a preceding message with 'tool_calls'").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
GEMINI_CALL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
GEMINI_DECLARATION_NAME = re.compile(r"^[a-zA-Z0-9_.:-]{1,128}$")
GEMINI_DATA_FIELDS = (
    "text",
    "inlineData",
    "functionCall",
    "functionResponse",
    "fileData",
    "executableCode",
    "codeExecutionResult",
    "toolCall",
    "toolResponse",
)
OLLAMA_CALL = re.compile(r"^\[Tool Call\] name=(\S*) id=(\S*) args=", re.MULTILINE)
OLLAMA_RESULT = re.compile(r"^\[Tool Result\] id=(\S*)\n")
MAX_CACHE_BREAKPOINTS = 4


def check(provider: str, body: dict[str, Any]) -> list[str]:
    rules: dict[str, Callable[[dict[str, Any]], list[str]]] = {
        "openai": openai,
        "azure": openai,
        "anthropic": anthropic,
        "gemini": gemini,
        "ollama": ollama,
    }
    return rules[provider](body)


# --- OpenAI / Azure --------------------------------------------------------------------


def openai(body: dict[str, Any]) -> list[str]:
    out: list[str] = []
    msgs = body.get("messages", [])
    pending: set[str] | None = None  # ids the current tool-message run may still answer
    for i, m in enumerate(msgs):
        role = m.get("role")
        if role == "tool":
            if pending is None or m.get("tool_call_id") not in pending:
                out.append(
                    f"/messages/{i}: tool message {m.get('tool_call_id')!r} does not "
                    "answer a call of the assistant message right before it"
                )
            else:
                pending.discard(m["tool_call_id"])
            continue
        if pending:
            out.append(f"/messages/{i}: calls {sorted(pending)} have no tool message before it")
        pending = None
        if role == "assistant":
            calls = m.get("tool_calls") or []
            if m.get("content") is None and not calls:
                out.append(f"/messages/{i}: assistant message with neither content nor calls")
            if calls:
                pending = {c["id"] for c in calls}
    if pending:
        out.append(f"/messages: the last calls {sorted(pending)} have no tool message")
    return out


# --- Anthropic -------------------------------------------------------------------------


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content or [])


def anthropic(body: dict[str, Any]) -> list[str]:
    out: list[str] = []
    msgs = body.get("messages", [])
    system = _blocks(body.get("system"))
    if not msgs or msgs[0].get("role") != "user":
        out.append("/messages/0: the first message must be a user message")
    breakpoints = sum(1 for b in system if b.get("cache_control"))
    breakpoints += sum(1 for t in body.get("tools", []) if t.get("cache_control"))
    for n, b in enumerate(system):
        if not str(b.get("text", "")).strip():
            out.append(f"/system/{n}: empty text block")
    seen_ids: set[str] = set()
    previous_calls: set[str] = set()
    uses_tools = False
    for i, m in enumerate(msgs):
        role, blocks = m.get("role"), _blocks(m.get("content"))
        where = f"/messages/{i}"
        if role not in ("user", "assistant"):
            out.append(f"{where}: role {role!r} (only user and assistant)")
        if i and role == msgs[i - 1].get("role"):
            out.append(f"{where}: two {role} messages in a row (roles must alternate)")
        if not blocks:
            out.append(f"{where}: empty content")
        breakpoints += sum(1 for b in blocks if b.get("cache_control"))
        out += _anthropic_texts(where, blocks)
        results = [b for b in blocks if b.get("type") == "tool_result"]
        uses_tools = uses_tools or bool(results)
        if results and role != "user":
            out.append(f"{where}: tool_result outside a user message")
        if blocks[: len(results)] != results:
            out.append(f"{where}: tool_result blocks must come first in their user message")
        answered = {b.get("tool_use_id") for b in results}
        for b in results:
            if b.get("tool_use_id") not in previous_calls:
                out.append(
                    f"{where}: tool_result {b.get('tool_use_id')!r} does not answer a "
                    "tool_use of the previous assistant message"
                )
        if previous_calls - answered:
            out.append(
                f"{where}: tool_use {sorted(previous_calls - answered)} of the previous "
                "message have no tool_result right after"
            )
        uses = [b for b in blocks if b.get("type") == "tool_use"]
        uses_tools = uses_tools or bool(uses)
        if uses and role != "assistant":
            out.append(f"{where}: tool_use outside an assistant message")
        previous_calls = set()
        for b in uses:
            ident = str(b.get("id"))
            if ident in seen_ids:
                out.append(f"{where}: tool_use id {ident!r} is not unique")
            seen_ids.add(ident)
            previous_calls.add(ident)
        for b in blocks:
            tool_id = b.get("id", b.get("tool_use_id"))
            if tool_id is not None and not ANTHROPIC_ID.match(str(tool_id)):
                out.append(f"{where}: tool id {tool_id!r} does not match {ANTHROPIC_ID.pattern}")
    if previous_calls:
        out.append(f"/messages: the last tool_use {sorted(previous_calls)} have no tool_result")
    if msgs and msgs[-1].get("role") == "assistant":
        last = _blocks(msgs[-1].get("content"))
        if last and last[-1].get("type") == "text" and last[-1]["text"] != last[-1]["text"].rstrip():
            out.append("/messages: a final assistant message cannot end with whitespace")
    if breakpoints > MAX_CACHE_BREAKPOINTS:
        out.append(f"{breakpoints} cache_control breakpoints (at most {MAX_CACHE_BREAKPOINTS})")
    if uses_tools and not body.get("tools"):
        out.append("/tools: tool_use or tool_result blocks in a request that defines no tools")
    names = [t.get("name") for t in body.get("tools", [])]
    if len(names) != len(set(names)):
        out.append("/tools: tool names must be unique")
    return out


def _anthropic_texts(where: str, blocks: list[dict[str, Any]]) -> list[str]:
    out = []
    for n, b in enumerate(blocks):
        if b.get("type") == "text" and not str(b.get("text", "")).strip():
            out.append(f"{where}/content/{n}: empty or whitespace-only text block")
    return out


# --- Gemini ----------------------------------------------------------------------------


def _kinds(parts: list[dict[str, Any]], field: str) -> list[dict[str, Any]]:
    return [p[field] for p in parts if field in p]


def gemini(body: dict[str, Any]) -> list[str]:
    out: list[str] = []
    contents = body.get("contents", [])
    if not contents:
        out.append("/contents: at least one content is required")
    for n, p in enumerate(body.get("systemInstruction", {}).get("parts", [])):
        if not p.get("text"):
            out.append(f"/systemInstruction/parts/{n}: a system part must be non-empty text")
    declared = {d.get("name") for t in body.get("tools", []) for d in t.get("functionDeclarations", [])}
    for name in declared:
        if not GEMINI_DECLARATION_NAME.match(str(name)):
            out.append(f"/tools: function name {name!r} is not allowed")
    previous: list[dict[str, Any]] = []  # the function calls of the previous model content
    for i, c in enumerate(contents):
        role, parts = c.get("role"), c.get("parts") or []
        where = f"/contents/{i}"
        if role not in ("user", "model"):
            out.append(f"{where}: role {role!r} (only user and model)")
        if i and role == contents[i - 1].get("role"):
            out.append(f"{where}: two {role} contents in a row (roles must alternate)")
        if not parts:
            out.append(f"{where}: a content needs at least one part")
        for n, p in enumerate(parts):
            data = [f for f in GEMINI_DATA_FIELDS if f in p]
            if len(data) != 1 or ("text" in p and not p["text"]):
                out.append(f"{where}/parts/{n}: a part carries exactly one non-empty datum")
        calls = _kinds(parts, "functionCall")
        responses = _kinds(parts, "functionResponse")
        if calls and (role != "model" or i == 0 or contents[i - 1].get("role") != "user"):
            out.append(f"{where}: a function call must follow a user or function-response turn")
        for call in calls:
            name = str(call.get("name"))
            if not GEMINI_CALL_NAME.match(name):
                out.append(f"{where}: function name {name!r} is not allowed")
            if name not in declared:
                out.append(f"{where}: function {name!r} is called but not declared in tools")
        if responses and role != "user":
            out.append(f"{where}: function responses belong in a user content")
        if previous and len(responses) != len(previous):
            out.append(
                f"{where}: {len(responses)} function response(s) for the "
                f"{len(previous)} call(s) of the previous content"
            )
        if responses and not previous:
            out.append(f"{where}: function responses without calls in the previous content")
        called = sorted(str(c.get("name")) for c in previous)
        if previous and sorted(str(r.get("name")) for r in responses) != called:
            out.append(f"{where}: function response names do not match the calls {called}")
        previous = calls
    if previous:
        out.append("/contents: the last function calls have no function responses")
    return out


# --- Ollama ----------------------------------------------------------------------------


def ollama(body: dict[str, Any]) -> list[str]:
    out: list[str] = []
    if body.get("stream") is not False:
        out.append("/stream: must be false (one JSON response, not a stream)")
    if not isinstance(body.get("options", {}).get("num_ctx"), int):
        out.append("/options/num_ctx: missing (Ollama would cut the prompt to its default)")
    called: set[str] = set()
    for i, m in enumerate(body.get("messages", [])):
        where = f"/messages/{i}"
        if m.get("role") == "tool" or "tool_calls" in m:
            out.append(f"{where}: tool history must be flattened to text")
        text = str(m.get("content", ""))
        if m.get("role") == "assistant":
            called.update(ident for _, ident in OLLAMA_CALL.findall(text))
        result = OLLAMA_RESULT.match(text)
        if result and m.get("role") == "user" and result.group(1) not in called:
            out.append(f"{where}: tool result {result.group(1)!r} answers no earlier call")
    return out
