"""Parrot: a provider ctxkit does not ship, added by following docs/architecture.md's recipe
("How to add a provider") at run time, so that tests/test_fake_provider.py can run every command
on it. One module: its spec (wire format, endpoints, model rows, prompt-cache rules, framing,
image rule) and its wire format (translator, reader, a logged body's normaliser), registered
once by `install`. Its chat call's URL: `…/v1/MODEL/turns`.

Its bodies: `{"model", "turns": [{"role", "content", "images"?}], "tools"?}` — tool calls as
`call NAME(ARGS)` lines on the assistant's turn, results as `tool` turns opening with the call's
id. Each turn is one item, read as a chat message is (`content`, `images`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ctxkit import providers, translate
from ctxkit.counting.measure import dumps_args
from ctxkit.providers import Framing, ProviderSpec, Route
from ctxkit.translate.bodies import BodyShape
from ctxkit.translate.common import Prepared, Translated, TranslationInput

NAME = "parrot"

SPEC = ProviderSpec(
    name=NAME,
    format=NAME,
    endpoints=("parrot.chat",),
    routes=(Route("parrot.chat", r"/v1/(?P<model>parrot-[^/]+)/turns"),),  # its URL in a cassette
    models={
        "parrot-1": {
            "max_input_tokens": 6000,
            "max_output_tokens": 500,
            "supports_images": True,
            "tokenizer": "approx",
        },
    },
    cache_rules={
        "rows": [
            {
                "family": "every parrot",
                "models": ["*"],
                "rules": {"mode": "automatic", "min_tokens": 64, "increment": 16, "lookback": None, "ttl_seconds": 600},
                "sources": {"mode": "ctxkit", "min_tokens": "ctxkit", "increment": "ctxkit", "ttl_seconds": "ctxkit"},
            }
        ],
        "common": {"rules": {"write_multiplier": 0}, "sources": {"write_multiplier": "ctxkit"}},
    },
    framing=Framing(per_message=2, role=False, priming=1),
    keyed_settings=("seed",),
)


def translate_body(request: TranslationInput, prepared: Prepared) -> Translated:
    """The Parrot wire format (registered for `format="parrot"`)."""
    messages: list[dict[str, Any]] = []
    for m in prepared.messages:
        lines = [p.text for p in m.parts if p.image is None and p.text]
        lines += [f"call {c.name}({dumps_args(c.args)})" for c in m.tool_calls]
        if m.role == "tool":
            lines.insert(0, f"[{m.tool_call_id}]")
        out: dict[str, Any] = {"role": m.role, "content": "\n".join(lines)}
        images = [p.b64 for p in m.parts if p.image is not None]
        if images:
            out["images"] = images
        messages.append(out)
    body: dict[str, Any] = {"model": request.model, "turns": messages}
    if request.tools:
        body["tools"] = [{"name": t.name, "about": t.description, "input": t.parameters} for t in request.tools]
    return Translated(body, tuple((n,) for n in range(len(messages))))


def read(body: dict[str, Any]) -> Iterator[tuple[str, list[Any]]]:
    """(role, items) per turn: each turn is one item."""
    for turn in body["turns"]:
        yield turn["role"], [turn]


def normalise(body: dict[str, Any], shape: BodyShape) -> dict[str, Any]:
    """A logged Parrot body is already in Parrot's shape: record where each turn is and its kind."""
    for n, turn in enumerate(body["turns"]):
        shape.message(f"/turns/{n}", str(turn["role"]))
        if turn["role"] == "system":
            shape.system.append(str(turn.get("content", "")))
    return body


def install() -> None:
    providers.register(SPEC)
    translate.register_format(NAME, translate_body, read=read, normalise=normalise)


def uninstall() -> None:
    providers.unregister(NAME)
    translate.unregister_format(NAME)
