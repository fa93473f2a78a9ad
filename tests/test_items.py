"""Prompt items of a translated payload (R-RPL-4), hand-counted per provider.

The fixture uses the `approx` tokenizer (max(1, len // 4)), so every count below
can be checked by hand: 3 framing tokens and the role name's tokens ride on the
first item of each payload message; images cost their stored count.
"""

from __future__ import annotations

import json

import pytest

from ctxkit.translate import reading
from ctxkit.translate.items import Prompt, priming_tokens, prompt_items, prompt_tokens, wire_tokens
from ctxkit.translate.keys import item_key

from .helpers import assemble

PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="

FIXTURE = f"""\
model: {{provider: openai, name: test-model, max_input_tokens: 10000}}
tokenizer: approx
settings: {{safety_margin: 0}}
prompts: {{system: "System text", datetime_aware: false}}
tools:
  - {{name: get_weather, description: "Weather", parameters: {{type: object}}}}
files:
  - {{id: img-1, name: a.png, kind: image, data: "{PNG_B64}", tokens: 100}}
messages:
  - {{id: u1, role: user, text: "Weather in Paris?"}}
  - id: a1
    role: assistant
    text: "It is mild."
    tool_calls:
      - {{id: c1, name: get_weather, args: {{city: "Paris"}}, response: "12 degrees"}}
  - {{id: u2, role: user, text: "Look at this", files: [img-1]}}
"""

# Texts (approx tokens): "System text" 2, "Weather in Paris?" 4, "get_weather" 2,
# '{"city": "Paris"}' 4, the result placeholder (66 chars) 16, "It is mild." 2,
# "Look at this" 3, "[attached image — file_id: img-1]" 8; the image's stored count 100.
# Roles: system 1, user 1, tool 1, model 1, assistant 2.
EXPECTED = {
    # provider: [(tokens, payload message, source working message), ...]
    "openai": [
        (22 + 5, None, None),  # the functions namespace (89 chars) + 9 - 4 (a system message opens the prompt)
        (2 + 3 + 1, 0, 0),  # system
        (4 + 3 + 1, 1, 1),  # u1
        (2 + 4 + 3 + 2 + 6, 2, 2),  # the call: name + arguments + its address " to=functions.get_weather"
        (16 + 3 + 1 + 5 - 1, 3, 3),  # the tool result, read from "functions.get_weather" instead of "tool"
        (2 + 3 + 2, 4, 4),  # the answer
        (3 + 8 + 100 + 3 + 1, 5, 5),  # u2: text, label, image
    ],
    "anthropic": [
        (21 + 346, None, None),  # the tools' JSON (87 chars) + the tool-use system prompt (auto)
        (2, 0, 0),  # the system text: no turn header
        (4 + 3, 1, 1),  # a turn: 3 tokens of header, no role name
        (28 + 3, 2, 2),  # tool_use as <function_calls> (113 chars)
        (25 + 16 + 3, 3, 3),  # tool_result: the <function_results> wrapper (101 chars) + content
        (2 + 3, 4, 4),
        (3 + 3, 5, 5),  # u2's blocks: text (with the header) …
        (8, 5, 5),  # … label …
        (100, 5, 5),  # … image
    ],
    "gemini": [
        (26, None, None),  # 106 chars
        (2, 0, 0),  # no framing: the parts alone
        (4, 1, 1),
        (2 + 4, 2, 2),  # functionCall under role model
        (16, 3, 3),  # functionResponse
        (2, 4, 4),
        (3, 5, 5),
        (8, 5, 5),
        (100, 5, 5),
    ],
    "ollama": [
        (27, None, None),  # the tools' compact JSON, 110 chars
        (2 + 3 + 1, 0, 0),
        (4 + 3 + 1, 1, 1),
        (14 + 3 + 2, 2, 2),  # the [Tool Call] line, 57 chars
        (21 + 3 + 1, 3, 3),  # the [Tool Result] text, 86 chars
        (2 + 3 + 2, 4, 4),
        (11 + 100 + 3 + 1, 5, 5),  # text and label joined (46 chars), image
    ],
}


def _items(tmp_path, provider: str) -> Prompt:
    result = assemble(tmp_path, FIXTURE, provider=provider)
    return prompt_items(result.payload, meter=result.assembly.meter)


PRIMING = {"openai": 3, "anthropic": 3, "gemini": 0, "ollama": 3}  # Gemini: no reply priming


@pytest.mark.parametrize("provider", list(EXPECTED))
def test_r_rpl_4_items_tokens_and_back_references(tmp_path, provider):
    result = assemble(tmp_path, FIXTURE, provider=provider)
    items = prompt_items(result.payload, meter=result.assembly.meter)
    assert [(i.tokens, items.message(n), items.source(n)) for n, i in enumerate(items)] == EXPECTED[provider]
    priming = priming_tokens(result.payload, meter=result.assembly.meter)
    assert priming == PRIMING[provider]
    assert prompt_tokens(items, priming) == sum(t for t, _, _ in EXPECTED[provider]) + priming
    assert prompt_tokens(items, priming) == wire_tokens(result.payload, meter=result.assembly.meter)


def test_r_rpl_4_openai_totals_by_hand(tmp_path):
    assert prompt_tokens(_items(tmp_path, "openai")) == 27 + 6 + 8 + 17 + 24 + 7 + 115 + 3


@pytest.mark.parametrize("provider", list(EXPECTED))
def test_r_rpl_4_keys_are_canonical_json_with_the_role(tmp_path, provider):
    """Message items are keyed by their role and content (`keys.item_key`: equal exactly when the
    canonical JSON is, tests/test_item_keys.py); the definitions item by its canonical JSON."""
    result = assemble(tmp_path, FIXTURE, provider=provider)
    items = prompt_items(result.payload, meter=result.assembly.meter)
    sent = reading.messages(provider, result.payload.body)
    parts = [(role, part) for role, message in sent for part in message]
    assert len(parts) == len(items) - items.lead
    for item, (role, part) in zip(items[items.lead :], parts, strict=True):
        assert item.role == role and item.key == item_key(role, part)
        assert "cache_control" not in repr(item.key)
    for item in items[: items.lead]:
        assert isinstance(item.key, str)
        decoded = json.loads(item.key)
        assert item.key == json.dumps(decoded, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert "tools" in decoded and item.role is None
    assert len({i.key for i in items}) == len(items)


def test_r_rpl_4_same_block_under_another_role_differs(tmp_path):
    """'It is mild.' (assistant) and a user saying the same text are two items."""
    body = FIXTURE.replace('text: "Look at this"', 'text: "It is mild."')
    result = assemble(tmp_path, body, provider="anthropic")
    items = prompt_items(result.payload, meter=result.assembly.meter)
    mild = [i for i in items if isinstance(i.key, tuple) and "It is mild." in i.key]
    assert [i.role for i in mild] == ["assistant", "user"]
    assert mild[0].key != mild[1].key


def test_r_rpl_4_cache_control_is_not_part_of_the_identity(tmp_path):
    result = assemble(tmp_path, FIXTURE, provider="anthropic")
    marked = [b for b in result.payload.body["messages"][3]["content"] if "cache_control" in b]
    assert marked, "the cacheable prefix ends on the answer"
    items = prompt_items(result.payload, meter=result.assembly.meter)
    assert items[5].key == item_key("assistant", {"text": "It is mild.", "type": "text"})


def test_r_rpl_4_image_without_stored_count_is_estimated(tmp_path):
    """R-FIX-3: no stored count → the provider's rule for its size (a 1×1 PNG: OpenAI's tiles
    85 + 170; Anthropic's 1 × 1 / 750, at least 1; Gemini's 258 for a small image)."""
    body = FIXTURE.replace(", tokens: 100}", "}")
    for provider, tokens in (("openai", 85 + 170 + 3 + 8 + 3 + 1), ("anthropic", 1), ("gemini", 258)):
        result = assemble(tmp_path, body, provider=provider)
        items = prompt_items(result.payload, meter=result.assembly.meter)
        assert items[-1].tokens == tokens, provider


def test_r_rpl_4_drop_notice_has_no_source(tmp_path):
    """R-TR-6: the image-drop notice is added by translation: no working message behind it."""
    body = FIXTURE.replace("safety_margin: 0}", "safety_margin: 0, image_cap: 0}")
    result = assemble(tmp_path, body)
    items = prompt_items(result.payload, meter=result.assembly.meter)
    last = len(items) - 1
    assert items.source(last) is None and items.message(last) == 6 and items[-1].role == "user"
    assert result.payload.body["messages"][-1]["content"].startswith("<system-reminder>")


@pytest.mark.parametrize("provider", list(EXPECTED))
def test_r_tr_8_breakpoint_marks_the_block_that_carried_cache_control(tmp_path, provider):
    result = assemble(tmp_path, FIXTURE, provider=provider)
    items = prompt_items(result.payload, meter=result.assembly.meter)
    marked = [i for i in items if i.breakpoint]
    sent = json.dumps(result.payload.body).count('"cache_control"')
    assert len(marked) == sent == (1 if provider == "anthropic" else 0)
