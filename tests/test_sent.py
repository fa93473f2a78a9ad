"""Bodies as sent (R-LOG-2): counted by R-RPL-4 with nothing reassembled, checked by hand."""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Any

from ctxkit.counting import image_rules, openai_render, wire
from ctxkit.counting.images import estimate_tokens
from ctxkit.counting.measure import Meter
from ctxkit.loading.templates import Templates
from ctxkit.translate.items import prompt_items, wire_tokens
from ctxkit.translate.sent import body_meter, body_payload


def _png(width: int, height: int) -> str:
    """A PNG header with the given size (enough for the size to be read), base64."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = struct.pack(">I", len(ihdr)) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    return base64.b64encode(b"\x89PNG\r\n\x1a\n" + chunk).decode()


def test_r_log_2_anthropic_string_content_is_one_text_block() -> None:
    meter = body_meter("anthropic", "claude-sonnet-4-5")
    as_string = {"model": "m", "system": "Be brief.", "messages": [{"role": "user", "content": "Hello there"}]}
    as_blocks = {
        "model": "m",
        "system": [{"type": "text", "text": "Be brief."}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hello there"}]}],
    }
    one = wire_tokens(body_payload("anthropic", as_string), meter=meter)
    assert one == wire_tokens(body_payload("anthropic", as_blocks), meter=meter)
    items = prompt_items(body_payload("anthropic", as_string), meter=meter)
    assert [i.role for i in items] == ["system", "user"]


def test_r_log_2_image_counts_from_its_own_bytes() -> None:
    """No fixture image behind a logged body: the size comes from the PNG header in the data URL."""
    meter = body_meter("openai", "gpt-4o")
    url = "data:image/png;base64," + _png(1024, 1024)
    with_image = {
        "model": "gpt-4o",
        "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}],
    }
    without = {"model": "gpt-4o", "messages": [{"role": "user", "content": []}]}
    added = wire_tokens(body_payload("openai", with_image), meter=meter) - wire_tokens(
        body_payload("openai", without), meter=meter
    )
    assert added == estimate_tokens(1024, 1024) == 85 + 170 * 4  # gpt-4o: 1024² → 768² → 2×2 tiles


def test_r_log_2_meter_uses_the_model_table_tokenizer() -> None:
    assert body_meter("openai", "gpt-4o").tokenizer == "o200k_base"
    assert body_meter("azure", "gpt-4o-2024-08-06").tokenizer == "o200k_base"


# --- R-RPL-4 provider rules for bodies as sent, checked with the approx tokenizer (len // 4) ---

APPROX = Meter("approx", supports_images=True, templates=Templates.build())


def _approx(provider: str, body: dict[str, Any]) -> int:
    return wire_tokens(body_payload(provider, body), meter=APPROX)


def _n(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


WEATHER = {
    "name": "get_weather",
    "description": "Weather now.\nCity names only.",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city", "title": "City"},
            "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
            "days": {"type": "array", "items": {"type": "integer"}},
            "where": {"type": "object", "properties": {"lat": {"type": "number"}}, "required": ["lat"]},
            "note": {"type": ["string", "null"]},
        },
        "required": ["city"],
    },
}
# Written by hand from the published rendering (docs/rules.md#r-rpl-4).
WEATHER_NAMESPACE = """namespace functions {

// Weather now.
// City names only.
type get_weather = (_: {
// The city
city: string,
unit?: "c" | "f", // default: c
days?: number[],
where?: {
  lat: number,
},
note?: string | null,
}) => any;

// Says hi
type hi = () => any;

} // namespace functions"""


def test_r_rpl_4_openai_tools_read_as_the_functions_namespace() -> None:
    hi = {"name": "hi", "description": "Says hi", "parameters": {"type": "object", "properties": {}}}
    body = {"tools": [{"type": "function", "function": WEATHER}, {"type": "function", "function": hi}]}
    assert openai_render.namespace(openai_render.functions(body)) == WEATHER_NAMESPACE
    assert openai_render.functions({"functions": [WEATHER]}) == [WEATHER]  # legacy `functions`
    assert openai_render.functions({"tools": [{"type": "function", **hi}]}) == [{"type": "function", **hi}]


def test_r_rpl_4_openai_tool_overhead_follows_the_system_message_and_choice() -> None:
    """namespace + 9 without a system message, + 5 with one; a named choice adds its name + 4."""
    user = {"role": "user", "content": "What is the weather in Paris?"}
    system = {"role": "system", "content": "Be brief."}
    tools = [{"type": "function", "function": WEATHER}]
    rendered = _n(openai_render.namespace([WEATHER]))
    for messages, overhead in (([user], 9), ([system, user], 5)):
        bare = _approx("openai", {"model": "gpt-4o", "messages": messages})
        assert (
            _approx("openai", {"model": "gpt-4o", "messages": messages, "tools": tools}) == bare + rendered + overhead
        )
    forced = {"type": "function", "function": {"name": "get_weather"}}
    plain = _approx("openai", {"model": "gpt-4o", "messages": [user], "tools": tools})
    with_choice = _approx("openai", {"model": "gpt-4o", "messages": [user], "tools": tools, "tool_choice": forced})
    assert with_choice == plain + _n("get_weather") + 4


def test_r_rpl_4_openai_response_format_is_a_titled_json_block() -> None:
    schema = {"title": "Answer", "type": "object", "properties": {"a": {"title": "A", "type": "string"}}}
    body = {"response_format": {"type": "json_schema", "json_schema": {"name": "Answer", "schema": schema}}}
    expected = '# Response Formats\n\n## Answer\n\n{"type":"object","properties":{"a":{"type":"string"}}}'
    assert openai_render.response_format_text(body) == expected
    responses = {"text": {"format": {"type": "json_schema", "name": "Answer", "schema": schema}}}
    assert openai_render.response_format_text(responses) == expected
    assert openai_render.response_format_text({"response_format": {"type": "json_object"}}) == ""
    messages = [{"role": "user", "content": "Answer me"}]
    base = _approx("openai", {"model": "gpt-4o", "messages": messages})
    assert _approx("openai", {"model": "gpt-4o", "messages": messages, **body}) == base + _n(expected)


def test_r_rpl_4_openai_message_name_adds_its_tokens_and_one() -> None:
    named = {"role": "user", "content": "Hi there", "name": "alice_smith"}
    plain = {"role": "user", "content": "Hi there"}
    difference = _approx("openai", {"model": "m", "messages": [named]}) - _approx(
        "openai", {"model": "m", "messages": [plain]}
    )
    assert difference == _n("alice_smith") + 1


def test_r_rpl_4_responses_body_counts_like_the_chat_body() -> None:
    """instructions = a system message; a string input = one user message; calls and outputs read as sent."""
    chat = {
        "model": "gpt-4o",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
    }
    responses = {"model": "gpt-4o", "instructions": "Be brief.", "input": "Hi"}
    assert _approx("openai", responses) == _approx("openai", chat)
    call = {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": '{"city":"Paris"}'}
    output = {"type": "function_call_output", "call_id": "c1", "output": "12 degrees and sunny"}
    looped = {**responses, "input": [{"role": "user", "content": [{"type": "input_text", "text": "Hi"}]}, call, output]}
    # the harmony headers: the call's address, the result's role "functions.<name>" in place of "tool"
    frame = 3 + _n("assistant") + _n(" to=functions.get_weather"), 3 + _n("functions.get_weather")
    expected = _approx("openai", responses) + frame[0] + _n("get_weather") + _n('{"city":"Paris"}')
    assert _approx("openai", looped) == expected + frame[1] + _n("12 degrees and sunny")


def test_r_rpl_4_anthropic_tool_prompt_by_model_and_choice() -> None:
    tools = {"tools": [{"name": "f", "input_schema": {"type": "object"}}]}
    forced = {**tools, "tool_choice": {"type": "any"}}
    assert wire.anthropic_tool_prompt("claude-3-5-sonnet-20240620", tools) == 294
    assert wire.anthropic_tool_prompt("claude-3-5-sonnet-20240620", forced) == 261
    assert wire.anthropic_tool_prompt("claude-3-opus-20240229", tools) == 530
    assert wire.anthropic_tool_prompt("us.anthropic.claude-3-haiku-20240307-v1:0", forced) == 340
    assert wire.anthropic_tool_prompt("claude-sonnet-4-5", {**tools, "tool_choice": {"type": "none"}}) == 346
    assert (
        wire.anthropic_tool_prompt("claude-sonnet-4-5", {**tools, "tool_choice": {"type": "tool", "name": "f"}}) == 313
    )
    assert wire.anthropic_tool_prompt("claude-sonnet-4-5", {}) == 0


def test_r_rpl_4_gemini_counts_parts_without_framing() -> None:
    body = {
        "systemInstruction": {"parts": [{"text": "Be brief please"}]},
        "contents": [
            {"role": "user", "parts": [{"text": "What is the weather?"}]},
            {"role": "model", "parts": [{"text": "Sunny"}]},
        ],
    }
    assert _approx("gemini", body) == _n("Be brief please") + _n("What is the weather?") + _n("Sunny")


def test_r_rpl_4_image_rules_per_provider_and_model() -> None:
    """The providers' published examples and formulas, worked by hand."""
    assert image_rules.openai_tokens("gpt-4o", 1024, 1024) == 85 + 170 * 4
    assert image_rules.openai_tokens("gpt-4o-mini", 1024, 1024) == 2833 + 5667 * 4
    assert image_rules.openai_tokens("gpt-4o-mini", 1024, 1024, "low") == 2833
    assert image_rules.openai_tokens("o3", 1024, 1024) == 75 + 150 * 4
    assert image_rules._patches(1800, 2400) == 33 * 44  # OpenAI's example: resized to 1056 x 1408
    assert image_rules.openai_tokens("gpt-4.1-mini", 1024, 1024) == 1659  # 1,024 patches x 1.62, rounded up
    assert image_rules.anthropic_tokens(1000, 1000) == 1334  # 1,000,000 / 750, rounded up
    assert image_rules.anthropic_tokens(3136, 1568) == image_rules.anthropic_tokens(1568, 784)  # long edge 1,568
    assert image_rules.gemini_tokens(384, 384) == 258
    assert image_rules.gemini_tokens(1000, 500) == 258 * 4 * 2  # crop unit 333 px: 4 x 2 tiles


def test_r_rpl_4_sent_image_follows_the_model_rule() -> None:
    url = "data:image/png;base64," + _png(1024, 1024)
    part = {"type": "image_url", "image_url": {"url": url}}
    with_image = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": [part]}]}
    without = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": []}]}
    assert _approx("openai", with_image) - _approx("openai", without) == 2833 + 5667 * 4


def test_r_rpl_4_anthropic_turn_headers_and_prefill() -> None:
    """3 tokens per turn (none for the system text), 3 of reply priming unless the last turn is a prefill;
    the ratio applies to cl100k_base counts only, so the approx tokenizer shows the rule unscaled."""
    body = {"model": "claude-sonnet-4-5", "system": "Be brief.", "messages": [{"role": "user", "content": "Say hi"}]}
    assert _approx("anthropic", body) == _n("Be brief.") + 3 + _n("Say hi") + 3
    prefill = {**body, "messages": [*body["messages"], {"role": "assistant", "content": "{"}]}
    assert _approx("anthropic", prefill) == _n("Be brief.") + 3 + _n("Say hi") + 3 + _n("{")


def test_r_rpl_4_anthropic_tool_blocks_in_the_published_text_format() -> None:
    call = {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "Paris", "days": 2}}
    expected = '<function_calls>\n<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n'
    expected += '<parameter name="days">2</parameter>\n</invoke>\n</function_calls>'
    assert wire.anthropic_call_text(call) == expected
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "12 degrees"}
    wrapper = (
        "<function_results>\n<result>\n<tool_name></tool_name>\n<stdout>\n\n</stdout>\n</result>\n</function_results>"
    )
    assert wire.anthropic_block_tokens(result, _n) == _n(wrapper)
    assert wire.anthropic_block_tokens({"type": "text", "text": "x"}, _n) is None


def test_r_rpl_4_anthropic_pdf_pages_and_image_cap() -> None:
    two_pages = (
        b"%PDF-1.4 1 0 obj << /Type /Pages /Kids [2 0 R 3 0 R] >> 2 0 obj << /Type /Page >> 3 0 obj <</Type/Page>>"
    )
    assert image_rules.anthropic_pdf_tokens(two_pages) == 2 * 1600
    assert image_rules.anthropic_pdf_tokens(b"%PDF-1.7 compressed") == 1600  # no page object seen: one page
    assert image_rules.anthropic_tokens(1568, 1568) == 1600  # capped: scaled down to ~1,600 tokens


def test_r_rpl_4_gemini_media_by_duration() -> None:
    """A 2-second 8 kHz 16-bit mono WAV: 32 tokens per second."""
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 16000, 2, 16)
    wav = b"RIFF" + struct.pack("<I", 36 + 32000) + b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt
    wav += b"data" + struct.pack("<I", 32000) + b"\0" * 32000
    assert image_rules.gemini_media_tokens("audio/wav", wav) == 64
    mvhd = b"mvhd" + bytes([0, 0, 0, 0]) + b"\0" * 8 + struct.pack(">II", 1000, 5000)  # 5,000 / 1,000 s
    assert image_rules.gemini_media_tokens("video/mp4", b"\0\0\0\x6cmoov" + mvhd) == 5 * 263
    assert image_rules.gemini_media_tokens("audio/mpeg", b"ID3") is None
