"""How a provider reads a request body: its messages in order, each item's texts and images (R-RPL-4).

Input: a body as ctxkit translates it or as a client sent it. Output: `messages(provider,
body)` — (role, items) per payload message in reading order, by the reader of the provider's
wire format (`READERS`; a format registered at run time brings its own, `register_reader`;
any other format's body is read as chat messages); `texts(item)` — the texts
the model reads of one item; `images(item)` — (base64 data or URL, OpenAI `detail`) per
image in it.

Shapes: OpenAI chat (`messages`; content a string or parts `text`/`image_url`), the
OpenAI Responses API (`instructions` as a system message, then `input`: a string or items
— messages with `input_text`/`output_text`/`input_image` parts, `function_call` read as an
assistant message with the call's name and arguments, `function_call_output` as a tool
message, other items such as `reasoning` as an assistant message with nothing to read),
Anthropic (`system`, then content blocks; a plain string is one text block; `thinking`
blocks are not read again once sent, so they count nothing), Gemini (`systemInstruction`,
then parts), Ollama (`messages`, `images`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ctxkit import providers
from ctxkit.counting.measure import dumps_args

_RESPONSES_ROLES = {"function_call": "assistant", "function_call_output": "tool"}
_TEXT_PARTS = frozenset({"text", "input_text", "output_text"})


Reader = Callable[[dict[str, Any]], Iterator[tuple[str, list[Any]]]]


def messages(provider: str, body: dict[str, Any]) -> Iterator[tuple[str, list[Any]]]:
    """(role, items) per payload message, in reading order (by the provider's wire format)."""
    return READERS.get(providers.wire_format(provider), chat)(body)


def chat(body: dict[str, Any]) -> Iterator[tuple[str, list[Any]]]:
    """Chat messages (OpenAI chat completions, Ollama, any format without a reader of its own):
    each message of `messages` is one item."""
    for m in body["messages"]:
        yield m["role"], [m]


def _openai(body: dict[str, Any]) -> Iterator[tuple[str, list[Any]]]:
    """Chat completions, or the Responses API (`input`, no `messages`)."""
    return _responses(body) if "messages" not in body and "input" in body else chat(body)


def _anthropic(body: dict[str, Any]) -> Iterator[tuple[str, list[Any]]]:
    if body.get("system"):
        yield "system", blocks(body["system"])
    for m in body["messages"]:
        yield m["role"], blocks(m["content"])


def _gemini(body: dict[str, Any]) -> Iterator[tuple[str, list[Any]]]:
    system = body.get("systemInstruction") or body.get("system_instruction")
    if system:
        yield "system", [system]
    for c in body["contents"]:
        yield c.get("role", "user"), list(c["parts"])


def _responses(body: dict[str, Any]) -> Iterator[tuple[str, list[Any]]]:
    if isinstance(body.get("instructions"), str) and body["instructions"]:
        yield "system", [{"role": "system", "content": body["instructions"]}]
    given = body["input"]
    if isinstance(given, str):
        yield "user", [{"role": "user", "content": given}]
        return
    for item in given:
        if isinstance(item, dict) and isinstance(item.get("role"), str):
            yield item["role"], [item]
        elif isinstance(item, dict):
            yield _RESPONSES_ROLES.get(str(item.get("type")), "assistant"), [item]


# How each wire format's bodies are read; a format registered at run time adds its reader.
READERS: dict[str, Reader] = {"openai": _openai, "anthropic": _anthropic, "gemini": _gemini, "ollama": chat}


def register_reader(name: str, reader: Reader) -> None:
    """How bodies of a wire format registered at run time are read (`translate.register_format`)."""
    READERS[name] = reader


def blocks(content: str | list[Any]) -> list[Any]:
    """Anthropic content as blocks: a plain string (as clients may send it) is one text block."""
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def texts(part: dict[str, Any]) -> Iterator[str]:
    """The texts of one item as the model reads them (never the JSON escaping)."""
    content = part.get("content")
    if type(content) is str and len(part) == 2 and "role" in part:  # a role and a text: nothing else to read
        yield content
        return
    if "parts" in part and isinstance(part["parts"], list):  # Gemini's systemInstruction
        for p in part["parts"]:
            yield from texts(p)
        return
    if isinstance(content, str):  # an OpenAI/Ollama message, an Anthropic tool_result
        yield content
    elif isinstance(content, list):  # OpenAI (chat or Responses) content parts, an Anthropic tool_result's blocks
        yield from (p["text"] for p in content if isinstance(p, dict) and p.get("type") in _TEXT_PARTS)
    for call in part.get("tool_calls") or ():  # OpenAI
        yield call["function"]["name"]
        yield call["function"]["arguments"]
    kind = part.get("type")
    if kind == "text" or "text" in part and kind is None:  # Anthropic text block, Gemini text part
        yield part["text"]
    elif kind == "tool_use":
        yield part["name"]
        yield dumps_args(part["input"])
    elif kind == "function_call":  # Responses
        yield part.get("name", "")
        yield part.get("arguments", "")
    elif kind == "function_call_output":  # Responses
        output = part.get("output")
        yield output if isinstance(output, str) else dumps_args(output)
    if "functionCall" in part:
        yield part["functionCall"]["name"]
        yield dumps_args(part["functionCall"].get("args", {}))
    if "functionResponse" in part:
        response = part["functionResponse"].get("response", {})
        yield str(response.get("content", "")) if set(response) <= {"content"} else dumps_args(response)


def images(part: dict[str, Any]) -> Iterator[tuple[str, str | None]]:
    """(base64 data, or the URL when there is none; OpenAI's detail) per image in one item."""
    if "parts" in part and isinstance(part["parts"], list):
        for p in part["parts"]:
            yield from images(p)
        return
    content = part.get("content")
    if isinstance(content, list):
        for p in content:
            if not isinstance(p, dict):
                continue
            if p.get("type") == "image_url":  # OpenAI chat: data URLs
                ref = p["image_url"]
                url, detail = (ref, None) if isinstance(ref, str) else (ref.get("url", ""), ref.get("detail"))
                yield _data(url), detail
            elif p.get("type") == "input_image":  # Responses
                yield _data(str(p.get("image_url") or p.get("file_id") or "")), p.get("detail")
            elif p.get("type") == "image" and isinstance(p.get("source"), dict):  # inside an Anthropic tool_result
                yield str(p["source"].get("data") or p["source"].get("url") or ""), None
    for data in part.get("images") or ():  # Ollama
        yield data, None
    if part.get("type") == "image":  # Anthropic
        source = part["source"]
        yield str(source.get("data") or source.get("url") or ""), None
    if "inlineData" in part and str(part["inlineData"].get("mimeType", "image/")).startswith("image/"):  # Gemini
        yield part["inlineData"]["data"], None


def media(part: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(MIME type, base64 data) per Gemini inline part that is not an image."""
    inline = part.get("inlineData")
    if isinstance(inline, dict) and not str(inline.get("mimeType", "image/")).startswith("image/"):
        yield str(inline.get("mimeType", "")), str(inline.get("data", ""))


def _data(url: str) -> str:
    """The base64 data of a `data:` URL, else the URL itself."""
    head, sep, data = url.partition(";base64,")
    return data if sep and head.startswith("data:") else url


def documents(part: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(media type, base64 data or text) per Anthropic document block in one item."""
    if part.get("type") == "document" and isinstance(part.get("source"), dict):
        source = part["source"]
        if source.get("type") == "base64":
            yield str(source.get("media_type", "")), str(source.get("data", ""))
        elif source.get("type") == "text":
            yield "text/plain", str(source.get("data", ""))
