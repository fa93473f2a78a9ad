"""`ctxkit report` without a browser: the page's markup, the seat map's geometry, files (R-HTML-1..3)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from ctxkit.history.working import Segment
from ctxkit.loading.read import load_fixture
from ctxkit.reports.explain import rows as explain_rows
from ctxkit.reports.html import render, seatmap, view

from .conftest import FIXTURES, GALLERY, ctxkit
from .helpers import assembled_or_skip, bench_history

HOSTILE = """\
name: "<script>window.__ctxkit_pwned = 1</script> hostile"
model: {provider: openai, name: gpt-4o}
files:
  - id: "f<img src=x onerror=alert(1)>"
    name: "</style><script>alert(2)</script>.md"
    kind: text
    text: "javascript:alert(3)"
messages:
  - id: "m<b>1</b>"
    role: user
    text: "<script>window.__ctxkit_pwned = 1</script> and </style> and <img src=x onerror=\\"window.__x = 2\\">"
    files: ["f<img src=x onerror=alert(1)>"]
  - id: m2
    role: assistant
    parent: "m<b>1</b>"
    text: "<a href=\\"javascript:window.__ctxkit_pwned = 3\\">click</a>"
    tool_calls:
      - id: "call<script>"
        name: internal_search
        args: {queries: ["</script><script>window.__ctxkit_pwned = 4</script>"]}
        response: "<svg onload=\\"window.__ctxkit_pwned = 5\\"></svg>"
  - id: m3
    role: user
    parent: m2
    text: "<iframe src=\\"javascript:alert(6)\\"></iframe>"
"""
HEAD = 'ctxkit: 1\nnow: "2026-03-14T09:30:00Z"\ntools: [internal_search]\n'


class Elements(HTMLParser):
    """Start tags with their attributes, and the text inside each <script>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))
        if tag == "script":
            self._in_script = True
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data


def parse(page: str) -> Elements:
    p = Elements()
    p.feed(page)
    p.close()
    return p


def page_of(path: Path, *args: str) -> str:
    return ctxkit("report", str(path), "-o", "-", *args).out


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    path = tmp_path / "hostile.yaml"
    path.write_text(HEAD + HOSTILE, encoding="utf-8")
    return path


def test_r_html_1_csp_meta_first_in_head_with_the_hash_of_each_script():
    page = page_of(FIXTURES / "tool_loop_in_flight.yaml")
    p = parse(page)
    head = [t for t in p.tags if t[0] not in ("html",)]
    assert head[0][0] == "head"
    tag, attrs = head[1]
    assert tag == "meta" and attrs["http-equiv"] == "Content-Security-Policy"
    hashes = ["'sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() + "'" for s in p.scripts]
    assert p.scripts and all(s.strip() for s in p.scripts)
    assert attrs["content"] == (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src " + " ".join(hashes)
    )
    assert ('<meta name="generator" content="ctxkit ' + __import__("ctxkit").__version__ + '">') in page


def test_r_html_1_no_external_resource_of_any_kind(tmp_path):
    image = FIXTURES / "attached_files.yaml"  # carries an image: it must be a data: URL
    page = page_of(image)
    p = parse(page)
    urls = [(tag, k, v) for tag, attrs in p.tags for k, v in attrs.items() if k in ("src", "href", "xlink:href")]
    assert any(v.startswith("data:image/") for _, _, v in urls)
    assert all(v.startswith(("data:image/", "#")) for _, _, v in urls), urls
    assert not [t for t, _ in p.tags if t in ("link", "iframe", "object", "embed", "base", "form")]
    assert "@import" not in page and "@font-face" not in page
    assert re.findall(r"url\(([^)]*)\)", page) and all(u.startswith("#") for u in re.findall(r"url\(([^)]*)\)", page))
    assert all("src" not in attrs for tag, attrs in p.tags if tag == "script")


def test_r_html_1_fixture_markup_is_escaped_and_shown_as_text(hostile):
    page = page_of(hostile)
    p = parse(page)
    assert len(p.scripts) == 1  # only ctxkit's own
    assert not [a for _, attrs in p.tags for a in attrs if a.startswith("on")]
    assert not [t for t, _ in p.tags if t in ("img", "iframe", "a", "b")]  # no image: the fixture has none
    for raw in ("<script>window.__ctxkit_pwned", "</style><script>", "<img src=x", "<svg onload", "<iframe"):
        assert raw not in page
    assert "&lt;script&gt;window.__ctxkit_pwned = 1&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=" in page
    assert "javascript:alert(3)" in page  # as text, never as a link


def test_r_html_1_overwrites_a_report_and_refuses_any_other_file(tmp_path):
    out = tmp_path / "page.html"
    fixture = str(FIXTURES / "plain_chat.yaml")
    ctxkit("report", fixture, "-o", str(out))
    first = out.read_bytes()
    ctxkit("report", fixture, "-o", str(out), "--max-input-tokens", "5000")  # an earlier report: replaced
    assert out.read_bytes() != first
    other = tmp_path / "notes.html"
    other.write_text("<html>my notes</html>", encoding="utf-8")
    run = ctxkit("report", fixture, "-o", str(other), expect=2)
    assert run.err.startswith("error: ") and run.err.count("\n") == 1 and "--force" in run.err
    assert other.read_text(encoding="utf-8") == "<html>my notes</html>"
    ctxkit("report", fixture, "-o", str(other), "--force")
    assert b'<meta name="generator" content="ctxkit ' in other.read_bytes()
    assert sorted(x.name for x in tmp_path.iterdir()) == ["notes.html", "page.html"]  # no temporary left


def test_report_output_into_a_missing_folder_creates_it(tmp_path):
    """Issue 19 item 17: `report -o out/x.html` makes `out/`, as `replay --payloads` does."""
    target = tmp_path / "out" / "deeper" / "r.html"
    ctxkit("report", str(FIXTURES / "plain_chat.yaml"), "-o", str(target))
    assert target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in target.parent.iterdir()) == ["r.html"]


def test_report_default_name_stdout_and_stdin(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fixture = FIXTURES / "plain_chat.yaml"
    run = ctxkit("report", str(fixture))
    assert (tmp_path / "plain_chat.html").is_file() and run.out == ""
    run = ctxkit("report", "-", stdin=fixture.read_bytes(), expect=2)
    assert "-o" in run.err and run.err.count("\n") == 1
    run = ctxkit("report", "-", "-o", "-", stdin=fixture.read_bytes())
    assert run.out.startswith("<!DOCTYPE html>")
    assert run.out == (tmp_path / "plain_chat.html").read_text(encoding="utf-8").replace(str(fixture), "-")


def test_report_invalid_fixture_writes_nothing(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("ctxkit: 1\nmessages: 3\n", encoding="utf-8")
    run = ctxkit("report", str(bad), "-o", str(tmp_path / "bad.html"), expect=2)
    assert run.err.startswith("error: ")
    assert not (tmp_path / "bad.html").exists()


def test_report_rule_failure_renders_the_error_and_exits_1(tmp_path):
    out = tmp_path / "r.html"
    run = ctxkit("report", str(FIXTURES / "budget_exhaustion.yaml"), "-o", str(out), expect=1)
    assert "error: " in run.err and "R-ASM-3" in run.err
    page = out.read_text(encoding="utf-8")
    assert 'role="alert"' in page and "R-ASM-3" in page and "failed by rule" in page
    assert "1,000 tokens" in page  # the window, computed without an assembly


@pytest.mark.parametrize("path", GALLERY, ids=[p.stem for p in GALLERY])
def test_r_html_2_every_gallery_fixture_gives_a_page(path, tmp_path):
    out = tmp_path / "r.html"
    run = ctxkit("report", str(path), "-o", str(out), expect=None)
    assert run.code in (0, 1), str(run)
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    if run.code == 0:
        from ctxkit.pipeline import run as run_pipeline

        # the payload's messages before provider-specific merging (Gemini folds some together)
        prepared = run_pipeline(load_fixture(str(path))).payload.prepared.messages
        explain = json.loads(ctxkit("explain", str(path), "--format", "json").out)
        p = parse(page)
        window = [a for t, a in p.tags if t == "g" and a.get("class") == "blk" and a.get("id", "").startswith("b")]
        window = [a for a in window if not a["id"].startswith("bx")]
        assert len(window) == len(prepared)
        rows = [a for t, a in p.tags if t == "tr" and a.get("class", "").startswith("f-")]
        assert len(rows) == len(explain)
        assert sum(1 for t, a in p.tags if t == "details" and a.get("class") == "msg") == len(window)


def _view(path: Path) -> view.PageView:
    from ctxkit.pipeline import run

    return view.build(run(load_fixture(str(path))), warnings=[])


@pytest.mark.parametrize("name", ["truncation", "project_files", "tool_loop_in_flight", "image_cap_azure"])
def test_r_html_2_seat_map_is_drawn_to_scale(name):
    v = _view(FIXTURES / f"{name}.yaml")
    assert v.budget is not None
    notices = sum(b.tokens for b in v.blocks if b.rule == "R-TR-6")  # the image-drop notice: not in the budget
    assert sum(b.tokens for b in v.blocks) == v.budget["used_tokens"] + notices
    m = seatmap.layout(v.blocks, v.left_out, window=v.header.window, available=v.budget["available_tokens"], wire=None)
    scale = seatmap.WIDTH * seatmap.ROWS * seatmap.ROW / v.header.window  # area per token
    for d in m.drawn:
        area = sum(r.w * r.h for _, rs in d.pieces for r in rs)
        assert area == pytest.approx(d.block.tokens * scale, abs=1e-3)
        assert all(0 <= r.x and r.x + r.w <= seatmap.WIDTH + 1e-6 for _, rs in d.pieces for r in rs)
    window_area = sum(r.w * r.h for d in m.drawn for _, rs in d.pieces for r in rs)
    window_area += sum(r.w * r.h for r in m.free + m.margin)
    assert window_area == pytest.approx(seatmap.WIDTH * seatmap.ROWS * seatmap.ROW, abs=1e-2)
    assert all(r.y >= m.left_top for d in m.left for _, rs in d.pieces for r in rs)  # beside: outside the window


def test_r_html_2_left_out_messages_are_drawn_beside_the_window():
    v = _view(FIXTURES / "truncation.yaml")
    assert [(b.ident, b.fate, b.rule) for b in v.left_out] == [("1", "truncated", "R-ASM-4")]
    page = render(v, version="test")
    assert "id 1 · user · history · 40 tokens · truncated · R-ASM-4" in page


def test_r_html_2_a_project_image_counts_in_its_own_segment():
    v = _view(FIXTURES / "project_files.yaml")
    last = v.blocks[-2]
    assert [(p.segment, p.tokens) for p in last.parts] == [("last_user", 4), ("project_files", 85)]


def test_r_html_2_long_runs_fold_but_every_row_stays_in_the_page():
    from ctxkit.history.working import Fate, Row

    rows = [Row(f"m{n}", "user", None, 3, Fate.TRUNCATED, "R-ASM-4") for n in range(500)]
    rows.append(Row("m500", "user", Segment.LAST_USER, 3, Fate.KEPT, "R-ASM-3"))
    lines = view.fold(rows)
    folds = [x for x in lines if isinstance(x, view.Fold)]
    assert len(folds) == 1 and len(folds[0].rows) == 500 - 2 * view.FOLD_KEEP
    assert len(lines) == 2 * view.FOLD_KEEP + 2
    assert "m20  user  -  3" in folds[0].text and "m479" in folds[0].text


def test_r_html_2_warnings_and_fixups_in_the_header():
    page = page_of(FIXTURES / "summary.yaml")
    assert "Fix-ups made in translation" in page


def test_report_is_deterministic():
    path = FIXTURES / "tool_loop_in_flight.yaml"
    assert page_of(path) == page_of(path)


def test_r_html_3_readable_without_script():
    """Everything is in the markup: the script only adds tooltips and the filter."""
    page = page_of(FIXTURES / "tool_loop_in_flight.yaml")
    body = page[: page.index("<script>")]
    for text in ("Budget", "Fate of every message", "Payload", "R-CONV-3", "<title>id m2 · tool · history"):
        assert text in body
    assert "@media (prefers-color-scheme: dark)" in page and "@media print" in page


@pytest.mark.parametrize("path", GALLERY, ids=[p.stem for p in GALLERY])
def test_r_html_2_blocks_agree_with_explain(path):
    """The seat map reads the assembly's record directly (replay draws every call so); explain agrees."""
    result = assembled_or_skip(path)
    rows = {r.key: r for r in explain_rows(result) if r.key}
    for m, b in zip(result.payload.prepared.messages, view.payload_blocks(result), strict=True):
        row = rows[m.key]
        assert (b.ident, b.kind, b.fate, b.rule, b.notes) == (row.id, row.kind, str(row.fate), row.rule, row.notes)
        assert b.parts[0] == view.SegmentShare(str(row.segment), row.tokens)


REPLAY = FIXTURES / "replay" / "long_session.yaml"


def test_r_html_2_replay_section_has_a_bar_and_a_row_per_call_and_marks_breaks():
    page = page_of(REPLAY, "--replay")
    data = json.loads(ctxkit("replay", str(REPLAY), "--format", "json").out)
    p = parse(page)
    bars = [a for t, a in p.tags if t == "g" and a.get("class") == "call"]
    rows = [a for t, a in p.tags if t == "tr" and "data-call" in a]
    assert len(bars) == len(rows) == len(data["calls"]) == data["totals"]["calls"]
    marks = [a for t, a in p.tags if t == "path" and a.get("class") == "mark"][:-1]  # the last: the legend's
    breaks = [c for c in data["calls"] if c["cause"] not in ("append", "first_call")]
    assert len(marks) == len(breaks) > 0
    for c in breaks:
        assert f"· {c['cause']} ({c['rule']})" in page
    assert len(p.scripts) == 2  # the data block and the script, both hashed (see the CSP test)
    hashes = ["'sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() + "'" for s in p.scripts]
    assert all(h in page[: page.index("</head>")] for h in hashes)
    assert "with the predicted cache: $" in page and "without any cache: $" in page


def test_r_html_2_replay_call_seat_maps_round_trip_through_the_data_block():
    """Each call's blocks are stored as runs of the previous call's and new blocks; rebuilt, they
    are the call's, and the runs store less than half the blocks (truncation included)."""
    from ctxkit.replay.driver import replay
    from ctxkit.reports.html import calls

    collected = calls.Collector()
    expected: list[list[str]] = []

    def both(index, call, result):
        collected(index, call, result)
        expected.append([b.label for b in view.payload_blocks(result)])

    done = replay(load_fixture(str(REPLAY)), on_call=both)
    assert len(done.calls) == len(expected) > 20
    labels = sorted(collected.labels, key=collected.labels.__getitem__)
    blocks: list[list[int]] = []
    for n, (c, want) in enumerate(zip(collected.calls, expected, strict=True)):
        assert c["i"] == n
        blocks = calls.undelta(blocks, c["d"])
        assert [labels[b[0]] for b in blocks] == want
    new_blocks = sum(1 for c in collected.calls for op in c["d"] if op[0] >= 0)
    assert new_blocks < sum(len(e) for e in expected) / 2
    block = json.loads(calls.build({"calls": [], "max_input_tokens": 1, "totals": {}}, calls.Collector()).data_block)
    assert block["calls"] == []


def test_r_html_2_replay_delta_copies_the_runs_truncation_leaves():
    """A window that lost its oldest blocks and gained new ones is two runs and the new blocks."""
    from ctxkit.reports.html import calls

    before = [[0, 1, 5], [1, 2, 9], [2, 2, 9], [3, 2, 4], [4, 6, 1]]
    after = [[0, 1, 5], [2, 2, 9], [3, 2, 4], [5, 2, 7], [4, 6, 1]]
    delta = calls._delta(before, after)
    assert delta == [[-1, 1], [-3, 2], [5, 2, 7], [-5, 1]]
    assert calls.undelta(before, delta) == after
    assert calls._delta([], after) == after


def test_r_html_3_a_long_replay_is_drawn_as_groups_each_its_last_call_and_worst_break(monkeypatch):
    """Beyond SHOWN_MAX calls, each bar and table row is the last call of a group of consecutive
    calls, its marker the group's worst break; the chosen call's blocks are still exact."""
    from ctxkit.replay.driver import replay
    from ctxkit.reports.html import calls
    from ctxkit.reports.replay import report as replay_report

    monkeypatch.setattr(calls, "SHOWN_MAX", 7)
    fixture = load_fixture(str(REPLAY))
    expected: dict[int, list[str]] = {}
    total = len(replay(fixture).calls)
    collected = calls.Collector(total)
    assert collected.indices is not None and len(collected.indices) == 7 and collected.indices[-1] == total - 1

    def both(index, call, result):
        collected(index, call, result)
        expected[index] = [b.label for b in view.payload_blocks(result)]

    data = replay_report(replay(fixture, on_call=both))
    cv = calls.build(data, collected)
    assert [b.index for b in cv.bars] == [c["index"] for c in cv.rows] == collected.indices
    assert cv.grouped == max(b - a for a, b in zip([-1, *collected.indices], collected.indices, strict=False))
    first = 0
    for bar, end in zip(cv.bars, collected.indices, strict=True):
        group = data["calls"][first : end + 1]
        broken = [c for c in group if c["cause"] not in ("append", "first_call")]
        worst = max(broken, key=lambda c: c["lost_tokens"], default=None)
        assert bar.cause == (worst["cause"] if worst else None)
        if len(group) > 1:
            assert bar.title.startswith(f"calls {first}–{end}: {len(broken)} break")
        first = end + 1
    block = json.loads(cv.data_block)
    labels = block["labels"]
    blocks: list[list[int]] = []
    for c in block["calls"]:
        blocks = calls.undelta(blocks, c["d"])
        assert [labels[b[0]] for b in blocks] == expected[c["i"]]


def test_r_html_3_a_replay_of_over_a_thousand_calls_gives_a_small_page_and_one_window_warning(tmp_path):
    """Issue 19 item 7: about 740 calls at an 8,000-token window, hundreds of them over the window
    (R-ASM-9): one warning line naming the first and counting the rest; the page draws SHOWN_MAX
    groups and stays far under 5 MB."""
    from ctxkit.reports.html import calls

    fixture = tmp_path / "session.json"
    fixture.write_text(json.dumps(bench_history(1200)), encoding="utf-8")
    out = tmp_path / "session.html"
    r = ctxkit("report", str(fixture), "-o", str(out), "--replay", "--max-input-tokens", "8200")
    over = [line for line in r.err.splitlines() if "(R-ASM-9)" in line]
    assert len(over) == 1 and re.search(
        r"; [\d,]+ more calls too, the most [\d,]+ tokens over the window at call", over[0]
    )
    page = out.read_text(encoding="utf-8")
    assert len(page.encode()) < 2_500_000
    p = parse(page)
    assert len([a for t, a in p.tags if t == "g" and a.get("class") == "call"]) == calls.SHOWN_MAX
    assert len([a for t, a in p.tags if t == "tr" and "data-call" in a]) == calls.SHOWN_MAX
    assert "calls: the chart and this table draw one call of each group" in page
    assert page.count("(R-ASM-9)") == 1  # the warning, once, at the top


def test_r_html_1_replay_data_block_cannot_close_its_script(tmp_path):
    from ctxkit.reports.html import calls

    collected = calls.Collector()
    collected.labels["</script><script>alert(1)</script> & <!--"] = 0
    text = calls.build({"calls": [], "max_input_tokens": 1, "totals": {}}, collected).data_block
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text)["labels"] == ["</script><script>alert(1)</script> & <!--"]


@pytest.mark.parametrize(
    ("provider", "model", "breakpoints"), [("openai", "gpt-4o", 0), ("anthropic", "claude-sonnet-4-5", 1)]
)
def test_payload_list_marks_a_cache_breakpoint_only_where_the_request_has_one(tmp_path, provider, model, breakpoints):
    """Issue 19 item 17: every cacheable OpenAI message said "cache breakpoint"; OpenAI caches
    a matching prefix by itself, and only Anthropic's request carries a breakpoint (R-TR-8,
    on the prefix's last message). Checked against the request body's cache_control."""
    fixture = str(FIXTURES / "tool_loop_in_flight.yaml")
    out = tmp_path / "r.html"
    ctxkit("report", fixture, "--provider", provider, "--model", model, "-o", str(out))
    page = out.read_text(encoding="utf-8")
    body = ctxkit("assemble", fixture, "--provider", provider, "--model", model).out
    assert page.count("· cache breakpoint</summary>") == breakpoints == body.count('"cache_control"')
    assert page.count("· cache prefix</summary>") == 6 - breakpoints  # system and the five kept history messages
