"""The report page of a log of recorded traffic (`report LOG --replay`, R-LOG-4, R-HTML-2 f).

Input: the log replay's JSON report (`reports.logreplay.report`) and the warnings. Output: one
self-contained page — the log's header, the calls chart (each bar the predicted cached, written
and uncached tokens, the provider's reported cached tokens marked on it, the breaks named), the
cumulative cost predicted and from the reported usage, the verdicts and count errors, and the
table with the reported columns. A log has no assembly, so no seat map: the page's script only
adds what it adds to every page.
"""

from __future__ import annotations

from typing import Any

from ctxkit.reports.html.calls import CallsView, build


def log_title(c: dict[str, Any]) -> str:
    """A bar's tooltip: the call, the prediction beside the provider's numbers, the verdict."""
    text = f"call {c['index']} (record {c['source_index']}, {c['model']})"
    text += f" · prompt {c['prompt_tokens']:,}"
    if c["reported_input_tokens"] is not None:
        text += f" (reported {c['reported_input_tokens']:,})"
    text += f" · cached {c['cached_tokens']:,}"
    if c["reported_cached_tokens"] is not None:
        text += f" (reported {c['reported_cached_tokens']:,})"
    if c["cache_write_tokens"] or c["reported_cache_write_tokens"]:
        text += f" · written {c['cache_write_tokens']:,} (reported {c['reported_cache_write_tokens'] or 0:,})"
    text += f" · {c['cause']} ({c['rule']})"
    if c["verdict"]:
        text += f" · {c['verdict']}"
    if c["lost_tokens"]:
        text += f" · lost {c['lost_tokens']:,}"
    return text


def render(data: dict[str, Any], *, version: str, warnings: list[str]) -> str:
    from ctxkit.reports.html import environment, frame

    cv: CallsView = build(data, None, title=log_title)
    reported = _reported_marks(cv)
    page: str = (
        environment()
        .get_template("log.html.j2")
        .render(
            d=data,
            cv=cv,
            reported=reported,
            warnings=warnings,
            **frame(version=version),
        )
    )
    return page


def _reported_marks(cv: CallsView) -> list[tuple[float, float, float]]:
    """(x, width, y) of a tick at each call's reported cached tokens, on the bars' scale."""
    from ctxkit.reports.html.calls import CHART_HEIGHT

    scale = CHART_HEIGHT / cv.scale_max
    marks = []
    for bar, c in zip(cv.bars, cv.rows, strict=True):
        if c["reported_cached_tokens"] is not None:
            marks.append((bar.x, bar.w, cv.height - c["reported_cached_tokens"] * scale))
    return marks
