"""`report`: one self-contained HTML page per fixture (R-HTML-1…4).

Input: a `view.PageView` (see `view.build` / `view.failed`). Output: the page as a
string — Jinja2 templates with autoescape on, the stylesheet and script inlined,
a Content-Security-Policy that allows only the page's own inline script (by
hash), inline style and `data:` images. Every fixture text reaches the page
through an escaping template expression; only ctxkit's own constants are marked
safe.
"""

from __future__ import annotations

import base64
import hashlib
from collections import Counter
from importlib import resources
from typing import TYPE_CHECKING, Any

from ctxkit.history.working import Segment
from ctxkit.reports.html.view import PageView

if TYPE_CHECKING:
    from ctxkit.reports.html.calls import CallsView

GENERATOR = "ctxkit"  # the first word of the generator <meta>'s content: "ctxkit VERSION"

# Pattern marks on an 8×8 tile, one per fill: segments differ by pattern as well as colour.
_HATCH = '<path class="hatch" d="{}"/>'
SEGMENT_MARKS: dict[Segment, str] = {
    Segment.SYSTEM: _HATCH.format("M-2 2L2-2M0 8L8 0M6 10L10 6"),
    Segment.HISTORY: "",
    Segment.CUSTOM_AGENT: '<circle class="dot" cx="4" cy="4" r="1.6"/>',
    Segment.PROJECT_FILES: _HATCH.format("M0 4H8"),
    Segment.FORGOTTEN_FILES: _HATCH.format("M0 0L8 8M8 0L0 8"),
    Segment.LAST_USER: _HATCH.format("M4 0V8"),
    Segment.IN_TURN: _HATCH.format("M-2 6L2 10M0 0L8 8M6-2L10 2"),
    Segment.REMINDER: _HATCH.format("M0 4H8M4 0V8"),
}
# (fill name, colour class, marks): each segment in its own colour, then the other fills.
PATTERNS: tuple[tuple[str, str, str], ...] = (
    *((str(s), str(s), marks) for s, marks in SEGMENT_MARKS.items()),
    ("margin", "margin", _HATCH.format("M-2 2L2-2M0 4L4 0M0 8L8 0M4 8L8 4M6 10L10 6")),
    ("out", "out", ""),
    ("dropped", "out", _HATCH.format("M0 0L8 8M8 0L0 8")),
    ("summarized", "out", '<circle class="dot" cx="4" cy="4" r="1.6"/>'),
    ("capped", "out", _HATCH.format("M0 4H8")),
    ("cached", "cached", ""),
    ("written", "written", _HATCH.format("M-2 2L2-2M0 8L8 0M6 10L10 6")),
    ("uncached", "uncached", '<circle class="dot" cx="4" cy="4" r="1.3"/>'),
)
LEFT_LEGEND = (
    ("truncated", "not sent: dropped (truncated, last-n cut)"),
    ("summarized", "not sent: summarized"),
    ("image_capped", "not sent: image capped"),
    ("other", "not sent: other fates"),
)


def csp(scripts: list[str]) -> str:
    """R-HTML-1: the exact policy, with the hash of each inline script."""
    hashes = " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(s.encode("utf-8")).digest()).decode("ascii") + "'" for s in scripts
    )
    return f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src {hashes}"


def is_report(head: bytes) -> bool:
    """Whether a file's beginning is a ctxkit report (R-HTML-1): its parsed `<head>` holds
    `<meta name="generator" content="ctxkit VERSION">`. A mention of that tag anywhere
    else (body text, a comment, a script, an attribute) does not count."""
    from ctxkit.reports.html.marker import generator_in_head

    return generator_in_head(head.decode("utf-8", errors="replace"), GENERATOR)


def _asset(name: str) -> str:
    return resources.files(__name__).joinpath("templates", name).read_text(encoding="utf-8")


def _num(value: int) -> str:
    return f"{value:,}"


def _coord(value: float) -> str:
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.1%}" if whole else "n/a"


def environment() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader(__name__, "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(num=_num, c=_coord, share=_share)
    return env


def frame(*, version: str, blocks: tuple[str, ...] = ()) -> dict[str, Any]:
    """What every page's template gets around its content: the version, the styles, our one script,
    the fill patterns, and a CSP that allows exactly that script and the inline data `blocks`."""
    from markupsafe import Markup

    script = _asset("report.js")
    return {
        "version": version,
        "csp": Markup(csp([*blocks, script])),  # our hashes: no markup
        "css": Markup(_asset("report.css")),
        "script": Markup(script),
        "pats": [(name, colour, Markup(marks)) for name, colour, marks in PATTERNS],
    }


def render(view: PageView, *, version: str, calls: CallsView | None = None) -> str:
    """The page for one fixture: header, seat map, budget, explain, payload; `calls`: the replay."""
    from markupsafe import Markup

    from ctxkit.reports.html import seatmap

    smap = None
    zoom: tuple[tuple[seatmap.Drawn, ...], float] = ((), 1.0)
    if view.budget is not None:
        zoom = seatmap.zoom(view.blocks, window=view.header.window)
        smap = seatmap.layout(
            view.blocks,
            view.left_out,
            window=view.header.window,
            available=view.budget["available_tokens"],
            wire=view.budget["wire_tokens"],
        )
    counts = Counter(str(r.fate) for r in view.explain)
    page: str = (
        environment()
        .get_template("report.html.j2")
        .render(
            v=view,
            **frame(version=version, blocks=(calls.data_block,) if calls else ()),
            segments=[str(s) for s in Segment],
            left_legend=[(name, text) for name, text in LEFT_LEGEND],
            smap=smap,
            cv=calls,
            cv_data=Markup(calls.data_block) if calls else "",
            zoom=zoom,
            fate_counts=[(f, counts[f]) for f in view.fates if counts[f]],
        )
    )
    return page
