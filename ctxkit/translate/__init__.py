"""Translation to provider payloads (layer 3, R-TR-1…9): a small registry.

Input: a `TranslationInput` (the assembled messages and the request's settings).
Output: `Payload` — the request body exactly as a client would send it (built when asked),
the payload's messages with their prompt items, plus what translation had to change (rows
and warnings). Each wire format's module exposes `translate(request, prepared) -> Translated`;
a provider's spec (`ctxkit/providers/`) names its format; `items` turns a payload into the
prompt items a provider reads (R-RPL-4).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import is_
from typing import TYPE_CHECKING, Any, Protocol

from ctxkit import providers
from ctxkit.errors import InputError
from ctxkit.loading.cache_rules import Mode, row
from ctxkit.translate import reading
from ctxkit.translate.common import Prepared, Sent, Translated, TranslationInput, prepare
from ctxkit.translate.reading import Reader

if TYPE_CHECKING:
    from ctxkit.translate.bodies import Normaliser

# The module of this package that translates each built-in wire format (`ProviderSpec.format`).
MODULES: dict[str, str] = {"openai": "openai", "anthropic": "anthropic", "gemini": "gemini", "ollama": "ollama"}


class Translator(Protocol):
    def __call__(self, request: TranslationInput, prepared: Prepared) -> Translated: ...


@dataclass(slots=True, unsafe_hash=True)  # never changed once made (as frozen; built per request, cheaper)
class Payload:
    """A request: `head` is its body without the messages (a body as sent: the whole body);
    `messages`, the payload's messages as translation emitted them (None for a body as sent:
    `items` reads them from the body); `body` is built from both on first use, and so are the
    `origins` of emitted messages."""

    provider: str
    head: dict[str, Any]
    prepared: Prepared
    given: tuple[tuple[int, ...], ...] = ()  # a whole body's origins (see `common.Translated`)
    model: str = ""  # the model the request is for ("": the body's `model`)
    sent: bool = False  # a body as a client sent it (a log), not one ctxkit translated
    messages: Sequence[Sent] | None = None  # a tuple, or a list that no one changes (OpenAI's: a replay keeps it)
    meter: object = None  # the meter `messages`' known counts were made with
    translated: Translated | None = field(default=None, compare=False, repr=False)
    carried: tuple[Any, ...] | None = field(default=None, compare=False, repr=False)  # see `runs`
    _body: list[dict[str, Any]] = field(default_factory=list, compare=False, repr=False)
    _origins: list[tuple[tuple[int, ...], ...]] = field(default_factory=list, compare=False, repr=False)

    @property
    def runs(self) -> tuple[Sequence[Sent], list[tuple[int, int, int]]] | None:
        """(`last`, runs): the last request's `messages` (the very list) and the runs (i, j, k) of
        these messages that are its very objects, messages[i + n] is last[j + n] for n < k, in
        order of both: what a replay's translation carried (OpenAI, Ollama; `openai.same_runs`,
        worked out when first asked). None: not known (no memo, another format, the first call)."""
        carried = self.carried
        if carried is None:
            return None
        last, messages, runs = carried
        if callable(runs):  # (`openai.same_runs`, waiting for its arguments)
            runs = runs()
            self.carried = (last, messages, runs)
        return last, runs

    @property
    def origins(self) -> tuple[tuple[int, ...], ...]:
        """Per payload message, per prompt item, the index of the wire message it came from
        (-1: inserted by a fix-up); see `common.Translated`."""
        if self.messages is None:
            return self.given
        if not self._origins:
            self._origins.append(tuple(s.at(n) for n, s in enumerate(self.messages)))
        return self._origins[0]

    @property
    def body(self) -> dict[str, Any]:
        """The request body exactly as a client would send it."""
        if self.translated is None:
            return self.head
        if not self._body:  # its own head: the translator's, with the settings' fields
            self._body.append(self.translated.body(self.head))
        return self._body[0]


_REGISTERED: dict[str, Translator] = {}


def register_format(
    name: str, translate: Translator, *, read: Reader | None = None, normalise: Normaliser | None = None
) -> None:
    """A wire format of a provider registered at run time, in one call: its translator; how its
    bodies are read (`read`: body → (role, items) per message); how a body of it as a client sent
    it (a log) is brought to that shape (`normalise`). Without them its bodies are chat messages,
    `{"messages": [{"role", "content", "images"?, "tool_calls"?}]}`."""
    from ctxkit.translate import bodies

    if name in MODULES:
        raise ValueError(f"wire format {name!r} is built in")
    _REGISTERED[name] = translate
    if read is not None:
        reading.register_reader(name, read)
    if normalise is not None:
        bodies.register_normaliser(name, normalise)


def unregister_format(name: str) -> None:
    """Forget a wire format registered at run time (tests)."""
    from ctxkit.translate import bodies

    _REGISTERED.pop(name, None)
    reading.READERS.pop(name, None)
    bodies.NORMALISERS.pop(name, None)


def translator(provider: str) -> Translator:
    kind = providers.wire_format(provider)
    if kind in _REGISTERED:
        return _REGISTERED[kind]
    if kind not in MODULES:
        raise InputError(f"provider {provider!r} speaks {kind!r}, a wire format with no translator (register_format)")
    module = importlib.import_module(f".{MODULES[kind]}", __name__)
    fn: Translator = module.translate
    return fn


def cache_parameters(request: TranslationInput, mode: Mode | None = None) -> dict[str, Any]:
    """OpenAI's request-level cache parameters from `settings.cache` (R-RPL-5): `prompt_cache_key`;
    before GPT-5.6 `prompt_cache_retention`; from GPT-5.6 on, where the seed's policy caches
    (`settings.prompt_cache`, not for a request as logged), `prompt_cache_options` in implicit mode
    (with `ttl` when set). Which models cache at breakpoints is the cache rules' table's word."""
    cache = request.settings.cache
    out: dict[str, Any] = {}
    if cache.key is not None:
        out["prompt_cache_key"] = cache.key
    if (mode if mode is not None else Mode(row(request.provider, request.model)["rules"]["mode"])) is Mode.BREAKPOINTS:
        if request.settings.prompt_cache and not request.settings.as_logged:
            out["prompt_cache_options"] = {"mode": "implicit", **({"ttl": cache.ttl} if cache.ttl else {})}
    elif cache.retention is not None:
        out["prompt_cache_retention"] = cache.retention
    return out


def _context(request: TranslationInput) -> tuple[Translator, Mode | None]:
    """The request's translator and, for the `openai` format, its model's cache mode (the cache
    rules' table); a replay's memo keeps them while its provider and model stay (R-RPL-9)."""
    memo = request.memo
    found: tuple[Translator, Mode | None] | None = memo.per_context.get("translator") if memo is not None else None
    if found is None:
        openai = providers.wire_format(request.provider) == "openai"
        mode = Mode(row(request.provider, request.model)["rules"]["mode"]) if openai else None
        found = translator(request.provider), mode
        if memo is not None:
            memo.per_context["translator"] = found
    return found


def _cache_parameters(request: TranslationInput, mode: Mode) -> dict[str, Any]:
    """`cache_parameters`; a replay's calls share them while their settings stay the same."""
    memo = request.memo
    found: tuple[object, dict[str, Any]] | None = memo.per_context.get("cache") if memo is not None else None
    if found is not None and found[0] is request.settings:
        return found[1]
    params = cache_parameters(request, mode)
    if memo is not None:
        memo.per_context["cache"] = (request.settings, params)
    return params


def _shared(request: TranslationInput, head: dict[str, Any]) -> dict[str, Any]:
    """`head`, or the last request's of a replay when it holds the very same values under the same
    fields in the same order (one dict for a replay's calls, not one each; compared by identity, so
    never `1` for `1.0`)."""
    memo = request.memo
    if memo is None:
        return head
    last: dict[str, Any] | None = memo.per_context.get("head")
    if (
        last is not None
        and len(last) == len(head)
        and all(map(is_, last, head))
        and all(map(is_, last.values(), head.values()))
    ):
        return last
    memo.per_context["head"] = head
    return head


def translate(request: TranslationInput) -> Payload:
    prepared = prepare(request)  # first: a replay's memo begins the request there
    translate_with, mode = _context(request)
    if request.memo is not None and translate_with in _REGISTERED.values():
        prepared.messages = prepared.messages[:]  # the memo keeps the list prepare made (`TranslationMemo.keep`)
    out = translate_with(request, prepared)
    head = _head(request, out.head, mode)
    if out.messages is None:  # the translator gave the whole body
        return Payload(request.provider, head, prepared, out.origins, request.model)
    carried = request.memo.sent_runs if request.memo is not None else None
    if carried is not None and carried[1] is not out.messages:  # (a translator's own list)
        carried = None
    return Payload(
        request.provider, head, prepared, (), request.model, False, out.messages, request.meter, out, carried
    )


def _head(request: TranslationInput, head: dict[str, Any], mode: Mode | None) -> dict[str, Any]:
    """The request's head: the translator's, then OpenAI's cache parameters, then the settings'
    request fields (R-FIX-7: after the fields translation built, as written). A replay's calls
    whose translator gave the very same head under the very same settings get the last call's."""
    memo = request.memo
    last: tuple[object, object, dict[str, Any]] | None = memo.per_context.get("merged") if memo is not None else None
    if last is not None and last[0] is head and last[1] is request.settings:
        return last[2]
    made = head
    if mode is not None:
        made = {**made, **_cache_parameters(request, mode)}
    if request.settings.request_fields:
        made = {**made, **request.settings.request_field_values()}
    made = _shared(request, made)
    if memo is not None:
        memo.per_context["merged"] = (head, request.settings, made)
    return made
