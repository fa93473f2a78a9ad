"""Token costs of working messages, counted lazily and at most once.

Input: a tokenizer name and the model's image support. Output: `Meter`, which
gives the cost of a text, an image or a whole working message (R-FIX-3,
R-CONV-4, R-ASM-6). Nothing is counted until someone asks, so the part of a
long history that truncation never looks at is never tokenized.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from ctxkit.counting import images as imagelib
from ctxkit.counting.tokens import get_counter
from ctxkit.history.working import Call, Image, Working
from ctxkit.loading.config import Effective
from ctxkit.loading.domain import StoredMessage
from ctxkit.loading.templates import Templates

UNREADABLE_IMAGE_TOKENS = imagelib.BASE_TOKENS  # an image whose size cannot be read costs the base alone


class Counts:
    """Token counts remembered for every `Meter` given them, per tokenizer: each distinct text's,
    and each image-less working message's cost by key (with the message itself: a later message
    under the same key is costed afresh).

    Replay assembles the same stored messages once per call: with one `Counts` for all its
    meters (the replay's state holds it), each text is tokenized once per replay, not once per
    call, and each message costed once (R-RPL-9). A single assembly needs none."""

    __slots__ = ("_messages", "_texts")

    def __init__(self) -> None:
        self._texts: dict[str, dict[str, int]] = {}
        self._messages: dict[str, dict[str, tuple[Working, int]]] = {}

    def texts(self, tokenizer: str) -> dict[str, int]:
        return self._texts.setdefault(tokenizer, {})

    def messages(self, tokenizer: str) -> dict[str, tuple[Working, int]]:
        return self._messages.setdefault(tokenizer, {})

    def prefill(self, tokenizer: str, texts: Iterable[str]) -> None:
        """Count `texts` now, one after the other. A replay sends every stored message of its
        branch up to the last question at some call, so their texts are counted anyway (the stored
        answer after the last question is not sent, R-TURN-1); counted in one pass, the
        tokenizer's tables stay in the processor's caches, and the same texts cost about 40% less
        than when each is counted where a call first meets it, between other work (0.47 s against
        0.76 s at 20,000 messages). The counts are the same either way."""
        memo, count = self.texts(tokenizer), get_counter(tokenizer).count
        for text in texts:
            if text and text not in memo:
                memo[text] = count(text)


_ARGS = json.JSONEncoder(ensure_ascii=False).encode  # built once: `json.dumps` with an option builds one per call


def dumps_args(args: Any) -> str:
    """Call arguments as written into payloads: json.dumps defaults, non-ASCII kept."""
    return _ARGS(args)


class _WrittenCall(Protocol):
    @property
    def args(self) -> Any: ...
    @property
    def args_text(self) -> str | None: ...


def call_args_text(call: _WrittenCall) -> str:
    """A call's arguments as sent where a provider takes text: the model's own text when the
    fixture keeps it (R-FIX-7), else `dumps_args`."""
    return call.args_text if call.args_text is not None else dumps_args(call.args)


def stored_texts(messages: Iterable[StoredMessage]) -> Iterator[str]:
    """The texts a meter counts for stored messages, in order: each message's text and each of
    its calls' arguments where no count is stored, and each call's response."""
    for m in messages:
        if m.tokens is None:
            yield m.text
        for c in m.tool_calls:
            if c.tokens is None:
                yield call_args_text(c)
            if c.response:
                yield c.response


def meter_for(eff: Effective, counts: Counts | None = None) -> Meter:
    """The meter of an assembly's settings (tokenizer, image support, templates)."""
    return Meter(eff.tokenizer, supports_images=eff.supports_images, templates=eff.templates, counts=counts)


class Meter:
    def __init__(
        self, tokenizer: str, *, supports_images: bool, templates: Templates, counts: Counts | None = None
    ) -> None:
        """`counts`: texts counted by other meters too (one replay's); None: this meter's own."""
        self.tokenizer = tokenizer
        self.supports_images = supports_images
        self.templates = templates
        self.counts = counts
        self._counter = get_counter(tokenizer)
        self._cache: dict[str, int] = {}
        # Each distinct text is tokenized once: the request as sent (R-RPL-4, R-ASM-9) re-reads
        # the texts assembly counted, and roles and tool names recur on every message.
        self._texts = counts.texts(tokenizer) if counts is not None else {}
        self._costs = counts.messages(tokenizer) if counts is not None else None
        self.counted_texts = 0  # how many texts were tokenized (for benchmarks and tests)

    def text(self, text: str) -> int:
        if not text:
            return 0
        memo = self._texts
        found = memo.get(text)
        if found is not None:
            return found
        self.counted_texts += 1
        count = memo[text] = self._counter.count(text)
        return count

    def call(self, call: Call) -> int:
        return call.tokens if call.tokens is not None else self.text(call_args_text(call))

    def image(self, image: Image) -> int:
        if not self.supports_images:
            return self.text(self.templates.fill("image.non_vision_marker", id=image.file_id))
        if image.tokens is not None:
            return image.tokens
        size = imagelib.image_size(image.data) if image.data else None
        if size is None:
            return UNREADABLE_IMAGE_TOKENS
        return imagelib.estimate_tokens(*size)

    def of(self, w: Working) -> int:
        """The message's cost: its text (stored or counted), its images, its calls."""
        cached = self._cache.get(w.key)
        if cached is not None:
            return cached
        costs = self._costs
        known = costs.get(w.key) if costs is not None else None
        if known is not None and known[0] is w:
            total = known[1]
        else:
            total = w.tokens if w.tokens is not None else self.text(w.text if w.count_text is None else w.count_text)
            if w.images:  # most messages have neither images nor calls: no generator made for them
                total += sum(self.image(i) for i in w.images if not i.project)
            if w.tool_calls:
                total += sum(self.call(c) for c in w.tool_calls)
            if costs is not None and not w.images:  # an image's cost depends on more than the tokenizer
                costs[w.key] = (w, total)
        self._cache[w.key] = total
        return total
