"""One test (at least) per assembly rule id: R-TREE, R-TURN, R-CONV, R-SYS, R-PROJ,
R-ASM, R-FILE, R-REM and the OpenAI translation rules R-TR-1/5/7/8."""

from __future__ import annotations

import json

import pytest

from ctxkit.errors import RuleError
from ctxkit.history import convert
from ctxkit.history.working import Segment
from ctxkit.reports.budget import report as budget_report
from ctxkit.reports.explain import rows as explain_rows
from ctxkit.translate.openai import is_reasoning_model

from .helpers import assemble, fates, keys, texts, write


def small(window: int = 10000, *, settings: str = "", prompts: str = "") -> str:
    """A model with a round window, approx counts, no margin and a 1-token system prompt."""
    return (
        f"model: {{provider: openai, name: test-model, max_input_tokens: {window}}}\n"
        "tokenizer: approx\n"
        f"settings: {{safety_margin: 0{', ' + settings if settings else ''}}}\n"
        f'prompts: {{system: "S", datetime_aware: false{", " + prompts if prompts else ""}}}\n'
    )


# --- R-TREE ---------------------------------------------------------------


def test_r_tree_1_and_2_default_leaf_is_latest_child(tmp_path):
    r = assemble(
        tmp_path,
        small()
        + """\
messages:
  - {id: a, role: user, text: "first"}
  - {id: b, role: assistant, parent: a, text: "answer"}
  - {id: c, role: user, parent: b, text: "edit one"}
  - {id: c2, role: user, parent: b, text: "edit two"}
""",
    )
    assert texts(r)[-1] == ("user", "edit two")
    assert ("user", "edit one") not in texts(r)


def test_r_tree_2_leaf_option_wins_over_fixture(tmp_path):
    body = (
        small()
        + """\
leaf: c2
messages:
  - {id: a, role: user, text: "first"}
  - {id: b, role: assistant, parent: a, text: "answer"}
  - {id: c, role: user, parent: b, text: "edit one"}
  - {id: c2, role: user, parent: b, text: "edit two"}
"""
    )
    assert texts(assemble(tmp_path, body))[-1] == ("user", "edit two")
    assert texts(assemble(tmp_path, body, leaf="c"))[-1] == ("user", "edit one")


def test_r_tree_3_summary_removes_through_cutoff_and_comes_first(tmp_path):
    r = assemble(
        tmp_path,
        small()
        + """\
tools: [read_file]
files:
  - {id: f1, name: notes.txt, kind: text, text: "notes", tokens: 3}
messages:
  - {id: 1, role: user, text: "one", files: [f1]}
  - {id: 2, role: assistant, parent: 1, text: "two"}
  - {id: 3, role: user, parent: 2, text: "three"}
  - {id: s, role: summary, parent: 3, summarizes_through: 2, text: "SUMMARY"}
""",
    )
    t = texts(r)
    assert t[1] == ("assistant", "SUMMARY")
    assert ("user", "one") not in t
    listing = [x for x in t if x[1].startswith("You have access to the following files")]
    assert listing and 'file_id="f1" filename="notes.txt" (~0 chars)' in listing[0][1]
    assert fates(r)["1"] == ("summarized", "R-TREE-3")


# --- R-TURN ---------------------------------------------------------------


def test_r_turn_1_messages_after_last_user_are_not_part_of_the_call(tmp_path):
    r = assemble(
        tmp_path,
        small()
        + """\
messages:
  - {id: 1, role: user, text: "q"}
  - {id: 2, role: assistant, text: "old answer being regenerated"}
""",
    )
    assert texts(r)[-1] == ("user", "q")
    assert fates(r)["2"] == ("after_last_user", "R-TURN-1")


def test_r_turn_2_state_derived_from_in_flight(tmp_path):
    """R-TURN-2: two in-flight cycles, a web search then another tool: the search latches."""
    from ctxkit.assembly.system import Turn, turn_state
    from ctxkit.loading.read import load_fixture

    path = write(
        tmp_path,
        small()
        + """\
messages: [{id: 1, role: user, text: q}]
in_flight:
  - {role: assistant, tool_calls: [{id: w, name: web_search, args: {}}]}
  - {role: tool, tool_call_id: w, text: r}
  - {role: assistant, tool_calls: [{id: g, name: get_x, args: {}}]}
  - {role: tool, tool_call_id: g, text: r}
""",
    )
    state = turn_state(load_fixture(str(path)))
    # cycle = 2 calling assistant messages; the latest calls only get_x; searched latches
    expected = Turn(
        cycle=2,
        max_cycles=6,
        just_ran_web_search=False,
        ran_image_generation=False,
        searched=True,
        generated_files=False,
    )
    assert state == expected
    assert not state.last_cycle  # 2 != 6 - 1


# Marker texts instead of the built-in wording: the tests below check which parts are chosen.
MARKERS = (
    "templates: {reminder.last_cycle: LAST, reminder.citation: CITE, reminder.open_url: OPEN, "
    "citation_guidance: GUIDE, tool_guidance.search: '', tool_guidance.web_search: '', "
    "tool_guidance.open_url: ''}\n"
)
WEB_SEARCH_JUST_RAN = """\
tools: [web_search, open_url]
messages: [{id: 1, role: user, text: q}]
in_flight:
  - {role: assistant, tool_calls: [{id: w, name: web_search, args: {}}]}
  - {role: tool, tool_call_id: w, text: r}
"""


def test_r_turn_2_last_cycle_replaces_the_open_url_reminder(tmp_path):
    """R-TURN-2 + R-REM-1: `turn: {cycle: 5}` makes this the last cycle (5 == 6 - 1), so the
    open-url reminder is not chosen; the reminder is the last-cycle notice then the citation one."""
    r = assemble(tmp_path, small() + MARKERS + "turn: {cycle: 5}\n" + WEB_SEARCH_JUST_RAN)
    assert texts(r)[-1] == ("user", "<system-reminder>\nLAST\n\nCITE\n</system-reminder>")


def test_r_turn_2_not_last_cycle_keeps_the_open_url_reminder(tmp_path):
    """R-TURN-2 + R-REM-1: the derived cycle is 1, not the last: the open-url reminder wins."""
    r = assemble(tmp_path, small() + MARKERS + WEB_SEARCH_JUST_RAN)
    assert texts(r)[-1] == ("user", "<system-reminder>\nOPEN\n</system-reminder>")


def test_r_turn_2_searched_puts_citation_guidance_in_the_system_prompt(tmp_path):
    """R-TURN-2 + R-SYS-3: the in-flight web search sets `searched`; the base prompt "S" has no
    placeholder, so the guidance is appended after a blank line."""
    r = assemble(tmp_path, small() + MARKERS + "turn: {cycle: 5}\n" + WEB_SEARCH_JUST_RAN)
    assert texts(r)[0] == ("system", "S\n\nGUIDE")


# --- R-CONV ---------------------------------------------------------------


def test_r_conv_1_files_pinned_before_their_message(tmp_path):
    r = assemble(
        tmp_path,
        small()
        + """\
files:
  - {id: t, name: a.txt, kind: text, text: "hello", tokens: 7}
  - {id: e, name: empty.txt, kind: text, text: "  "}
  - {id: m, name: big.pdf, kind: metadata_only}
messages:
  - {id: 1, role: user, text: "q1", files: [t, e, m]}
  - {id: 2, role: assistant, text: "a1"}
  - {id: 3, role: user, text: "q2"}
""",
    )
    t = texts(r)
    assert t[1] == ("user", "File: a.txt\nhello\nEnd of File")
    assert "empty.txt" in t[2][1] and "could not be read" in t[2][1]
    assert "big.pdf" in t[3][1] and "file_id: m" in t[3][1]
    assert t[4] == ("user", "q1")
    assert r.assembly.meter.of(r.assembly.messages[1]) == 7  # the file's stored count


def test_r_conv_2_calls_grouped_by_turn_then_answer(tmp_path):
    r = assemble(
        tmp_path,
        small()
        + """\
messages:
  - {id: 1, role: user, text: "q"}
  - id: 2
    role: assistant
    text: "answer"
    tool_calls:
      - {id: b, name: t, args: {}, turn: 1}
      - {id: a, name: t, args: {}}
      - {id: a2, name: t, args: {}}
  - {id: 3, role: user, text: "q2"}
""",
    )
    msgs = r.payload.body["messages"]
    assert [c["id"] for c in msgs[2]["tool_calls"]] == ["a", "a2"]
    assert [m.get("tool_call_id") for m in msgs[3:5]] == ["a", "a2"]
    assert [c["id"] for c in msgs[5]["tool_calls"]] == ["b"]
    assert msgs[7] == {"role": "assistant", "content": "answer"}


def test_r_conv_3_placeholder_and_image_generation_replay(tmp_path):
    r = assemble(
        tmp_path,
        small()
        + """\
messages:
  - {id: 1, role: user, text: "q"}
  - id: 2
    role: assistant
    text: "done"
    tool_calls:
      - {id: s, name: search, args: {q: x}, response: "secret result"}
      - {id: g, name: generate_image, args: {}, generated_images: [{file_id: img-7, revised_prompt: "a cat"}]}
  - {id: 3, role: user, text: "q2"}
""",
    )
    tool_msgs = [m for m in r.payload.body["messages"] if m["role"] == "tool"]
    assert tool_msgs[0]["content"] == ("This tool call completed but the results are no longer accessible.")
    assert json.loads(tool_msgs[1]["content"]) == [{"file_id": "img-7", "revised_prompt": "a cat"}]
    assert "secret result" not in json.dumps(r.payload.body)
    placeholder = next(w for w in r.assembly.messages if w.tool_call_id == "s")
    assert r.assembly.meter.of(placeholder) == 20
    assert fates(r)["2#result0"] == ("placeholder", "R-CONV-3")


def test_r_conv_3_placeholder_fate_does_not_read_the_note(tmp_path, monkeypatch):
    """The placeholder fate comes from an explicit field, so rewording the note changes nothing else."""
    monkeypatch.setattr(convert, "PLACEHOLDER_NOTE", "result swapped out (R-CONV-3)")
    body = (
        small()
        + """\
messages:
  - {id: 1, role: user, text: "q"}
  - {id: 2, role: assistant, text: "done", tool_calls: [{id: s, name: search, args: {q: x}, response: "r"}]}
  - {id: 3, role: user, text: "q2"}
"""
    )
    r = assemble(tmp_path, body)
    row = next(row for row in explain_rows(r) if row.key and row.key.endswith("#result0"))
    assert row.notes == ("result swapped out (R-CONV-3)",)
    assert (str(row.fate), row.rule) == ("placeholder", "R-CONV-3")


def test_r_conv_4_in_flight_kept_in_full(tmp_path):
    r = assemble(
        tmp_path,
        small()
        + """\
messages:
  - {id: 1, role: user, text: "q"}
in_flight:
  - {role: assistant, text: "let me look", tool_calls: [{id: c, name: t, args: {x: 1}, tokens: 5}]}
  - {role: tool, tool_call_id: c, text: "full result text", tokens: 9}
""",
    )
    msgs = r.payload.body["messages"]
    assert msgs[-1] == {"role": "tool", "tool_call_id": "c", "content": "full result text"}
    ws = r.assembly.segments[Segment.IN_TURN]
    assert [r.assembly.meter.of(w) for w in ws] == [len("let me look") // 4 + 5, 9]


# --- R-SYS ----------------------------------------------------------------


BASE = """\
model: {provider: openai, name: gpt-4o}
tokenizer: approx
"""


def test_r_sys_1_placeholders_plain_replacement(tmp_path):
    r = assemble(
        tmp_path,
        BASE
        + """\
prompts: {system: "Date {{CURRENT_DATETIME}} {x} {{REMINDER_TAG_DESCRIPTION}}|{{CITATION_GUIDANCE}}|"}
messages: [{id: 1, role: user, text: q}]
""",
    )
    system = texts(r)[0][1]
    assert system.startswith("Date Saturday, March 14, 2026 {x} Some user messages")
    assert system.endswith("||")  # no citation required: empty


def test_r_sys_2_date_line_appended_without_placeholder(tmp_path):
    r = assemble(
        tmp_path,
        BASE
        + """\
prompts: {system: "Base."}
user_info: {name: Ada}
messages: [{id: 1, role: user, text: q}]
""",
    )
    assert texts(r)[0][1] == ("Base.\n\nToday is Saturday, March 14, 2026.\n\n# User Information\n\nName: Ada")


def test_r_sys_2_no_now_warns(tmp_path):
    from ctxkit.loading.read import load_fixture
    from ctxkit.pipeline import run

    from .helpers import write

    path = write(tmp_path, BASE + "messages: [{id: 1, role: user, text: q}]\n", head="ctxkit: 1\n")
    r = run(load_fixture(str(path)))
    assert any("not reproducible" in w for w in r.warnings)


def test_r_sys_3_citation_guidance_when_searched(tmp_path):
    body = (
        BASE
        + """\
prompts: {system: "Base.", datetime_aware: false}
tools: [internal_search]
messages: [{id: 1, role: user, text: q}]
"""
    )
    plain = texts(assemble(tmp_path, body))[0][1]
    searched = texts(
        assemble(
            tmp_path,
            body
            + """\
in_flight:
  - {role: assistant, tool_calls: [{id: c, name: internal_search, args: {}}]}
  - {role: tool, tool_call_id: c, text: r}
""",
        )
    )[0][1]
    assert "Cite the documents" not in plain
    assert searched.startswith("Base.\n\nCite the documents")


def test_r_sys_4_sections_order_and_tools_only_when_available(tmp_path):
    r = assemble(
        tmp_path,
        BASE
        + """\
prompts: {system: "Base.", datetime_aware: false}
user_info:
  name: Ada
  email: ada@example.com
  organization: {industry: fintech}
  team: Payments
  preferences: Brief.
  memories: [Python]
tools: [python, web_search, memory, get_weather]
messages: [{id: 1, role: user, text: q}]
""",
    )
    system = texts(r)[0][1]
    assert system == (
        "Base.\n\n# User Information\n\nName: Ada\nEmail: ada@example.com\n\n"
        "Organization:\n- industry: fintech\n\nTeam: Payments\n\nPreferences: Brief.\n\n"
        "Memories:\n- Python\n\n# Tools\n\n"
        + "\n\n".join(
            s.split("\n\n", 1)[0] + "\n\n" + s.split("\n\n", 1)[1]
            for s in _guidance("search", "web_search", "python", "memory")
        )
    )
    assert "## internal_search" not in system


def _guidance(*names: str) -> list[str]:
    from ctxkit.loading.templates import BUILTIN

    return [BUILTIN[f"tool_guidance.{n}"][0] for n in names]


def test_r_sys_4_no_tools_header_without_guided_tools(tmp_path):
    r = assemble(
        tmp_path,
        BASE
        + """\
prompts: {system: "Base.", datetime_aware: false}
tools: [get_weather]
messages: [{id: 1, role: user, text: q}]
""",
    )
    assert texts(r)[0][1] == "Base."


def test_r_sys_5_custom_agent_is_a_user_message_before_last_user(tmp_path):
    r = assemble(
        tmp_path,
        BASE
        + """\
prompts: {system: "Base.", datetime_aware: false, custom_agent: "AGENT"}
messages:
  - {id: 1, role: user, text: q1}
  - {id: 2, role: assistant, text: a1}
  - {id: 3, role: user, text: q2}
""",
    )
    assert texts(r)[-2:] == [("user", "AGENT"), ("user", "q2")]


def test_r_sys_5_replace_base_and_empty_base(tmp_path):
    replaced = assemble(
        tmp_path,
        BASE
        + """\
prompts: {custom_agent: "AGENT {{CURRENT_DATETIME}}", replace_base_system_prompt: true}
user_info: {name: Ada}
messages: [{id: 1, role: user, text: q}]
""",
    )
    assert texts(replaced) == [("system", "AGENT Saturday, March 14, 2026"), ("user", "q")]
    empty = assemble(
        tmp_path,
        BASE
        + """\
prompts: {system: "", custom_agent: "AGENT", datetime_aware: false}
messages: [{id: 1, role: user, text: q}]
""",
    )
    assert texts(empty) == [("system", "AGENT"), ("user", "q")]
    none = assemble(
        tmp_path,
        BASE
        + """\
prompts: {system: ""}
messages: [{id: 1, role: user, text: q}]
""",
    )
    assert texts(none) == [("user", "q")]


def test_r_sys_6_reserved_is_the_worst_case(tmp_path):
    r = assemble(
        tmp_path,
        BASE
        + """\
prompts: {system: "Base.", datetime_aware: false, custom_agent: "AGENT!!"}
messages: [{id: 1, role: user, text: q}]
""",
    )
    from ctxkit.loading.templates import BUILTIN

    worst = (
        "Base.\n\n"
        + BUILTIN["citation_guidance"][0]
        + "\n\n# Tools\n\n"
        + "\n\n".join(
            _guidance("search", "internal_search", "web_search", "open_url", "python", "generate_image", "memory")
        )
    )
    assert r.assembly.reserved == len(worst) // 4 + len("AGENT!!") // 4


# --- R-PROJ ---------------------------------------------------------------


PROJECT = (
    small(1000)
    + """\
files:
  - {id: p1, name: one.md, kind: text, text: "Ünïcode one", tokens: %d}
  - {id: p2, name: two.md, kind: text, text: "two", tokens: 10}
  - {id: pm, name: meta.pdf, kind: metadata_only, chars: 1234}
project_files: [p1, p2, pm]
messages:
  - {id: 1, role: user, text: q1}
  - {id: 2, role: assistant, text: a1}
  - {id: 3, role: user, text: q2}
"""
)


def test_r_proj_2_documents_message_and_r_proj_3_drift(tmp_path):
    r = assemble(tmp_path, PROJECT % 100)
    t = texts(r)[:-1]  # the last message is the citation reminder (R-SYS-3, R-REM-1)
    assert texts(r)[-1][1].startswith("<system-reminder>")
    docs = t[-3][1]
    assert docs.startswith(
        "Here are some documents provided for context, they may not all "
        'be relevant:\n{\n  "documents": [\n    {\n      "document": 1,'
    )
    assert '"contents": "Ünïcode one"' in docs
    assert json.loads(docs.split("\n", 1)[1])["documents"][1] == {"document": 2, "title": "two.md", "contents": "two"}
    assert 'file_id="pm" filename="meta.pdf" (~1,234 chars)' in t[-2][1]
    assert t[-1] == ("user", "q2")
    assert budget_report(r)["segments"][3]["tokens"] == 110 + r.assembly.meter.text(t[-2][1])


# No base prompt and no agent: reserved is 0 (R-SYS-6), so the threshold is window × 0.6.
NO_BASE = """\
model: {provider: openai, name: test-model, max_input_tokens: %d}
tokenizer: approx
settings: {safety_margin: 0}
prompts: {system: "", datetime_aware: false}
files:
  - {id: p1, name: one.md, kind: text, text: "one", tokens: %d}
  - {id: p2, name: two.md, kind: text, text: "two", tokens: 10}
project_files: [p1, p2]
messages: [{id: 1, role: user, text: q}]
"""


def test_r_proj_1_total_at_the_threshold_injects_nothing(tmp_path):
    """R-PROJ-1: 590 + 10 = 600 = 1000 × 0.6: not below the threshold, so none is injected."""
    r = assemble(tmp_path, NO_BASE % (1000, 590))
    assert r.assembly.reserved == 0
    assert r.assembly.project.documents is None
    assert fates(r)["project:p1"] == ("search_filter", "R-PROJ-1")
    assert fates(r)["project:p2"] == ("search_filter", "R-PROJ-1")


def test_r_proj_1_total_below_the_threshold_injects_all(tmp_path):
    """R-PROJ-1: 589 + 10 = 599 < 600: both documents go into the one documents message."""
    r = assemble(tmp_path, NO_BASE % (1000, 589))
    assert fates(r)["project:p1"] == ("kept", "R-PROJ-2")
    documents = r.assembly.project.documents
    assert documents is not None and r.assembly.meter.of(documents) == 599


@pytest.mark.parametrize(("p1", "injected"), [(591, True), (592, False)])
def test_r_proj_1_fractional_threshold(tmp_path, p1, injected):
    """R-PROJ-1: 1003 × 0.6 = 601.8 exactly; 601 tokens fit under it, 602 do not."""
    r = assemble(tmp_path, NO_BASE % (1003, p1))
    assert (r.assembly.project.documents is not None) is injected


@pytest.mark.parametrize(("p1", "injected"), [(0, True), (1, False)])
def test_r_proj_1_threshold_is_exact_decimal(tmp_path, p1, injected):
    """R-PROJ-1 + R-FIX-3: 100 × 0.07 is exactly 7 (binary floats give 7.000000000000001, under
    which a 7-token project would wrongly fit)."""
    body = (NO_BASE % (100, p1)).replace("safety_margin: 0}", "safety_margin: 0, project_files_max_ratio: 0.07}")
    body = body.replace("tokens: 10}", "tokens: 6}")
    r = assemble(tmp_path, body)
    assert (r.assembly.project.documents is not None) is injected


def test_r_proj_1_without_vector_db_becomes_read_file_list(tmp_path):
    body = (PROJECT % 5000).replace("settings: {safety_margin: 0}", "settings: {safety_margin: 0, vector_db: false}")
    assert "vector_db: false" in body
    r = assemble(tmp_path, body)
    t = texts(r)
    assert 'file_id="p1" filename="one.md"' in t[-2][1]
    assert 'file_id="pm"' in t[-2][1]
    assert "Here are some documents" not in json.dumps(t)


# --- R-ASM ----------------------------------------------------------------


def test_r_asm_1_available_tokens_exact_decimal(tmp_path):
    r = assemble(
        tmp_path,
        """\
model: {provider: openai, name: m, max_input_tokens: 1000}
tokenizer: approx
settings: {safety_margin: 0.07}
messages: [{id: 1, role: user, text: q}]
""",
    )
    assert r.assembly.available == 930  # float arithmetic would give 929


def test_r_asm_2_fixed_parts_too_big_is_a_rule_error(tmp_path):
    with pytest.raises(
        RuleError,
        match=r"need \d+ tokens but only 10 are available.*largest: "
        r"system",
    ):
        assemble(
            tmp_path, small(10).replace('"S"', '"' + "x" * 200 + '"') + "messages: [{id: 1, role: user, text: q}]\n"
        )


def test_r_asm_3_last_user_must_fit(tmp_path):
    with pytest.raises(
        RuleError,
        match=r"need 500 tokens but the history budget is 99.*"
        r"the last user message \(500 tokens\)",
    ):
        assemble(tmp_path, small(100) + "messages: [{id: 1, role: user, text: q, tokens: 500}]\n")


def test_r_asm_3_no_user_message(tmp_path):
    with pytest.raises(RuleError, match="no user message"):
        assemble(tmp_path, small() + "messages: [{id: 1, role: assistant, text: a}]\n")


def test_r_asm_4_truncation_stops_at_first_misfit(tmp_path):
    r = assemble(
        tmp_path,
        small(60)
        + """\
messages:
  - {id: 1, role: user, text: a, tokens: 1}
  - {id: 2, role: assistant, text: b, tokens: 30}
  - {id: 3, role: user, text: c, tokens: 5}
  - {id: 4, role: assistant, text: d, tokens: 20}
  - {id: 5, role: user, text: e, tokens: 10}
""",
    )
    # budget 60 - 1 (system) = 59; tail 10; room 49: keeps 4 (20) and 3 (5), stops at 2 (30)
    # even though 1 (1 token) would still fit: break, not skip
    assert keys(r) == ["system", "3", "4", "5"]
    f = fates(r)
    assert f["2"] == ("truncated", "R-ASM-4") and f["1"] == ("truncated", "R-ASM-4")
    assert f["3"] == ("kept", "R-ASM-4")
    assert all(w.cacheable for w in r.assembly.messages[:3])


def test_r_asm_5_last_n_user_messages(tmp_path):
    r = assemble(
        tmp_path,
        small(settings="last_n_user_messages: 2")
        + """\
files: [{id: f, name: f.txt, kind: text, text: ff}]
messages:
  - {id: 1, role: user, text: one}
  - {id: 2, role: assistant, text: "1"}
  - {id: 3, role: user, text: two, files: [f]}
  - {id: 4, role: assistant, text: "2"}
  - {id: 5, role: user, text: three}
""",
    )
    assert keys(r) == ["system", "3#file0", "3", "4", "5"]
    assert fates(r)["1"] == ("last_n_cut", "R-ASM-5")


def test_r_asm_6_non_vision_images_charged_as_markers(tmp_path):
    r = assemble(
        tmp_path,
        small().replace("max_input_tokens: 10000", "max_input_tokens: 10000, supports_images: false")
        + """\
files: [{id: i, name: i.png, kind: image, tokens: 999}]
messages: [{id: 1, role: user, text: q, files: [i]}]
""",
    )
    marker = "[attached image \u2014 file_id: i \u2014 not shown: the current model does not support image input]"
    assert r.assembly.meter.of(r.assembly.segments[Segment.LAST_USER][0]) == 1 + len(marker) // 4
    assert r.payload.body["messages"][-1]["content"] == [
        {"type": "text", "text": "q"},
        {"type": "text", "text": marker},
    ]


def test_r_asm_7_final_order(tmp_path):
    r = assemble(
        tmp_path,
        small(prompts="custom_agent: AGENT, task: TASK")
        + """\
tools: [read_file, internal_search]
files:
  - {id: p, name: p.md, kind: text, text: P, tokens: 1}
  - {id: pm, name: pm.pdf, kind: metadata_only}
project_files: [p, pm]
messages:
  - {id: 1, role: user, text: q1}
  - {id: 2, role: assistant, text: a1}
  - {id: s, role: summary, parent: 1, summarizes_through: 1, text: SUM}
  - {id: 3, role: user, text: q2}
in_flight:
  - {role: assistant, tool_calls: [{id: c, name: internal_search, args: {}}]}
  - {role: tool, tool_call_id: c, text: r}
""",
    )
    assert keys(r) == [
        "system",
        "s",
        "2",
        "custom_agent",
        "project#documents",
        "project#read_file",
        "3",
        "in_flight#0",
        "in_flight#1",
        "reminder",
    ]


def test_r_asm_8_orphan_tool_results_dropped(tmp_path):
    r = assemble(
        tmp_path,
        small(60)
        + """\
messages:
  - {id: 1, role: user, text: q, tokens: 1}
  - id: 2
    role: assistant
    text: ans
    tokens: 2
    tool_calls: [{id: c, name: t, args: {}, tokens: 40}]
  - {id: 3, role: user, text: q2, tokens: 1}
""",
    )
    # room = 59 - 1: keeps the answer (2) and the result (20), stops at the call (40)
    assert keys(r) == ["system", "2", "3"]
    assert fates(r)["2#result0"] == ("orphan", "R-ASM-8")


def test_r_asm_9_budget_warns_when_the_request_as_sent_exceeds_the_window(tmp_path):
    """R-ASM-9: the contents fit (system 1 + question 1 of 8 tokens), but the request as sent
    (role names, framing, the model name) cannot fit in 8 tokens however it is counted."""
    from .conftest import ctxkit

    path = write(tmp_path, small(8) + "messages: [{id: 1, role: user, text: q}]\n")
    r = ctxkit("budget", str(path), "--format", "json")
    data = json.loads(r.out)
    assert data["used_tokens"] == 2
    assert data["wire_tokens"] > 8
    assert f"warning: the request as sent counts {data['wire_tokens']} tokens (wire_tokens)" in r.err
    assert "more than the window of 8" in r.err


# --- R-FILE ---------------------------------------------------------------


FILES = """\
files:
  - {id: fa, name: a.txt, kind: text, text: aaaa, tokens: 100, chars: 1500}
  - {id: fb, name: b.txt, kind: text, text: bbbb, tokens: 40}
messages:
  - {id: 1, role: user, text: q1, tokens: 1, files: [fa]}
  - {id: 2, role: assistant, text: a1, tokens: 1}
  - {id: 3, role: user, text: q2, tokens: 1, files: [fb]}
  - {id: 4, role: assistant, text: a2, tokens: 1}
  - {id: 5, role: user, text: q3, tokens: 1}
"""


def test_r_file_1_only_with_read_file_tool(tmp_path):
    r = assemble(tmp_path, small(60) + FILES)
    assert not r.assembly.segments[Segment.FORGOTTEN_FILES]


def test_r_file_2_truncated_attachment_listed(tmp_path):
    r = assemble(tmp_path, small(110) + "tools: [read_file]\n" + FILES)
    listing = r.assembly.segments[Segment.FORGOTTEN_FILES][0].text
    assert listing.splitlines()[1:] == ['- file_id="fa" filename="a.txt" (~1,500 chars)']
    assert keys(r) == ["system", "1", "2", "3#file0", "3", "4", "forgotten_files", "5"]
    assert fates(r)["1#file0"] == ("forgotten", "R-FILE-1")


def test_r_file_3_converging_eviction(tmp_path):
    # room 78: the newest 44 tokens fit, then the list does not: the oldest kept
    # messages are evicted until it does, and evicted fb joins the list
    r = assemble(tmp_path, small(80) + "tools: [read_file]\n" + FILES)
    listing = r.assembly.segments[Segment.FORGOTTEN_FILES][0].text
    assert [line.split('"')[1] for line in listing.splitlines()[1:]] == ["fa", "fb"]
    b = budget_report(r)
    assert b["used_tokens"] <= b["available_tokens"]
    assert fates(r)["3#file0"][0] == "forgotten"
    assert "3#file0" not in keys(r)


# Five forgotten text files, each listed as `- file_id="a" filename="a.txt" (~1,000 chars)`
# (45 characters). With the 156-character header, a list of n entries has 156 + 46·n
# characters, so approx counts (156 + 46·n) // 4 = 39, 50, 62, 73, 85, 96 tokens for n = 0…5.
_FILE_LINES = "\n".join(
    f"  - {{id: {x}, name: {x}.txt, kind: text, text: x, tokens: 100, chars: 1000}}" for x in "abcde"
)
MANY_FILES = (
    """\
tools: [read_file]
files:
"""
    + _FILE_LINES
    + """
messages:
  - {id: 1, role: user, text: q1, tokens: 1, files: [a, b, c, d, e]}
  - {id: 2, role: assistant, text: a1, tokens: 1}
  - {id: 3, role: user, text: q3, tokens: 1}
"""
)


@pytest.mark.parametrize(
    ("window", "listed"),
    [
        (64, "ab"),  # room 62: two entries fit exactly, three (73) do not
        (63, "a"),  # room 61: one entry (50)
        (75, "abc"),  # room 73: three entries fit exactly, four (85) do not
        (41, ""),  # room 39: not even one entry (50): no list at all
    ],
)
def test_r_file_3_list_cut_when_nothing_left(tmp_path, window, listed):
    """R-FILE-3: room = window − 1 (system "S") − 1 (q3). Truncation keeps q1 and a1 (the files
    cost 100 each); the full list (96) does not fit, so both are evicted, and the list keeps
    the longest prefix of entries that fits, with a warning counting the rest."""
    r = assemble(tmp_path, small(window) + MANY_FILES)
    assert keys(r) == ["system", *(["forgotten_files"] if listed else []), "3"]
    assert fates(r)["1"] == fates(r)["2"] == ("truncated", "R-FILE-3")
    listing = r.assembly.segments[Segment.FORGOTTEN_FILES]
    lines = listing[0].text.splitlines()[1:] if listing else []
    assert lines == [f'- file_id="{x}" filename="{x}.txt" (~1,000 chars)' for x in listed]
    left_out = 5 - len(listed)
    assert r.assembly.record.warnings == [  # (R-ASM-9 may add its own: the framing does not fit)
        f"{left_out} forgotten file(s) were left out of the read_file list: "
        "it does not fit the history budget (R-FILE-3)"
    ]


# --- R-REM ----------------------------------------------------------------


def _reminder(r) -> str:
    return str(r.payload.body["messages"][-1]["content"])


def test_r_rem_1_priorities(tmp_path):
    loop = """\
in_flight:
  - {role: assistant, tool_calls: [{id: c, name: %s, args: {}}]}
  - {role: tool, tool_call_id: c, text: r}
"""
    base = (
        BASE + "tools: [web_search, open_url, generate_image]\nprompts: {task: TASK}\n"
        "messages: [{id: 1, role: user, text: q}]\n"
    )
    assert "image was generated" in _reminder(assemble(tmp_path, base + loop % "generate_image"))
    assert "open_url" in _reminder(assemble(tmp_path, base + loop % "web_search"))
    assert _reminder(assemble(tmp_path, base)).startswith("<system-reminder>\nTASK\n</system")
    mixed = _reminder(assemble(tmp_path, base.replace("open_url, ", "") + loop % "web_search"))
    assert mixed == (
        "<system-reminder>\nTASK\n\nRemember to cite your sources with their "
        "numbers in square brackets.\n</system-reminder>"
    )


def test_r_rem_1_nothing_means_no_reminder(tmp_path):
    r = assemble(tmp_path, small() + "messages: [{id: 1, role: user, text: q}]\n")
    assert keys(r)[-1] == "1"


def test_r_rem_2_reminder_last_and_wrapped(tmp_path):
    r = assemble(tmp_path, BASE + "prompts: {task: '  T  '}\nmessages: [{id: 1, role: user, text: q}]\n")
    assert r.payload.body["messages"][-1] == {"role": "user", "content": "<system-reminder>\nT\n</system-reminder>"}
    assert r.assembly.meter.of(r.assembly.messages[-1]) == len("<system-reminder>\nT\n</system-reminder>") // 4


# --- R-TR (OpenAI) --------------------------------------------------------

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="


def test_r_tr_1_openai_shapes(tmp_path):
    r = assemble(
        tmp_path,
        small()
        + f"""\
files: [{{id: i, name: i.png, kind: image, data: "{PNG}"}}]
messages:
  - {{id: 1, role: user, text: look, files: [i]}}
  - id: 2
    role: assistant
    text: ""
    tool_calls: [{{id: c, name: t, args: {{"q": "é"}}}}]
  - {{id: 3, role: user, text: q2}}
""",
    )
    msgs = r.payload.body["messages"]
    assert msgs[1]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "text", "text": "[attached image \u2014 file_id: i]"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + PNG}},
    ]
    assert msgs[2] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c", "type": "function", "function": {"name": "t", "arguments": '{"q": "é"}'}}],
    }
    assert r.payload.body["model"] == "test-model"


def test_r_tr_1_no_system_message_models(tmp_path):
    r = assemble(tmp_path, small().replace("test-model", "o1-mini") + "messages: [{id: 1, role: user, text: q}]\n")
    assert r.payload.body["messages"][0] == {"role": "user", "content": "Formatting re-enabled. S"}
    assert any("takes no system message" in w for w in r.warnings)


def test_r_tr_5_non_vision_marker(tmp_path):
    r = assemble(
        tmp_path,
        small()
        .replace("test-model", "o3-mini")
        .replace("max_input_tokens: 10000", "max_input_tokens: 10000, supports_images: false")
        + f"""\
files: [{{id: i, name: i.png, kind: image, data: "{PNG}"}}]
messages: [{{id: 1, role: user, text: q, files: [i]}}]
""",
    )
    # R-TR-1: a user message with images keeps content parts when its images become markers
    content = r.payload.body["messages"][-1]["content"]
    assert [p["type"] for p in content] == ["text", "text"]
    assert content[0]["text"] == "q" and "not shown" in content[1]["text"]
    assert ("image_marker", "R-TR-5") in fates(r).values()


@pytest.mark.parametrize(
    "name,expected",
    [
        ("o3-mini", True),
        ("azure/gpt-5.1", True),
        ("gpt-5.2", True),
        ("o1", True),
        ("gpt-5-mini", True),
        ("my o4 model", True),
        ("gpt-4o", False),
        ("o10", False),
        ("gpt-50", False),
        ("pro1", False),
    ],
)
def test_r_tr_7_reasoning_model_names(name, expected):
    assert is_reasoning_model(name) is expected


def test_r_tr_7_prefix_only_for_openai_family(tmp_path):
    body = small().replace("test-model", "o3") + "messages: [{id: 1, role: user, text: q}]\n"
    assert texts(assemble(tmp_path, body))[0][1] == "Formatting re-enabled. S"


def test_r_tr_8_cache_prefix_reported(tmp_path):
    r = assemble(
        tmp_path,
        small(prompts="custom_agent: AGENT")
        + """\
messages:
  - {id: 1, role: user, text: q1, tokens: 3}
  - {id: 2, role: assistant, text: a1, tokens: 4}
  - {id: 3, role: user, text: q2}
""",
    )
    assert budget_report(r)["cache_prefix"] == {"messages": 3, "tokens": 1 + 3 + 4}


def test_r_tr_9_tool_definitions_translated_and_counted(tmp_path):
    """R-TR-9: a full definition becomes an OpenAI function tool; a tool listed by name only
    is not a definition. Its cost is the compact JSON counted (approx: 158 chars // 4 = 39),
    reported but not taken from the history budget (1000 − 1 for the system prompt)."""
    r = assemble(
        tmp_path,
        small(1000)
        + """\
tools:
  - read_file
  - {name: get_weather, description: Current weather, parameters: {type: object, properties: {city: {type: string}}}}
messages: [{id: 1, role: user, text: q}]
""",
    )
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]
    assert r.payload.body["tools"] == tools
    compact = (
        '[{"type":"function","function":{"name":"get_weather","description":"Current weather",'
        '"parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]'
    )
    assert len(compact) == 158
    assert budget_report(r)["tool_definitions_tokens"] == 39
    assert r.assembly.history_budget == 999


# --- regressions found in review -----------------------------------------


def test_r_fix_1_ids_never_collide_with_generated_or_part_keys(tmp_path):
    r = assemble(
        tmp_path,
        small(100)
        + """\
messages:
  - {id: system, role: user, text: "hi", tokens: 1}
  - {id: reminder, role: assistant, text: "hello", tokens: 1}
  - {id: "u2#file0", role: user, text: "x", tokens: 1}
  - {id: u2, role: user, text: "q2", tokens: 1}
""",
    )
    f = fates(r)
    assert f["system"] == ("kept", "R-ASM-4") and f["reminder"] == ("kept", "R-ASM-4")
    assert [m["content"] for m in r.payload.body["messages"]] == ["S", "hi", "hello", "x", "q2"]


def test_r_sys_3_just_ran_web_search_implies_citations(tmp_path):
    r = assemble(
        tmp_path,
        BASE
        + """\
prompts: {system: "Base.", datetime_aware: false}
tools: [web_search]
turn: {just_ran_web_search: true}
messages: [{id: 1, role: user, text: q}]
""",
    )
    assert "Cite the documents" in texts(r)[0][1]
    assert "Remember to cite" in texts(r)[-1][1]


def test_r_sys_4_blank_guidance_gives_no_tools_header(tmp_path):
    r = assemble(
        tmp_path,
        BASE
        + """\
prompts: {system: "Base.", datetime_aware: false}
tools: [python, memory]
templates: {tool_guidance.python: "", tool_guidance.memory: ""}
messages: [{id: 1, role: user, text: q}]
""",
    )
    assert texts(r)[0][1] == "Base."


def test_r_conv_2_empty_assistant_message_has_a_row(tmp_path):
    r = assemble(
        tmp_path,
        small()
        + """\
messages:
  - {id: u1, role: user, text: q}
  - {id: a1, role: assistant, text: ""}
  - {id: u2, role: user, text: q2}
""",
    )
    assert fates(r)["a1"] == ("fixup", "R-CONV-2")
    assert "a1" not in keys(r)
