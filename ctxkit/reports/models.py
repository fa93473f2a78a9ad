"""`models`: the model table as text.

Input: the catalog's rows (`ctxkit/loading/catalog.py::entries`). Output: one aligned line
per model (window, output reserve, images, tokenizer, prices, the window's source) and the
notes naming where each column comes from. The JSON form is each row's `as_json`.
"""

from __future__ import annotations

from collections.abc import Sequence

from ctxkit.loading.catalog import OWN, Entry

HEADER = (
    "provider",
    "model",
    "window",
    "output",
    "images",
    "tokenizer",
    "$/M in",
    "read",
    "write",
    "out",
    "window from",
)


def cells(r: Entry) -> tuple[str, ...]:
    """One model's line: numbers with thousands separators, a missing price as `-`."""
    i = r.info
    return (
        r.provider,
        r.model,
        f"{i.max_input_tokens:,}",
        f"{i.max_output_tokens:,}",
        "yes" if i.supports_images else "no",
        i.tokenizer,
        *(value or "-" for value in r.prices.values()),
        "genai-prices" if r.window_source != OWN else "ctxkit",
    )


def sources(rows: Sequence[Entry]) -> list[str]:
    """Where each column comes from: the genai-prices package (named with its version) or ctxkit."""
    package = next((r.price_source.split(" (")[0] for r in rows if r.price_source), "genai-prices")
    return [
        f"window from genai-prices: {package}, context_window (gpt-5*: minus the output reserve)",
        f"prices: {package}, USD per million tokens (read: cache read, write: cache write; from: tiered)",
        f"output, images, tokenizer, the other windows: {OWN}; cache rules: ctxkit/data/cache_rules.json",
    ]


def table(rows: Sequence[Entry]) -> str:
    """The table, columns padded to their widest cell, then a blank line and the sources."""
    lines = [HEADER, *(cells(r) for r in rows)]
    widths = [max(len(line[c]) for line in lines) for c in range(len(HEADER))]
    text = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in lines]
    return "\n".join([*text, "", *sources(rows)]) + "\n"
