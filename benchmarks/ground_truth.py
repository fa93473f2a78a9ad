"""Counts vs providers: ctxkit's R-RPL-4 count of each recorded body against the usage reported for it.

Input: the recorded traffic (`../shared/data/traffic/cassettes.jsonl.gz`: one call per line,
the body as sent and the provider's usage verbatim). Output: per provider and content
kind, n, the median and 90th percentile of the absolute count error
|predicted − reported| ÷ reported, the median signed error (bias) and how many counts are
exact; printed as a Markdown table, and as JSON with `--json FILE`.

    python benchmarks/ground_truth.py [--data FILE] [--json FILE] [--before-after]

Scored: calls whose usage has a prompt count, to the providers' own hosts (other
OpenAI-compatible hosts use their own tokenizers; Ollama's count depends on the local
model's tokenizer). A body ctxkit cannot read is counted as "not countable", never dropped.
Kinds (OpenAI, first that applies): a model the built-in table does not know, images,
a `response_format` / `text.format` schema, tool (or legacy function) definitions, plain text.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxkit.counting.reported import reported_usage
from ctxkit.loading import models
from ctxkit.translate import items
from ctxkit.translate.sent import body_meter, body_payload

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data" / "traffic" / "cassettes.jsonl.gz"

GROUPS = ("OpenAI", "Anthropic", "Gemini")
OPENAI_KINDS = ("plain text", "tools", "response_format", "images", "unknown models")
ALL = "all"


@dataclass(frozen=True, slots=True)
class Scored:
    group: str  # OpenAI | Anthropic | Gemini
    kind: str
    predicted: int | None  # None: ctxkit could not read the body
    reported: int


def load(path: Path = DATA) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def model_of(record: dict[str, Any]) -> str | None:
    """The record's model; Azure names a deployment in the URL, so fall back to the response's."""
    model = record.get("model") or record["request"].get("model") or record.get("source", {}).get("response_model")
    return str(model) if model else None


def _has_image(body: dict[str, Any]) -> bool:
    def parts() -> Iterator[Any]:
        for m in body.get("messages") or ():
            if isinstance(m, dict) and isinstance(m.get("content"), list):
                yield from m["content"]
        for item in body.get("input") or () if isinstance(body.get("input"), list) else ():
            if isinstance(item, dict) and isinstance(item.get("content"), list):
                yield from item["content"]

    return any(isinstance(p, dict) and p.get("type") in ("image_url", "input_image") for p in parts())


def _has_schema(body: dict[str, Any]) -> bool:
    fmt = body.get("response_format")
    text = body.get("text")
    return isinstance(fmt, dict) or isinstance(text, dict) and isinstance(text.get("format"), dict)


def kind_of(record: dict[str, Any]) -> tuple[str, str] | None:
    """(group, kind) of a scored call, or None for a call that is not scored here."""
    provider, source = record["provider"], record.get("source", {})
    if reported_usage(record.get("usage"), provider) is None:
        return None
    if provider in ("openai", "azure"):
        if source.get("recorded_as") == "openai-compatible":
            return None
        body = record["request"]
        model = model_of(record)
        if model is None or models.lookup(provider, model) is None:
            return "OpenAI", "unknown models"
        if _has_image(body):
            return "OpenAI", "images"
        if _has_schema(body):
            return "OpenAI", "response_format"
        if body.get("tools") or body.get("functions"):
            return "OpenAI", "tools"
        return "OpenAI", "plain text"
    if provider == "anthropic":
        return "Anthropic", ALL
    if provider == "gemini":
        return "Gemini", ALL
    return None


def count(record: dict[str, Any]) -> int | None:
    """ctxkit's R-RPL-4 count of the body as sent (None when it cannot read the body)."""
    provider = record["provider"]
    try:
        payload = body_payload(provider, record["request"], model_of(record))
        return items.wire_tokens(payload, meter=body_meter(provider, model_of(record)))
    except (KeyError, TypeError, AttributeError, ValueError):
        return None


def score(records: Iterable[dict[str, Any]]) -> list[Scored]:
    out = []
    for r in records:
        found = kind_of(r)
        if found is None:
            continue
        reported = reported_usage(r["usage"], r["provider"])
        assert reported is not None
        out.append(Scored(*found, count(r), reported.input_tokens))
    return out


def _percentile(values: list[float], q: float) -> float:
    """The q-quantile by the nearest-rank method (values sorted here)."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 1))
    return ordered[int(rank) - 1]


def summary(rows: list[Scored]) -> dict[str, Any]:
    """n, counted, exact, median and p90 absolute error and median signed error (fractions)."""
    counted = [r for r in rows if r.predicted is not None and r.reported > 0]
    errors = [(r.predicted - r.reported) / r.reported for r in counted if r.predicted is not None]
    absolute = [abs(e) for e in errors]
    return {
        "n": len(rows),
        "not_countable": len(rows) - len(counted),
        "exact": sum(1 for r in counted if r.predicted == r.reported),
        "median_abs": statistics.median(absolute) if absolute else None,
        "p90_abs": _percentile(absolute, 0.9) if absolute else None,
        "bias": statistics.median(errors) if errors else None,
    }


def table(rows: list[Scored]) -> list[dict[str, Any]]:
    """One line per provider and kind, then one per provider in all."""
    out = []
    for group in GROUPS:
        mine = [r for r in rows if r.group == group]
        kinds = OPENAI_KINDS if group == "OpenAI" else ()
        for kind in kinds:
            out.append({"provider": group, "kind": kind, **summary([r for r in mine if r.kind == kind])})
        out.append({"provider": group, "kind": ALL, **summary(mine)})
    return out


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def markdown(lines: list[dict[str, Any]]) -> str:
    head = "| provider | kind | n | median abs error | p90 | bias (median) | exact | not countable |\n"
    head += "|---|---|---:|---:|---:|---:|---:|---:|\n"
    body = "".join(
        f"| {x['provider']} | {x['kind']} | {x['n']:,} | {_pct(x['median_abs'])} | {_pct(x['p90_abs'])} "
        f"| {_pct(x['bias'])} | {x['exact']:,} | {x['not_countable']:,} |\n"
        for x in lines
    )
    return head + body


BEFORE = Path(__file__).resolve().parent / "counts_before.json"
TARGETS = {"OpenAI": "≤ 1% (p90 ≤ 5%)", "Anthropic": "≤ 5% (p90 ≤ 15%)", "Gemini": "≤ 10%"}


def before() -> list[dict[str, Any]]:
    """The committed 'before' measurement (benchmarks/counts_before.json)."""
    rows: list[dict[str, Any]] = json.loads(BEFORE.read_text(encoding="utf-8"))["rows"]
    return rows


def _cell(line: dict[str, Any] | None) -> str:
    if line is None or line["median_abs"] is None:
        return "—"
    return f"{_pct(line['median_abs'])} (p90 {_pct(line['p90_abs'])})"


def before_after(after: list[dict[str, Any]]) -> str:
    """The counts-vs-providers table with the committed 'before' column beside a fresh 'after'."""
    old = {(x["provider"], x["kind"]): x for x in before()}
    head = "| provider | kind | n | before: median abs error (p90) | after: median abs error (p90) "
    head += "| exact after | target |\n"
    head += "|---|---|---:|---:|---:|---:|---|\n"
    body = ""
    for x in after:
        target = TARGETS[x["provider"]] if x["kind"] == ALL else ""
        body += (
            f"| {x['provider']} | {x['kind']} | {x['n']:,} | {_cell(old.get((x['provider'], x['kind'])))} "
            f"| {_cell(x)} | {x['exact']:,} of {x['n'] - x['not_countable']:,} | {target} |\n"
        )
    return head + body


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--before-after", action="store_true", help="the table with the committed 'before' column")
    args = parser.parse_args(argv)
    lines = table(score(load(args.data)))
    sys.stdout.write(before_after(lines) if args.before_after else markdown(lines))
    if args.json is not None:
        args.json.write_text(json.dumps(lines, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
