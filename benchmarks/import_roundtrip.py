"""`make bench` "import round trip": logged body → `ctxkit import` → `assemble` → compare.

Input: the recorded traffic (`../shared/data/traffic/cassettes.jsonl.gz`, one call a
line; its README describes it). Every OpenAI chat-completions (Azure included) and
Anthropic Messages body is imported as `ctxkit import` does (the fixture text is
written and loaded back), assembled, and the assembled body compared with the
logged one on its prompt-relevant parts: every field but the sampling fields
(`temperature`, `stream`, …), which shape the reply and not the prompt. Output,
per provider: how many bodies come back exactly, how many the import refuses or
assembles differently (counted per reason: the import's error, or the first place
the bodies differ), and how the assembled body's wire tokens compare with the
logged body's own count (same meter, R-RPL-4).

    python benchmarks/import_roundtrip.py [--limit N] [--examples]

`run.py` calls `measure()`; `report_sections.import_roundtrip_section` renders it.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import re
import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data" / "traffic" / "cassettes.jsonl.gz"
DIALECTS = {("openai", "chat.completions"): "openai", ("azure", "chat.completions"): "openai"}
DIALECTS[("anthropic", "messages")] = "anthropic"
UNKNOWN_MODEL_WINDOW = 1_000_000  # what a user passes as --max-input-tokens for a model the table lacks


def records(path: Path = DATA, limit: int | None = None) -> list[tuple[str, dict[str, Any]]]:
    out = []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            dialect = DIALECTS.get((r["provider"], r["endpoint"]))
            if dialect is not None:
                out.append((dialect, r["request"]))
            if limit is not None and len(out) >= limit:
                break
    return out


def prompt_part(body: dict[str, Any]) -> dict[str, Any]:
    """The body without the fields that shape only the reply."""
    from ctxkit.loading.log_formats import SAMPLING_FIELDS

    return {k: v for k, v in body.items() if k not in SAMPLING_FIELDS}


def equivalent(dialect: str, body: dict[str, Any]) -> dict[str, Any]:
    """The same request in one spelling: text given as a string becomes the one text block
    (Anthropic `system`, message and tool-result content; OpenAI content) the provider reads
    it as, and an OpenAI assistant message's empty or missing content is null."""
    out = dict(body)
    if dialect == "anthropic":
        if isinstance(out.get("system"), str):
            out["system"] = [{"type": "text", "text": out["system"]}] if out["system"] else []
        out["messages"] = [_blocks(m) for m in out.get("messages") or []]
    else:
        out["messages"] = [_joined(m) for m in out.get("messages") or []]
    return out


def _blocks(m: Any) -> Any:
    if not isinstance(m, dict):
        return m
    if isinstance(m.get("content"), str):
        return {**m, "content": [{"type": "text", "text": m["content"]}]}
    if isinstance(m.get("content"), list):
        return {
            **m,
            "content": [
                _blocks(b) if isinstance(b, dict) and b.get("type") == "tool_result" else b for b in m["content"]
            ],
        }
    return m


def _joined(m: Any) -> Any:
    if isinstance(m, dict) and m.get("role") == "assistant" and not m.get("content"):
        return {**m, "content": None}
    parts = m.get("content") if isinstance(m, dict) else None
    if isinstance(parts, list) and len(parts) == 1 and isinstance(parts[0], dict) and parts[0].get("type") == "text":
        return {**m, "content": parts[0].get("text")}
    return m


def first_difference(a: Any, b: Any, at: str = "") -> str | None:
    """The JSON pointer of the first place two documents differ (indices as `*`), or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a or k not in b:
                return f"{at}/{k} ({'missing' if k not in b else 'added'})"
            found = first_difference(a[k], b[k], f"{at}/{k}")
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        for x, y in zip(a, b, strict=False):
            found = first_difference(x, y, f"{at}/*")
            if found:
                return found
        return None if len(a) == len(b) else f"{at} (length {len(a)} → {len(b)})"
    return None if a == b and type(a) is type(b) else at


def one(dialect: str, request: dict[str, Any]) -> dict[str, Any]:
    """One body's round trip: {"outcome": identical|equivalent|differs|refused, "reason"?, "logged"?, "assembled"?}."""
    from ctxkit.errors import CtxkitError
    from ctxkit.loading import models
    from ctxkit.loading.importer import build
    from ctxkit.loading.read import load_fixture
    from ctxkit.loading.write import yaml_text
    from ctxkit.pipeline import run
    from ctxkit.translate import items
    from ctxkit.translate.sent import body_payload

    model = request.get("model")
    window = None if model and models.lookup(dialect, str(model)) else UNKNOWN_MODEL_WINDOW
    try:
        imported = build(request, dialect, max_input_tokens=window)
        text = yaml_text(imported.document)
        fixture = load_fixture("-", stdin=io.BytesIO(text.encode("utf-8")))
        result = run(fixture)
    except CtxkitError as exc:
        return {"outcome": "refused", "reason": _reason(str(exc))}
    assembled = result.wire_tokens()
    body = result.payload.body
    try:
        logged = items.wire_tokens(body_payload(dialect, request), meter=result.assembly.meter)
    except (KeyError, TypeError, AttributeError, ValueError):
        logged = None  # a part the count cannot read (a malformed part)
    same = prompt_part(request) == prompt_part(body)
    wanted = prompt_part(equivalent(dialect, request))
    if "model" not in request:  # the fixture needs a model; the log named none
        wanted["model"] = body.get("model")
    diff = first_difference(wanted, prompt_part(equivalent(dialect, body)))
    outcome = "identical" if same else "equivalent" if diff is None else "differs"
    out: dict[str, Any] = {"outcome": outcome, "logged": logged, "assembled": assembled}
    if diff is not None:
        out["reason"] = re.sub(r"/\d+", "/*", diff)
    return out


def _reason(message: str) -> str:
    first = message.splitlines()[0] if message else message
    first = re.sub(r"/messages/\d+", "/messages/*", first)
    first = re.sub(r"'[^']*'", "'…'", first)
    return first


def measure(limit: int | None = None, path: Path = DATA) -> dict[str, Any]:
    per: dict[str, dict[str, Any]] = {}
    for dialect, request in records(path, limit):
        entry = per.setdefault(
            dialect, {"n": 0, "outcomes": Counter(), "reasons": Counter(), "refusals": Counter(), "errors": []}
        )
        entry["n"] += 1
        r = one(dialect, request)
        entry["outcomes"][r["outcome"]] += 1
        if r["outcome"] == "refused":
            entry["refusals"][r["reason"]] += 1
            continue
        if r["outcome"] == "differs":
            entry["reasons"][r["reason"]] += 1
        if r.get("logged"):
            entry["errors"].append((r["assembled"] - r["logged"]) / r["logged"])
    return {
        d: {
            "n": e["n"],
            "outcomes": dict(e["outcomes"]),
            "differs": e["reasons"].most_common(),
            "refused": e["refusals"].most_common(),
            "tokens": _spread(e["errors"]),
        }
        for d, e in sorted(per.items())
    }


def _spread(errors: list[float]) -> dict[str, Any]:
    if not errors:
        return {"n": 0}
    absolute = sorted(abs(e) for e in errors)
    return {
        "n": len(errors),
        "equal": sum(1 for e in errors if e == 0),
        "median": statistics.median(absolute),
        "p90": absolute[min(len(absolute) - 1, int(0.9 * len(absolute)))],
        "bias": statistics.median(errors),
    }


# Measured on main before issue 20's import work (dc11668), by this module: the logged body
# came back for 1,116 OpenAI bodies and no Anthropic one.
BEFORE = {
    "anthropic": {
        "n": 359,
        "outcomes": {"differs": 359},
        "tokens": {"n": 355, "equal": 63, "median": 1.4459, "p90": 8.2308},
    },
    "openai": {
        "n": 2481,
        "outcomes": {"differs": 1318, "identical": 1116, "equivalent": 33, "refused": 14},
        "tokens": {"n": 2456, "equal": 1228, "median": 0.0001, "p90": 7.1333},
    },
}
PROSE = (
    "Each OpenAI chat-completions (Azure included) and Anthropic Messages body of "
    "`../shared/data/traffic/cassettes.jsonl.gz` is imported as `ctxkit import` does, "
    "assembled, and compared with the logged body on every field but the sampling ones "
    "(`temperature`, `stream`, …). *identical*: the same JSON; *equivalent*: the same once "
    "text given as a string is written as the one text block the API reads it as, an "
    "assistant's empty or missing content as null, and the model a log without one gets; "
    "*tokens*: the assembled body's wire tokens against the logged body's, same counter "
    "(R-RPL-4), so only what the round trip changes shows. "
    "Below the table: the first place each remaining body differs, and why import refused one."
)


def section(r: dict[str, Any]) -> list[str]:
    """The "import round trip" part of BENCHMARKS.md: before and after, and the reasons left."""
    m = r.get("import round trip")
    if not m:
        return []
    out = ["## Import round trip", "", PROSE, ""]
    before = render(BEFORE, top=0)[:4]
    after = render(m)
    out += [before[0].replace("| provider |", "| before: provider |"), *before[1:], "", *after, ""]
    return out


def render(m: dict[str, Any], top: int = 8) -> list[str]:
    lines = [
        "| provider | bodies | identical | equivalent | differs | refused | tokens equal | median abs error | p90 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for dialect, e in m.items():
        o, t = e["outcomes"], e["tokens"]
        pct = (lambda x: f"{x * 100:.1f}%") if t["n"] else (lambda x: "n/a")
        counts = [f"{o.get(k, 0):,}" for k in ("identical", "equivalent", "differs", "refused")]
        tokens = f"{t.get('equal', 0):,} of {t['n']:,}"
        cells = [dialect, f"{e['n']:,}", *counts, tokens, pct(t.get("median", 0)), pct(t.get("p90", 0))]
        lines.append("| " + " | ".join(cells) + " |")
    for dialect, e in m.items():
        for title, key in (("first difference", "differs"), ("refused", "refused")):
            if top and e.get(key):
                lines += ["", f"{dialect}, {title} (top {top}):", ""]
                lines += [f"* {n:,} × `{reason}`" for reason, n in e[key][:top]]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int)
    parser.add_argument("--top", type=int, default=8)
    args = parser.parse_args()
    print("\n".join(render(measure(args.limit), args.top)))


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    main()
