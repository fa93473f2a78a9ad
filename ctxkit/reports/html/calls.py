"""The replay part of the report (R-HTML-2 f): the calls over time, as values the template draws.

Input: the replay's JSON report (`reports.replay.report`) and, per call, the blocks of its
payload (`Collector`, the replay's `on_call`). Output: `CallsView` — one stacked bar per call
(cached / written / uncached prompt tokens) with its break marked, the cumulative cost with
and without the cache as polylines, and a compact data block from which the page's script
draws a chosen call's seat map (the same flow as `seatmap.layout`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ctxkit.history.working import Fate, Segment
from ctxkit.reports.html.seatmap import GAP, ROW, ROWS, WIDTH, Rect

CHART_HEIGHT = 220.0  # the bars' plot area, SVG units
CHART_TOP = 64.0  # room above the bars for break markers and their causes
COST_HEIGHT = 160.0
HEALTHY = frozenset({"append", "first_call"})  # causes that are not a break worth a marker
LABELLED_BREAKS = 16  # with many calls, only the breaks that lost most name their cause on the chart
SEGMENTS = [str(s) for s in Segment]


@dataclass(frozen=True, slots=True)
class Bar:
    index: int
    x: float
    w: float
    pieces: tuple[tuple[str, Rect], ...]  # (cached | written | uncached, rectangle)
    title: str
    cause: str | None  # a break's cause, marked above the bar
    named: bool  # its cause is written on the chart


@dataclass(frozen=True, slots=True)
class CallsView:
    data: dict[str, Any]
    bars: tuple[Bar, ...]
    top: float
    height: float
    scale_max: int
    cost_with: str | None  # polyline points
    cost_without: str | None
    cost_max: float | None
    data_block: str  # JSON for the script, `<` `>` `&` escaped


class Collector:
    """`on_call` for the replay driver: each call's payload blocks in a compact form."""

    def __init__(self) -> None:
        self.labels: dict[str, int] = {}
        self.calls: list[dict[str, Any]] = []
        self._previous: list[list[int]] = []

    def __call__(self, index: int, call: Any, result: Any) -> None:
        from ctxkit.reports.html.view import payload_blocks

        blocks = []
        for b in payload_blocks(result):
            number = self.labels.setdefault(b.label, len(self.labels))
            flat = [number]
            for p in b.parts:
                flat += [SEGMENTS.index(p.segment) if p.segment in SEGMENTS else 1, p.tokens]
            blocks.append(flat)
        # Stored as a delta: `k` blocks equal to the previous call's, then the rest (a conversation
        # mostly grows at its end, so 500 calls of a long session stay small).
        k = 0
        for mine, theirs in zip(blocks, self._previous, strict=False):
            if mine != theirs:
                break
            k += 1
        self._previous = blocks
        self.calls.append({"k": k, "b": blocks[k:], "a": result.assembly.available, "n": _left_out(result)})


def _left_out(result: Any) -> str:
    """What this call did not send, counted (counting its tokens would tokenize the history)."""
    a = result.assembly
    fates = a.fates.dropped()  # counted from the record's runs: not one lookup per dropped message
    if a.branch.summarized:
        fates[str(Fate.SUMMARIZED)] += len(a.branch.summarized)
    capped = sum(1 for r in result.payload.prepared.rows if r.fate is Fate.IMAGE_CAPPED)
    if capped:
        fates[str(Fate.IMAGE_CAPPED)] += capped
    if not fates:
        return "nothing left out"
    return "not sent: " + ", ".join(f"{n:,} {fate}" for fate, n in sorted(fates.items()))


def build(data: dict[str, Any], collected: Collector) -> CallsView:
    calls = data["calls"]
    n = len(calls)
    step = WIDTH / n if n else WIDTH
    gap = step * 0.2 if step >= 4 else 0.0
    top_prompt = max((c["prompt_tokens"] for c in calls), default=0) or 1
    scale = CHART_HEIGHT / top_prompt
    breaks = [c for c in calls if c["cause"] not in HEALTHY]
    named = {c["index"] for c in breaks} if step >= 14 else _largest(breaks)
    bars = []
    for c in calls:
        x = c["index"] * step + gap / 2
        written = c["cache_write_tokens"]
        uncached = c["prompt_tokens"] - c["cached_tokens"] - written
        pieces = []
        y = CHART_TOP + CHART_HEIGHT
        for kind, tokens in (("cached", c["cached_tokens"]), ("written", written), ("uncached", uncached)):
            h = tokens * scale
            if h > 0:
                y -= h
                pieces.append((kind, Rect(x, y, step - gap, h)))
        cause = c["cause"] if c["cause"] not in HEALTHY else None
        bars.append(Bar(c["index"], x, step - gap, tuple(pieces), _title(c), cause, c["index"] in named))
    with_cache, without = _cost_lines(calls, step)
    return CallsView(
        data=data,
        bars=tuple(bars),
        top=CHART_TOP,
        height=CHART_TOP + CHART_HEIGHT,
        scale_max=top_prompt,
        cost_with=with_cache[0] if with_cache else None,
        cost_without=without[0] if without else None,
        cost_max=without[1] if without else None,
        data_block=_data_block(data, collected),
    )


def _largest(breaks: list[dict[str, Any]]) -> set[int]:
    ranked = sorted(breaks, key=lambda c: (-c["lost_tokens"], c["index"]))
    return {c["index"] for c in ranked[:LABELLED_BREAKS]}


def _title(c: dict[str, Any]) -> str:
    prompt, cached = c["prompt_tokens"], c["cached_tokens"]
    hit = f"{cached / prompt:.0%}" if prompt else "-"
    text = f"call {c['index']} ({c['label']}{'' if c['on_branch'] else ', edited away'})"
    text += f" · prompt {prompt:,} · cached {cached:,} ({hit})"
    if c["cache_write_tokens"]:
        text += f" · written {c['cache_write_tokens']:,}"
    text += f" · {c['cause']} ({c['rule']})"
    if c["lost_tokens"]:
        text += f" · lost {c['lost_tokens']:,}"
    if c["limit"]:
        text += f" · limit {c['limit']}"
    if c["cost"] is not None:
        text += f" · ${c['cost']:.6f}"
    return text


def _cost_lines(calls: list[dict[str, Any]], step: float) -> tuple[tuple[str, float] | None, ...]:
    """Cumulative cost with and without the cache: (polyline points, total), None when a cost is unknown."""
    sums: dict[str, list[float]] = {}
    for key in ("cost", "cost_without_cache"):
        if calls and all(c[key] is not None for c in calls):
            total, acc = 0.0, []
            for c in calls:
                total += c[key]
                acc.append(total)
            sums[key] = acc
    top = max((acc[-1] for acc in sums.values()), default=0.0) or 1.0

    def line(key: str) -> tuple[str, float] | None:
        acc = sums.get(key)
        if acc is None:
            return None
        height = COST_HEIGHT
        points = " ".join(f"{(i + 0.5) * step:.2f},{height - s / top * height:.2f}" for i, s in enumerate(acc))
        return points, acc[-1]

    return line("cost"), line("cost_without_cache")


def _data_block(data: dict[str, Any], collected: Collector) -> str:
    labels = sorted(collected.labels, key=collected.labels.__getitem__)
    titles = [_title(c) for c in data["calls"]]
    doc = {
        "segments": SEGMENTS,
        "labels": labels,
        "window": data["max_input_tokens"],
        "geometry": {"width": WIDTH, "row": ROW, "gap": GAP, "rows": ROWS},
        "calls": [{**c, "t": t} for c, t in zip(collected.calls, titles, strict=True)],
    }
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
