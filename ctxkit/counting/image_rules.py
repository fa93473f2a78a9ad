"""An image's input tokens as each provider bills them, from its pixel size (R-RPL-4).

Input: provider, model name, width × height in pixels, OpenAI's `detail`. Output: tokens.
The rules are the providers' published ones (docs/rules.md#r-rpl-4):

* OpenAI, tile models: fit within 2048×2048, shortest side to 768, then base + per-512-px
  tile tokens by model (gpt-4o, gpt-4.1, gpt-4.5: 85 + 170; gpt-4o-mini: 2,833 + 5,667;
  o1, o1-pro, o3: 75 + 150; gpt-5, gpt-5-chat: 70 + 140); `detail: low` is the base alone.
* OpenAI, patch models (gpt-4.1-mini, gpt-4.1-nano, o4-mini, gpt-5-mini, gpt-5-nano and
  later small models): 32-px patches, the image shrunk so at most 1,536 fit, times the
  model's multiplier (1.62, 2.46, 1.72, 1.62, 2.46).
* Anthropic: shrunk to a long edge of at most 1,568 px, then width × height / 750.
* Gemini: 258 tokens when both sides are at most 384 px, else 258 per tile of a square
  crop unit (the shorter side ÷ 1.5, kept within 256–768 px).
"""

from __future__ import annotations

import math
import re

from ctxkit.counting.images import estimate_tokens

# (name prefix, base tokens, tokens per tile), first match wins: longer names first.
_TILES = (
    ("gpt-4o-mini", 2833, 5667),
    ("gpt-5-chat", 70, 140),
    ("gpt-4o", 85, 170),
    ("gpt-4.1", 85, 170),
    ("gpt-4.5", 85, 170),
    ("chatgpt-4o", 85, 170),
    ("gpt-4", 85, 170),
    ("o1", 75, 150),
    ("o3", 75, 150),
    ("computer-use", 65, 129),
)
# (pattern, multiplier) for the patch models.
_PATCHES = (
    (re.compile(r"gpt-4\.1-mini"), 1.62),
    (re.compile(r"gpt-4\.1-nano"), 2.46),
    (re.compile(r"o4-mini"), 1.72),
    (re.compile(r"gpt-5(?:\.\d+)?-mini"), 1.62),
    (re.compile(r"gpt-5(?:\.\d+)?-nano"), 2.46),
)
_GPT5 = re.compile(r"gpt-5(?:\.\d+)?(?:-|$)")
PATCH, MAX_PATCHES = 32, 1536
ANTHROPIC_LONG_EDGE, ANTHROPIC_PIXELS_PER_TOKEN = 1568, 750
GEMINI_TOKENS, GEMINI_SMALL = 258, 384


def openai_tokens(model: str, width: int, height: int, detail: str | None = None) -> int:
    name = model.rsplit("/", 1)[-1]
    for pattern, multiplier in _PATCHES:
        if pattern.match(name):
            return math.ceil(_patches(width, height) * multiplier)
    base, tile = next(((b, t) for prefix, b, t in _TILES if name.startswith(prefix)), (0, 0))
    if not base and _GPT5.match(name):
        base, tile = 70, 140
    if not base:
        base, tile = 85, 170
    if detail == "low":
        return base
    tiles = (estimate_tokens(width, height) - 85) // 170  # the published tile layout
    return base + tile * tiles


def _patches(width: int, height: int) -> int:
    """32-px patches after shrinking the image so that at most 1,536 of them cover it."""
    raw = math.ceil(width / PATCH) * math.ceil(height / PATCH)
    if raw <= MAX_PATCHES:
        return raw
    shrink = math.sqrt(PATCH * PATCH * MAX_PATCHES / (width * height))
    w, h = width * shrink / PATCH, height * shrink / PATCH
    shrink *= min(math.floor(w) / w, math.floor(h) / h)  # a whole number of patches along the tighter side
    resized_w, resized_h = int(width * shrink), int(height * shrink)  # whole pixels
    return min(MAX_PATCHES, math.ceil(resized_w / PATCH) * math.ceil(resized_h / PATCH))


def anthropic_tokens(width: int, height: int) -> int:
    long_edge = max(width, height)
    if long_edge > ANTHROPIC_LONG_EDGE:
        width, height = width * ANTHROPIC_LONG_EDGE // long_edge, height * ANTHROPIC_LONG_EDGE // long_edge
    return max(1, math.ceil(width * height / ANTHROPIC_PIXELS_PER_TOKEN))


def gemini_tokens(width: int, height: int) -> int:
    if width <= GEMINI_SMALL and height <= GEMINI_SMALL:
        return GEMINI_TOKENS
    unit = min(768, max(256, int(min(width, height) / 1.5)))
    return GEMINI_TOKENS * math.ceil(width / unit) * math.ceil(height / unit)


def image_tokens(provider: str, model: str, width: int, height: int, detail: str | None = None) -> int:
    """The provider's tokens for one image of this size (Ollama: the OpenAI tile estimate)."""
    if provider in ("openai", "azure"):
        return openai_tokens(model, width, height, detail)
    if provider == "anthropic":
        return anthropic_tokens(width, height)
    if provider == "gemini":
        return gemini_tokens(width, height)
    return estimate_tokens(width, height)
