"""A request body as it was sent (a log, a cassette) → a `Payload` that `items` can count (R-LOG-2).

Input: the provider's wire format (`openai`, `azure`, `anthropic`, `gemini`,
`ollama`), the body exactly as sent, and the model it names. Output:
`body_payload(provider, body)` — a `Payload` with no assembled messages behind
it (its images are read from the body's own base64 data) — and
`body_meter(provider, model)`, the `Meter` with the model's tokenizer (the
built-in table's, else the rule for unknown names of a known family). Nothing
is reassembled: `items.wire_tokens(body_payload(...), meter=body_meter(...))`
is ctxkit's R-RPL-4 count of that very body.
"""

from __future__ import annotations

from typing import Any

from ctxkit.counting.measure import Counts, Meter
from ctxkit.loading import models
from ctxkit.loading.templates import Templates
from ctxkit.translate import Payload
from ctxkit.translate.common import Prepared


def body_payload(provider: str, body: dict[str, Any], model: str | None = None) -> Payload:
    """The body as a payload: no wire messages behind it, so images count from their own bytes.

    `model`: the model it was sent to, when the body does not name it (Gemini, Azure)."""
    return Payload(provider, body, Prepared([], 0, 0), (), model or str(body.get("model") or ""), sent=True)


def body_meter(provider: str, model: str | None, counts: Counts | None = None) -> Meter:
    """A meter for counting a body sent to `model` (its tokenizer and image support); `counts`:
    the texts other meters counted (one log replay's)."""
    info = models.lookup(provider, model) if model else None
    defaults = info or models.unknown_defaults(provider, model or "")
    return Meter(defaults.tokenizer, supports_images=True, templates=Templates.build(), counts=counts)
