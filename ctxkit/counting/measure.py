"""Token costs of working messages, counted lazily and at most once.

Input: a tokenizer name and the model's image support. Output: `Meter`, which
gives the cost of a text, an image or a whole working message (R-FIX-3,
R-CONV-4, R-ASM-6). Nothing is counted until someone asks, so the part of a
long history that truncation never looks at is never tokenized.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from ctxkit.counting import images as imagelib
from ctxkit.counting.tokens import get_counter
from ctxkit.history.working import Call, Image, Origin, Working
from ctxkit.loading.templates import Templates

UNREADABLE_IMAGE_TOKENS = imagelib.BASE_TOKENS  # an image whose size cannot be read costs the base alone


@dataclass(slots=True)
class _Shared:
    texts: dict[str, dict[str, int]] = field(default_factory=dict)  # per tokenizer: text → count
    # per tokenizer: id → (image-less working message, its cost), which needs only the tokenizer
    messages: dict[str, dict[int, tuple[Working, int]]] = field(default_factory=dict)


# Working messages made from stored messages, the same objects call after call (the replay shares
# their conversion); generated ones (system, reminder, in-flight, …) are new on every call: kept,
# their costs would only hold every call's messages in memory until the replay ends.
_SHARED_ORIGINS = frozenset({Origin.MESSAGE, Origin.FILE, Origin.TOOL_CALLS, Origin.TOOL_RESULT, Origin.ANSWER})

_SHARED: contextvars.ContextVar[_Shared | None] = contextvars.ContextVar("ctxkit_shared_counts", default=None)


@contextlib.contextmanager
def shared_counts() -> Iterator[None]:
    """Within it, every Meter remembers each distinct text's count for all the others, and each
    image-less working message's cost by identity.

    Replay assembles the same stored messages once per call: with this, each text is
    tokenized once per replay, not once per call, and each message costed once (R-RPL-9)."""
    token = _SHARED.set(_Shared())
    try:
        yield
    finally:
        _SHARED.reset(token)


def dumps_args(args: Any) -> str:
    """Call arguments as written into payloads: json.dumps defaults, non-ASCII kept."""
    return json.dumps(args, ensure_ascii=False)


class _WrittenCall(Protocol):
    @property
    def args(self) -> Any: ...
    @property
    def args_text(self) -> str | None: ...


def call_args_text(call: _WrittenCall) -> str:
    """A call's arguments as sent where a provider takes text: the model's own text when the
    fixture keeps it (R-FIX-7), else `dumps_args`."""
    return call.args_text if call.args_text is not None else dumps_args(call.args)


class Meter:
    def __init__(self, tokenizer: str, *, supports_images: bool, templates: Templates) -> None:
        self.tokenizer = tokenizer
        self.supports_images = supports_images
        self.templates = templates
        self._counter = get_counter(tokenizer)
        self._cache: dict[str, int] = {}
        shared = _SHARED.get()
        # Each distinct text is tokenized once: the request as sent (R-RPL-4, R-ASM-9) re-reads
        # the texts assembly counted, and roles and tool names recur on every message.
        self._texts = shared.texts.setdefault(tokenizer, {}) if shared is not None else {}
        self._costs = shared.messages.setdefault(tokenizer, {}) if shared is not None else None
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
        known = costs.get(id(w)) if costs is not None else None
        if known is not None and known[0] is w:
            total = known[1]
        else:
            total = w.tokens if w.tokens is not None else self.text(w.text if w.count_text is None else w.count_text)
            total += sum(self.image(i) for i in w.images if not i.project)
            total += sum(self.call(c) for c in w.tool_calls)
            if costs is not None and not w.images and w.origin in _SHARED_ORIGINS:
                costs[id(w)] = (w, total)
        self._cache[w.key] = total
        return total
