"""VCR.py / pytest-recording cassettes → raw log records (R-LOG-1 b).

Input: a cassette's text (YAML, or JSON with the same shape): `interactions`, each a
`request` (method, uri, headers, body) and a `response` (status, headers, body). Bodies
come as strings, as parsed JSON, as `{string: ...}`, as bytes (YAML `!!binary`),
gzip-compressed or base64-encoded. Output: one `traffic.Raw` per interaction — a model
call's record fields (provider, endpoint and perhaps the model from the URI, by the routes of
the registered providers' specs; else the model from the body,
`at` from the response's `Date` header, usage from the response body or its final stream
event, session = the cassette), or a skip naming the endpoint (embeddings, token counts,
anything that is not a chat call).
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
import re
import zlib
from collections.abc import Iterator
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import unquote, urlsplit

from ctxkit import providers
from ctxkit.errors import InputError, Problem
from ctxkit.loading.traffic import Raw, stream_events, usage_of_response

_BASE64 = re.compile(r"^[A-Za-z0-9+/=\s]+$")


def cassette_records(source: str, text: str) -> Iterator[Raw]:
    doc = _document(source, text)
    interactions = doc.get("interactions") if isinstance(doc, dict) else None
    if not isinstance(interactions, list):
        raise InputError(Problem(source, "/interactions", "a cassette needs a list of interactions"))
    for n, interaction in enumerate(interactions):
        where = f"{source}:/interactions/{n}"
        try:
            yield _raw(source, where, interaction)
        except _Bad as exc:
            yield Raw(where, None, exc.args[0])


class _Bad(Exception):
    pass


def _document(source: str, text: str) -> Any:
    """The cassette's document: JSON, else YAML (safe, `!!binary` allowed, alias bombs refused)."""
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text)
        except ValueError:
            pass
    import yaml

    from ctxkit.loading.yaml_text import _check_expansion

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise InputError(Problem(source, "", "empty input (no YAML or JSON document)"))
        _check_expansion(node, max(len(text), 1) * 4)
        return loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        raise InputError(Problem(source, where, str(exc.problem or exc))) from None
    except (yaml.YAMLError, RecursionError, ValueError) as exc:
        raise InputError(Problem(source, "", f"not a readable cassette: {exc}")) from None
    finally:
        loader.dispose()


def _raw(source: str, where: str, interaction: Any) -> Raw:
    if not isinstance(interaction, dict) or not isinstance(interaction.get("request"), dict):
        raise _Bad("an interaction needs a request")
    request = interaction["request"]
    found = interaction.get("response")
    response: dict[str, Any] = found if isinstance(found, dict) else {}
    uri = str(request.get("uri") or "")
    route = _route(uri)
    if route is None or str(request.get("method", "POST")).upper() != "POST":
        return Raw(where, None, skip=_endpoint_name(uri))
    provider, endpoint, model = route
    body = _json_body(request.get("body"), _headers(request), "request body")
    if not isinstance(body, dict):
        raise _Bad("request body: not a JSON object")
    fields: dict[str, Any] = {"request": body, "provider": provider, "endpoint": endpoint, "session": source}
    if model and not body.get("model"):
        fields["model"] = model
    headers = _headers(response)
    date = headers.get("date")
    if date:
        try:
            fields["at"] = parsedate_to_datetime(date).isoformat()
        except (TypeError, ValueError):
            raise _Bad(f"response Date header {date!r} is not a date") from None
    raw_body = response.get("body")
    if raw_body is not None:
        decoded = _body(raw_body, headers, "response body")
        events = decoded if isinstance(decoded, dict | list) else stream_events(decoded) if decoded else None
        usage = usage_of_response(events)
        if usage is not None:
            fields["usage"] = usage
    return Raw(where, fields)


def _route(uri: str) -> tuple[str, str, str | None] | None:
    """(provider, endpoint, model named by the URI) of a chat call, by the providers' routes, or
    None for any other request."""
    parts = urlsplit(uri)
    return providers.route(parts.netloc.lower(), unquote(parts.path))


def _endpoint_name(uri: str) -> str:
    """A skipped request's endpoint, for the count: `embeddings`, `countTokens`, `count_tokens`…"""
    path = urlsplit(uri).path.rstrip("/")
    last = path.rsplit("/", 1)[-1]
    return (last.rsplit(":", 1)[-1] if ":" in last else last) or "other"


def _headers(message: dict[str, Any]) -> dict[str, str]:
    raw = message.get("headers") or {}
    out: dict[str, str] = {}
    if isinstance(raw, dict):
        for name, value in raw.items():
            if isinstance(value, list):
                value = value[0] if value else ""
            out[str(name).lower()] = str(value)
    return out


def _json_body(raw: Any, headers: dict[str, str], what: str) -> Any:
    value = _body(raw, headers, what)
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            raise _Bad(f"{what}: not JSON") from None
    return value


def _body(raw: Any, headers: dict[str, str], what: str) -> Any:
    """A body as text or parsed JSON, whatever way the cassette stored it."""
    if isinstance(raw, dict) and set(raw) <= {"string", "encoding", "base64_string"}:
        if "base64_string" in raw:
            raw = _unbase64(str(raw["base64_string"]), what)
        else:
            raw = raw.get("string")
    if raw is None or isinstance(raw, dict | list):
        return raw
    if isinstance(raw, str):
        if headers.get("content-encoding", "") == "gzip" or _looks_base64(raw):
            try:
                data = _unbase64(raw, what)
            except _Bad:
                return raw
            if data[:2] == b"\x1f\x8b":
                raw = data
            elif data.lstrip()[:1] in (b"{", b"[") and _utf8(data) is not None:
                return _utf8(data)  # base64 of the JSON text itself
            else:
                return raw
        else:
            return raw
    if isinstance(raw, bytes):
        if raw[:2] == b"\x1f\x8b":
            try:
                raw = gzip.decompress(raw)
            except (OSError, EOFError, zlib.error):
                raise _Bad(f"{what}: gzip data that cannot be read") from None
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise _Bad(f"{what}: not UTF-8 text") from None
    raise _Bad(f"{what}: not a body ({type(raw).__name__})")


def _utf8(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _looks_base64(text: str) -> bool:
    return len(text) >= 16 and not text.lstrip().startswith(("{", "[")) and bool(_BASE64.match(text[:256]))


def _unbase64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=False)
    except (binascii.Error, ValueError):
        raise _Bad(f"{what}: base64 data that cannot be read") from None
