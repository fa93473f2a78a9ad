"""`replay LOG`: the logged calls as a table or JSON, beside the provider's numbers (R-LOG-3, R-LOG-4).

Input: a `LogReplay`. Output: `report()` — `{"log", "format", "calls", "totals", ...}`, each call
with fixture replay's fields (R-RPL-8) (those a body has) plus `session`, `endpoint`, `source_index`, the reported
numbers, the count error and the verdict — and `table()`, one row per call, then the totals: the
predicted and the reported hit rate, verdict counts, the count error per provider (median and
90th percentile of its absolute value, nearest rank) and the costs.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from typing import Any

from ctxkit.output import plural
from ctxkit.replay.logs import LogCall, LogReplay
from ctxkit.replay.verdicts import VERDICTS
from ctxkit.reports.replay import _short_clock, _side, _sum, _usd, advice_lines, cache_fields, money
from ctxkit.reports.replay import totals as replay_totals

NORMALISED_NOTE = (
    "calls read from OpenTelemetry GenAI attributes are compared in that normalised form "
    "(system instructions, messages and tool definitions as the attributes give them), not the body as sent"
)


def call_json(c: LogCall) -> dict[str, Any]:
    rep = c.reported
    return {
        "index": c.index,
        "source_index": c.source_index,
        "session": c.session,
        "provider": c.provider,
        "endpoint": c.endpoint,
        "model": c.model,
        "label": f"r{c.source_index}",
        **cache_fields(c),
        "reported_input_tokens": rep.input_tokens if rep is not None else None,
        "reported_cached_tokens": rep.cached_tokens if rep is not None and c.cache_reported else None,
        "reported_cache_write_tokens": rep.cache_write_tokens if rep is not None and c.cache_reported else None,
        "count_error": round(c.count_error, 4) if c.count_error is not None else None,
        "verdict": c.verdict,
        "reported_cost": money(c.reported_cost),
    }


def nearest_rank(values: list[float], share: float) -> float:
    """The `share` quantile of the values by the nearest-rank method (no interpolation)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def totals(calls: tuple[LogCall, ...]) -> dict[str, Any]:
    """Fixture replay's totals (R-RPL-8) with the reported numbers beside them (R-LOG-3)."""
    reported = [c.reported for c in calls if c.reported is not None]
    rep_input = sum(r.input_tokens for r in reported)
    judged = [c for c in calls if c.reported is not None and c.cache_reported]
    judged_input = sum(c.reported.input_tokens for c in judged if c.reported is not None)
    rep_cached = sum(c.reported.cached_tokens for c in judged if c.reported is not None)
    verdicts = Counter(c.verdict for c in calls if c.verdict is not None)
    errors: dict[str, list[float]] = {}
    for c in calls:
        if c.count_error is not None:
            errors.setdefault(c.provider, []).append(abs(c.count_error))
    base = replay_totals(calls)
    causes = base.pop("causes")
    return {
        **base,
        "reported_calls": len(reported),
        "reported_input_tokens": rep_input,
        "reported_cached_tokens": rep_cached,
        "reported_cache_write_tokens": sum(c.reported.cache_write_tokens for c in judged if c.reported is not None),
        "reported_hit_rate": round(rep_cached / judged_input, 4) if judged_input else 0.0,
        "verdicts": {v: verdicts[v] for v in VERDICTS},
        "count_error": {
            provider: {
                "calls": len(values),
                "median": round(statistics.median(values), 4),
                "p90": round(nearest_rank(values, 0.9), 4),
            }
            for provider, values in sorted(errors.items())
        },
        "reported_cost": money(_sum([c.reported_cost for c in calls])) if reported else None,
        "causes": causes,
    }


def report(r: LogReplay, *, first: int = 0, stop: int | None = None) -> dict[str, Any]:
    """The whole log's totals; `calls` holds the rows of the chosen range (all are computed)."""
    normalised = any(c.endpoint == "otel" for c in r.calls)
    return {
        "log": r.source,
        "format": r.format,
        "providers": sorted({c.provider for c in r.calls}),
        "models": sorted({c.model for c in r.calls}),
        "normalised": NORMALISED_NOTE if normalised else None,
        "skipped": r.skipped,
        "unreadable": r.bad,
        "calls": [call_json(c) for c in r.calls[first:stop]],
        "totals": totals(r.calls),
    }


def _pct(value: float | None) -> str:
    return "" if value is None else f"{value:+.1%}"


def _n(value: int | None) -> str:
    return "" if value is None else f"{value:,}"


def table(data: dict[str, Any]) -> str:
    from tabulate import tabulate

    writes = any(c["cache_write_tokens"] or c["reported_cache_write_tokens"] for c in data["calls"])
    headers = ["#", "rec", "clock", "model", "prompt", "reported", "error", "cached", "rep.cached"]
    headers += ["write", "rep.write"] if writes else []
    headers += ["verdict", "cost", "break", "cause", "limit", "lost"]
    rows = []
    for c in data["calls"]:
        brk = c["break"]
        where = f"@{brk['item']} {_side(brk['this'])} | {_side(brk['candidate'])}" if brk else ""
        row = [str(c["index"]), str(c["source_index"]), _short_clock(c["clock"]), c["model"]]
        row += [_n(c["prompt_tokens"]), _n(c["reported_input_tokens"]), _pct(c["count_error"])]
        row += [_n(c["cached_tokens"]), _n(c["reported_cached_tokens"])]
        row += [_n(c["cache_write_tokens"]), _n(c["reported_cache_write_tokens"])] if writes else []
        row += [c["verdict"] or "", _usd(c["cost"]), where, c["cause"], c["limit"] or "", _n(c["lost_tokens"])]
        rows.append(row)
    right = {"#", "rec", "prompt", "reported", "error", "cached", "rep.cached", "write", "rep.write", "cost", "lost"}
    text = tabulate(
        rows,
        headers=headers,
        tablefmt="simple",
        colalign=tuple("right" if h in right else "left" for h in headers),
        disable_numparse=True,
    )
    return "\n".join([_title(data), "", text, "", *_totals_lines(data)]) + "\n"


def _title(data: dict[str, Any]) -> str:
    models = data["models"]
    named = ", ".join(models) if len(models) <= 3 else f"{len(models)} models"
    return f"{data['log']}: recorded traffic ({data['format']}); {', '.join(data['providers']) or 'no calls'}; {named}"


def _totals_lines(data: dict[str, Any]) -> list[str]:
    t = data["totals"]
    lines = [
        f"calls {t['calls']:,}; prompt {plural(t['prompt_tokens'], 'token', grouped=True)} predicted, "
        f"{t['reported_input_tokens']:,} reported ({t['reported_calls']:,} calls with usage)",
        f"cached {t['cached_tokens']:,} predicted ({t['hit_rate']:.1%}), "
        f"{t['reported_cached_tokens']:,} reported ({t['reported_hit_rate']:.1%})"
        + (
            f"; written {t['cache_write_tokens']:,} predicted, {t['reported_cache_write_tokens']:,} reported"
            if t["cache_write_tokens"] or t["reported_cache_write_tokens"]
            else ""
        ),
        "verdicts: " + ", ".join(f"{v} {n:,}" for v, n in t["verdicts"].items()),
    ]
    if t["count_error"]:
        parts = [
            f"{p} median {e['median']:.1%}, p90 {e['p90']:.1%} ({e['calls']:,})" for p, e in t["count_error"].items()
        ]
        lines.append("count error |predicted - reported| / reported (calls): " + "; ".join(parts))
    lines.append(
        f"cost {_usd(t['cost'])} with the predicted cache, {_usd(t['cost_without_cache'])} without, "
        f"{_usd(t['reported_cost'])} from the reported usage"
    )
    causes = ", ".join(f"{c['cause']} {c['lost_tokens']:,} ({c['calls']:,})" for c in t["causes"])
    lines.append(f"lost tokens by cause (calls): {causes}")
    lines.extend(advice_lines(t["causes"]))
    if data["normalised"]:
        lines.append(f"note: {data['normalised']}")
    return lines
