"""Adversarial texts (issue 19 item 5): `ctxkit validate` on a long run of one character
class against the same number of characters of ordinary prose.

A run of one class (letters, CJK, digits, dashes) is one pre-tokenizer piece; merging a
piece in plain Python costs the square of its length, so such texts once took minutes.
Each row is a fresh `ctxkit validate` process on a one-message fixture (o200k_base), its
median wall time, and the ratio to prose of the same length: near 1× means no stall.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from report import R, fmt, med, table
from timing import PYTHON, Failed, interleaved

CTXKIT = str(Path(PYTHON).parent / "ctxkit")
TEXTS = {
    '`"y" × 20,000`': "y" * 20_000,
    '`"y" × 100,000`': "y" * 100_000,
    "6,000 CJK characters": "中" * 6_000,
    "100,000 digits": "7" * 100_000,
    "100,000 dashes": "-" * 100_000,
    "400 words of 255 letters": " ".join("q" * 255 for _ in range(400)),
}
PROSE = "The quarterly ledger export runs overnight, and each region checks its totals by nine. "


def _fixture(folder: Path, name: str, text: str) -> str:
    doc = {
        "ctxkit": 1,
        "model": {"provider": "openai", "name": "gpt-4o", "max_input_tokens": 1_000_000},
        "tokenizer": "o200k_base",
        "messages": [{"id": "u1", "role": "user", "text": text}],
    }
    path = folder / f"adversarial-{name}.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return str(path)


def measure(folder: Path, repeat: int) -> dict[str, Any]:
    """{label: {"text": samples, "prose": samples}}, each command run `repeat` times in turns."""
    out: dict[str, Any] = {}
    for index, (label, text) in enumerate(TEXTS.items()):
        prose = (PROSE * (len(text) // len(PROSE) + 1))[: len(text)]
        commands = {
            "text": [CTXKIT, "validate", _fixture(folder, f"{index}", text)],
            "prose": [CTXKIT, "validate", _fixture(folder, f"{index}-prose", prose)],
        }
        try:
            out[label] = interleaved(commands, repeat)
        except Failed as exc:
            out[label] = {"error": str(exc)}
    return out


def section(r: R) -> list[str]:
    results = r.get("adversarial")
    if not results:
        return []
    rows = []
    for label, samples in results.items():
        if "error" in samples:
            rows.append([label, "failed", "", "", samples["error"][:80]])
            continue
        text, prose = med(samples["text"]), med(samples["prose"])
        ratio = f"{text / prose:.2f}×" if text and prose else "n/a"
        rows.append([label, fmt(text), fmt(prose), ratio, str(len(samples["text"]))])
    return [
        "## Adversarial texts",
        "",
        table(["text (one user message)", "`ctxkit validate`", "same length of prose", "ratio", "runs"], rows),
        "",
        "A long run of one character class is a single piece for the tokenizer. The plain-Python "
        "counter declines a piece over 256 bytes, or a text needing more merging than its bound, "
        "and tiktoken (built from the same verified ranks) counts it. What remains of the ratio is "
        "building tiktoken's encoding (about 0.2 s), which prose of this length, counted in plain "
        "Python, does not need. Before, `y` × 20,000 took 53 s and 6,000 CJK characters 37 s.",
        "",
    ]
