"""An image's input tokens as each provider bills them, from its pixel size (R-RPL-4).

Input: provider, model name, width × height in pixels, OpenAI's `detail`. Output: tokens.
A provider's spec names its rule (`image_rule`). The rules are the providers' published ones (docs/rules.md#r-rpl-4):

* OpenAI, tile models: fit within 2048×2048, shortest side to 768, then base + per-512-px
  tile tokens by model (gpt-4o, gpt-4.1, gpt-4.5: 85 + 170; gpt-4o-mini: 2,833 + 5,667;
  o1, o1-pro, o3: 75 + 150; gpt-5, gpt-5-chat: 70 + 140); `detail: low` is the base alone.
* OpenAI, patch models (gpt-4.1-mini, gpt-4.1-nano, o4-mini, gpt-5-mini, gpt-5-nano and
  later small models): 32-px patches, the image shrunk so at most 1,536 fit, times the
  model's multiplier (1.62, 2.46, 1.72, 1.62, 2.46).
* Anthropic: shrunk to a long edge of at most 1,568 px, then width × height / 750, at most
  ~1,600 (larger images are scaled down to that); a PDF page is read as an image at that cap.
* Gemini: 258 tokens when both sides are at most 384 px, else 258 per tile of a square
  crop unit (the shorter side ÷ 1.5, kept within 256–768 px); audio 32 tokens per second,
  video 263 per second, a PDF 258 per page (inline data whose duration can be read).
"""

from __future__ import annotations

import math
import re

from ctxkit import providers
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
ANTHROPIC_MAX_IMAGE = 1600  # "~1,600 tokens": a larger image is scaled down to about this
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
    return max(1, min(ANTHROPIC_MAX_IMAGE, math.ceil(width * height / ANTHROPIC_PIXELS_PER_TOKEN)))


def anthropic_pdf_tokens(data: bytes) -> int:
    """A PDF document: each page is read as an image, which a page fills to the cap (its
    extracted text is not counted here). Pages are counted from the page objects; 1 when
    none can be seen (compressed object streams)."""
    pages = len(re.findall(rb"/Type\s*/Page(?![a-zA-Z])", data))
    return ANTHROPIC_MAX_IMAGE * max(1, pages)


def gemini_tokens(width: int, height: int) -> int:
    if width <= GEMINI_SMALL and height <= GEMINI_SMALL:
        return GEMINI_TOKENS
    unit = min(768, max(256, int(min(width, height) / 1.5)))
    return GEMINI_TOKENS * math.ceil(width / unit) * math.ceil(height / unit)


def image_tokens(provider: str, model: str, width: int, height: int, detail: str | None = None) -> int:
    """The provider's tokens for one image of this size, by its spec's `image_rule` (Ollama's,
    `estimate`: the OpenAI tile estimate)."""
    rule = providers.spec(provider).image_rule
    if rule == "openai":
        return openai_tokens(model, width, height, detail)
    if rule == "anthropic":
        return anthropic_tokens(width, height)
    if rule == "gemini":
        return gemini_tokens(width, height)
    return estimate_tokens(width, height)


GEMINI_AUDIO_PER_SECOND, GEMINI_VIDEO_PER_SECOND = 32, 263


def _wav_seconds(data: bytes) -> float | None:
    """A RIFF/WAVE file's duration: its data chunk's size over the byte rate of its fmt chunk."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        return None
    pos, rate, size = 12, 0, None
    while pos + 8 <= len(data):
        chunk, length = data[pos : pos + 4], int.from_bytes(data[pos + 4 : pos + 8], "little")
        if chunk == b"fmt " and pos + 20 <= len(data):
            rate = int.from_bytes(data[pos + 16 : pos + 20], "little")
        elif chunk == b"data":
            size = min(length, len(data) - pos - 8)
            break
        pos += 8 + length + (length & 1)
    return size / rate if rate and size is not None else None


def _mp4_seconds(data: bytes) -> float | None:
    """An MP4/QuickTime file's duration from its movie header (mvhd)."""
    at = data.find(b"mvhd")
    if at < 0 or at + 24 > len(data):
        return None
    if data[at + 4] == 1:  # version 1: 64-bit times
        scale = int.from_bytes(data[at + 24 : at + 28], "big")
        duration = int.from_bytes(data[at + 28 : at + 36], "big")
    else:
        scale = int.from_bytes(data[at + 16 : at + 20], "big")
        duration = int.from_bytes(data[at + 20 : at + 24], "big")
    return duration / scale if scale else None


def gemini_media_tokens(mime: str, data: bytes) -> int | None:
    """Gemini's tokens for inline media: images by size, audio 32/s, video 263/s, PDF 258/page;
    None when the duration or size cannot be read from the bytes."""
    from ctxkit.counting.images import image_size

    if mime.startswith("image/"):
        size = image_size(data)
        return gemini_tokens(*size) if size else None
    if mime.startswith("audio/"):
        seconds = _wav_seconds(data)
        return math.ceil(seconds * GEMINI_AUDIO_PER_SECOND) if seconds is not None else None
    if mime.startswith("video/"):
        seconds = _mp4_seconds(data)
        return math.ceil(seconds * GEMINI_VIDEO_PER_SECOND) if seconds is not None else None
    if mime == "application/pdf":
        return GEMINI_TOKENS * max(1, len(re.findall(rb"/Type\s*/Page(?![a-zA-Z])", data)))
    return None
