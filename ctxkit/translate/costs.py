"""What one prompt item costs (R-RPL-4): its texts as the model reads them, its images, documents and media.

Input: one item of a payload message (a dict as the body holds it), the index of the wire
message it came from, something that counts (`ItemMeter`) and the provider's `WireRules`.
Output: `item_tokens` — the item's tokens without the message's framing — and `texts_tokens`,
its texts alone. An image is costed from the working image behind it (`Images` finds it by its
base64 data: a stored count, a marker, else the provider's rule for its size); an image in a
body as sent has only its bytes.
"""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Any, Protocol

from ctxkit.counting.image_rules import anthropic_pdf_tokens, gemini_media_tokens
from ctxkit.counting.images import image_size
from ctxkit.counting.wire import WireRules, anthropic_block_tokens
from ctxkit.history.working import Image
from ctxkit.translate import reading

if TYPE_CHECKING:
    from ctxkit.translate import Payload

SENT_IMAGE = "sent"  # the file id of an image read from a body as sent (no fixture file behind it)


class ItemMeter(Protocol):
    tokenizer: str

    def text(self, text: str) -> int: ...

    def image(self, image: Image) -> int: ...


def item_tokens(part: Any, origin: int, images: Images, meter: ItemMeter, rules: WireRules) -> int:
    """What the model reads of one item: its texts (scaled by the provider's ratio) and its images."""
    text = rules.scaled(texts_tokens(part, meter, rules))
    found = reading.images(part)
    cost = text + sum(_image_cost(images.find(origin, data), detail, meter, rules) for data, detail in found)
    if rules.anthropic:
        cost += sum(_document_cost(kind, data, meter, rules) for kind, data in reading.documents(part))
    elif rules.format == "gemini":
        cost += sum(_media_cost(kind, data, meter) for kind, data in reading.media(part))
    return cost


def _media_cost(kind: str, data: str, meter: ItemMeter) -> int:
    """Gemini's inline media: text read as text, audio, video and PDF by Gemini's rules."""
    raw = _decoded(data)
    if kind.startswith("text/"):
        return meter.text(raw.decode("utf-8", "replace"))
    return gemini_media_tokens(kind, raw) or 0


def _document_cost(kind: str, data: str, meter: ItemMeter, rules: WireRules) -> int:
    if kind == "application/pdf":
        return anthropic_pdf_tokens(_decoded(data))
    return rules.scaled(meter.text(data)) if kind.startswith("text/") else 0


def _image_cost(image: Image, detail: str | None, meter: ItemMeter, rules: WireRules) -> int:
    """A stored count or a marker as the meter says; else the provider's rule for the image's size."""
    if image.tokens is not None or image.data is None:
        return meter.image(image)
    size = image_size(image.data)
    if size is None:
        return meter.image(image)
    return rules.image(size[0], size[1], detail)


def texts_tokens(part: dict[str, Any], meter: ItemMeter, rules: WireRules | None = None) -> int:
    """The texts of one item as the model reads them (never the JSON escaping); Anthropic's tool
    calls and results in its published tool-use text format."""
    if rules is not None and rules.anthropic:
        wrapped = anthropic_block_tokens(part, meter.text)
        if wrapped is not None:
            return wrapped + (
                sum(meter.text(t) for t in reading.texts(part)) if part.get("type") == "tool_result" else 0
            )
    return sum(meter.text(t) for t in reading.texts(part))


class Images:
    """Base64 data → the working image it encodes, looked up in the item's own wire message first."""

    def __init__(self, payload: Payload) -> None:
        self._messages = payload.prepared.messages
        self._by_message: dict[int, dict[str, Image]] = {}
        self._all: dict[str, Image] | None = None
        self._sent: dict[str, Image] = {}

    def _index(self, origin: int) -> dict[str, Image]:
        found = self._by_message.get(origin)
        if found is None:
            parts = self._messages[origin].parts if 0 <= origin < len(self._messages) else []
            found = self._by_message[origin] = {p.b64: p.image for p in parts if p.image is not None}
        return found

    def find(self, origin: int, data: str) -> Image:
        image = self._index(origin).get(data)
        if image is None:
            if self._all is None:
                self._all = {}
                for n in range(len(self._messages)):
                    self._all.update(self._index(n))
            image = self._all.get(data)
        if image is None:  # a body as sent (R-LOG-2): no working image behind it, only its bytes
            image = self._sent.get(data)
            if image is None:
                image = self._sent[data] = Image(SENT_IMAGE, _decoded(data), None)
        return image


def _decoded(data: str) -> bytes:
    """Base64 image data as bytes (b"" when it is not base64: a URL, a file id)."""
    try:
        if "-" in data or "_" in data:  # the URL-safe alphabet (Gemini's JSON may use it)
            return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))
        return base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return b""
