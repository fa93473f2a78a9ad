"""Bodies as sent (R-LOG-2): counted by R-RPL-4 with nothing reassembled, checked by hand."""

from __future__ import annotations

import base64
import struct
import zlib

from ctxkit.counting.images import estimate_tokens
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
    assert added == estimate_tokens(1024, 1024) == 85 + 170 * 4  # 1024² → 768² → 2×2 tiles


def test_r_log_2_meter_uses_the_model_table_tokenizer() -> None:
    assert body_meter("openai", "gpt-4o").tokenizer == "o200k_base"
    assert body_meter("azure", "gpt-4o-2024-08-06").tokenizer == "o200k_base"
