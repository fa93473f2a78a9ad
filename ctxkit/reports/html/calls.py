"""The replay part of the report (R-HTML-2 f): the calls over time, as values the template draws.

Input: the replay's JSON report (`reports.replay.report`) and, per call, the blocks of its
payload (`Collector`, the replay's `on_call`). Output: `CallsView` — one stacked bar and one
table row per call (cached / written / uncached prompt tokens) with its break marked, the
cumulative cost with and without the cache as polylines, and a compact data block from which
the page's script draws a chosen call's seat map (the same flow as `seatmap.layout`). A replay
of more than `SHOWN_MAX` calls is drawn as that many groups of consecutive calls: each bar and
row is the group's last call, its marker the group's worst break, so the page stays small
(R-HTML-3) however long the conversation.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ctxkit.history.working import Fate, Segment
from ctxkit.replay.causes import HEALTHY
from ctxkit.reports.html.seatmap import GAP, ROW, ROWS, WIDTH, Rect

CHART_HEIGHT = 220.0  # the bars' plot area, SVG units
CHART_TOP = 64.0  # room above the bars for break markers and their causes
COST_HEIGHT = 160.0
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
    rows: tuple[dict[str, Any], ...]  # the calls of the table: one per bar
    grouped: int | None  # calls per bar at most, when they are drawn in groups (`shown`)
    top: float
    height: float
    scale_max: int
    cost_with: str | None  # polyline points
    cost_without: str | None
    cost_max: float | None
    data_block: str  # JSON for the script, `<` `>` `&` escaped


SHOWN_MAX = 600  # more calls than this are drawn as this many groups (R-HTML-3: a page under 5 MB)


def shown(total: int) -> list[int]:
    """The calls the page draws, ascending: all of them up to SHOWN_MAX; beyond, the last call of
    each of SHOWN_MAX groups of consecutive calls (the fixture's own call included)."""
    if total <= SHOWN_MAX:
        return list(range(total))
    return [(g + 1) * total // SHOWN_MAX - 1 for g in range(SHOWN_MAX)]


class Collector:
    """`on_call` for the replay driver: the payload blocks of each call the page draws, compactly.

    `total` (the replay's number of calls) chooses the calls drawn (`shown`); without it, all."""

    def __init__(self, total: int | None = None) -> None:
        self.labels: dict[str, int] = {}
        self.calls: list[dict[str, Any]] = []
        self.indices: list[int] | None = shown(total) if total is not None else None
        self._wanted = frozenset(self.indices) if self.indices is not None else None
        self._previous: list[list[int]] = []

    def __call__(self, index: int, call: Any, result: Any) -> None:
        from ctxkit.reports.html.view import payload_blocks

        if self._wanted is not None and index not in self._wanted:
            return
        blocks = []
        for b in payload_blocks(result):
            number = self.labels.setdefault(b.label, len(self.labels))
            flat = [number]
            for p in b.parts:
                flat += [SEGMENTS.index(p.segment) if p.segment in SEGMENTS else 1, p.tokens]
            blocks.append(flat)
        delta = _delta(self._previous, blocks)
        self._previous = blocks
        self.calls.append({"i": index, "d": delta, "a": result.assembly.available, "n": _left_out(result)})


def _delta(previous: list[list[int]], blocks: list[list[int]]) -> list[list[int]]:
    """`blocks` as runs copied from the previous drawn call's and new blocks.

    A run is `[-1 - start, length]` (a block starts with its label's number, never negative): a
    conversation grows at its end and truncation drops from its start, so consecutive calls share
    long runs, and a call costs the page what changed, not its window."""
    first: dict[tuple[int, ...], int] = {}
    for n, b in enumerate(previous):
        first.setdefault(tuple(b), n)
    out: list[list[int]] = []
    i = 0
    while i < len(blocks):
        start = first.get(tuple(blocks[i]))
        if start is None:
            out.append(blocks[i])
            i += 1
            continue
        n = 1
        while i + n < len(blocks) and start + n < len(previous) and blocks[i + n] == previous[start + n]:
            n += 1
        out.append([-1 - start, n])
        i += n
    return out


def undelta(previous: list[list[int]], delta: list[list[int]]) -> list[list[int]]:
    """`_delta` undone (the page's script does the same)."""
    out: list[list[int]] = []
    for op in delta:
        if op[0] < 0:
            out += previous[-1 - op[0] : -1 - op[0] + op[1]]
        else:
            out.append(op)
    return out


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


@dataclass(frozen=True, slots=True)
class Group:
    """Consecutive calls drawn as one bar and one table row: the last of them (`call`)."""

    first: int
    call: dict[str, Any]  # the call drawn
    worst: dict[str, Any] | None  # the break that lost most tokens among them
    breaks: int
    size: int


def groups(calls: list[dict[str, Any]], indices: list[int] | None) -> list[Group]:
    out: list[Group] = []
    first = 0
    for end in indices if indices is not None else range(len(calls)):
        run = calls[first : end + 1]
        broken = [c for c in run if c["cause"] not in HEALTHY]
        worst = min(broken, key=lambda c: (-c["lost_tokens"], c["index"])) if broken else None
        out.append(Group(first, calls[end], worst, len(broken), len(run)))
        first = end + 1
    return out


def build(
    data: dict[str, Any], collected: Collector | None, *, title: Callable[[dict[str, Any]], str] | None = None
) -> CallsView:
    """`collected`: each drawn call's blocks for its seat map (None: a log, no seat maps, the calls
    drawn chosen here by `shown`); `title`: a call's tooltip (a log's shows the reported numbers)."""
    calls = data["calls"]
    one = title or _title
    drawn = groups(calls, collected.indices if collected is not None else shown(len(calls)))
    n = len(drawn)
    step = WIDTH / n if n else WIDTH
    gap = step * 0.2 if step >= 4 else 0.0
    top_prompt = int(nice_ceiling(max((g.call["prompt_tokens"] for g in drawn), default=0) or 1))
    scale = CHART_HEIGHT / top_prompt
    marked = [g.worst for g in drawn if g.worst is not None]
    named = {c["index"] for c in marked} if step >= 14 else _largest(marked)
    bars = [
        _bar(g, position * step + gap / 2, step - gap, scale, _group_title(g, one), named)
        for position, g in enumerate(drawn)
    ]
    with_cache, without = _cost_lines(calls, drawn, step)
    return CallsView(
        data=data,
        bars=tuple(bars),
        rows=tuple(g.call for g in drawn),
        grouped=max((g.size for g in drawn), default=1) if len(drawn) < len(calls) else None,
        top=CHART_TOP,
        height=CHART_TOP + CHART_HEIGHT,
        scale_max=top_prompt,
        cost_with=with_cache[0] if with_cache else None,
        cost_without=without[0] if without else None,
        cost_max=without[1] if without else None,
        data_block=_data_block(data, collected, drawn) if collected is not None else "",
    )


def _bar(g: Group, x: float, width: float, scale: float, title: str, named: set[int]) -> Bar:
    """A group's bar: its last call's prompt stacked cached, written, uncached from the bottom;
    marked with its worst break's cause, named on the chart when `named` holds that call."""
    c = g.call
    written = c["cache_write_tokens"]
    uncached = c["prompt_tokens"] - c["cached_tokens"] - written
    pieces = []
    y = CHART_TOP + CHART_HEIGHT
    for kind, tokens in (("cached", c["cached_tokens"]), ("written", written), ("uncached", uncached)):
        h = tokens * scale
        if h > 0:
            y -= h
            pieces.append((kind, Rect(x, y, width, h)))
    cause = g.worst["cause"] if g.worst is not None else None
    named_here = g.worst is not None and g.worst["index"] in named
    return Bar(c["index"], x, width, tuple(pieces), title, cause, named_here)


def _group_title(g: Group, title: Callable[[dict[str, Any]], str]) -> str:
    if g.size == 1:
        return title(g.call)
    text = f"calls {g.first}–{g.call['index']}: {g.breaks:,} break{'s' if g.breaks != 1 else ''}"
    if g.worst is not None:
        text += f", the worst at call {g.worst['index']}: {g.worst['cause']} ({g.worst['rule']})"
        text += f", lost {g.worst['lost_tokens']:,}"
    return f"{text}; drawn: {title(g.call)}"


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


def _cost_lines(calls: list[dict[str, Any]], drawn: list[Group], step: float) -> tuple[tuple[str, float] | None, ...]:
    """Cumulative cost with and without the cache at each drawn call: (polyline points, total),
    None when a cost is unknown."""
    sums: dict[str, list[float]] = {}
    for key in ("cost", "cost_without_cache"):
        if calls and all(c[key] is not None for c in calls):
            total, acc = 0.0, []
            for c in calls:
                total += c[key]
                acc.append(total)
            sums[key] = [acc[g.call["index"]] for g in drawn]
    top = nice_ceiling(max((acc[-1] for acc in sums.values()), default=0.0) or 1.0)

    def line(key: str) -> tuple[str, float] | None:
        acc = sums.get(key)
        if acc is None:
            return None
        height = COST_HEIGHT
        points = " ".join(f"{(i + 0.5) * step:.2f},{height - s / top * height:.2f}" for i, s in enumerate(acc))
        return points, top

    return line("cost"), line("cost_without_cache")


NICE_STEPS = (1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0)


def nice_ceiling(value: float) -> float:
    """The axis top for `value`: the next round number at or above it (1,690 → 2,000;
    0.0751 → 0.08), so the label reads as a scale rather than as one call's figure."""
    import math

    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    step = next(s for s in NICE_STEPS if s * power >= value * (1 - 1e-12))
    return round(step * power, 12)


def _data_block(data: dict[str, Any], collected: Collector, drawn: list[Group]) -> str:
    labels = sorted(collected.labels, key=collected.labels.__getitem__)
    titles = [_title(g.call) for g in drawn]
    doc = {
        "segments": SEGMENTS,
        "labels": labels,
        "window": data["max_input_tokens"],
        "geometry": {"width": WIDTH, "row": ROW, "gap": GAP, "rows": ROWS},
        "calls": [{**c, "t": t} for c, t in zip(collected.calls, titles, strict=True)],
    }
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
