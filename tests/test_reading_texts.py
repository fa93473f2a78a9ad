"""R-RPL-4: the texts `reading.texts` reads off one item, as the model reads them.

An item of only a role and a text (most of OpenAI's and Ollama's messages) is read at once;
every other item goes through each format's fields. The texts of the item with its text as a
subclass of str (which takes the long way) are the same, for every item of the gallery's
payloads in the four providers' formats and for items that hold a text with other fields.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ctxkit.translate import reading

from .helpers import assembled_or_skip

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted((ROOT / "fixtures").glob("*.yaml"))
CALL = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}
ITEMS: list[dict[str, Any]] = [
    {"role": "user", "content": "Hi"},
    {"role": "user", "content": ""},
    {"role": "assistant", "content": "Sure.", "tool_calls": [CALL]},
    {"role": "tool", "content": "sun", "tool_call_id": "c1"},
    {"role": "user", "content": "Hi", "name": "ann"},
    {"role": "user", "content": "Hi", "text": "also read"},
    {"content": "Hi", "type": "text", "text": "Hi"},
    {"role": "model", "parts": [{"text": "a"}, {"text": "b"}]},
    {"role": "user", "content": [{"type": "text", "text": "a"}]},
    {"content": "x", "functionCall": {"name": "f", "args": {"a": 1}}},
]


class _Text(str):
    """A text that is not exactly a `str`: read through each format's fields."""


def _the_long_way(part: dict[str, Any]) -> list[str]:
    content = part.get("content")
    return list(reading.texts({**part, "content": _Text(content)} if isinstance(content, str) else part))


@pytest.mark.parametrize("item", ITEMS, ids=range(len(ITEMS)))
def test_r_rpl_4_an_items_texts_are_read_alike_the_short_and_the_long_way(item: dict[str, Any]) -> None:
    assert list(reading.texts(item)) == _the_long_way(item)


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "ollama"])
def test_r_rpl_4_the_gallerys_items_are_read_alike_the_short_and_the_long_way(provider: str) -> None:
    short = 0
    for path in FIXTURES:
        try:
            result = assembled_or_skip(path, provider=provider, max_input_tokens=8000)
        except pytest.skip.Exception:
            continue
        for _, message in reading.messages(provider, result.payload.body):
            for part in message:
                if isinstance(part, dict):
                    assert list(reading.texts(part)) == _the_long_way(part), (path.name, part)
                    short += len(part) == 2 and isinstance(part.get("content"), str) and "role" in part
    assert short > 0 or provider in ("anthropic", "gemini")
