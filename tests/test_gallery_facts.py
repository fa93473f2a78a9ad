"""Each gallery fixture's one fact, asserted independently of the golden snapshots.

The snapshots record whatever ctxkit prints; these tests say what it must print. Each
fixture in fixtures/ has one test here, named after it, whose docstring is the fact as
fixtures/README.md states it, and whose expectations are worked out by hand from the
fixture and the rules (the arithmetic is in the comments). They read only the
command-line contract: the payload JSON and the JSON reports.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

import pytest

from .conftest import FIXTURES, GALLERY, ctxkit


def run_json(*args: str, expect: int = 0) -> Any:
    return json.loads(ctxkit(*args, expect=expect).out)


def payload(stem: str, *options: str) -> dict[str, Any]:
    body: dict[str, Any] = run_json("assemble", str(FIXTURES / f"{stem}.yaml"), *options)
    return body


def explain(stem: str) -> dict[str, tuple[str, str]]:
    """Rows with an id: id → (fate, rule); the last row wins for ids with several rows."""
    rows = run_json("explain", str(FIXTURES / f"{stem}.yaml"), "--format", "json")
    return {str(r["id"]): (r["fate"], r["rule"]) for r in rows if r["id"] is not None}


def compress(stem: str, *options: str) -> dict[str, Any]:
    report: dict[str, Any] = run_json("compress", str(FIXTURES / f"{stem}.yaml"), "--format", "json", *options)
    return report


@cache
def template(name: str) -> str:
    texts = run_json("templates", "--format", "json")
    return str(texts[name]["text"])


def reminder(*names: str, task: str | None = None) -> str:
    """A reminder as sent: its parts stripped, joined by a blank line, wrapped (R-REM-1, R-REM-2)."""
    parts = ([task] if task else []) + [template(n).strip() for n in names]
    return "<system-reminder>\n" + "\n\n".join(parts) + "\n</system-reminder>"


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if "text" in p)
    return content or ""


def approx(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


def test_plain_chat():
    """A list without parents is a chain: the default system prompt, then the three messages in file order."""
    body = payload("plain_chat")
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "user"]
    assert [m["content"] for m in body["messages"][1:]] == [
        "What is a context window?",
        "The amount of text, in tokens, a model can read in one request.",
        "And why does it matter for long chats?",
    ]


def test_edited_branch():
    """The later edit m3b is the default leaf: it is the question sent, and the first branch (m3, m4) is not."""
    body = payload("edited_branch")
    assert body["messages"][-1] == {"role": "user", "content": "In German please."}
    sent = {text_of(m) for m in body["messages"]}
    assert "In French please." not in sent and "Les remboursements sont possibles sous 30 jours." not in sent
    assert "m3" not in explain("edited_branch")  # off-branch messages have no row


def test_summary():
    """The summary replaces m1 and m2 and opens the history; notes.txt, attached to m1, is offered for read_file."""
    rows = explain("summary")
    assert rows["m1"] == rows["m2"] == ("summarized", "R-TREE-3")
    body = payload("summary", "--provider", "openai")
    assert body["messages"][1] == {
        "role": "assistant",
        "content": "The user asked for a Q3 plan (attached notes.txt); the assistant proposed export, "
        "rounding and hiring.",
    }
    # a summarized file's size is unknown: ~0 chars (R-TREE-3, R-FILE-2)
    assert any('file_id="notes-1" filename="notes.txt" (~0 chars)' in text_of(m) for m in body["messages"])


def test_attached_files():
    """Attachments are pinned just before their own message, in attachment order; the image stays on u1."""
    body = payload("attached_files")
    texts = [text_of(m) for m in body["messages"]]
    u1, u2 = texts.index("Here are the sales numbers.\n[attached image \u2014 file_id: img-1]"), len(texts) - 1
    assert texts[u1 - 1].startswith("File: sales.csv\n") and texts[u1 - 1].endswith("\nEnd of File")
    assert "contract.pdf" in texts[u2 - 2] and "f-pdf" in texts[u2 - 2]  # metadata-only notice
    assert "blank.txt" in texts[u2 - 1]  # the empty file's "unavailable" notice
    assert texts[u2] == "Compare with the contract terms."
    assert [p["type"] for p in body["messages"][u1]["content"]] == ["text", "text", "image_url"]


def test_project_files():
    """The project documents and the project's read_file list sit just before the last question, whose message
    carries the project image.
    """
    body = payload("project_files")
    texts = [text_of(m) for m in body["messages"]]
    last = texts.index("Who approves travel?\n[attached image \u2014 file_id: p-logo]")
    assert texts[last - 2].startswith("Here are some documents provided for context")
    assert json.loads(texts[last - 2].split("\n", 1)[1])["documents"][0]["title"] == "handbook.md"
    assert 'file_id="p-scan" filename="scan.pdf" (~120,000 chars)' in texts[last - 1]
    assert last == len(texts) - 2  # only the reminder follows (the documents must be cited)


def test_project_too_big():
    """6000 tokens of project text reach the project share (at most 8000 × 0.6 = 4800): nothing is injected, the
    files become a search filter.
    """
    rows = explain("project_too_big")
    assert rows["p-spec"] == rows["p-img"] == ("search_filter", "R-PROJ-1")
    texts = [text_of(m) for m in payload("project_too_big")["messages"]]
    assert not any("Here are some documents" in t or "diagram.png" in t for t in texts)


def test_project_read_file_list():
    """Without a vector store the too-big project (7200 ≥ 4800 tokens) is offered as a read_file list instead."""
    texts = [text_of(m) for m in payload("project_read_file_list")["messages"]]
    listing = texts[-2]
    assert listing.splitlines()[1:] == [
        '- file_id="0b7d2c4e-1111-4000-8000-00000000000a" filename="spec.md" (~24,000 chars)',
        '- file_id="0b7d2c4e-1111-4000-8000-00000000000b" filename="glossary.md" (~4,800 chars)',
    ]
    assert texts[-1] == "Define 'ledger export' using the glossary."


def test_forgotten_files():
    """The 1500-token incident log does not fit and is listed for read_file; the newer 900-token runbook stays
    pinned.
    """
    # available floor(2500 × 0.9) = 2250; system 30 chars = 7 tokens; last question 6: room 2237.
    # Newest first: 10 + 5 + 900 (runbook) + 10 + 6 = 931, then the log (1500) would make 2431.
    rows = explain("forgotten_files")
    assert rows["9a1f0000-0000-4000-8000-000000000001"][0] == "forgotten"
    assert rows["9a1f0000-0000-4000-8000-000000000002"][0] == "kept"
    texts = [text_of(m) for m in payload("forgotten_files")["messages"]]
    assert texts[-2].splitlines()[1:] == [
        '- file_id="9a1f0000-0000-4000-8000-000000000001" filename="incident-log.txt" (~6,000 chars)'
    ]


def test_truncation():
    """A 200-token window keeps the newest contiguous history: messages 2 to 4, not message 1."""
    # no margin; system "Be brief." = 2 tokens; last question 20: room 178.
    # Newest first: 50 + 30 + 60 = 140, then message 1 (40) would make 180 > 178: stop.
    body = payload("truncation")
    assert [m["content"] for m in body["messages"]] == ["Be brief.", "first answer", "second", "second answer", "third"]
    assert explain("truncation")["1"] == ("truncated", "R-ASM-4")


def test_last_n_user_messages():
    """With last_n_user_messages 2 the history starts at the second-to-last question: "one" and "1" are cut first."""
    body = payload("last_n_user_messages")
    assert [m["content"] for m in body["messages"][1:]] == ["two", "2", "three"]
    rows = explain("last_n_user_messages")
    assert rows["1"] == rows["2"] == ("last_n_cut", "R-ASM-5")


def test_tool_loop_in_flight():
    """A web search just ran in this turn and open_url is available: the reminder is the open-url reminder, after
    the in-flight call and its result.
    """
    body = payload("tool_loop_in_flight")
    messages = body["messages"]
    assert messages[-1] == {"role": "user", "content": reminder("reminder.open_url")}
    assert messages[-3]["tool_calls"][0]["id"] == "call_9"
    assert messages[-2]["role"] == "tool" and messages[-2]["tool_call_id"] == "call_9"
    assert messages[-4] == {"role": "user", "content": "Make it monthly by region"}


def test_tool_placeholders():
    """Calls are grouped by turn (Paris and Berlin, then Rome), each result replaced by the placeholder; the answer
    text comes last.
    """
    body = payload("tool_placeholders")
    after_question = body["messages"][2:-1]
    placeholder = template("tool_result_placeholder")
    assert [(m["role"], [c["id"] for c in m.get("tool_calls", [])]) for m in after_question] == [
        ("assistant", ["call_p", "call_b"]),
        ("tool", []),
        ("tool", []),
        ("assistant", ["call_r"]),
        ("tool", []),
        ("assistant", []),
    ]
    assert {m["content"] for m in after_question if m["role"] == "tool"} == {placeholder}
    assert after_question[-1]["content"] == "Paris 18°C, Berlin 12°C, Rome 24°C: Rome is warmest."
    assert [t["function"]["name"] for t in body["tools"]] == ["get_weather"]


def test_image_generation():
    """The earlier image generation is replayed as its file ids, and because an image was just generated the
    image-generation reminder is chosen.
    """
    messages = payload("image_generation")["messages"]
    replay = next(m for m in messages if m.get("tool_call_id") == "call_img")
    assert json.loads(replay["content"]) == [
        {"file_id": "img-7", "revised_prompt": "A tall striped lighthouse at dusk, warm light"}
    ]
    assert messages[-1] == {"role": "user", "content": reminder("reminder.image_generation")}


def test_non_vision_images():
    """o3-mini takes no images: both, the budget-only one included, are sent as text markers and charged as such."""
    body = payload("non_vision_images")
    marker = template("image.non_vision_marker")
    last = body["messages"][-1]
    expected = ["What is in these?", marker.replace("{id}", "img-a"), marker.replace("{id}", "img-b")]
    assert text_of(last) == "\n".join(expected)
    assert "image_url" not in json.dumps(last)
    budget = run_json("budget", str(FIXTURES / "non_vision_images.yaml"), "--format", "json")
    last_user = next(s for s in budget["segments"] if s["name"] == "last_user")
    # the text (17 chars: 4 tokens, cl100k) is counted by the tokenizer; the markers replace 85 and 765
    assert last_user["tokens"] < 85 + 765


def test_image_cap_azure():
    """With a cap of 2 the two newest images (i2, i3) are sent; i1 is dropped and a final notice says so."""
    messages = payload("image_cap_azure")["messages"]
    notice = template("image.drop_notice").replace("{count}", "1")
    assert messages[-1] == {"role": "user", "content": f"<system-reminder>\n{notice}\n</system-reminder>"}
    first = next(m for m in messages if text_of(m).startswith("First screenshot"))
    assert first["content"] == "First screenshot"  # no image parts left
    third = next(m for m in messages if text_of(m).startswith("Two more"))
    label = template("image.label")
    assert text_of(third) == "\n".join(["Two more", label.replace("{id}", "i2"), label.replace("{id}", "i3")])
    # i2 has no bytes (budget-only): its label alone; i3 is sent as an image
    assert [p["type"] for p in third["content"]].count("image_url") == 1


def test_reminder_last_cycle():
    """Cycle 5 of 6 is the last: the reminder is the task, the last-cycle notice and, since a search ran, the
    citation reminder.
    """
    task = "You are helping the sales team qualify leads."
    messages = payload("reminder_last_cycle")["messages"]
    assert messages[-1]["content"] == reminder("reminder.last_cycle", "reminder.citation", task=task)


def test_reminder_generated_files():
    """Files were generated this turn: the reminder is the generated-files reminder alone."""
    messages = payload("reminder_generated_files")["messages"]
    assert messages[-1]["content"] == reminder("reminder.generated_files")


def test_reminder_none():
    """No search, no task, no generated files: there is no reminder, the (Ollama) body ends with the question."""
    body = payload("reminder_none")
    assert body["messages"][-1] == {"role": "user", "content": "Tell me a joke about tokens."}
    assert not any(text_of(m).startswith("<system-reminder>") for m in body["messages"])


def test_custom_agent():
    """The custom agent prompt is not in the system instruction: it is sent as user text just before the last
    question.
    """
    body = payload("custom_agent")
    agent = "You are Ledger, the finance team's analyst. Answer with tables."
    assert agent not in json.dumps(body["systemInstruction"])
    last = body["contents"][-1]  # Gemini merges the two consecutive user contents
    assert last["role"] == "user"
    assert [p["text"] for p in last["parts"]] == [agent, "And April?"]


def test_replaced_system_prompt():
    """The agent prompt replaces the base system prompt, its placeholders filled; no agent message, no
    user-information section.
    """
    body = payload("replaced_system_prompt")
    system = "\n".join(b["text"] for b in body["system"])
    # 2026-03-14 is a Saturday (R-SYS-2's fixed format)
    assert system == "You are Ledger. Today is Saturday, March 14, 2026. " + template("reminder_tag_description")
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Who are you?"}]}]


def test_budget_exhaustion():
    """The last question (5000 tokens) is over the history budget: exit 1, naming 5000 and 938."""
    # available floor(1000 × 0.95) = 950; the system prompt is "You are terse." plus the date
    # line (the prompt is date-aware): 14 + 2 + 34 = 50 chars = 12 tokens: budget 938
    system = "You are terse.\n\n" + template("datetime_line").replace("{datetime}", "Saturday, March 14, 2026")
    assert approx(system) == 12
    r = ctxkit("assemble", str(FIXTURES / "budget_exhaustion.yaml"), expect=1)
    assert "need 5000 tokens but the history budget is 938 (R-ASM-3)" in r.err


def test_fixed_parts_too_big():
    """The system prompt alone is larger than the 38 available tokens (40 × 0.95): exit 1."""
    r = ctxkit("assemble", str(FIXTURES / "fixed_parts_too_big.yaml"), expect=1)
    assert re.search(r"need \d+ tokens but only 38 are available \(R-ASM-2\); largest: system", r.err), r.err


def test_compress_below_threshold():
    """History 750 tokens, exactly at the threshold floor((1010 − 10) × 0.75) = 750: no compression."""
    # 200 + 200 + 100 + (130 + 20 call arguments) + 40 + 60 = 750; reserved = the agent prompt, 40 chars = 10
    report = compress("compress_below_threshold")
    assert (report["should_compress"], report["history_tokens"], report["threshold"]) == (False, 750, 750)


def test_compress_just_above():
    """History 751 tokens, one above the threshold of 750: compression is due."""
    report = compress("compress_just_above")
    assert (report["should_compress"], report["history_tokens"], report["threshold"]) == (True, 751, 750)


def test_compress_tool_heavy_tail():
    """The last answer alone (400 tokens) exceeds the recent budget (150), so the last exchange u3, a3 is kept; a1
    (no text) is skipped.
    """
    # history 100 + 40 + 50 + 100 + 60 + (100 + 300) = 750; recent budget floor(750 × 0.2) = 150
    report = compress("compress_tool_heavy_tail")
    assert (report["summarized"], report["kept"], report["skipped"]) == (["u1", "u2", "a2"], ["u3", "a3"], ["a1"])


def test_compress_progressive():
    """A summary already applies, so the request is progressive and carries the previous summary."""
    # 120 (summary) + 100 + (250 + 20) + 40 + 60 = 590 > floor((710 − 10) × 0.75) = 525
    report = compress("compress_progressive")
    assert (report["should_compress"], report["progressive"], report["history_tokens"]) == (True, True, 590)
    assert "The user is planning release v2.3" in report["request"][0]["content"]


def test_compress_two_branches():
    """The summary hangs off the other branch: not applied on the default branch, applied with --leaf a2."""
    # default leaf a2b (u2b is the later edit): 300 + 300 + 40 + 80 = 720, no summary
    default = compress("compress_two_branches")
    assert (default["progressive"], default["history_tokens"]) == (False, 720)
    # on a2's branch s1 (through a1, 60 tokens) applies: 60 + 50 + 150 = 260
    other = compress("compress_two_branches", "--leaf", "a2")
    assert (other["progressive"], other["history_tokens"]) == (True, 260)


def _readme_facts() -> dict[str, str]:
    text = (FIXTURES / "README.md").read_text(encoding="utf-8")
    return {stem: fact for stem, fact, _ in re.findall(r"^\| `([\w-]+)\.yaml` \| ([^|]+) \| ([^|]*) \|$", text, re.M)}


@pytest.mark.parametrize("path", GALLERY, ids=[p.stem for p in GALLERY])
def test_every_gallery_fixture_states_and_asserts_its_fact(path):
    test = globals().get(f"test_{path.stem}")
    assert test is not None, f"add test_{path.stem} to tests/test_gallery_facts.py: the fixture's one fact"
    fact = " ".join((test.__doc__ or "").split())
    assert _readme_facts().get(path.stem) == fact, "fixtures/README.md states the fact as the test's docstring"
