"""Writing fixture documents: parsed values → YAML or JSON text that loads back to the same values.

Input: a plain document (dicts, lists, strings, ints, floats, bools, None) and,
for numbers, the text each float was written with (`FloatTexts`, from the loader).
Output: text for `compress --write` and `import`. Every string survives the round
trip through ctxkit's loader (YAML line breaks such as U+0085, U+2028 and U+2029
are escaped, never written raw), and every decimal keeps its written digits
(`0.7499999999999999999999` stays that, R-FIX-3). YAML is emitted by libyaml when
PyYAML has it, else by PyYAML's own writer (same output, slower).
"""

from __future__ import annotations

import json
import re
from decimal import Decimal, InvalidOperation
from typing import Any

import yaml

from ctxkit.errors import InputError, Problem
from ctxkit.output import json_escaped

try:
    from yaml import CSafeDumper as _BaseDumper
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml import SafeDumper as _BaseDumper  # type: ignore[assignment]

FloatTexts = dict[int, tuple[float, str]]  # id(float) -> (the float, its text as written)

# Characters that a YAML reader folds, normalises or refuses when written raw:
# line breaks other than \n, carriage returns, tabs, the BOM, and non-printables.
_UNSAFE_RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")
_YAML_FLOAT = re.compile(r"[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?")
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")


class Number(str):
    """A decimal number kept as its text; written as a number, never via binary floats."""

    __slots__ = ()


def exact_numbers(doc: Any, floats: FloatTexts) -> Any:
    """A copy of `doc` with every float the loader saw replaced by its written text."""
    if isinstance(doc, dict):
        return {k: exact_numbers(v, floats) for k, v in doc.items()}
    if isinstance(doc, list):
        return [exact_numbers(v, floats) for v in doc]
    if isinstance(doc, float):
        entry = floats.get(id(doc))
        return Number(entry[1] if entry is not None and entry[0] is doc else repr(doc))
    if isinstance(doc, Decimal):
        return Number(str(doc))
    return doc


def yaml_text(doc: Any, *, source: str = "") -> str:
    """YAML that ctxkit's loader reads back to exactly `doc` (block style, keys in order)."""
    try:
        text: str = yaml.dump(doc, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
        text.encode("utf-8")
    except UnicodeEncodeError:
        _check_encodable(doc, source)
        raise
    return text


def json_text(doc: Any, *, source: str = "") -> str:
    """JSON (`indent=2`, non-ASCII kept, trailing newline) with `Number`s written verbatim."""
    try:
        return json_escaped(_json_text(doc))
    except UnicodeEncodeError:
        _check_encodable(doc, source)
        raise


def _json_text(doc: Any) -> str:
    if not _has_numbers(doc):
        text = json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
        text.encode("utf-8")
        return text
    plain = json.dumps(doc, indent=2, ensure_ascii=False, default=str)
    tag = "ctxkit-number-"
    while tag in plain:  # a marker the document itself cannot contain
        tag += "#"
    numbers: list[str] = []

    def mark(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: mark(v) for k, v in value.items()}
        if isinstance(value, list):
            return [mark(v) for v in value]
        if isinstance(value, Number | Decimal):
            numbers.append(_json_number(str(value)))
            return f"{tag}{len(numbers) - 1}"
        return value

    text = json.dumps(mark(doc), indent=2, ensure_ascii=False, allow_nan=False)
    pattern = re.compile(re.escape(json.dumps(tag)[:-1]) + r'(\d+)"')
    text = pattern.sub(lambda m: numbers[int(m[1])], text) + "\n"
    text.encode("utf-8")
    return text


def _has_numbers(doc: Any) -> bool:
    stack = [doc]
    while stack:
        value = stack.pop()
        if isinstance(value, Number | Decimal):
            return True
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return False


def _json_number(text: str) -> str:
    if _JSON_NUMBER.fullmatch(text):
        return text
    value = _decimal(text)
    written = str(value)
    if not any(c in written for c in ".E"):
        written += ".0"  # stays a float, as it was
    return written if _JSON_NUMBER.fullmatch(written) else repr(float(value))


def _yaml_number(text: str) -> str:
    if _YAML_FLOAT.fullmatch(text):
        return text
    value = _decimal(text)
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):  # NaN or infinity: not a fixture number
        return repr(float(value))
    mantissa = "".join(map(str, digits))
    power = exponent + len(mantissa) - 1
    written = f"{'-' if sign else ''}{mantissa[0]}.{mantissa[1:] or '0'}e{power:+d}"
    return written


def _decimal(text: str) -> Decimal:
    try:
        return Decimal(text.replace("_", ""))
    except InvalidOperation:
        return Decimal(repr(float(text)))


def _check_encodable(doc: Any, source: str) -> None:
    """A lone surrogate cannot be written as UTF-8: refuse it, naming where it is."""
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:
        value, at = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                bad = f"U+{ord(value[exc.start]):04X}"
                message = f"cannot write a lone surrogate ({bad}): the text is not valid Unicode"
                raise InputError(Problem(source, at, message)) from None
        elif isinstance(value, dict):
            stack.extend((v, f"{at}/{_escape(str(k))}") for k, v in value.items())
            stack.extend((k, f"{at}/{_escape(str(k))}") for k in value if isinstance(k, str))
        elif isinstance(value, list):
            stack.extend((v, f"{at}/{n}") for n, v in enumerate(value))


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


class _Dumper(_BaseDumper):
    pass


def _represent_str(dumper: _Dumper, data: str) -> yaml.ScalarNode:
    if _UNSAFE_RAW.search(data):
        style: str | None = '"'  # escaped: \N, \L, \P, \t ... read back exactly
    elif "\n" in data:
        style = "|"
    else:
        style = None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


def _represent_number(dumper: _Dumper, data: Number) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:float", _yaml_number(str(data)))


_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(Number, _represent_number)
