"""A log of recorded provider traffic → the calls it holds, as sent (R-LOG-1).

Input: a file's bytes (gzip accepted transparently) and an optional format
(`jsonl`, `cassette`, `otel`; else recognised by content). Output: `Log` — one
`TrafficRecord` per model call (request body as sent, time, provider, endpoint, model,
session, the provider's usage object) in file order, what was skipped (other
endpoints, counted by name) and, with `skip_bad`, how many records could not be
read. A record that cannot be read is one located `InputError` otherwise.

The formats: JSON lines or a JSON array of records (this module);
VCR.py / pytest-recording cassettes (`cassettes.py`); OTLP JSON traces with the
OpenTelemetry GenAI attributes (`otel.py`). Each reader yields raw records
(`Raw`); `record()` here checks them and fills in what a body shows.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ctxkit import providers
from ctxkit.errors import InputError, Problem
from ctxkit.loading.files import format_limit
from ctxkit.loading.log_formats import detect, kind_of
from ctxkit.loading.values import parse_datetime

FORMATS = ("jsonl", "cassette", "otel")
# The endpoint of each provider's chat call; any other endpoint is skipped and counted.
# The endpoint of each provider's chat call is its spec's `endpoints`; any other endpoint is skipped
# and counted.
NORMALISED = "otel"  # the endpoint of a call read from OpenTelemetry attributes (compared in that form)


@dataclass(frozen=True, slots=True)
class TrafficRecord:
    """One model call as it was sent."""

    source_index: int  # the record's 0-based position in the log (skipped ones count too)
    where: str  # its location, for messages: "LOG:12" (a line) or "LOG:/interactions/3"
    at: datetime | None
    provider: str
    endpoint: str
    model: str
    session: str | None
    body: dict[str, Any]
    usage: dict[str, Any] | None  # the provider's usage object, verbatim (OTel: the gen_ai.usage values)


@dataclass(frozen=True, slots=True)
class Log:
    source: str
    format: str
    records: tuple[TrafficRecord, ...]
    skipped: dict[str, int] = field(default_factory=dict)  # endpoint → records not replayed
    bad: int = 0  # records that could not be read (with skip_bad)


@dataclass(frozen=True, slots=True)
class Raw:
    """What a reader found at one place of the log, before it is checked."""

    where: str
    fields: Any  # a record object or a bare body (JSON lines); a dict of record fields (others)
    error: str | None = None  # the reader could not make a record of it
    skip: str | None = None  # not a model call replay reads: the endpoint's name, counted


class BadRecord(Exception):
    """One record cannot be read; the message says why (without the location)."""


def sniff(text: str) -> str | None:
    """The log format of a document, or None when it is not a log (a fixture, or unknown).

    A fixture has `ctxkit: 1`; a cassette has `interactions`; OTLP has `resourceSpans`;
    anything else made of JSON objects (lines or an array) is a log of records."""
    head = text.lstrip()[:4096]
    if re.search(r"^ctxkit\s*:|\"ctxkit\"\s*:", head, re.MULTILINE) and "interactions" not in head:
        return None
    if re.search(r"^interactions\s*:", text, re.MULTILINE) or re.search(r"\"interactions\"\s*:", head):
        return "cassette"
    if '"resourceSpans"' in head:
        return "otel"
    if head.startswith(("{", "[")):
        return "jsonl"
    return None


def load_log(
    source: str, data: bytes, *, log_format: str | None = None, skip_bad: bool = False, max_size: int
) -> Log | None:
    """The log in a file's bytes, or None when they are not a log (a fixture: `ctxkit: 1`)."""
    text = _text_of(source, decompress(source, data, max_size))
    if log_format is None and sniff(text) is None:
        return None
    return read_log(source, text, log_format=log_format, skip_bad=skip_bad)


def decompress(source: str, data: bytes, max_size: int) -> bytes:
    """The bytes themselves, or gunzipped when they are gzip (a `.gz` log), at most `max_size`."""
    if data[:2] != b"\x1f\x8b":
        return data
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
            out = stream.read(max_size + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(Problem(source, "", f"not a readable gzip file: {exc}")) from None
    if len(out) > max_size:
        raise InputError(
            Problem(
                source, "", f"larger than the size limit of {format_limit(max_size)} once decompressed (see --max-size)"
            )
        )
    return out


def _text_of(source: str, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            Problem(source, str(line), f"not valid UTF-8 (byte 0x{data[exc.start : exc.start + 1].hex()})")
        ) from None


def read_log(source: str, text: str, *, log_format: str | None = None, skip_bad: bool = False) -> Log:
    """Every call of the log in file order; see the module docstring."""
    fmt = log_format or sniff(text) or "jsonl"
    if fmt == "cassette":
        from ctxkit.loading.cassettes import cassette_records

        raws: Iterator[Raw] = cassette_records(source, text)
    elif fmt == "otel":
        from ctxkit.loading.otel import otel_records

        raws = otel_records(source, text)
    else:
        raws = _json_records(source, text)
    records: list[TrafficRecord] = []
    skipped: Counter[str] = Counter()
    bad = 0
    for index, raw in enumerate(raws):
        try:
            if raw.error is not None:
                raise BadRecord(raw.error)
            found = raw.skip if raw.skip is not None else record(raw.fields, index, raw.where)
        except BadRecord as exc:
            if not skip_bad:
                raise InputError(Problem(raw.where, "", f"{exc.args[0]} (--skip-bad skips such records)")) from None
            bad += 1
            continue
        if isinstance(found, str):
            skipped[found] += 1
        else:
            records.append(found)
    return Log(source, fmt, tuple(records), dict(sorted(skipped.items())), bad)


def _json_records(source: str, text: str) -> Iterator[Raw]:
    """A JSON array of records, or one JSON value per line (blank lines ignored)."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise InputError(Problem(source, "", f"not a JSON array of records: {exc}")) from None
        for n, item in enumerate(doc):
            yield Raw(f"{source}:/{n}", item)
        return
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield Raw(f"{source}:{n}", json.loads(line))
        except (ValueError, RecursionError) as exc:
            yield Raw(f"{source}:{n}", None, f"not a JSON value: {exc}")


def record(doc: Any, index: int, where: str) -> TrafficRecord | str:
    """A checked record, or the endpoint's name when the call is not one replay reads (skipped)."""
    if not isinstance(doc, dict):
        raise BadRecord(f"expected a record or a request body (an object), got {kind_of(doc)}")
    if "request" in doc:
        body, fields = doc["request"], doc
    else:
        body, fields = doc, {}
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            raise BadRecord("request: a string that is not JSON") from None
    if not isinstance(body, dict):
        raise BadRecord(f"request: expected the request body (an object), got {kind_of(body)}")
    endpoint = _text(fields, "endpoint")
    provider = _text(fields, "provider") or _provider_of(body, endpoint)
    if provider not in providers.names():
        raise BadRecord(f"provider: {provider!r} is not one of {', '.join(providers.names())}")
    endpoint = endpoint or _endpoint_of(provider, body)
    if endpoint not in providers.spec(provider).endpoints and endpoint != NORMALISED:
        return endpoint
    _check_body(endpoint, body)
    model = _text(fields, "model") or body.get("model")
    if not isinstance(model, str) or not model:
        model = "unknown"
    return TrafficRecord(
        source_index=index,
        where=where,
        at=_at(fields.get("at")),
        provider=provider,
        endpoint=endpoint,
        model=model,
        session=_text(fields, "session"),
        body=body,
        usage=_usage(fields),
    )


def _text(fields: dict[str, Any], key: str) -> str | None:
    value = fields.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise BadRecord(f"{key}: expected a non-empty string, got {kind_of(value)}")
    return value


def _provider_of(body: dict[str, Any], endpoint: str | None) -> str:
    """The one provider whose spec names the endpoint; else the provider a body's shape shows, as
    `import` recognises it (`log_formats.detect`)."""
    owners = [name for name in providers.names() if endpoint in providers.spec(name).endpoints]
    if len(owners) == 1:
        return owners[0]
    if "contents" in body:
        return "gemini"
    if "messages" not in body and ("input" in body or "instructions" in body):
        return "openai"  # the Responses API
    return detect(body) or "openai"


def _endpoint_of(provider: str, body: dict[str, Any]) -> str:
    endpoints = providers.spec(provider).endpoints
    if "responses" in endpoints:  # the OpenAI format's two endpoints
        return "chat.completions" if "messages" in body else "responses"
    return endpoints[0]


def _check_body(endpoint: str, body: dict[str, Any]) -> None:
    """The one list a body of this endpoint cannot do without."""
    needed = {"chat.completions": "messages", "messages": "messages", "api.chat": "messages"}
    needed |= {"generateContent": "contents"}
    key = needed.get(endpoint)
    if key is not None and not isinstance(body.get(key), list):
        raise BadRecord(f"request/{key}: expected a list, got {kind_of(body.get(key))}")


def _at(value: Any) -> datetime | None:
    if value is None:
        return None
    parsed = parse_datetime(value, zone_required=True) if isinstance(value, str) else None
    if parsed is None:
        raise BadRecord(f"at: {value!r} is not an ISO 8601 date-time with a zone")
    return parsed


def _usage(fields: dict[str, Any]) -> dict[str, Any] | None:
    """The record's usage object: `usage` itself, or the one inside `response` (a body or its events)."""
    usage = fields.get("usage")
    if usage is None and "response" in fields:
        usage = usage_of_response(fields["response"])
    if usage is not None and not isinstance(usage, dict):
        raise BadRecord(f"usage: expected the provider's usage object, got {kind_of(usage)}")
    return usage


def usage_of_response(response: Any) -> dict[str, Any] | None:
    """The usage object of a response body, of a list of stream events, or of a stream's text.

    A stream's usage is read from its final event; earlier events fill in what it leaves out
    (Anthropic's `message_start` carries the input counts, its final `message_delta` may not)."""
    if isinstance(response, str):
        response = stream_events(response)
    if isinstance(response, dict):
        return _usage_in(response)
    if isinstance(response, list):
        merged: dict[str, Any] = {}
        for event in response:
            found = _usage_in(event) if isinstance(event, dict) else None
            if found:
                merged.update({k: v for k, v in found.items() if v is not None})
        return merged or None
    return None


def _usage_in(event: dict[str, Any]) -> dict[str, Any] | None:
    for key in ("usage", "usageMetadata"):
        if isinstance(event.get(key), dict):
            found: dict[str, Any] = event[key]
            return found
    for key in ("message", "response"):  # Anthropic's message_start, the Responses API's events
        inner = event.get(key)
        if isinstance(inner, dict) and isinstance(inner.get("usage"), dict):
            found = inner["usage"]
            return found
    if "prompt_eval_count" in event:  # Ollama: the counts sit on the final object
        return {k: event[k] for k in ("prompt_eval_count", "eval_count") if k in event}
    return None


def stream_events(text: str) -> Any:
    """A response body's text → its JSON: one object, server-sent events, or JSON lines."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    events = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("data:"):
            line = line[5:].strip()
        if not line.startswith("{"):
            continue
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    return events or None
