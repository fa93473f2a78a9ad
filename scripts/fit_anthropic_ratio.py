"""Fit Anthropic's text ratio: its reported prompt tokens ÷ ctxkit's cl100k_base count (R-RPL-4).

Anthropic's tokenizer is not public, so ctxkit counts Anthropic texts with cl100k_base and
scales them by one ratio. This script fits it on the recorded traffic and writes
`ctxkit/data/anthropic_ratio.json`; anyone can re-run it:

    python scripts/fit_anthropic_ratio.py [--data FILE] [--check]

Calls used: Anthropic Messages calls with reported usage and plain text only (no tools,
images, documents, thinking or structured outputs, whose costs follow other rules or add
prompts of their own). For each, the reported count is divided by ctxkit's count of the
same body with the ratio 1 (texts, turn headers, reply priming). The ratio is the median of
these quotients (robust to the few odd calls), rounded to 3 decimals. `--check` exits 1
when the file differs from a fresh fit.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from ctxkit import providers
from ctxkit.counting import wire
from ctxkit.counting.reported import reported_usage
from ctxkit.translate import items
from ctxkit.translate.sent import body_meter, body_payload

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data" / "traffic" / "cassettes.jsonl.gz"
_OTHER_RULES = ('"type": "image"', '"type": "document"', '"type": "tool_use"', '"type": "tool_result"')
_OTHER_FIELDS = ("tools", "thinking", "output_config", "output_format")


def usable(record: dict[str, Any]) -> bool:
    if record.get("provider") != "anthropic" or record.get("endpoint") != "messages":
        return False
    text = json.dumps(record["request"])
    if any(k in text for k in _OTHER_RULES) or any(record["request"].get(f) for f in _OTHER_FIELDS):
        return False
    return reported_usage(record.get("usage"), "anthropic") is not None


def quotient(record: dict[str, Any]) -> float | None:
    body = record["request"]
    model = str(record.get("model") or body.get("model") or "")
    reported = reported_usage(record["usage"], "anthropic")
    assert reported is not None
    counted = items.wire_tokens(body_payload("anthropic", body, model), meter=body_meter("anthropic", model))
    return reported.input_tokens / counted if counted > 0 else None


def fit(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    wire.fitted_ratio.cache_clear()
    saved = wire.RATIO_FOLDER
    wire.RATIO_FOLDER = Path("/nonexistent")  # count with the ratio 1
    try:
        quotients = [q for r in records if usable(r) and (q := quotient(r)) is not None]
    finally:
        wire.RATIO_FOLDER = saved
        wire.fitted_ratio.cache_clear()
    return {
        "_note": "Anthropic's reported prompt tokens / ctxkit's cl100k_base count, median over the plain-text "
        "Anthropic calls of the recorded traffic; written by scripts/fit_anthropic_ratio.py (re-run it, never edit).",
        "ratio": round(statistics.median(quotients), 3),
        "calls": len(quotients),
        "tokenizer": wire.RATIO_TOKENIZER,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    fitted = fit(args.data)
    text = json.dumps(fitted, indent=2) + "\n"
    target = wire.RATIO_FOLDER / str(providers.spec("anthropic").text_ratio)  # the spec names the file
    if args.check:
        same = target.read_text(encoding="utf-8") == text
        print("up to date" if same else "differs from a fresh fit")
        sys.exit(0 if same else 1)
    target.write_text(text, encoding="utf-8")
    print(f"ratio {fitted['ratio']} over {fitted['calls']} calls -> {target.relative_to(REPO)}")


if __name__ == "__main__":
    main()
