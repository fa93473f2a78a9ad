"""`budget`: where every token of the window went (docs/rules.md#report-keys).

Input: a pipeline `Result`. Output: the JSON report, and a table with a
one-line bar picture. Dropped history is counted here, on request. Numbers are
JSON numbers (a decimal setting too), `wire_tokens` is the pipeline's re-count
of the request as sent (R-RPL-4) and `over_window_tokens` what of it exceeds
the window (R-ASM-9).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ctxkit import collector
from ctxkit.history.working import Segment
from ctxkit.output import json_number, plural
from ctxkit.translate.items import over_window_tokens, tool_definitions_tokens

if TYPE_CHECKING:
    from ctxkit.pipeline import Result

BAR_CHARS: dict[str, str] = {
    Segment.SYSTEM: "S",
    Segment.HISTORY: "h",
    Segment.CUSTOM_AGENT: "a",
    Segment.PROJECT_FILES: "p",
    Segment.FORGOTTEN_FILES: "f",
    Segment.LAST_USER: "U",
    Segment.IN_TURN: "t",
    Segment.REMINDER: "r",
}
BAR_WIDTH = 60


def report(result: Result) -> dict[str, Any]:
    with collector.paused():
        return _report(result)


def _report(result: Result) -> dict[str, Any]:
    a, payload = result.assembly, result.payload
    segments: list[dict[str, Any]] = []
    for name in Segment:
        count = len(a.segments.get(name, ()))
        segments.append({"name": str(name), "tokens": a.tokens(name), "messages": count})
    used = sum(int(s["tokens"]) for s in segments)
    kept = a.segments[Segment.HISTORY]
    kept_keys = {w.key for w in kept}
    dropped = [w for w in a.converted.history if w.key not in kept_keys]
    margin_tokens = a.eff.max_input_tokens - a.available
    tool_tokens = tool_definitions_tokens(payload.body, a.meter.text)
    return {
        "max_input_tokens": a.eff.max_input_tokens,
        "safety_margin": json_number(a.eff.settings.safety_margin),
        "safety_margin_tokens": margin_tokens,
        "available_tokens": a.available,
        "reserved_tokens": a.reserved,
        "segments": segments,
        "history": {
            "budget": a.history_budget,
            "kept_messages": len(kept),
            "dropped_messages": len(dropped),
            "kept_tokens": sum(a.meter.of(w) for w in kept),
            "dropped_tokens": sum(a.meter.of(w) for w in dropped),
        },
        "used_tokens": used,
        "free_tokens": a.available - used,
        "tool_definitions_tokens": tool_tokens,
        "tool_definitions_margin_share": _share(tool_tokens, margin_tokens),
        "cache_prefix": {
            "messages": payload.prepared.cache_prefix_messages,
            "tokens": payload.prepared.cache_prefix_tokens,
        },
        "wire_tokens": result.wire_tokens(),
        "over_window_tokens": over_window_tokens(result.wire_tokens(), a.eff.max_input_tokens),
        "provider": payload.provider,
        "model": a.eff.model,
        "tokenizer": a.eff.tokenizer,
    }


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.1%}" if whole else "n/a"


def _over(data: dict[str, Any]) -> str:
    over = data["over_window_tokens"]
    return f" ({over:,} over the window, R-ASM-9)" if over else ""


def bar(data: dict[str, Any]) -> str:
    window = data["max_input_tokens"]
    cells = []
    for s in data["segments"]:
        cells += [BAR_CHARS[s["name"]]] * round(s["tokens"] / window * BAR_WIDTH)
    cells = cells[:BAR_WIDTH]
    free = round(max(data["free_tokens"], 0) / window * BAR_WIDTH)
    cells += ["."] * min(free, BAR_WIDTH - len(cells))
    cells += ["#"] * (BAR_WIDTH - len(cells))
    return "[" + "".join(cells) + "]"


def table(data: dict[str, Any]) -> str:
    from tabulate import tabulate  # imported on use: it costs a cold start ~40 ms

    window = data["max_input_tokens"]
    h = data["history"]
    rows = []
    for s in data["segments"]:
        label = s["name"]
        if label == Segment.HISTORY:
            label = f"history (kept {h['kept_messages']}, dropped {h['dropped_messages']})"
        rows.append([label, f"{s['tokens']:,}", _share(s["tokens"], window), s["messages"]])
    rows.append(["free", f"{data['free_tokens']:,}", _share(data["free_tokens"], window), ""])
    rows.append(
        ["safety margin", f"{data['safety_margin_tokens']:,}", _share(data["safety_margin_tokens"], window), ""]
    )
    text = tabulate(
        rows,
        headers=["segment", "tokens", "share", "messages"],
        tablefmt="simple",
        colalign=("left", "right", "right", "right"),
        disable_numparse=True,
    )
    legend = (
        "S system  h history  a agent  p project  f forgotten  U last user  t in-turn  r reminder  . free  # margin"
    )
    lines = [
        f"{data['provider']} {data['model']}: window {plural(window, 'token', grouped=True)}, "
        f"available {data['available_tokens']:,} (margin {data['safety_margin']}), "
        f"tokenizer {data['tokenizer']}",
        "",
        text,
        "",
        bar(data),
        legend,
        "",
        f"history budget {h['budget']:,}; dropped {plural(h['dropped_tokens'], 'token', grouped=True)}; "
        f"cache prefix {data['cache_prefix']['messages']} message(s), "
        f"{plural(data['cache_prefix']['tokens'], 'token', grouped=True)}; "
        f"wire {plural(data['wire_tokens'], 'token', grouped=True)}{_over(data)}; "
        f"tool definitions {plural(data['tool_definitions_tokens'], 'token', grouped=True)} "
        f"({data['tool_definitions_margin_share']} of the margin)",
    ]
    return "\n".join(lines) + "\n"
