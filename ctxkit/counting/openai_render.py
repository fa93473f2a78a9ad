"""What an OpenAI model reads of a request's definitions: tools as a TypeScript-like namespace,
`response_format` / `text.format` schemas as a titled JSON block (R-RPL-4).

Input: the body's tool (or legacy function) definitions and its output format. Output: the
text the model reads in their place, and the fixed tokens around it. The rendering is the
one OpenAI publishes for its chat formats (docs/rules.md#r-rpl-4):

    # Tools

    ## functions

    namespace functions {

    // <description, one comment line per line>
    type <name> = (_: {
    // <property description>
    <property>?: <type>, // default: <value>
    }) => any;

    } // namespace functions

A property is optional (`?`) unless `required` lists it; types are `string`, `number`
(integers too), `boolean`, `null`, enums as `"a" | "b"`, unions (`anyOf`, `oneOf`, a type
list) joined by ` | `, arrays as `<item type>[]`, objects with properties as nested blocks
indented by two spaces, `$ref` resolved against `$defs`/`definitions`, anything else `any`.
A function without properties is `() => any`. A structured-output schema is read as
`# Response Formats`, `## <name>`, then the schema's compact JSON without its `title` keys.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

# The published recipe's fixed cost of the definitions beside the namespace's own tokens (the
# `# Tools` / `## functions` header and a system message's framing): 9 tokens, 4 fewer when the
# messages already hold a system message the definitions join.
TOOLS_OVERHEAD = 9
TOOLS_IN_SYSTEM = -4
FORCED_CALL = 4  # a named tool_choice / function_call: its name's tokens plus these
NO_CALL = 1  # tool_choice / function_call "none"
MAX_DEPTH = 32  # nested schemas deeper than this read as `any` (and `$ref` cycles end)


def functions(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The function definitions of `tools` (chat: `{type, function}`; Responses: flat) or `functions`."""
    found = []
    for t in body.get("tools") or body.get("functions") or ():
        if not isinstance(t, dict):
            continue
        inner = t.get("function")
        f: dict[str, Any] = inner if isinstance(inner, dict) else t
        if isinstance(f.get("name"), str) and t.get("type", "function") == "function":
            found.append(f)
    return found


def namespace(defs: list[dict[str, Any]]) -> str:
    """The `namespace functions { … }` block for these function definitions."""
    blocks = ["\n".join(_function(f)) for f in defs]
    return "namespace functions {\n\n" + "\n\n".join(blocks) + "\n\n} // namespace functions"


def _comment(text: Any, pad: str) -> Iterator[str]:
    if isinstance(text, str) and text:
        for line in text.split("\n"):
            yield f"{pad}// {line}"


def _function(f: dict[str, Any]) -> Iterator[str]:
    yield from _comment(f.get("description"), "")
    params = f.get("parameters")
    if isinstance(params, dict) and isinstance(params.get("properties"), dict) and params["properties"]:
        yield f"type {f['name']} = (_: {{"
        yield from _properties(params, 0, params)
        yield "}) => any;"
    else:
        yield f"type {f['name']} = () => any;"


def _properties(schema: dict[str, Any], indent: int, root: dict[str, Any]) -> Iterator[str]:
    pad = " " * indent
    listed = schema.get("required")
    required: list[Any] = listed if isinstance(listed, list) else []
    for name, prop in schema["properties"].items():
        prop = prop if isinstance(prop, dict) else {}
        yield from _comment(prop.get("description"), pad)
        line = f"{pad}{name}{'' if name in required else '?'}: {_type(prop, indent, root, 0)},"
        if "default" in prop:
            default = prop["default"]
            line += f" // default: {default if isinstance(default, str) else json.dumps(default)}"
        yield line


def _type(schema: Any, indent: int, root: dict[str, Any], depth: int) -> str:
    if not isinstance(schema, dict) or depth > MAX_DEPTH:
        return "any"
    ref = schema.get("$ref")
    if isinstance(ref, str):
        defs = root.get("$defs") or root.get("definitions") or {}
        target = defs.get(ref.rsplit("/", 1)[-1]) if isinstance(defs, dict) else None
        return _type(target, indent, root, depth + 1)
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return " | ".join(_type(s, indent, root, depth + 1) for s in schema[key])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(_type({**schema, "type": k}, indent, root, depth + 1) for k in kind)
    if isinstance(schema.get("enum"), list):
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    if kind == "object" and isinstance(schema.get("properties"), dict) and schema["properties"]:
        inner = "\n".join(_properties(schema, indent + 2, root))
        return "{\n" + inner + "\n" + " " * indent + "}"
    if kind == "array":
        return _type(schema["items"], indent, root, depth + 1) + "[]" if "items" in schema else "any[]"
    return _SIMPLE.get(kind, "any") if isinstance(kind, str) else "any"


_SIMPLE = {"string": "string", "number": "number", "integer": "number", "boolean": "boolean", "null": "null"}
_SIMPLE["object"] = "object"  # an object without properties


def tools_tokens(body: Mapping[str, Any], count: Callable[[str], int], *, has_system: bool) -> int:
    """The tokens the definitions and a forced or refused tool choice add (0 without definitions)."""
    defs = functions(body)
    if not defs:
        return 0
    total = count(namespace(defs)) + TOOLS_OVERHEAD
    if has_system:
        total += TOOLS_IN_SYSTEM
    choice = body.get("tool_choice", body.get("function_call"))
    if choice == "none":
        total += NO_CALL
    elif isinstance(choice, dict):
        inner = choice.get("function")
        named: dict[str, Any] = inner if isinstance(inner, dict) else choice
        name = named.get("name")
        if isinstance(name, str):
            total += count(name) + FORCED_CALL
    return total


def _without_titles(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_titles(v) for k, v in value.items() if k != "title"}
    if isinstance(value, list):
        return [_without_titles(v) for v in value]
    return value


def response_format_text(body: Mapping[str, Any]) -> str:
    """The structured-output block the model reads ("" when the body asks for none)."""
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema" and isinstance(fmt.get("json_schema"), dict):
        spec: dict[str, Any] = fmt["json_schema"]
    else:
        text = body.get("text")
        given = text.get("format") if isinstance(text, dict) else None
        spec = given if isinstance(given, dict) else {}
        if spec.get("type") != "json_schema":
            return ""
    schema = spec.get("schema")
    if not isinstance(schema, dict):
        return ""
    compact = json.dumps(_without_titles(schema), separators=(",", ":"), ensure_ascii=False)
    return f"# Response Formats\n\n## {spec.get('name', '')}\n\n{compact}"
