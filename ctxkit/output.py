"""One writer for everything printed: JSON, YAML, shortened images, colour (files: `ctxkit.writing`).

Input: plain values (payloads, reports). Output: deterministic text. JSON uses
`indent=2`, `ensure_ascii=False` and a trailing newline; payload key order is
kept as built; colour only on a terminal and never with NO_COLOR.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from collections.abc import Set
from decimal import Decimal
from typing import IO, Any


def plural(count: int, noun: str, *, grouped: bool = False) -> str:
    """A count and its noun for text: `1 token`, `2 tokens` (`1,024 tokens` when grouped)."""
    number = f"{count:,}" if grouped else str(count)
    return f"{number} {noun}" if count == 1 else f"{number} {noun}s"


def dumps(value: Any) -> str:
    """The JSON of everything printed. A non-finite number (`Infinity`, `NaN`) is not JSON: it
    is refused (ValueError, a bug: inputs are bounded at load) rather than written."""
    try:
        parts: list[str] = []
        _write(value, "\n", parts)
        text = "".join(parts)
    except _Unusual:  # the library decides (and words the error)
        text = json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)
    return json_escaped(text + "\n")


class _Unusual(Exception):
    """A value `_write` leaves to `json.dumps`: another type, a non-finite float, a cycle."""


_encode = json.encoder.encode_basestring  # the C escaper json.dumps uses with ensure_ascii=False
_NAMES = {None: "null", True: "true", False: "false"}


def _write(value: Any, newline: str, out: list[str]) -> None:
    """`json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)`, appended to `out` in
    pieces: json's indenting encoder is its Python one, a generator step per value (a payload
    of 20,000 messages: ~17 ms; here ~11). `newline`: "\\n" and the current indent. A string
    in a list or map, the most common value, is written in place (no call)."""
    if isinstance(value, str):
        out.append(_encode(value))
    elif value is None or value is True or value is False:
        out.append(_NAMES[value])
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float) and value - value == 0:  # finite
        out.append(float.__repr__(value))
    elif isinstance(value, list | tuple) and len(newline) < 400:
        if not value:
            out.append("[]")
            return
        inner = newline + "  "
        separator = "[" + inner
        for item in value:
            if type(item) is str:
                out.append(separator + _encode(item))
            else:
                out.append(separator)
                _write(item, inner, out)
            separator = "," + inner
        out.append(newline + "]")
    elif isinstance(value, dict) and len(newline) < 400:
        if not value:
            out.append("{}")
            return
        inner = newline + "  "
        separator = "{" + inner
        for key, item in value.items():
            if not isinstance(key, str):
                raise _Unusual
            if type(item) is str:
                out.append(separator + _encode(key) + ": " + _encode(item))
            else:
                out.append(separator + _encode(key) + ": ")
                _write(item, inner, out)
            separator = "," + inner
        out.append(newline + "}")
    else:
        raise _Unusual


_C1 = re.compile("[\x7f-\x9f]")  # json.dumps escapes C0 controls but writes DEL and C1 as they are


def json_escaped(text: str) -> str:
    """JSON text with DEL and the C1 controls (U+009B is a one-character escape sequence on
    some terminals) as `\\u009b` escapes: the same JSON value, safe to print."""
    return _C1.sub(lambda m: f"\\u{ord(m[0]):04x}", text) if _C1.search(text) else text


# C0 and C1 control characters and DEL: every terminal escape sequence (colours, titles,
# hyperlinks, clearing the screen) starts with one. Newlines and tabs are kept.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """Text from a fixture as a terminal should get it: control characters written as
    Python escapes (`\\x1b`, `\\r`), so a fixture cannot retitle, recolour or clear the
    terminal or plant a hyperlink; newlines and tabs kept. For human formats only: JSON
    and YAML already escape what they must."""
    return _CONTROLS.sub(lambda m: repr(m[0])[1:-1], text) if _CONTROLS.search(text) else text


def json_number(value: Decimal) -> int | float:
    """A decimal as a JSON number: an int when whole, else the nearest float (`0.05`, not `"0.05"`)."""
    return int(value) if value == value.to_integral_value() else float(value)


def dumps_yaml(value: Any) -> str:
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def str_rep(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
        style = "|" if "\n" in data and not any(c in data for c in "\r\t") else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)

    Dumper.add_representer(str, str_rep)
    text: str = yaml.dump(value, Dumper=Dumper, sort_keys=False, allow_unicode=True, width=100)
    return text


def short_image(b64: str) -> str:
    raw = base64.b64decode(b64)
    return f"<{len(raw)} bytes sha256:{hashlib.sha256(raw).hexdigest()[:8]}\u2026>"


def shorten_images(value: Any, images: Set[str]) -> Any:
    """Replace image base64 (bare or in a data URL) by `<N bytes sha256:…>`."""
    if not images:
        return value
    if isinstance(value, dict):
        return {k: shorten_images(v, images) for k, v in value.items()}
    if isinstance(value, list):
        return [shorten_images(v, images) for v in value]
    if isinstance(value, str):
        if value in images:
            return short_image(value)
        if value.startswith("data:") and ";base64," in value:
            head, _, data = value.partition(";base64,")
            if data in images:
                return f"{head};base64,{short_image(data)}"
    return value


def use_colour(stream: IO[str]) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def style(text: str, code: str, on: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if on else text


# Line prefix -> SGR code, first match wins: file headers bold, hunk headers cyan, added
# lines green, removed lines red; "  +"/"  -" are the message lines of `diff`'s summary.
DIFF_STYLES = (("+++", "1"), ("---", "1"), ("@@", "36"), ("+", "32"), ("-", "31"), ("  +", "32"), ("  -", "31"))


def colour_diff(diff: str, on: bool) -> str:
    """Colour a diff built as plain text, line by line (only when `on`, see `use_colour`)."""
    if not on:
        return diff
    out = []
    for line in diff.splitlines():
        code = next((c for prefix, c in DIFF_STYLES if line.startswith(prefix)), None)
        out.append(style(line, code, True) if code else line)
    return "\n".join(out) + "\n"
