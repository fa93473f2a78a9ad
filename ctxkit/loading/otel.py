"""OTLP JSON traces with OpenTelemetry GenAI attributes → raw log records (R-LOG-1 c).

Input: an OTLP JSON export (`{"resourceSpans": [...]}`, or one such document per line, as
the collector's file exporter writes). Output: one `traffic.Raw` per span, in file order.
A span whose `gen_ai.operation.name` is a model call (`chat`, `text_completion`,
`generate_content`) becomes a record in the normalised form the attributes give: body
`{"system_instructions", "messages", "tools"}` (each parsed from its JSON attribute),
endpoint `otel`, model `gen_ai.request.model`, provider from `gen_ai.provider.name`
(or the older `gen_ai.system`), `at` the span's start time, usage the `gen_ai.usage.*`
numbers under their attribute names, session the trace id. Other GenAI operations (embeddings, tools, agents) and
spans without GenAI attributes are skipped and counted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from ctxkit import providers
from ctxkit.errors import InputError, Problem
from ctxkit.loading.traffic import NORMALISED, Raw

CALLS = frozenset({"chat", "text_completion", "generate_content"})
USAGE = (
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.cache_creation.input_tokens",
)


def otel_records(source: str, text: str) -> Iterator[Raw]:
    n = 0
    for doc in _documents(source, text):
        if not isinstance(doc.get("resourceSpans"), list):
            raise InputError(Problem(source, "", "not an OTLP JSON trace: no resourceSpans list"))
        for resource in _list(doc.get("resourceSpans")):
            for scope in _list(resource.get("scopeSpans") if isinstance(resource, dict) else None):
                for span in _list(scope.get("spans") if isinstance(scope, dict) else None):
                    yield _raw(f"{source}:span {n}", span)
                    n += 1


def _documents(source: str, text: str) -> Iterator[dict[str, Any]]:
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    if isinstance(whole, dict):
        yield whole
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except ValueError as exc:
            raise InputError(Problem(source, str(number), f"not OTLP JSON: {exc}")) from None
        if isinstance(doc, dict):
            yield doc


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _raw(where: str, span: Any) -> Raw:
    if not isinstance(span, dict):
        return Raw(where, None, "a span must be an object")
    attrs = {str(a.get("key")): _value(a.get("value")) for a in _list(span.get("attributes")) if isinstance(a, dict)}
    operation = attrs.get("gen_ai.operation.name")
    if operation is None and "gen_ai.input.messages" not in attrs:
        return Raw(where, None, skip="span without GenAI attributes")
    if operation is not None and operation not in CALLS:
        return Raw(where, None, skip=f"gen_ai {operation}")
    try:
        body = {
            "system_instructions": _json(attrs, "gen_ai.system_instructions"),
            "messages": _json(attrs, "gen_ai.input.messages"),
            "tools": _json(attrs, "gen_ai.tool.definitions"),
        }
    except ValueError as exc:
        return Raw(where, None, str(exc))
    name = attrs.get("gen_ai.provider.name") or attrs.get("gen_ai.system") or "openai"
    fields: dict[str, Any] = {
        "request": body,
        "provider": otel_provider(str(name)),
        "endpoint": NORMALISED,
        "model": attrs.get("gen_ai.request.model") or attrs.get("gen_ai.response.model") or "unknown",
    }
    if isinstance(span.get("traceId"), str) and span["traceId"]:
        fields["session"] = span["traceId"]
    start = span.get("startTimeUnixNano")
    if start is not None:
        try:
            fields["at"] = datetime.fromtimestamp(int(start) / 1e9, UTC).isoformat()
        except (TypeError, ValueError, OverflowError):
            return Raw(where, None, f"startTimeUnixNano {start!r} is not a time")
    usage = {key: int(attrs[key]) for key in USAGE if isinstance(attrs.get(key), int | float)}
    if usage:
        fields["usage"] = usage
    return Raw(where, fields)


def _json(attrs: dict[str, Any], key: str) -> list[Any]:
    value = attrs.get(key)
    if value is None:
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ValueError(f"{key}: not JSON") from None
    if not isinstance(value, list):
        raise ValueError(f"{key}: expected a list")
    return value


def _value(v: Any) -> Any:
    """An OTLP AnyValue as a plain value (intValue arrives as a string in OTLP JSON)."""
    if not isinstance(v, dict):
        return None
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        try:
            return int(v["intValue"])
        except (TypeError, ValueError):
            return None
    if "doubleValue" in v:
        return v["doubleValue"]
    if "boolValue" in v:
        return v["boolValue"]
    if "arrayValue" in v:
        return [_value(x) for x in _list((v["arrayValue"] or {}).get("values"))]
    if "kvlistValue" in v:
        return {x.get("key"): _value(x.get("value")) for x in _list((v["kvlistValue"] or {}).get("values"))}
    return None


def otel_provider(name: str) -> str:
    """The provider whose spec names this `gen_ai.provider.name` (or `gen_ai.system`) value, or
    is named so itself; OpenAI for any other (the normalised messages read the same)."""
    for known in providers.names():
        spec = providers.spec(known)
        if name == known or name in spec.otel_names:
            return known
    return "openai"
