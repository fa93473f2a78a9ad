"""Prompt items: a provider payload as the provider reads it, for cache comparison (R-RPL-4).

Input: a pipeline `Result` (payload body + its wire messages). Output: `Item`s in reading order —
the tool definitions (one item), then per provider each message (OpenAI, Azure, Ollama), each
system and content block (Anthropic) or `systemInstruction` and each part (Gemini). Identity is
the role plus the canonical JSON (sorted keys, no whitespace, no `cache_control`); tokens count
what the model reads, plus 3 tokens of framing and the role name on each message's first item.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ctxkit.counting.measure import dumps_args

if TYPE_CHECKING:
    from ctxkit.assembly.pipeline import Result

FRAMING = 3  # per message, and once for the reply priming (OpenAI's published chat overhead)
TOOLS = "tools"


@dataclass(frozen=True, slots=True)
class Item:
    key: str  # role + canonical JSON: equal keys are equal items
    tokens: int
    message: int  # index of the payload message it belongs to (-1: the tool definitions)
    source: int | None  # index of the wire (= assembled) message behind it; None: tools or a fix-up
    role: str
    breakpoint: bool = False  # Anthropic: the block carries `cache_control` (R-TR-8)


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def prompt_tokens(items: tuple[Item, ...]) -> int:
    """A call's prompt: its items plus the reply priming."""
    return sum(i.tokens for i in items) + FRAMING


class _Counter:
    """Token counts of item texts, memoized across calls (each distinct text counted once)."""

    def __init__(self, result: Result, memo: dict[str, int]) -> None:
        self.meter = result.assembly.meter
        self.memo = memo
        self.images = {
            p.b64: self.meter.image(p.image)
            for m in result.payload.prepared.messages
            for p in m.parts
            if p.image is not None and p.image.data is not None
        }

    def text(self, text: str) -> int:
        found = self.memo.get(text)
        if found is None:
            found = self.memo[text] = self.meter.text(text)
        return found

    def image(self, b64: str) -> int:
        return self.images.get(b64, 0)


def prompt_items(result: Result, memo: dict[str, int] | None = None) -> tuple[Item, ...]:
    body = result.payload.body
    counter = _Counter(result, {} if memo is None else memo)
    out: list[Item] = []
    if body.get("tools"):
        definitions = canonical(body["tools"])
        out.append(Item(TOOLS + "\x00" + definitions, counter.text(definitions), -1, None, TOOLS))
    provider = result.payload.provider
    builder = _PER_PROVIDER[provider]
    out.extend(builder(body, result.payload.prepared.origins, counter))
    return tuple(out)


def _item(
    role: str, value: Any, tokens: int, message: int, source: int | None, first: bool, c: _Counter, mark: bool = False
) -> Item:
    if first:
        tokens += FRAMING + c.text(role)
    return Item(role + "\x00" + canonical(value), tokens, message, source, role, mark)


# --- OpenAI, Azure, Ollama: one item per message --------------------------------------------


def _openai(body: dict[str, Any], origins: list[list[int]], c: _Counter) -> Iterator[Item]:
    for i, m in enumerate(body["messages"]):
        yield _item(m["role"], m, _openai_tokens(m, c), i, i, True, c)


def _openai_tokens(m: dict[str, Any], c: _Counter) -> int:
    content = m.get("content")
    total = 0
    if isinstance(content, str):
        total += c.text(content)
    elif isinstance(content, list):
        for part in content:
            if part.get("type") == "image_url":
                total += c.image(part["image_url"]["url"].partition(";base64,")[2])
            else:
                total += c.text(part.get("text", ""))
    for call in m.get("tool_calls", ()):
        total += c.text(call["function"]["name"]) + c.text(call["function"]["arguments"])
    return total


def _ollama(body: dict[str, Any], origins: list[list[int]], c: _Counter) -> Iterator[Item]:
    for i, m in enumerate(body["messages"]):
        tokens = c.text(m["content"]) + sum(c.image(b) for b in m.get("images", ()))
        yield _item(m["role"], m, tokens, i, i, True, c)


# --- Anthropic: each system block, each content block ---------------------------------------


def _without_cache_control(block: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "cache_control"}


def _anthropic_block(block: dict[str, Any], c: _Counter) -> int:
    kind = block.get("type")
    if kind == "text":
        return c.text(block["text"])
    if kind == "image":
        return c.image(block["source"].get("data", ""))
    if kind == "tool_use":
        return c.text(block["name"]) + c.text(dumps_args(block["input"]))
    if kind == "tool_result":
        content = block.get("content", "")
        return c.text(content) if isinstance(content, str) else 0
    return 0


def _anthropic(body: dict[str, Any], origins: list[list[int]], c: _Counter) -> Iterator[Item]:
    entries: list[tuple[str, list[dict[str, Any]]]] = []
    if body.get("system"):
        entries.append(("system", body["system"]))
    entries += [(m["role"], m["content"]) for m in body["messages"]]
    yield from _blocks(entries, origins, c, _anthropic_block, _without_cache_control)


def _blocks(
    entries: list[tuple[str, list[dict[str, Any]]]],
    origins: list[list[int]],
    c: _Counter,
    count: Callable[[dict[str, Any], _Counter], int],
    identity: Callable[[dict[str, Any]], Any],
) -> Iterator[Item]:
    for i, (role, blocks) in enumerate(entries):
        sources = origins[i] if i < len(origins) else []
        for j, block in enumerate(blocks):
            source = sources[j] if j < len(sources) and sources[j] >= 0 else None
            mark = "cache_control" in block
            yield _item(role, identity(block), count(block, c), i, source, j == 0, c, mark)


# --- Gemini: systemInstruction, then each part ----------------------------------------------


def _gemini_part(part: dict[str, Any], c: _Counter) -> int:
    if "text" in part:
        return c.text(part["text"])
    if "inlineData" in part:
        return c.image(part["inlineData"].get("data", ""))
    if "functionCall" in part:
        call = part["functionCall"]
        return c.text(call["name"]) + c.text(dumps_args(call.get("args", {})))
    if "functionResponse" in part:
        content = part["functionResponse"].get("response", {}).get("content", "")
        return c.text(content) if isinstance(content, str) else 0
    return 0


def _gemini(body: dict[str, Any], origins: list[list[int]], c: _Counter) -> Iterator[Item]:
    offset = 0
    if body.get("systemInstruction"):
        parts = body["systemInstruction"]["parts"]
        source = origins[0][0] if origins and origins[0] else None
        tokens = sum(_gemini_part(p, c) for p in parts)
        yield _item("system", body["systemInstruction"], tokens, 0, source, True, c)
        offset = 1
    entries = [(m["role"], m["parts"]) for m in body["contents"]]
    for item in _blocks(entries, origins[offset:], c, _gemini_part, lambda p: p):
        yield Item(item.key, item.tokens, item.message + offset, item.source, item.role, item.breakpoint)


_PER_PROVIDER: dict[str, Callable[[dict[str, Any], list[list[int]], _Counter], Iterator[Item]]] = {
    "openai": _openai,
    "azure": _openai,
    "ollama": _ollama,
    "anthropic": _anthropic,
    "gemini": _gemini,
}
