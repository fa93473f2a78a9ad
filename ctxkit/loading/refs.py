"""References stage: a schema-valid document → `domain.Fixture` (R-FIX-1, R-FIX-2, R-FIX-4).

Input: the parsed document (already checked against the schema, so shapes are trusted).
Output: the frozen stored tree, or an `InputError` listing every broken reference, bad
file path, bad date or template override at its JSON pointer. The tree's own checks
(ids, references, cycles, summaries) are in `graph`; the bytes of `path:` files come
from `files`; dates, exact decimals and settings from `values`.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ctxkit.errors import InputError
from ctxkit.loading import domain, sealed, values
from ctxkit.loading.files import Missing, TooBig, Unreadable, read_regular_file
from ctxkit.loading.graph import check_references
from ctxkit.loading.schema import JsonPath, pointer, problem, sort_key
from ctxkit.loading.templates import validate_overrides

MAX_ARGS_DEPTH = 100  # deeper tool arguments could not be serialized safely later
# Request-body fields translation builds for some provider: never taken from `request_fields`.
BUILT_FIELDS = frozenset(
    {"model", "messages", "system", "tools", "max_tokens", "contents", "systemInstruction", "stream", "options"}
)
# The fields of a tool definition translation builds (under each provider's name for the schema).
BUILT_TOOL_FIELDS = frozenset({"name", "description", "parameters", "input_schema"})


def build_fixture(
    doc: dict[str, Any],
    *,
    source: str,
    base_dir: Path,
    allow_outside_paths: bool = False,
    max_size: int,
    floats: values.FloatTexts,
) -> domain.Fixture:
    """Check every reference and read every `path:`; all problems are reported together."""
    found: list[tuple[JsonPath, str]] = []
    items = doc.get("messages", [])
    linear = not any("parent" in m for m in items if m["role"] != "summary")
    messages = _messages(items, linear, found)
    files = _files(doc.get("files", []), base_dir, allow_outside_paths, max_size, found)
    check_references(doc, messages, {f.id for f in files}, found, implicit_parents=linear)
    in_flight = _in_flight(doc.get("in_flight", []), found)
    found.extend(template_problems(doc.get("templates", {}), ("templates",)))
    tools = tuple(_tool(item, index, found) for index, item in enumerate(doc.get("tools", [])))
    now = values.fixture_now(doc["now"], found) if "now" in doc else None
    for name in doc.get("settings", {}).get("request_fields", {}):
        if name in BUILT_FIELDS:
            found.append((("settings", "request_fields", name), "ctxkit builds this request field itself (R-FIX-7)"))
    if found:
        ordered = sorted(set(found), key=lambda item: (sort_key(item[0]), item[1]))
        raise InputError([problem(source, pointer(path), message) for path, message in ordered])
    model = doc["model"]
    return domain.Fixture(
        source=source,
        base_dir=base_dir.resolve(),
        model=domain.ModelFields(**model),
        name=doc.get("name"),
        now=now,
        tokenizer=doc.get("tokenizer"),
        settings=values.settings(doc.get("settings", {}), floats),
        prompts=domain.Prompts(**doc.get("prompts", {})),
        templates=tuple(doc.get("templates", {}).items()),
        user_info=values.user_info(doc["user_info"], floats) if "user_info" in doc else None,
        tools=tools,
        turn=domain.TurnOverrides(**doc.get("turn", {})),
        files=files,
        project_files=tuple(str(file_id) for file_id in doc.get("project_files", [])),
        messages=messages,
        leaf=str(doc["leaf"]) if "leaf" in doc else None,
        in_flight=in_flight,
        raw=doc,
        raw_floats=floats,
    )


# --- messages and the tree -----------------------------------------------------------------


def _messages(
    items: list[dict[str, Any]], linear: bool, found: list[tuple[JsonPath, str]]
) -> tuple[domain.StoredMessage, ...]:
    """Stored messages with R-FIX-2 applied: a list without parents (`linear`) is a linear chain.

    The loop runs once per stored message (100,000 in the scale benchmark), so optional keys
    are looked at only when present, and each message is a row of its fields in their order,
    made frozen in one pass (`sealed.records`).
    """
    summary = domain.Role.SUMMARY
    previous: str | None = None
    rows: list[tuple[Any, ...]] = []
    append = rows.append
    unnamed: list[int] = []  # tree messages after the first without a `parent` key
    for index, m in enumerate(items):
        message_id, role = m["id"], _ROLES[m["role"]]
        if type(message_id) is not str:
            message_id = str(message_id)
        if role is summary or not linear:
            parent = m.get("parent")
            if parent is not None:
                parent = str(parent)
            elif role is summary:
                found.append((("messages", index), "a summary node must name its parent (R-FIX-2)"))
            elif previous is not None and "parent" not in m:
                unnamed.append(index)
                if len(unnamed) <= _UNNAMED_SHOWN:
                    found.append((("messages", index), _unnamed_parent(previous)))
        else:
            parent = previous
        if role is not summary:
            previous = message_id
        through = m.get("summarizes_through")
        append(
            (
                message_id,
                role,
                parent,
                index,
                m.get("text", ""),
                tuple(map(str, m["files"])) if "files" in m else (),
                m.get("tokens"),
                _tool_calls(m["tool_calls"], index, found) if "tool_calls" in m else (),
                None if through is None else str(through),
                values.stored_at(m, ("messages", index), found) if "at" in m else None,
            )
        )
    _more_unnamed(unnamed, found)
    return sealed.records(domain.StoredMessage, rows)


def _more_unnamed(unnamed: list[int], found: list[tuple[JsonPath, str]]) -> None:
    """The tree messages without a `parent` past the first ten, counted in one line (R-FIX-2)."""
    if len(unnamed) > _UNNAMED_SHOWN:
        more = len(unnamed) - _UNNAMED_SHOWN - 1
        found.append((("messages", unnamed[_UNNAMED_SHOWN]), f"no parent, nor do {more} later messages (R-FIX-2)"))


_ROLES = {role.value: role for role in domain.Role}
_UNNAMED_SHOWN = 10  # one line each; the rest are counted in one more line


def _unnamed_parent(previous: str) -> str:
    """R-FIX-2: in a tree, a message after the first must say where it hangs; guessing would
    drop messages from the branch without a word (they would be siblings at the root)."""
    written = previous if previous.replace("_", "").replace("-", "").isalnum() else json.dumps(previous)
    return (
        f"no parent, though other messages name theirs: write `parent: {written}` to follow the "
        "previous message, or `parent: null` for another child of the root (R-FIX-2)"
    )


def _tool_calls(
    calls: list[dict[str, Any]], index: int, found: list[tuple[JsonPath, str]]
) -> tuple[domain.ToolCall, ...]:
    return sealed.records(
        domain.ToolCall, [_tool_call(c, ("messages", index, "tool_calls", i), found) for i, c in enumerate(calls)]
    )


def _tool_call(call: dict[str, Any], at: JsonPath, found: list[tuple[JsonPath, str]]) -> tuple[Any, ...]:
    """A stored tool call's fields, in `domain.ToolCall`'s order."""
    args = call["args"]
    _check_depth(args, (*at, "args"), found)
    _check_args_text(call, at, found)
    images: tuple[domain.GeneratedImage, ...] = ()
    if "generated_images" in call:
        images = tuple(
            [domain.GeneratedImage(str(g["file_id"]), g.get("revised_prompt")) for g in call["generated_images"]]
        )
    call_id = call["id"]
    return (
        call_id if type(call_id) is str else str(call_id),
        call["name"],
        args,
        call.get("turn", 0),
        call.get("response"),
        call.get("tokens"),
        images,
        call.get("args_text"),
    )


# --- in flight, tools, files, settings -----------------------------------------------------


def _in_flight(items: list[dict[str, Any]], found: list[tuple[JsonPath, str]]) -> tuple[domain.InFlightMessage, ...]:
    """R-FIX-1: every in-flight result answers an earlier call, and every call is answered."""
    pending: dict[str, JsonPath] = {}
    built = []
    for index, m in enumerate(items):
        calls = []
        for position, call in enumerate(m.get("tool_calls", ())):
            at: JsonPath = ("in_flight", index, "tool_calls", position)
            call_id = str(call["id"])
            _check_depth(call["args"], (*at, "args"), found)
            if call_id in pending:
                found.append(((*at, "id"), f"call id {call_id!r} is already waiting for its result"))
            pending[call_id] = at
            _check_args_text(call, at, found)
            calls.append(
                domain.InFlightCall(call_id, call["name"], call["args"], call.get("tokens"), call.get("args_text"))
            )
        answers = m.get("tool_call_id")
        if answers is not None and pending.pop(str(answers), None) is None:
            found.append(
                (("in_flight", index, "tool_call_id"), f"no earlier unanswered call {str(answers)!r} in in_flight")
            )
        built.append(
            domain.InFlightMessage(
                role=m["role"],
                index=index,
                text=m.get("text", ""),
                tool_calls=tuple(calls),
                tool_call_id=None if answers is None else str(answers),
                tokens=m.get("tokens"),
                at=values.stored_at(m, ("in_flight", index), found),
            )
        )
    for call_id, at in pending.items():
        found.append((at, f"call {call_id!r} has no result in in_flight"))
    return tuple(built)


def _tool(item: str | dict[str, Any], index: int, found: list[tuple[JsonPath, str]]) -> domain.ToolDef:
    if isinstance(item, str):
        return domain.ToolDef(name=item)
    if "parameters" in item:
        _check_depth(item["parameters"], ("tools", index, "parameters"), found)
    fields = item.get("request_fields", {})
    for name in fields:
        if name in BUILT_TOOL_FIELDS:
            found.append((("tools", index, "request_fields", name), "ctxkit builds this field itself (R-FIX-7)"))
    return domain.ToolDef(
        item["name"],
        item.get("description"),
        item.get("parameters"),
        full=True,
        request_fields=values.json_pairs(fields),
    )


def _check_args_text(call: dict[str, Any], at: JsonPath, found: list[tuple[JsonPath, str]]) -> None:
    """R-FIX-7: `args_text` is the same arguments as `args`, only as the model wrote them."""
    text = call.get("args_text")
    if text is None:
        return
    try:
        same = json.loads(text) == call["args"]
    except (ValueError, RecursionError):
        same = False
    if not same:
        found.append(((*at, "args_text"), "not the JSON text of `args`"))


def _check_depth(value: Any, at: JsonPath, found: list[tuple[JsonPath, str]]) -> None:
    """Tool arguments and parameters nest at most MAX_ARGS_DEPTH levels (level by level, no recursion)."""
    level: list[Any] = [value]
    for _ in range(MAX_ARGS_DEPTH):
        deeper: list[Any] = []
        for item in level:
            if isinstance(item, dict):
                deeper.extend(item.values())
            elif isinstance(item, list):
                deeper.extend(item)
        if not deeper:
            return
        level = deeper
    found.append((at, f"nested more than {MAX_ARGS_DEPTH} levels deep"))


def _files(
    items: list[dict[str, Any]],
    base_dir: Path,
    allow_outside: bool,
    max_size: int,
    found: list[tuple[JsonPath, str]],
) -> tuple[domain.FileRecord, ...]:
    seen: dict[str, int] = {}
    built = []
    for index, f in enumerate(items):
        file_id = str(f["id"])
        if file_id in seen:
            found.append((("files", index, "id"), f"duplicate file id {file_id!r} (first at /files/{seen[file_id]})"))
        seen.setdefault(file_id, index)
        text, data = f.get("text"), None
        if "data" in f:
            try:
                data = base64.b64decode("".join(f["data"].split()), validate=True)
            except (binascii.Error, ValueError):
                found.append((("files", index, "data"), "not valid base64"))
        if "path" in f:
            content = _read_file(f["path"], base_dir, allow_outside, max_size, ("files", index, "path"), found)
            if content is not None and f["kind"] == "text":
                try:
                    text = content.decode("utf-8-sig")
                except UnicodeDecodeError:
                    found.append((("files", index, "path"), f"{f['path']!r} is not UTF-8 text"))
            elif content is not None:
                data = content
        if f["kind"] == "image" and "data" not in f and "path" not in f and "tokens" not in f:
            found.append(
                (("files", index), "a budget-only image (no `data` or `path`) needs a stored `tokens` count (R-FIX-3)")
            )
        chars = f.get("chars", len(text) if text is not None else None)
        built.append(
            domain.FileRecord(
                id=file_id,
                name=f["name"],
                kind=domain.FileKind(f["kind"]),
                text=text,
                data=data,
                tokens=f.get("tokens"),
                chars=chars,
                pointer=f"/files/{index}",
            )
        )
    return tuple(built)


def _read_file(
    name: str,
    base_dir: Path,
    allow_outside: bool,
    max_size: int,
    at: JsonPath,
    found: list[tuple[JsonPath, str]],
) -> bytes | None:
    """R-FIX-4: paths resolve from the fixture's folder and stay inside it (after symlinks)."""
    if not name:
        found.append((at, "empty path"))
        return None
    relative = Path(name)
    target = base_dir / relative
    try:
        if not allow_outside:
            inside = base_dir.resolve()
            if relative.is_absolute() or not target.resolve().is_relative_to(inside):
                found.append((at, f"{name!r} is outside the fixture's folder (see --allow-outside-paths)"))
                return None
        return read_regular_file(target, max_size)
    except TooBig as exc:
        found.append((at, f"{name!r} is {exc.args[0]}"))
    except Missing:
        found.append((at, f"file not found: {name!r}"))
    except (Unreadable, OSError, ValueError, RuntimeError) as exc:  # ValueError: NUL; RuntimeError: link loop
        found.append((at, f"cannot read {name!r}: {getattr(exc, 'strerror', None) or exc}"))
    return None


def template_problems(templates: dict[str, str], at: JsonPath) -> Iterable[tuple[JsonPath, str]]:
    """Call site for the template registry (docs/rules.md#templates): it checks names and slots."""
    if not templates:
        return []
    return [((*at, name), message) for name, message in validate_overrides(templates)]
