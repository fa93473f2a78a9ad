"""Compression (R-CMP-1…6): the trigger arithmetic, the split, the request, write-back."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from ctxkit import providers
from ctxkit.assembly.assemble import floor_ratio
from ctxkit.compression.compress import Mark, plan, split, write_back
from ctxkit.errors import InputError
from ctxkit.history import tree
from ctxkit.history.working import Segment
from ctxkit.loading.config import Options, resolve
from ctxkit.loading.domain import Role, StoredMessage
from ctxkit.loading.read import load_fixture
from ctxkit.pipeline import run
from ctxkit.reports import compression
from ctxkit.reports.compression import report

from .conftest import FIXTURES, GALLERY, ctxkit
from .helpers import write

SPEC_KEYS = {
    "should_compress",
    "history_tokens",
    "reserved_tokens",
    "threshold",
    "tokens_for_recent",
    "summarized",
    "kept",
    "summary_parent",
    "summarizes_through",
    "progressive",
    "request",
}
SUMMARY = "The user shared Q1 sales (sales.csv); EMEA fell after a 12% price rise on Feb 1."


def gallery(name: str, **options: object):
    fixture = load_fixture(str(FIXTURES / f"compress_{name}.yaml"))
    return fixture, plan(resolve(fixture, Options(**options)))  # type: ignore[arg-type]


def small(window: int, messages: str, *, settings: str = "") -> str:
    """No system message (reserved 0), approx counts: available = the window."""
    return (
        f"model: {{provider: openai, name: test-model, max_input_tokens: {window}}}\n"
        "tokenizer: approx\n"
        + (f"settings: {{{settings}}}\n" if settings else "")
        + 'prompts: {system: "", datetime_aware: false}\n'
        + "messages:\n"
        + messages
    )


def plan_of(tmp_path: Path, body: str, **options: object):
    return plan(resolve(load_fixture(str(write(tmp_path, body))), Options(**options)))  # type: ignore[arg-type]


def msg(ident: str, role: str) -> StoredMessage:
    return StoredMessage(ident, Role(role), None, 0, text=ident)


# --- R-CMP-1 trigger ---------------------------------------------------------------------


def test_r_cmp_1_exactly_at_threshold_does_not_compress():
    _, p = gallery("below_threshold")
    assert (p.history_tokens, p.reserved_tokens, p.available_tokens, p.threshold) == (750, 10, 1000, 750)
    assert not p.should_compress


def test_r_cmp_1_one_above_threshold_compresses():
    _, p = gallery("just_above")
    assert (p.history_tokens, p.threshold) == (751, 750)
    assert p.should_compress


def test_r_cmp_1_boundary_moves_with_the_window():
    """history 751: a threshold of 751 (window 1012) holds it, 750 (window 1011) does not."""
    assert not gallery("just_above", max_input_tokens=1012)[1].should_compress
    assert gallery("just_above", max_input_tokens=1011)[1].should_compress


def test_r_cmp_1_history_counts_texts_and_call_arguments_only():
    """just_above: 200+200+100+(130+20)+40+61; the file (30) and the tool result are not counted."""
    _, p = gallery("just_above")
    tokens = {r.message.id: r.tokens for r in p.rows}
    assert tokens == {"u1": 200, "a1": 200, "u2": 100, "a2": 150, "u3": 40, "a3": 61}
    assert p.history_tokens == sum(tokens.values())


def test_r_cmp_1_counts_what_is_not_stored(tmp_path):
    text = "x" * 41  # approx: 10
    args = {"q": "y" * 30}  # json.dumps -> 39 chars -> 9
    p = plan_of(
        tmp_path,
        small(
            1000,
            f"""\
  - {{id: u1, role: user, text: "{text}"}}
  - id: a1
    role: assistant
    text: "{text}"
    tool_calls: [{{id: c1, name: search, args: {json.dumps(args)}}}]
""",
        ),
    )
    assert p.history_tokens == 10 + 10 + len(json.dumps(args)) // 4


def test_r_cmp_1_whole_branch_to_the_leaf_including_the_newest_answer():
    """Assembly stops at the last user message (R-TURN-1); compression counts a3 too."""
    _, p = gallery("just_above")
    assert p.rows[-1].message.id == "a3" and p.rows[-1].mark is Mark.KEPT


def test_r_cmp_1_summary_tokens_count_and_summarized_messages_do_not():
    _, p = gallery("progressive")
    assert p.summary_tokens == 120
    assert p.history_tokens == 120 + 100 + 270 + 40 + 60
    assert [r.message.id for r in p.rows if r.mark is Mark.ALREADY] == ["u1", "a1"]


def test_r_cmp_1_no_safety_margin_and_reserved_as_in_assembly():
    for path in (FIXTURES / "compress_just_above.yaml", FIXTURES / "plain_chat.yaml"):
        fixture = load_fixture(str(path))
        p = plan(resolve(fixture))
        assert p.reserved_tokens == run(fixture).assembly.reserved
        assert p.available_tokens == p.eff.max_input_tokens - p.reserved_tokens


def test_r_cmp_1_threshold_is_exact_decimal_arithmetic(tmp_path):
    """0.57 × 100 is 56.99999999999999 in binary floating point; exactly 57 here."""
    assert floor_ratio(100, Decimal("0.57")) == 57
    body = small(100, '  - {id: u1, role: user, text: "u", tokens: 57}\n', settings="compression_trigger_ratio: 0.57")
    p = plan_of(tmp_path, body)
    assert (p.threshold, p.should_compress) == (57, False)


# --- R-CMP-2 recent budget ----------------------------------------------------------------


def test_r_cmp_2_recent_budget_is_a_share_of_the_history():
    _, p = gallery("just_above")
    assert p.tokens_for_recent == 150  # floor(751 × 0.2), not a share of the window


def test_r_cmp_2_recent_budget_exact_and_floored(tmp_path):
    p = plan_of(
        tmp_path,
        small(
            10,
            """\
  - {id: u1, role: user, text: "u", tokens: 70}
  - {id: a1, role: assistant, text: "a", tokens: 30}
""",
            settings="recent_messages_ratio: 0.29",
        ),
    )
    assert p.tokens_for_recent == 29  # floor(100 × 0.29); binary floats give 28.999…


# --- R-CMP-3 split ------------------------------------------------------------------------


def test_r_cmp_3_walk_back_keeps_while_within_budget():
    _, p = gallery("just_above")  # a3 61 + u3 40 = 101 <= 150; + a2 150 does not fit
    assert [m.id for m in p.summarized] == ["u1", "a1", "u2", "a2"]
    assert [m.id for m in p.kept] == ["u3", "a3"]


def test_r_cmp_3_newest_is_always_kept_and_walk_stops_at_first_misfit():
    msgs = [(msg("u1", "user"), 1), (msg("a1", "assistant"), 50), (msg("u2", "user"), 1), (msg("a2", "assistant"), 1)]
    assert split(msgs, 3) == (2, None)  # a1 does not fit: stop, although u1 would
    start, _ = split([(msg("u1", "user"), 5), (msg("u2", "user"), 99)], 10)
    assert start == 1  # the newest (99) is kept although it exceeds the budget


def test_r_cmp_3_leading_non_user_messages_move_to_the_summarized_part():
    msgs = [
        (msg("u1", "user"), 100),
        (msg("a1", "assistant"), 100),
        (msg("u2", "user"), 100),
        (msg("a2", "assistant"), 10),
        (msg("u3", "user"), 10),
        (msg("a3", "assistant"), 10),
    ]
    assert split(msgs, 30) == (4, None)  # [a2 u3 a3] fit; a2 moves: the cut falls before u3


def test_r_cmp_3_fallback_keeps_the_last_user_exchange():
    _, p = gallery("tool_heavy_tail")
    assert p.should_compress and p.tokens_for_recent == 150
    assert [m.id for m in p.kept] == ["u3", "a3"]  # a3 (400) alone exceeds the budget
    assert [m.id for m in p.summarized] == ["u1", "u2", "a2"]
    assert "last user message" in (p.note or "")


def test_r_cmp_3_empty_text_is_skipped_even_with_tool_calls():
    _, p = gallery("tool_heavy_tail")
    row = next(r for r in p.rows if r.message.id == "a1")
    assert row.mark is Mark.SKIPPED and row.tokens == 40  # still counted in the history
    assert "a1" not in report(p)["summarized"] + report(p)["kept"]
    assert report(p)["skipped"] == ["a1"]


def test_r_cmp_3_no_user_message_means_nothing_to_compress(tmp_path):
    path = write(
        tmp_path,
        small(
            100,
            """\
  - {id: u1, role: user, text: "u", tokens: 5}
  - {id: a1, role: assistant, text: "a", tokens: 500}
  - {id: s1, role: summary, parent: u1, summarizes_through: u1, text: "s", tokens: 5}
""",
        ),
    )
    r = json.loads(ctxkit("compress", str(path), "--format", "json").out)
    assert r["should_compress"] is True
    assert (r["summarized"], r["request"], r["kept"]) == ([], None, ["a1"])
    assert "no user message" in r["note"]


def test_r_cmp_3_everything_within_the_recent_budget_leaves_nothing_to_summarize(tmp_path):
    p = plan_of(
        tmp_path,
        small(
            100,
            """\
  - {id: u1, role: user, text: "u", tokens: 50}
  - {id: a1, role: assistant, text: "a", tokens: 50}
""",
            settings="recent_messages_ratio: 1",
        ),
    )
    assert p.should_compress and p.summarized == () and p.request is None
    assert p.summary_parent is None and "nothing to summarize" in (p.note or "")


# --- R-CMP-4 request ----------------------------------------------------------------------


def test_r_cmp_4_request_shape():
    fixture, p = gallery("just_above")
    t = p.eff.templates
    assert p.request is not None
    roles = [m["role"] for m in p.request]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user", "user", "assistant", "user"]
    contents = [m["content"] for m in p.request]
    assert contents[0] == t.raw("summary.system")
    assert contents[4] == "[Used tools: internal_search]\n" + fixture.message("a2").text
    assert contents[5] == t.raw("summary.cutoff_marker")
    assert contents[6:8] == [fixture.message("u3").text, fixture.message("a3").text]
    assert contents[8] == t.raw("summary.instruction")
    text = json.dumps(p.request)
    assert "Pricing wiki" not in text and "region," not in text  # no results, no files


def test_r_cmp_4_used_tools_names_unique_in_call_order():
    _, p = gallery("tool_heavy_tail")
    assert p.request is not None
    assert p.request[-2]["content"].startswith("[Used tools: internal_search, open_url]\n")


def test_r_cmp_4_progressive_mode_folds_in_the_previous_summary():
    fixture, p = gallery("progressive")
    t = p.eff.templates
    assert p.progressive and p.request is not None
    assert p.request[0]["content"] == t.raw("summary.system") + "\n\n" + t.fill(
        "summary.progressive_block", previous_summary=fixture.message("s1").text
    )
    assert p.request[-1]["content"] == t.raw("summary.progressive_instruction")
    assert [m.id for m in p.summarized] == ["u2", "a2"]  # s1's messages are not repeated


def test_r_cmp_4_not_due_report():
    r = report(gallery("below_threshold")[1])
    assert r["summarized"] == [] and r["tokens_for_recent"] == 0
    assert r["kept"] == ["u1", "a1", "u2", "a2", "u3", "a3"]
    assert r["summary_parent"] is r["summarizes_through"] is r["request"] is None


def test_r_cmp_4_template_overrides_apply(tmp_path):
    body = (
        small(
            10,
            """\
  - {id: u1, role: user, text: "u", tokens: 50}
  - id: a1
    role: assistant
    text: "a"
    tokens: 5
    tool_calls: [{id: c1, name: search, args: {}, tokens: 1}]
  - {id: u2, role: user, text: "v", tokens: 1}
  - {id: a2, role: assistant, text: "b", tokens: 1}
""",
        )
        + 'templates: {summary.used_tools: "<tools {tools}>", summary.instruction: "Go."}\n'
    )
    p = plan_of(tmp_path, body)
    assert p.request is not None
    assert p.request[2]["content"] == "<tools search>\na" and p.request[-1]["content"] == "Go."


def provider_body(fixture: str, provider: str) -> dict[str, Any]:
    report_ = json.loads(ctxkit("compress", fixture, "--provider", provider, "--format", "json").out)
    assert report_["provider_request"]["provider"] == provider
    return report_["provider_request"]["body"]  # type: ignore[no-any-return]


def test_r_cmp_4_provider_body_for_openai():
    fixture = str(FIXTURES / "compress_just_above.yaml")
    body = provider_body(fixture, "openai")
    request = json.loads(ctxkit("compress", fixture, "--format", "json").out)["request"]
    assert body["model"] == "gpt-4o" and "tools" not in body
    assert body["messages"] == request


def test_compress_provider_keeps_the_report_and_shows_the_body_inside_it():
    """`--provider anthropic` used to replace the whole report with the request body."""
    fixture = str(FIXTURES / "compress_just_above.yaml")
    out = ctxkit("compress", fixture, "--provider", "anthropic").out
    assert out.startswith("# compression due") and "compression due: yes" in out
    head, _, body = out.partition("summarization request as the anthropic request body:\n")
    assert "split (S summarized" in head
    assert json.loads(body)["system"][0]["type"] == "text"
    report_ = json.loads(ctxkit("compress", fixture, "--provider", "anthropic", "--format", "json").out)
    assert report_["should_compress"] and report_["request"][0]["role"] == "system"  # still OpenAI-style messages


@pytest.mark.parametrize("provider", providers.names())
@pytest.mark.parametrize("name", ["progressive", "tool_heavy_tail"])
def test_r_cmp_4_provider_bodies_validate(provider, name):
    """The request goes through the normal translators: official schema + server rules."""
    from . import provider_schemas, server_rules

    body = provider_body(str(FIXTURES / f"compress_{name}.yaml"), provider)
    assert provider_schemas.validate(provider, body) == []
    assert server_rules.check(provider, body) == []
    assert "Used tools: " in json.dumps(body, ensure_ascii=False)


def test_r_cmp_4_provider_body_when_nothing_is_due():
    fixture = str(FIXTURES / "compress_below_threshold.yaml")
    report_ = json.loads(ctxkit("compress", fixture, "--provider", "openai", "--format", "json").out)
    assert report_["provider_request"] is None and report_["request"] is None
    assert "summarization request: none" in ctxkit("compress", fixture, "--provider", "openai").out


# --- R-CMP-5 the new summary node and write-back -------------------------------------------


def test_r_cmp_5_parent_is_last_user_and_cutoff_is_last_summarized():
    _, p = gallery("just_above")
    assert (p.summary_parent, p.summarizes_through) == ("u3", "a2")
    _, p = gallery("two_branches")
    assert (p.summary_parent, p.summarizes_through, p.progressive) == ("u2b", "a1", False)


def test_r_cmp_5_only_the_branch_with_the_summary_is_progressive():
    _, p = gallery("two_branches", leaf="a2")
    assert p.progressive and p.previous_summary is not None
    assert p.previous_summary.id == "s1" and p.history_tokens == 260
    assert not p.should_compress


def test_r_cmp_5_write_needs_summary_and_summary_needs_write(tmp_path):
    fixture = str(FIXTURES / "compress_just_above.yaml")
    out = tmp_path / "next.yaml"
    r = ctxkit("compress", fixture, "--write", str(out), expect=2)
    assert "--write needs --summary" in r.err and not out.exists()
    r = ctxkit("compress", fixture, "--summary", SUMMARY, expect=2)
    assert "--summary needs --write" in r.err


def test_r_cmp_5_write_refused_when_compression_is_not_due(tmp_path):
    out = tmp_path / "next.yaml"
    r = ctxkit(
        "compress", str(FIXTURES / "compress_below_threshold.yaml"), "--summary", SUMMARY, "--write", str(out), expect=2
    )
    assert r.err.startswith("error: ") and "not due" in r.err and not out.exists()


def test_r_cmp_5_write_refuses_an_existing_file_without_force(tmp_path):
    fixture = str(FIXTURES / "compress_just_above.yaml")
    out = tmp_path / "next.yaml"
    out.write_text("keep me\n")
    r = ctxkit("compress", fixture, "--summary", SUMMARY, "--write", str(out), expect=2)
    assert "already exists" in r.err and "--force" in r.err
    assert out.read_text() == "keep me\n"
    ctxkit("compress", fixture, "--summary", SUMMARY, "--write", str(out), "--force")
    assert "summary-1" in out.read_text()


def test_r_cmp_5_write_says_comments_are_not_carried_over(tmp_path):
    r = ctxkit(
        "compress",
        str(FIXTURES / "compress_just_above.yaml"),
        "--summary",
        SUMMARY,
        "--write",
        str(tmp_path / "next.yaml"),
    )
    assert "warning: YAML comments" in r.err and "not carried over" in r.err
    assert json.loads(
        ctxkit("compress", str(FIXTURES / "compress_just_above.yaml"), "--format", "json").out
    )  # stdout still carries the report
    assert r.out.startswith("# compression due")


def test_r_cmp_5_write_is_atomic(tmp_path, monkeypatch):
    fixture, p = gallery("just_above")
    out = tmp_path / "next.yaml"
    out.write_text("old\n")
    seen: list[str] = []

    def failing_replace(src: str, dst: object) -> None:
        seen.append(src)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("ctxkit.compression.compress.os.replace", failing_replace)
    with pytest.raises(InputError, match="cannot write"):
        write_back(fixture, p, SUMMARY, out, force=True)
    assert Path(seen[0]).parent == tmp_path  # the temp file lives beside the output
    assert out.read_text() == "old\n"
    assert sorted(os.listdir(tmp_path)) == ["next.yaml"]  # no temp file left behind


def test_r_cmp_5_fresh_id_does_not_collide(tmp_path):
    path = write(
        tmp_path,
        small(
            100,
            """\
  - {id: summary-1, role: user, text: "u", tokens: 60}
  - {id: a1, role: assistant, text: "a", tokens: 30}
  - {id: u2, role: user, text: "v", tokens: 5}
  - {id: a2, role: assistant, text: "b", tokens: 5}
""",
        ),
    )
    fixture = load_fixture(str(path))
    new_id, _ = write_back(fixture, plan(resolve(fixture)), "s", tmp_path / "out.yaml")
    assert new_id == "summary-2"
    assert load_fixture(str(tmp_path / "out.yaml")).message("summary-2").parent == "u2"


@pytest.mark.parametrize("path", GALLERY, ids=lambda p: p.stem)
def test_r_cmp_5_write_back_round_trips_the_document(path, tmp_path):
    """Everything but the new node loads back the same (a tiny window forces compression)."""
    fixture = load_fixture(str(path))
    reserved = plan(resolve(fixture)).reserved_tokens
    p = plan(resolve(fixture, Options(max_input_tokens=reserved + 1)))
    if p.summary_parent is None:
        pytest.skip(p.note or "nothing to summarize")
    out = tmp_path / "sub" / "out.yaml"
    out.parent.mkdir()
    new_id, _ = write_back(fixture, p, "A summary.", out)
    again = load_fixture(str(out), allow_outside_paths=True)
    assert again.messages[:-1] == fixture.messages
    assert again.messages[-1].id == new_id and again.messages[-1].role is Role.SUMMARY
    assert (again.files, again.settings, again.model) == (fixture.files, fixture.settings, fixture.model)
    assert tree.select(again, again.leaf).summary == again.messages[-1]


def copy_just_above(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copytree(FIXTURES / "files", folder / "files")
    return Path(shutil.copy(FIXTURES / "compress_just_above.yaml", folder))


def test_r_cmp_5_relative_paths_stay_valid_from_the_output_folder(tmp_path):
    source = copy_just_above(tmp_path / "in")
    fixture = load_fixture(str(source))
    up, down = tmp_path / "up.yaml", tmp_path / "in" / "deeper" / "down.yaml"
    write_back(fixture, plan(resolve(fixture)), SUMMARY, up)
    assert load_fixture(str(up)).file("f-sales").text == fixture.file("f-sales").text
    assert "path: in/files/sales.csv" in up.read_text()
    down.parent.mkdir()
    _, notes = write_back(fixture, plan(resolve(fixture)), SUMMARY, down)
    assert "path: ../files/sales.csv" in down.read_text()
    assert any("--allow-outside-paths" in n for n in notes)
    loaded = load_fixture(str(down), allow_outside_paths=True)
    assert loaded.file("f-sales").text == fixture.file("f-sales").text


def test_r_cmp_5_end_to_end_compress_write_assemble(tmp_path):
    source = copy_just_above(tmp_path)
    out = tmp_path / "next.yaml"
    report_ = json.loads(
        ctxkit("compress", str(source), "--format", "json", "--summary", SUMMARY, "--write", str(out)).out
    )
    written = load_fixture(str(out))
    summary = written.message("summary-1")
    assert (summary.parent, summary.summarizes_through) == ("u3", "a2")
    result = run(written)
    a = result.assembly
    ids = {w.source_id for w in a.messages if w.source_id}
    assert not ids & set(report_["summarized"])
    history = a.segments[Segment.HISTORY]
    assert history[0].origin == "summary" and history[0].text == SUMMARY
    assert result.payload.body["messages"][1] == {"role": "assistant", "content": SUMMARY}
    listing = a.segments[Segment.FORGOTTEN_FILES][0].text  # read_file is among the tools
    assert 'file_id="f-sales"' in listing
    again = json.loads(ctxkit("compress", str(out), "--format", "json").out)
    assert again["progressive"] and not again["should_compress"]
    assert again["previous_summary"] == "summary-1"


def test_r_cmp_5_write_keeps_the_compressed_branch(tmp_path):
    out = tmp_path / "next.yaml"
    source = shutil.copy(FIXTURES / "compress_two_branches.yaml", tmp_path)
    r = ctxkit("compress", source, "--leaf", "a2b", "--summary", "s", "--write", str(out))
    assert "leaf set to 'a2b'" in r.err  # the option is not lost: the next turn stays there
    written = load_fixture(str(out))
    assert written.leaf == "a2b"
    assert run(written).assembly.branch.summary.id == "summary-1"  # type: ignore[union-attr]


# --- R-CMP-6 never fatal to assembly -------------------------------------------------------


def test_r_cmp_6_assembly_never_imports_compression():
    code = (
        "import sys; from ctxkit.loading.read import load_fixture; from ctxkit.pipeline import run; "
        f"run(load_fixture({str(FIXTURES / 'compress_just_above.yaml')!r})); "
        "assert 'ctxkit.compression.compress' not in sys.modules, 'assembly imported compress'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("path", GALLERY, ids=lambda p: p.stem)
def test_r_cmp_6_compress_runs_on_every_gallery_fixture(path):
    r = json.loads(ctxkit("compress", str(path), "--format", "json").out)
    assert SPEC_KEYS <= set(r)


# --- the report ---------------------------------------------------------------------------


def test_compress_json_report_keys_and_types():
    r = json.loads(ctxkit("compress", str(FIXTURES / "compress_just_above.yaml"), "--format", "json").out)
    assert SPEC_KEYS | {"note", "available_tokens", "trigger_ratio"} <= set(r)
    assert r["trigger_ratio"] == 0.75 and isinstance(r["threshold"], int)
    assert r["request"][0]["role"] == "system"


def test_compress_text_report_draws_the_split():
    out = ctxkit("compress", str(FIXTURES / "compress_progressive.yaml")).out
    assert "compression due: yes (history 590 > threshold 525)" in out
    lines = out.splitlines()
    marks = [line.split()[:2] for line in lines if line.startswith("  ") and line.split()[0] in "SK-~="]
    assert marks == [["~", "u1"], ["~", "a1"], ["=", "s1"], ["S", "u2"], ["S", "a2"], ["K", "u3"], ["K", "a3"]]
    assert "--- [0] system ---" in out


def test_compress_report_is_rendered_without_the_command_line():
    """The report module renders the plan; the command only echoes it (issue 22 item 6)."""
    _, p = gallery("progressive")
    out = ctxkit("compress", str(FIXTURES / "compress_progressive.yaml")).out
    assert compression.text(p) == out
    split = compression.split_lines(p)
    assert [(s.mark, s.id) for s in split][:3] == [("~", "u1"), ("~", "a1"), ("=", "s1")]
    assert compression.numbers(p)[3] == compression.WorkedNumber(
        "threshold", "525", "floor(available x 0.75) (R-CMP-1)"
    )


def test_compress_json_ratios_are_numbers_with_their_written_digits(tmp_path):
    """Numbers in JSON reports are JSON numbers, exact as written (R-FIX-3)."""
    body = small(
        1000,
        '  - {id: u1, role: user, text: "u", tokens: 5}\n',
        settings="compression_trigger_ratio: 0.7499999999999999999999",
    )
    r = ctxkit("compress", str(write(tmp_path, body)), "--format", "json")
    assert '"trigger_ratio": 0.7499999999999999999999,' in r.out
    assert json.loads(r.out)["threshold"] == 749


def test_compress_no_room_when_fixed_parts_fill_the_window_says_so(tmp_path):
    """R-CMP-1: available <= 0 is said in plain words, never as negative thresholds."""
    fixture = str(FIXTURES / "fixed_parts_too_big.yaml")
    out = ctxkit("compress", fixture, "--max-input-tokens", "20").out
    assert "compression due: no: the fixed parts alone" in out and "fill the window of 20" in out
    assert "available              none" in out and "threshold              none" in out
    assert not any(word.startswith("-") and word[1:].isdigit() for word in out.split())
    r = json.loads(ctxkit("compress", fixture, "--max-input-tokens", "20", "--format", "json").out)
    assert r["should_compress"] is False and r["threshold"] is None and r["request"] is None
    assert "no room for any history" in r["note"]
