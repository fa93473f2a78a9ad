"""Image facts by content and the high-detail tile estimate (R-FIX-3)."""

from __future__ import annotations

import struct
import zlib

import pytest

from ctxkit.counting.images import estimate_tokens, image_size, sniff_mime


def png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00" + b"\x00\x00\x00" * width)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def gif(width: int, height: int, version: bytes = b"89a") -> bytes:
    return b"GIF" + version + struct.pack("<HHBBB", width, height, 0, 0, 0) + b",\x00;"


def segment(marker: int, body: bytes) -> bytes:
    return bytes([0xFF, marker]) + struct.pack(">H", len(body) + 2) + body


def jpeg(width: int, height: int, sof: int = 0xC0) -> bytes:
    """SOI, APP0, DQT, DHT (0xC4, not a frame), fill bytes, SOFn, SOS, EOI."""
    return (
        b"\xff\xd8"
        + segment(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")
        + segment(0xDB, b"\x00" + bytes(64))
        + segment(0xC4, b"\x00" + bytes(16) + b"\x00")
        + b"\xff\xff"  # fill bytes before the next marker
        + segment(sof, struct.pack(">BHHB", 8, height, width, 1) + b"\x01\x11\x00")
        + segment(0xDA, b"\x01\x01\x00\x00\x3f\x00")
        + b"\x00\x00"
        + b"\xff\xd9"
    )


def riff(fourcc: bytes, payload: bytes) -> bytes:
    body = b"WEBP" + fourcc + struct.pack("<I", len(payload)) + payload
    return b"RIFF" + struct.pack("<I", len(body)) + body


def webp_lossy(width: int, height: int) -> bytes:
    frame = b"\x9d\x01\x2a" + struct.pack("<HH", width, height)
    return riff(b"VP8 ", b"\x30\x01\x00" + frame + bytes(8))


def webp_lossless(width: int, height: int) -> bytes:
    bits = (width - 1) | ((height - 1) << 14)
    return riff(b"VP8L", b"\x2f" + struct.pack("<I", bits) + bytes(4))


def webp_extended(width: int, height: int) -> bytes:
    dims = (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return riff(b"VP8X", b"\x10\x00\x00\x00" + dims)


@pytest.mark.parametrize(
    ("data", "mime", "size"),
    [
        (png(640, 480), "image/png", (640, 480)),
        (gif(320, 200), "image/gif", (320, 200)),
        (gif(7, 9, b"87a"), "image/gif", (7, 9)),
        (jpeg(1024, 768), "image/jpeg", (1024, 768)),
        (jpeg(300, 4000, sof=0xC2), "image/jpeg", (300, 4000)),  # progressive
        (jpeg(17, 33, sof=0xCF), "image/jpeg", (17, 33)),
        (webp_lossy(800, 600), "image/webp", (800, 600)),
        (webp_lossless(16383, 1), "image/webp", (16383, 1)),
        (webp_extended(5000, 3000), "image/webp", (5000, 3000)),
    ],
)
def test_r_fix_3_sniff_and_size_by_content(data: bytes, mime: str, size: tuple[int, int]) -> None:
    """R-FIX-3: PNG, JPEG, GIF and WebP are recognised by content and sized from headers."""
    assert sniff_mime(data) == mime
    assert image_size(data) == size


@pytest.mark.parametrize(
    "data",
    [b"", b"hello", b"BM\x00\x00", b"%PDF-1.7", b"RIFF\x00\x00\x00\x00WAVEfmt ", b"\x89PNG"],
)
def test_r_fix_3_other_content_is_not_an_image(data: bytes) -> None:
    """R-FIX-3: only the four accepted types are images; others (BMP, PDF, WAV) are not."""
    assert sniff_mime(data) is None
    assert image_size(data) is None


@pytest.mark.parametrize(
    "data",
    [
        png(10, 10)[:20],  # truncated IHDR
        png(0, 10),  # zero width
        b"\x89PNG\r\n\x1a\n" + bytes(16),  # no IHDR
        gif(1, 1)[:8],
        b"\xff\xd8\xff",  # SOI only
        b"\xff\xd8" + segment(0xDA, b"\x00") + b"\xff\xd9",  # scan before any frame
        jpeg(100, 100)[:-40],  # cut inside the segments
        b"\xff\xd8\x00\x00",  # garbage where a marker belongs
        riff(b"VP8 ", b"\x00" * 10),  # missing start code
        riff(b"VP8L", b"\x00" * 5),  # missing signature
        riff(b"ALPH", b"\x00" * 10),
        b"RIFF\x00\x00\x00\x00WEBP",
    ],
)
def test_r_fix_3_unreadable_headers_give_no_size(data: bytes) -> None:
    """R-FIX-3: a recognised type whose header cannot be read has no size (None)."""
    assert image_size(data) is None


def test_r_fix_3_dht_is_not_a_frame_marker() -> None:
    """R-FIX-3: C4 (DHT), C8 and CC sit among the SOF codes but carry no frame size."""
    data = b"\xff\xd8" + segment(0xC4, struct.pack(">BHHB", 8, 1, 2, 0)) + jpeg(50, 60)[2:]
    assert image_size(data) == (50, 60)


@pytest.mark.parametrize(
    ("width", "height", "tokens"),
    [
        (1024, 1024, 765),  # OpenAI's example: 768x768, 4 tiles
        (2048, 4096, 1105),  # OpenAI's example: 1024x2048 -> 768x1536, 6 tiles
        (4096, 8192, 1105),  # fit in 2048 first, then the same as above
        (512, 512, 255),  # one tile, no scaling
        (100, 100, 255),  # never scaled up
        (513, 513, 765),  # just over one tile per side
        (768, 768, 765),
        (2048, 2048, 765),
        (3000, 1000, 1445),  # 2048x682 (floored), shortest side already <= 768: 4x2 tiles
        (1, 100_000, 765),  # 1x2048: a side never drops below 1 px
    ],
)
def test_r_fix_3_tile_formula(width: int, height: int, tokens: int) -> None:
    """R-FIX-3: fit in 2048x2048, shortest side to 768, never up; 85 + 170 per 512-px tile."""
    assert estimate_tokens(width, height) == tokens
    assert estimate_tokens(height, width) == tokens


def test_r_fix_3_tile_formula_needs_a_size() -> None:
    """R-FIX-3: a zero or negative side is a programming error, not a token count."""
    with pytest.raises(ValueError):
        estimate_tokens(0, 10)
