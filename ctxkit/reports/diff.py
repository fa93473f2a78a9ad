"""`diff`: two assemblies compared, message by message and payload by payload.

Input: two `pipeline.Result`s and their labels. Output: the alignment (which
messages are in one context and not the other, with the fate and rule from
each side's decision record), the numbers of the budget report that differ
(segment tokens, kept and dropped counts, wire tokens, cache prefix: two
tokenizers can give the same payload and different counts) and a unified diff
of the two payloads, as plain text; colour is added afterwards by the CLI.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from ctxkit.history.working import Row
from ctxkit.output import dumps, plural, shorten_images
from ctxkit.pipeline import Result
from ctxkit.reports.budget import report as budget_report
from ctxkit.reports.explain import rows as explain_rows


@dataclass(frozen=True, slots=True)
class Aligned:
    key: str
    id: str | None
    kind: str
    a: Row | None
    b: Row | None

    @property
    def in_a(self) -> bool:
        return self.a is not None and self.a.segment is not None

    @property
    def in_b(self) -> bool:
        return self.b is not None and self.b.segment is not None

    def as_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "id": self.id,
            "kind": self.kind,
            "a": _side(self.a),
            "b": _side(self.b),
        }


def _side(row: Row | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return {
        "present": row.segment is not None,
        "segment": row.segment,
        "tokens": row.tokens,
        "fate": str(row.fate),
        "rule": row.rule,
    }


@dataclass(frozen=True, slots=True)
class NumberChange:
    """One number of the budget report that differs between the two sides."""

    name: str
    a: int
    b: int

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "a": self.a, "b": self.b}


def budget_numbers(report: dict[str, Any]) -> dict[str, int]:
    """The numbers of `budget --format json` a diff compares, by readable name, in report order."""
    found = {"window": report["max_input_tokens"], "available": report["available_tokens"]}
    for seg in report["segments"]:
        for unit in ("tokens", "messages"):  # names, not counts: "history tokens"
            found[" ".join((seg["name"], unit))] = seg[unit]
    history = report["history"]
    found["history budget"] = history["budget"]
    for part in ("kept", "dropped"):
        for unit in ("messages", "tokens"):
            found[" ".join(("history", part, unit))] = history[f"{part}_{unit}"]
    found["used"] = report["used_tokens"]
    found["free"] = report["free_tokens"]
    found["tool definitions tokens"] = report["tool_definitions_tokens"]
    found["cache prefix messages"] = report["cache_prefix"]["messages"]
    found["cache prefix tokens"] = report["cache_prefix"]["tokens"]
    if "wire_tokens" in report:
        found["wire tokens"] = report["wire_tokens"]
    return found


def number_changes(a: dict[str, Any], b: dict[str, Any]) -> list[NumberChange]:
    na, nb = budget_numbers(a), budget_numbers(b)
    return [NumberChange(name, na[name], nb[name]) for name in na if name in nb and na[name] != nb[name]]


@dataclass(frozen=True, slots=True)
class Diff:
    label_a: str
    label_b: str
    alignment: list[Aligned]
    payload_lines: list[str]
    numbers: list[NumberChange]

    @property
    def differ(self) -> bool:
        """The payloads differ (what `--exit-code` compares)."""
        return bool(self.payload_lines)

    @property
    def changed(self) -> list[Aligned]:
        return [x for x in self.alignment if x.in_a != x.in_b]

    def as_json(self) -> dict[str, Any]:
        return {
            "a": self.label_a,
            "b": self.label_b,
            "differ": self.differ,
            "numbers_differ": bool(self.numbers),
            "numbers": [n.as_json() for n in self.numbers],
            "only_in_a": [x.as_json() for x in self.changed if x.in_a],
            "only_in_b": [x.as_json() for x in self.changed if x.in_b],
            "alignment": [x.as_json() for x in self.alignment],
            "payload_diff": "".join(self.payload_lines),
        }


def _key(row: Row, seen: dict[str, int]) -> str:
    base = row.key or f"{row.kind}:{row.id}:{row.rule}"
    n = seen.get(base, 0)
    seen[base] = n + 1
    return base if n == 0 else f"{base}~{n}"


def align(rows_a: list[Row], rows_b: list[Row]) -> list[Aligned]:
    """Pair rows by their stable keys, in A's order with B-only rows merged in."""
    seen_a: dict[str, int] = {}
    seen_b: dict[str, int] = {}
    a = {_key(r, seen_a): r for r in rows_a}
    b = {_key(r, seen_b): r for r in rows_b}
    order = list(a)
    for key in b:
        if key not in a:
            order.append(key)
    out = []
    for key in order:
        row = a.get(key) or b[key]
        out.append(Aligned(key, row.id, row.kind, a.get(key), b.get(key)))
    return out


def payload_text(result: Result) -> str:
    return dumps(shorten_images(result.payload.body, result.payload.prepared.image_b64))


def compare(a: Result, b: Result, label_a: str, label_b: str) -> Diff:
    lines = list(
        difflib.unified_diff(
            payload_text(a).splitlines(keepends=True),
            payload_text(b).splitlines(keepends=True),
            fromfile=label_a,
            tofile=label_b,
            n=3,
        )
    )
    numbers = number_changes(budget_report(a), budget_report(b))
    return Diff(label_a, label_b, align(explain_rows(a), explain_rows(b)), lines, numbers)


def render(diff: Diff) -> str:
    out = [f"a: {diff.label_a}", f"b: {diff.label_b}", ""]
    changed = diff.changed
    if not changed:
        out.append("messages: the same working messages are in both contexts")
    else:
        out.append(f"messages: {len(changed)} present in only one context")
        for x in changed:
            mark = "-" if x.in_a else "+"
            here, there = (x.a, x.b) if x.in_a else (x.b, x.a)
            assert here is not None
            why = f"{there.fate} ({there.rule})" if there else "absent"
            other = diff.label_b if x.in_a else diff.label_a
            out.append(
                f"  {mark} {x.id or '-'} {x.kind} {plural(here.tokens, 'token')} [{here.fate} {here.rule}]; "
                f"in {other}: {why}"
            )
    out.append("")
    out += _render_numbers(diff.numbers)
    out.append("")
    if diff.payload_lines:
        out.append("payload:")
        text = "\n".join(out) + "\n" + "".join(diff.payload_lines)
        return text if text.endswith("\n") else text + "\n"
    out.append("payload: identical" + (" (the numbers above differ)" if diff.numbers else ""))
    return "\n".join(out) + "\n"


def _render_numbers(changes: list[NumberChange]) -> list[str]:
    if not changes:
        return ["numbers: the same (segments, kept and dropped, wire tokens, cache prefix)"]
    width = max(len(c.name) for c in changes)
    digits = max(len(f"{v:,}") for c in changes for v in (c.a, c.b))
    lines = [f"numbers: {len(changes)} differ (a -> b)"]
    for c in changes:
        delta = c.b - c.a
        lines.append(f"  {c.name:<{width}}  {c.a:>{digits},} -> {c.b:>{digits},}  ({delta:+,})")
    return lines
