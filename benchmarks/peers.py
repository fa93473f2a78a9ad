"""The peers ctxkit is compared with, fed the same message history and budget.

Input: a fixture document (the parsed JSON) and ctxkit's system prompt text. Output:
the history as OpenAI-style chat messages — system, each attached text file as its own
user message (`File: …`), user texts, assistant tool-call messages with every result in
full as a tool message, assistant answers, then the in-flight loop — and timed trims:

* `langchain_core.messages.trim_messages(strategy="last", include_system=True,
  start_on="human")`, its token counter counting message contents with tiktoken;
* `litellm.utils.trim_messages(model="gpt-3.5-turbo", max_tokens=…)` (cl100k);
* counting every content once with tiktoken `encode_ordinary` (the floor of any
  tool that must count the whole history).

tiktoken's cl100k_base is built from ctxkit's verified offline rank file (tiktoken
itself would try to download it).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

Message = dict[str, Any]


def chat_messages(doc: dict[str, Any], system: str) -> list[Message]:
    files = {str(f["id"]): f for f in doc.get("files", [])}
    out: list[Message] = [{"role": "system", "content": system}]
    for m in doc["messages"]:
        if m["role"] == "user":
            for fid in m.get("files", []):
                f = files[str(fid)]
                if f["kind"] == "text":
                    out.append({"role": "user", "content": f"File: {f['name']}\n{f['text']}\nEnd of File"})
            out.append({"role": "user", "content": m["text"]})
            continue
        calls = m.get("tool_calls", [])
        for turn in sorted({c.get("turn", 0) for c in calls}):
            group = [c for c in calls if c.get("turn", 0) == turn]
            out.append({"role": "assistant", "content": "", "tool_calls": [_call(c) for c in group]})
            out += [{"role": "tool", "tool_call_id": c["id"], "content": c.get("response") or ""} for c in group]
        if m.get("text"):
            out.append({"role": "assistant", "content": m["text"]})
    for m in doc.get("in_flight", []):
        if m["role"] == "tool":
            out.append({"role": "tool", "tool_call_id": m["tool_call_id"], "content": m["text"]})
        else:
            out.append(
                {
                    "role": "assistant",
                    "content": m.get("text", ""),
                    "tool_calls": [_call(c) for c in m.get("tool_calls", [])],
                }
            )
    return out


def _call(c: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": c["id"],
        "type": "function",
        "function": {"name": c["name"], "arguments": json.dumps(c["args"], ensure_ascii=False)},
    }


def encoding() -> Any:
    from ctxkit.counting.tokens import _load_encoding, _ranks

    return _load_encoding("cl100k_base", _ranks("cl100k_base"))


def count_everything(messages: list[Message]) -> Callable[[], int]:
    """Prepared once; the returned callable is what gets timed."""
    enc = encoding()
    texts = [m["content"] for m in messages] + [
        c["function"]["arguments"] for m in messages for c in m.get("tool_calls", ())
    ]

    def run() -> int:
        return sum(len(enc.encode_ordinary(t)) for t in texts)

    return run


def langchain(messages: list[Message], budget: int) -> Callable[[], int]:
    from langchain_core.messages import BaseMessage, convert_to_messages, trim_messages

    enc = encoding()
    converted = convert_to_messages(messages)

    def counter(ms: list[BaseMessage]) -> int:
        return sum(len(enc.encode_ordinary(m.content)) for m in ms if isinstance(m.content, str))

    def run() -> int:
        kept = trim_messages(
            converted, max_tokens=budget, strategy="last", token_counter=counter, include_system=True, start_on="human"
        )
        return len(kept)

    return run


def langchain_build(messages: list[Message]) -> Callable[[], int]:
    """Building langchain's message objects from the dicts (outside its trim timing)."""
    from langchain_core.messages import convert_to_messages

    return lambda: len(convert_to_messages(messages))


def litellm(messages: list[Message], budget: int) -> Callable[[], int]:
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # no network fetch of the cost map
    from litellm.utils import trim_messages

    def run() -> int:
        return len(trim_messages(messages, model="gpt-3.5-turbo", max_tokens=budget))

    return run


def litellm_count(messages: list[Message]) -> Callable[[], int]:
    """LiteLLM's token_counter on the same messages (its counting feature, cl100k for gpt-4)."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    from litellm import token_counter

    return lambda: int(token_counter(model="gpt-4", messages=messages))
