"""Image facts by content: bytes → MIME type and pixel size; pixel size → token estimate.

Accepted types are PNG, JPEG, GIF and WebP, recognised by their magic bytes, never
by file name (R-FIX-3). Sizes come from the headers alone (PNG IHDR, GIF logical
screen, JPEG SOFn marker, WebP VP8/VP8L/VP8X chunk); no image library is used.
`None` means "cannot tell". JPEG sizes are as stored (EXIF rotation is ignored).

The estimate is OpenAI's published high-detail tile formula, used for every
provider: fit within 2048×2048, then shrink the shortest side to 768, never scaling
up; 85 + 170 per 512-px tile. Scaled sides are rounded down (exact integer
arithmetic) and never below 1 px.
"""

from __future__ import annotations

import struct

PNG, JPEG, GIF, WEBP = "image/png", "image/jpeg", "image/gif", "image/webp"

_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# SOF0..SOF15 carry the frame size; C4 (DHT), C8 (JPG) and CC (DAC) share the range.
_JPEG_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_JPEG_NO_LENGTH = frozenset([0x01, *range(0xD0, 0xD9)])  # TEM, RSTn, SOI

FIT_SIDE, SHORT_SIDE, TILE = 2048, 768, 512
BASE_TOKENS, TILE_TOKENS = 85, 170


def sniff_mime(data: bytes) -> str | None:
    """The image MIME type the bytes start with, or None."""
    if data.startswith(_PNG_MAGIC):
        return PNG
    if data.startswith(b"\xff\xd8\xff"):
        return JPEG
    if data.startswith((b"GIF87a", b"GIF89a")):
        return GIF
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return WEBP
    return None


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) in pixels from the image's header, or None when it cannot tell."""
    parser = {PNG: _png_size, JPEG: _jpeg_size, GIF: _gif_size, WEBP: _webp_size}.get(sniff_mime(data) or "")
    size = parser(data) if parser else None
    if size is None or size[0] <= 0 or size[1] <= 0:
        return None
    return size


def _png_size(data: bytes) -> tuple[int, int] | None:
    if len(data) < 24 or data[12:16] != b"IHDR":
        return None
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _gif_size(data: bytes) -> tuple[int, int] | None:
    if len(data) < 10:
        return None
    width, height = struct.unpack("<HH", data[6:10])
    return width, height


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    """Walk the marker segments up to the first SOFn (or give up at SOS/EOI)."""
    pos = 2
    while pos < len(data):
        if data[pos] != 0xFF:
            return None
        while pos < len(data) and data[pos] == 0xFF:  # fill bytes
            pos += 1
        if pos >= len(data):
            return None
        marker = data[pos]
        pos += 1
        if marker in _JPEG_NO_LENGTH:
            continue
        if marker in (0xD9, 0xDA) or pos + 2 > len(data):
            return None
        (length,) = struct.unpack(">H", data[pos : pos + 2])
        if marker in _JPEG_SOF:
            if length < 7 or pos + 7 > len(data):
                return None
            height, width = struct.unpack(">HH", data[pos + 3 : pos + 7])
            return width, height
        if length < 2:
            return None
        pos += length
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    """The size from the first chunk (VP8X, VP8L or VP8 ), which holds it."""
    fourcc, payload = data[12:16], data[20:30]
    if fourcc == b"VP8X" and len(payload) >= 10:
        width = int.from_bytes(payload[4:7], "little") + 1
        height = int.from_bytes(payload[7:10], "little") + 1
        return width, height
    if fourcc == b"VP8L" and len(payload) >= 5 and payload[0] == 0x2F:
        bits = int.from_bytes(payload[1:5], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if fourcc == b"VP8 " and len(payload) >= 10 and payload[3:6] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", payload[6:10])
        return width & 0x3FFF, height & 0x3FFF
    return None


def _shrink(width: int, height: int, side: int, target: int) -> tuple[int, int]:
    """Scale so that `side` becomes `target` when it is larger; never scale up."""
    if side <= target:
        return width, height
    return max(1, width * target // side), max(1, height * target // side)


def estimate_tokens(width: int, height: int) -> int:
    """High-detail image tokens for a width × height image (both ≥ 1)."""
    if width < 1 or height < 1:
        raise ValueError(f"image size must be positive, got {width}x{height}")
    width, height = _shrink(width, height, max(width, height), FIT_SIDE)
    width, height = _shrink(width, height, min(width, height), SHORT_SIDE)
    tiles = -(-width // TILE) * -(-height // TILE)
    return BASE_TOKENS + TILE_TOKENS * tiles
