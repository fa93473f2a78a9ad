"""The seat map's geometry: blocks of tokens → rectangles drawn to scale.

Input: the payload blocks (in order), the window's numbers and the left-out
blocks. Output: `SeatMap` — rectangles in SVG user units. The window is a fixed
number of rows of equal height; messages fill the rows like seats, left to
right, wrapping to the next row, so every block's area is its tokens times one
scale. Free space and the safety margin close the window; what was not sent
is laid out the same way in a second area below, outside the window.
"""

from __future__ import annotations

from dataclasses import dataclass

from ctxkit.reports.html.view import Block

WIDTH = 1000
ROW = 30
GAP = 4
ROWS = 8  # the window's rows
LEFT_ROWS_MAX = 6  # the left-out area grows to this many rows, then shrinks its scale
LEFT_TOP_GAP = 56  # room for the left-out area's heading
CHAR = 7.2  # width of a label character, for deciding whether a label fits


@dataclass(frozen=True, slots=True)
class Rect:
    x: float
    y: float
    w: float
    h: float


@dataclass(frozen=True, slots=True)
class Drawn:
    block: Block
    dom_id: str
    pieces: tuple[tuple[str, tuple[Rect, ...]], ...]  # (segment or fate class, rectangles)
    text: str  # the label drawn inside, "" when it does not fit
    text_at: tuple[float, float]


@dataclass(frozen=True, slots=True)
class SeatMap:
    height: float
    window_height: float
    drawn: tuple[Drawn, ...]
    free: tuple[Rect, ...]
    margin: tuple[Rect, ...]
    wire_at: Rect | None  # the marker where the payload as sent ends
    left_top: float
    left: tuple[Drawn, ...]
    left_ratio: float  # left-out scale ÷ window scale (1.0: same scale)


def flow(start: float, length: float, top: float) -> tuple[Rect, ...]:
    """[start, start + length) in row units, wrapped at WIDTH, as rectangles."""
    out = []
    pos, end = start, start + length
    while end - pos > 1e-6:
        row = int(pos // WIDTH)
        x = pos - row * WIDTH
        if WIDTH - x < 1e-6:  # exactly at a row's end: start the next row
            pos = (row + 1) * WIDTH
            continue
        w = min(WIDTH - x, end - pos)
        out.append(Rect(x, top + row * (ROW + GAP), w, ROW))
        pos += w
    return tuple(out)


def rows_height(rows: int) -> float:
    return rows * ROW + (rows - 1) * GAP if rows else 0


def _lay(blocks: tuple[Block, ...], scale: float, top: float, prefix: str, *, by_fate: bool) -> list[Drawn]:
    drawn = []
    pos = 0.0
    for n, b in enumerate(blocks):
        pieces = []
        for part in b.parts:
            length = part.tokens * scale
            key = f"out-{b.fate}" if by_fate else part.segment
            pieces.append((key, flow(pos, length, top)))
            pos += length
        rects = [r for _, rs in pieces for r in rs]
        widest = max(rects, key=lambda r: r.w, default=Rect(0, top, 0, ROW))
        text = _fit(_short(b), widest.w)
        drawn.append(Drawn(b, f"{prefix}{n}", tuple(pieces), text, (widest.x + 4, widest.y + ROW / 2 + 4)))
    return drawn


def _short(b: Block) -> str:
    if b.count > 1:
        return f"{b.count:,} {b.fate}"
    return b.ident if b.ident is not None else b.kind


def _fit(text: str, width: float) -> str:
    room = int((width - 8) // CHAR)
    if room < 3:
        return ""
    return text if len(text) <= room else text[: room - 1] + "…"


ZOOM_ROWS = 2
ZOOM_MIN = 3.0  # enlarge the payload when the window's scale shows it this many times smaller


def _wire_marker(wire: int | None, window: int, scale: float) -> Rect | None:
    """Where the request as sent ends (R-ASM-9): a zero-width mark at that token, within the window."""
    if wire is None or not window:
        return None
    at = flow(max(min(wire, window) * scale - 1e-3, 0), 1e-3, 0)
    return Rect(at[0].x + at[0].w, at[0].y, 0, ROW) if at else None


def _left_out(blocks: tuple[Block, ...], scale: float, top: float, prefix: str) -> tuple[list[Drawn], float, int]:
    """What the payload left out, below the window: at the window's scale, shrunk to at most
    LEFT_ROWS_MAX rows when longer; (its blocks, the scale used, its rows)."""
    tokens = sum(b.tokens for b in blocks)
    left_scale = scale
    if tokens * scale > WIDTH * LEFT_ROWS_MAX:
        left_scale = WIDTH * LEFT_ROWS_MAX / tokens
    drawn = _lay(blocks, left_scale, top, prefix, by_fate=True)
    rows = int(-(-(tokens * left_scale) // WIDTH)) if blocks else 0
    return drawn, left_scale, rows


def zoom(blocks: tuple[Block, ...], *, window: int) -> tuple[tuple[Drawn, ...], float]:
    """The payload alone across ZOOM_ROWS rows, when it fills little of the window: (blocks, factor)."""
    used = sum(b.tokens for b in blocks)
    if not used or not window or window / used < ZOOM_MIN * ROWS / ZOOM_ROWS:
        return (), 1.0
    scale = WIDTH * ZOOM_ROWS / used
    return tuple(_lay(blocks, scale, 0, "z", by_fate=False)), scale / (WIDTH * ROWS / window)


def layout(
    blocks: tuple[Block, ...],
    left_out: tuple[Block, ...],
    *,
    window: int,
    available: int,
    wire: int | None,
    prefix: str = "b",
) -> SeatMap:
    """The window to scale: the payload's blocks, the free tokens, the safety margin, where the
    request as sent ends; what the payload left out below it."""
    length = WIDTH * ROWS
    scale = length / window if window else 0.0
    drawn = _lay(blocks, scale, 0, prefix, by_fate=False)
    used = sum(b.tokens for b in blocks)
    free_start = min(used, window) * scale
    free_tokens = max(available - used, 0)
    free = flow(free_start, free_tokens * scale, 0)
    margin_start = free_start + free_tokens * scale
    margin = flow(margin_start, max(length - margin_start, 0), 0)
    window_height = rows_height(ROWS)
    left_top = window_height + LEFT_TOP_GAP
    left, left_scale, left_rows = _left_out(left_out, scale, left_top, f"{prefix}x")
    height = left_top + rows_height(max(left_rows, 1)) if left_out else window_height
    return SeatMap(
        height=height,
        window_height=window_height,
        drawn=tuple(drawn),
        free=free,
        margin=margin,
        wire_at=_wire_marker(wire, window, scale),
        left_top=left_top,
        left=tuple(left),
        left_ratio=left_scale / scale if scale else 1.0,
    )
