"""Provider-neutral preparation of the assembled list for translation (R-TR-5/6/8).

Input: a `TranslationInput` (the assembled messages and the request's settings,
not the whole `Assembly`). Output: `Prepared` — wire messages with text and image
parts (labels, markers, the image cap and its drop notice applied), the
prompt-cache split, and the record of what translation changed.
"""

from __future__ import annotations

import base64
from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ctxkit import providers
from ctxkit.assembly.system import wrap_reminder
from ctxkit.counting.images import sniff_mime
from ctxkit.counting.measure import Meter
from ctxkit.history.working import Call, Fate, Image, Kind, Row, Segment, Working, image_key
from ctxkit.loading.domain import Settings, ToolDef
from ctxkit.loading.templates import Templates
from ctxkit.translate.fragments import Fragment
from ctxkit.translate.keys import Key
from ctxkit.translate.memo import TranslationMemo


@dataclass(frozen=True, slots=True)
class TranslationInput:
    """What translation reads: the assembled messages by segment, in final order (R-ASM-7),
    and the request's settings. Built from an `Assembly` by the pipeline, or directly
    (compression's summarization request)."""

    provider: str
    model: str
    max_input_tokens: int
    max_output_tokens: int
    segments: Mapping[Segment, Sequence[Working]]  # segment → its messages; their order is the final order
    tools: tuple[ToolDef, ...]  # definitions sent with the request (R-TR-9)
    settings: Settings
    templates: Templates
    supports_images: bool
    meter: Meter
    memo: TranslationMemo | None = None  # a replay's: each working message translated once (R-RPL-9)
    joined: tuple[list[Working], Mapping[Segment, Sequence[Working]]] | None = None  # see `prepare`


@dataclass(slots=True, unsafe_hash=True)  # hashed as a frozen one is; made without object.__setattr__ per field
class Part:
    text: str = ""
    image: Image | None = None
    mime: str = ""

    @property
    def b64(self) -> str:
        assert self.image is not None and self.image.data is not None
        return base64.b64encode(self.image.data).decode("ascii")

    @property
    def data_url(self) -> str:
        """The image as a `data:` URL (OpenAI's image parts, the HTML report's thumbnails)."""
        return f"data:{self.mime};base64,{self.b64}"


@dataclass(slots=True)
class WireMessage:
    role: str  # system | user | assistant | tool
    parts: list[Part]
    key: str
    tool_calls: tuple[Call, ...] = ()
    tool_call_id: str | None = None
    cacheable: bool = False
    had_images: bool = False  # some image of the message is sent as an image, a label or a marker
    entry: Fragment | None = None  # its translator's fragment, kept by the memo (None: translate afresh)

    @property
    def text(self) -> str:
        return "\n".join(p.text for p in self.parts if p.image is None and p.text)


@dataclass(slots=True)
class Sent:
    """One payload message as the provider reads it (see `reading.messages`): its role, its
    prompt items (the very dicts the body holds) and, per item, the index of the wire message
    it was made from (-1: content a fix-up inserted). `origins` None: one item, made from the wire
    message at the payload message's own index (OpenAI, Ollama), so that the same `Sent` serves
    a replay's requests wherever the message stands (`at` gives the indices).

    `known`: per item, (key, tokens without the framing) as translation already knew them, or
    None; `frame`: the message's framing tokens when known (R-RPL-4). Both are counts made with
    the request's meter and hold only when the items are counted with that meter."""

    role: str
    parts: list[Any]
    origins: tuple[int, ...] | None
    known: list[tuple[Key, int] | None] | None = None
    frame: int | None = None

    def at(self, index: int) -> tuple[int, ...]:
        """Its items' wire-message indices when it is payload message `index`."""
        return (index,) if self.origins is None else self.origins


@dataclass(slots=True, unsafe_hash=True)  # never changed once made (as frozen; built per request, cheaper)
class Translated:
    """A translator's output: the body (or, when the translator emits its messages, the body's
    other fields), and where each prompt item came from.

    `origins` (a whole body's) has one tuple per payload message in the order the provider
    reads them (Anthropic's `system` and Gemini's `systemInstruction` first, as one message each,
    when present); each tuple holds, per prompt item of that message (R-RPL-4), the index of the
    wire message it was made from, or -1 for content a fix-up inserted.

    `Translated.emitted(head, messages, fill)`: `head` holds each message field's place as
    `MESSAGES`, `messages` are the payload's messages (`Sent`, which hold their origins) and
    `fill` gives the message fields from them, so the body is built only when asked and the
    items need no body. `Translated(body, origins)`: the whole body; its items are read back
    from it.
    """

    head: dict[str, Any]
    origins: tuple[tuple[int, ...], ...]
    messages: Sequence[Sent] | None = None  # a tuple, or a list that no one changes (OpenAI's: a replay keeps it)
    fill: Callable[[Sequence[Sent]], dict[str, Any]] | None = None

    @classmethod
    def emitted(
        cls, head: dict[str, Any], messages: Sequence[Sent], fill: Callable[[Sequence[Sent]], dict[str, Any]]
    ) -> Translated:
        return cls(head, (), messages, fill)

    def body(self, head: dict[str, Any] | None = None) -> dict[str, Any]:
        """The body: `head` (by default its own) with its message fields filled."""
        head = self.head if head is None else head
        if self.messages is None or self.fill is None:
            return head
        filled = self.fill(self.messages)
        return {k: filled[k] if v is MESSAGES else v for k, v in head.items()}


class _Messages:
    def __repr__(self) -> str:
        return "MESSAGES"


MESSAGES: Any = _Messages()  # a message field's place in a `Translated.head`


@dataclass(slots=True)
class Prepared:
    messages: list[WireMessage]
    cache_prefix_messages: int
    prefix_tokens: int | None  # None: counted on first use (`cache_prefix_tokens`)
    rows: list[Row] = field(default_factory=list)  # image fates and translation fix-ups
    warnings: list[str] = field(default_factory=list)
    image_b64: set[str] = field(default_factory=set)
    prefix: tuple[Meter, Sequence[Working]] | None = None  # the messages `cache_prefix_tokens` counts from
    placed: int = 0  # the first `placed` messages are the assembled list's, in its order

    def source(self, index: int) -> int | None:
        """The index in the assembled list of wire message `index`; None: added by translation."""
        return index if 0 <= index < self.placed else None

    @property
    def cache_prefix_tokens(self) -> int:
        """The tokens of the cacheable prefix (the budget report shows them)."""
        if self.prefix_tokens is None:
            meter, messages = self.prefix or (None, ())
            prefix = messages[: self.cache_prefix_messages]
            self.prefix_tokens = sum(meter.of(w) for w in prefix) if meter is not None else 0
        return self.prefix_tokens

    def fixup(self, text: str, *, rule: str, id: str | None = None) -> None:
        self.warnings.append(text)
        self.rows.append(Row(id, "fixup", None, 0, Fate.FIXUP, rule, (text,)))


def definitions(a: TranslationInput, params_key: str, default: Any = None) -> list[dict[str, Any]]:
    """R-TR-9: the fixture's full tool definitions as `{name, description?, <params_key>?}`, then
    the definition's request fields as written (R-FIX-7). A definition with a `type` field of
    its own (a provider's server tool) gets no default schema."""
    out = []
    for t in a.tools:
        if not t.full:
            continue
        d: dict[str, Any] = {"name": t.name}
        if t.description is not None:
            d["description"] = t.description
        fields = t.request_field_values() if t.request_fields else {}
        params = t.parameters if t.parameters is not None or "type" in fields else default
        if params is not None:
            d[params_key] = params
        d.update(fields)
        out.append(d)
    return out


def object_args(args: Any) -> tuple[dict[str, Any], bool]:
    """A call's arguments as an object; anything else is wrapped as `{"value": args}`."""
    if isinstance(args, dict):
        return args, False
    return {"value": args}, True


def report_wrapped(prepared: Prepared, provider: str, field: str, call_ids: list[str], rule: str) -> None:
    """The fix-up line for calls whose arguments had to be wrapped by `object_args`."""
    if call_ids:
        prepared.fixup(
            f"{provider}: the arguments of tool call(s) "
            + ", ".join(repr(i) for i in call_ids)
            + f' are not a JSON object: sent as {field} {{"value": ...}}',
            rule=rule,
        )


def image_cap(a: TranslationInput) -> int | None:
    """`settings.image_cap`, else the provider's own cap (its spec's: Azure's 50, R-TR-6) when
    `azure_image_cap` is on."""
    s = a.settings
    if s.image_cap is not None:
        return s.image_cap
    return providers.spec(a.provider).image_cap if s.azure_image_cap else None


def prepare(a: TranslationInput) -> Prepared:
    """The wire messages, one per assembled message in order (then the image cap's notice). With a
    replay's memo, a message without images is made once (R-RPL-9) and a run of the last request's
    messages takes its wire messages as one slice; the images, the cap and the prefix are decided
    for every request."""
    if a.joined is not None and a.joined[1] is a.segments:  # (`Assembly.messages`, the segments it joins)
        messages = a.joined[0]  # only while `segments` is that mapping; nothing changes the list
    else:
        messages = []
        for ws in a.segments.values():  # lists extended in C: a chain goes item by item (~15x slower)
            messages += ws
    wires, todo, imaged = _carried(a, messages)
    out = Prepared([], 0, 0, placed=len(messages))
    images = _Images(a, [messages[p] for p in imaged], out) if imaged else None
    memo, make = a.memo, partial(_wire, a)  # (a partial with a keyword copies a dict per call)
    for index in todo:
        w = messages[index]
        if w.images:  # `imaged` holds its position
            wires[index] = images.wire(w, index)  # type: ignore[union-attr]
        else:
            wires[index] = make(w) if memo is None else memo.plain(w, make)
    out.messages = wires  # type: ignore[assignment]  # every place filled above
    if memo is not None:  # the very list: nothing changes it (see `TranslationMemo.keep`)
        memo.keep(wires)
    if images is not None and images.dropped:
        _drop_notice(a, out, images.dropped)
    _cache_prefix(a, out, messages)
    return out


def _carried(a: TranslationInput, messages: list[Working]) -> tuple[list[WireMessage | None], Sequence[int], list[int]]:
    """The wire messages a replay's memo carries (None where one must be made), the positions to
    make, and the positions of the messages with images."""
    memo = a.memo
    if memo is None:
        return [None] * len(messages), range(len(messages)), [p for p, w in enumerate(messages) if w.images]
    memo.begin((a.provider, a.model, a.meter.tokenizer, a.settings.prompt_cache), messages)
    todo = sorted({*memo.fresh, *memo.imaged}) if memo.imaged else memo.fresh
    return memo.carried(memo.wires), todo, memo.imaged


def _wire(a: TranslationInput, w: Working) -> WireMessage:
    """A new wire message of a message without images (with a memo: `TranslationMemo.plain`)."""
    cacheable = w.cacheable and a.settings.prompt_cache
    return WireMessage(_ROLES[w.kind], _text_parts(w), w.key, w.tool_calls, w.tool_call_id, cacheable)


class _Images:
    """The images of one request: which the cap lets through (R-TR-6, decided when the first
    image needs it), each image's parts and rows, and how many were dropped."""

    def __init__(self, a: TranslationInput, imaged: list[Working], out: Prepared) -> None:
        self.a, self.imaged, self.out = a, imaged, out
        self.allowed: set[tuple[str, int]] | None = None
        self.ends, self.names = _segment_ends(a) if imaged else ([], [])
        self.dropped = 0

    def wire(self, w: Working, index: int) -> WireMessage:
        """The wire message of a message with images: a marker, nothing, or label and image each."""
        a, out = self.a, self.out
        if self.allowed is None:
            self.allowed = _allowed_images(self.imaged, image_cap(a))
        seg = self.names[bisect_right(self.ends, index)]
        parts = _text_parts(w)
        shown = 0  # images that stay in the payload as an image, a label or a marker
        for n, img in enumerate(w.images):
            ident = (w.key, n)
            shown += 1
            if not a.supports_images:
                parts.append(Part(a.templates.fill("image.non_vision_marker", id=img.file_id)))
                out.rows.append(_image_row(a, ident, img, seg, Fate.IMAGE_MARKER, "R-TR-5"))
            elif ident not in self.allowed and not _unreadable(img):
                self.dropped += 1
                shown -= 1
                out.rows.append(_image_row(a, ident, img, seg, Fate.IMAGE_CAPPED, "R-TR-6"))
            else:
                parts.extend(_image_parts(a, ident, img, seg, out))
        cacheable = w.cacheable and a.settings.prompt_cache
        return WireMessage(_ROLES[w.kind], parts, w.key, w.tool_calls, w.tool_call_id, cacheable, shown > 0)


def _cache_prefix(a: TranslationInput, out: Prepared, messages: list[Working]) -> None:
    """R-TR-8: how many messages from the start are cacheable (none without the setting); their
    tokens are counted on first use."""
    memo = a.memo
    if a.settings.prompt_cache:
        prefix = memo.cacheable_prefix() if memo is not None else _cacheable_prefix(messages)
    else:
        prefix = 0
    out.cache_prefix_messages = prefix
    out.prefix_tokens, out.prefix = None, (a.meter, messages)


def _segment_ends(a: TranslationInput) -> tuple[list[int], list[Segment]]:
    """Each segment's end (the index past its last message) and name, in final order."""
    ends, at = [], 0
    for ws in a.segments.values():
        at += len(ws)
        ends.append(at)
    return ends, list(a.segments)


def _cacheable_prefix(messages: list[Working]) -> int:
    return next((p for p, w in enumerate(messages) if not w.cacheable), len(messages))


def _drop_notice(a: TranslationInput, out: Prepared, dropped: int) -> None:
    """R-TR-6: the notice that the cap dropped images, after the assembled messages."""
    notice = wrap_reminder(a.templates.fill("image.drop_notice", count=dropped))
    out.messages = [*out.messages, WireMessage("user", [Part(notice)], "image_drop_notice")]  # a memo keeps the list
    note, tokens = (f"{dropped} image(s) dropped by the cap",), a.meter.text(notice)
    out.rows.append(
        Row(None, "user", Segment.REMINDER, tokens, Fate.GENERATED, "R-TR-6", note, key="image_drop_notice")
    )


_ROLES = {k: "user" if k in (Kind.USER, Kind.REMINDER) else str(k) for k in Kind}  # a message's wire role


def _text_parts(w: Working) -> list[Part]:
    return [Part(wrap_reminder(w.text) if w.kind is Kind.REMINDER else w.text)]


def _image_parts(a: TranslationInput, ident: tuple[str, int], img: Image, seg: Segment, out: Prepared) -> list[Part]:
    label = Part(a.templates.fill("image.label", id=img.file_id))
    if img.data is None:
        out.warnings.append(
            f"image {img.file_id!r} has no bytes (budget-only): the payload carries only its label and is incomplete"
        )
        out.rows.append(_image_row(a, ident, img, seg, Fate.KEPT, "R-CONV-1", "budget-only: label alone"))
        return [label]
    mime = sniff_mime(img.data)
    if mime is None:
        note = (
            f"image {img.file_id!r} is not a PNG, JPEG, GIF or WebP: it and its label "
            "are left out of the payload (its budget charge stays)"
        )
        out.warnings.append(note)
        out.rows.append(_image_row(a, ident, img, seg, Fate.FIXUP, "R-TR-1", note))
        return []
    part = Part(image=img, mime=mime)
    out.image_b64.add(part.b64)
    out.rows.append(_image_row(a, ident, img, seg, Fate.KEPT, "R-CONV-1"))
    return [part] if a.settings.as_logged else [label, part]  # R-FIX-6: a recorded image has no label


def _image_row(
    a: TranslationInput, ident: tuple[str, int], img: Image, seg: Segment, fate: Fate, rule: str, *notes: str
) -> Row:
    left_out = fate in (Fate.IMAGE_CAPPED, Fate.FIXUP)
    segment = None if left_out else (Segment.PROJECT_FILES if img.project else seg)
    if img.project and fate is Fate.KEPT:
        rule = "R-PROJ-2"
    key, n = ident
    tokens = a.meter.image(img)
    return Row(img.file_id, "file", segment, tokens, fate, rule, tuple(notes), key=image_key(key, n), attached_to=key)


def _allowed_images(messages: list[Working], cap: int | None) -> set[tuple[str, int]]:
    """R-TR-6: newest message first; within a message, in attachment order."""
    every = [
        (w.key, n)
        for w in reversed(messages)
        if w.kind is Kind.USER
        for n, img in enumerate(w.images)
        if not _unreadable(img)
    ]
    return set(every if cap is None else every[:cap])


def _unreadable(img: Image) -> bool:
    """Bytes that are not a PNG, JPEG, GIF or WebP: left out of the payload, never capped."""
    return img.data is not None and sniff_mime(img.data) is None
