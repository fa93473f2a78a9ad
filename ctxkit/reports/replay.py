"""`replay`: the calls of a conversation as a table or JSON (R-RPL-8).

Input: a `Replay`. Output: `report()` — the JSON document `{"calls", "totals", ...}` every renderer
(table, HTML) reads — and `table()`, one row per call followed by the totals and the causes ranked
by lost tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Protocol

from ctxkit.output import plural, printable
from ctxkit.replay.breaks import Break
from ctxkit.replay.cache import Limit, Mode
from ctxkit.replay.causes import CAUSE_ADVICE, HEALTHY, Cause
from ctxkit.replay.driver import CallRow, Replay


def clock(value: datetime | None) -> str | None:
    """ISO 8601 in UTC with `Z`."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def money(value: Decimal | None) -> float | None:
    return None if value is None else float(value)


class Priced(Protocol):
    """What the cache columns and totals read of a call: a fixture replay's or a log's (R-LOG-4)."""

    @property
    def clock(self) -> datetime | None: ...
    @property
    def prompt_tokens(self) -> int: ...
    @property
    def prefix_tokens(self) -> int: ...
    @property
    def cached_tokens(self) -> int: ...
    @property
    def cache_write_tokens(self) -> int: ...
    @property
    def unread_write_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int | None: ...
    @property
    def cost(self) -> Decimal | None: ...
    @property
    def cost_without_cache(self) -> Decimal | None: ...
    @property
    def candidate(self) -> int | None: ...
    @property
    def brk(self) -> Break: ...
    @property
    def limit(self) -> Limit | None: ...


def call_json(c: CallRow) -> dict[str, Any]:
    return {
        "index": c.index,
        "user_message": c.user_message,
        "step": c.step,
        "label": c.label,
        "on_branch": c.on_branch,
        **cache_fields(c),
        "truncated": c.truncated,
        "compression_due": c.compression_due,
        "synthetic": c.synthetic,
    }


def cache_fields(c: Priced) -> dict[str, Any]:
    """A call's clock, tokens, cache prediction, cost and break, in the JSON report's order."""
    return {
        "clock": clock(c.clock),
        "prompt_tokens": c.prompt_tokens,
        "prefix_tokens": c.prefix_tokens,
        "cached_tokens": c.cached_tokens,
        "cache_write_tokens": c.cache_write_tokens,
        "unread_write_tokens": c.unread_write_tokens,
        "output_tokens": c.output_tokens,
        "cost": money(c.cost),
        "cost_without_cache": money(c.cost_without_cache),
        "candidate": c.candidate,
        "break": c.brk.as_json(),
        "cause": c.brk.cause,
        "rule": c.brk.rule,
        "limit": c.limit,
        "lost_tokens": c.brk.lost_tokens,
    }


def _sum(values: list[Decimal | None]) -> Decimal | None:
    if any(v is None for v in values):
        return None
    return sum((v for v in values if v is not None), Decimal(0))


def totals(calls: Sequence[Priced]) -> dict[str, Any]:
    prompt = sum(c.prompt_tokens for c in calls)
    cached = sum(c.cached_tokens for c in calls)
    causes: dict[Cause, list[int]] = {}
    for c in calls:
        entry = causes.setdefault(c.brk.cause, [0, 0])
        entry[0] += 1
        entry[1] += c.brk.lost_tokens
    ranked = sorted(causes.items(), key=lambda kv: (-kv[1][1], -kv[1][0], kv[0]))
    return {
        "calls": len(calls),
        "prompt_tokens": prompt,
        "cached_tokens": cached,
        "cache_write_tokens": sum(c.cache_write_tokens for c in calls),
        "unread_write_tokens": sum(c.unread_write_tokens for c in calls),
        "output_tokens": sum(c.output_tokens or 0 for c in calls),
        "hit_rate": round(cached / prompt, 4) if prompt else 0.0,
        "cost": money(_sum([c.cost for c in calls])),
        "cost_without_cache": money(_sum([c.cost_without_cache for c in calls])),
        "causes": [
            {"cause": name, "calls": n, "lost_tokens": lost, "advice": CAUSE_ADVICE[name]} for name, (n, lost) in ranked
        ],
    }


def report(r: Replay, *, first: int = 0, stop: int | None = None) -> dict[str, Any]:
    """The whole replay's totals; `calls` holds the rows of the chosen range (all are computed)."""
    return {
        "fixture": r.name or r.source,
        "provider": r.provider,
        "model": r.model,
        "max_input_tokens": r.max_input_tokens,
        "cache_rules": {
            "family": r.rules.family,
            "mode": r.rules.mode,
            "min_tokens": r.rules.min_tokens,
            "increment": r.rules.increment,
            "lookback": r.rules.lookback,
            "ttl_seconds": r.rules.ttl_seconds,
            "write_multiplier": float(r.rules.write_multiplier),
        },
        "calls": [call_json(c) for c in r.calls[first:stop]],
        "totals": totals(r.calls),
    }


def summary(data: dict[str, Any]) -> dict[str, Any]:
    """What a replay snapshot pins (R-LOG-5): per call its label, prompt and cached tokens, cause and
    limit, and the token totals; no costs, which follow the price data rather than the change."""
    t = data["totals"]
    return {
        "calls": [
            {k: c[k] for k in ("label", "prompt_tokens", "cached_tokens", "cause", "limit")} for c in data["calls"]
        ],
        "totals": {
            **{k: t[k] for k in ("calls", "prompt_tokens", "cached_tokens", "cache_write_tokens", "hit_rate")},
            "causes": [{k: c[k] for k in ("cause", "calls", "lost_tokens")} for c in t["causes"]],
        },
    }


def _usd(value: float | None) -> str:
    return "n/a" if value is None else f"${value:.6f}"


def _side(side: dict[str, Any] | None) -> str:
    if side is None:
        return "(end)"
    return f"{side['kind']} {side['id']}" if side.get("id") else str(side["kind"])


def table(data: dict[str, Any]) -> str:
    """The readable report: the fixture and window, one row per call, then the totals."""
    from tabulate import tabulate

    anthropic = Mode(data["cache_rules"]["mode"]).stores  # the modes that report (and bill) writes
    headers = ["#", "call", "clock", "prompt", "cached", "hit"]
    headers += ["write"] if anthropic else []
    headers += ["output", "cost", "break", "cause", "limit", "lost"]
    rows = [_call_row(c, anthropic) for c in data["calls"]]
    right = {"#", "prompt", "cached", "hit", "write", "output", "cost", "lost"}
    text = tabulate(
        [[printable(cell) for cell in row] for row in rows],  # escaped before columns are measured
        headers=headers,
        tablefmt="simple",
        colalign=tuple("right" if h in right else "left" for h in headers),
        disable_numparse=True,
    )
    window = plural(data["max_input_tokens"], "token", grouped=True)
    lines = [f"{data['fixture']}: {data['provider']} {data['model']}, window {window}", "", text, ""]
    lines += _totals_lines(data["totals"], anthropic)
    if any(c["synthetic"] for c in data["calls"]):
        lines.append("* a simulated summary (--compress-as) applies")
    return "\n".join(lines) + "\n"


def _call_row(c: dict[str, Any], anthropic: bool) -> list[str]:
    """One call: its label (edited branch, simulated summary), clock, tokens, hit, cost and break."""
    brk = c["break"]
    where = f"@{brk['item']} {_side(brk['this'])} | {_side(brk['candidate'])}" if brk else ""
    label = c["label"] + ("" if c["on_branch"] else " (edited)") + (" *" if c["synthetic"] else "")
    hit = f"{c['cached_tokens'] / c['prompt_tokens']:.0%}" if c["prompt_tokens"] else "-"
    row = [str(c["index"]), label, _short_clock(c["clock"])]
    row += [f"{c['prompt_tokens']:,}", f"{c['cached_tokens']:,}", hit]
    row += [f"{c['cache_write_tokens']:,}"] if anthropic else []
    output = "" if c["output_tokens"] is None else f"{c['output_tokens']:,}"
    return [*row, output, _usd(c["cost"]), where, c["cause"], c["limit"] or "", f"{c['lost_tokens']:,}"]


def _totals_lines(t: dict[str, Any], anthropic: bool) -> list[str]:
    """The totals: tokens and hit rate, cost with and without the cache, losses by cause, advice."""
    causes = ", ".join(f"{c['cause']} {c['lost_tokens']:,} ({c['calls']})" for c in t["causes"])
    return [
        f"calls {t['calls']}; prompt {plural(t['prompt_tokens'], 'token', grouped=True)}; "
        f"cached {t['cached_tokens']:,} "
        f"({t['hit_rate']:.1%})"
        + (f"; written {t['cache_write_tokens']:,}" if anthropic else "")
        + (f" ({t['unread_write_tokens']:,} never read)" if t["unread_write_tokens"] else "")
        + f"; output {t['output_tokens']:,}",
        f"cost {_usd(t['cost'])} with the predicted cache, {_usd(t['cost_without_cache'])} without",
        f"lost tokens by cause (calls): {causes}",
        *advice_lines(t["causes"]),
    ]


def advice_lines(causes: list[dict[str, Any]]) -> list[str]:
    """What to change, one line per cause that broke the cache (the healthy ones need nothing)."""
    lines = [f"  {c['cause']}: {c['advice']}" for c in causes if c["cause"] not in HEALTHY and c["advice"]]
    return ["what to change:", *lines] if lines else []


def _short_clock(value: str | None) -> str:
    return "" if value is None else value.replace("T", " ").removesuffix("Z")[:16] + "Z"
