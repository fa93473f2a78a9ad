"""Fixture text never drives the terminal (issue 19 item 13): escape sequences in any text
field (titles, hyperlinks, colours, screen clearing) come out as visible escapes in every
human format and in the warning and error lines; JSON escapes them as JSON does."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxkit.output import dumps, printable

from .conftest import ctxkit

# What reached the terminal: OSC title and hyperlink (ended by BEL or ST), CSI colour and
# clear screen, the one-byte C1 CSI, a carriage return that overwrites the line, DEL.
SEQUENCES = ["\x1b]0;PWNED\x07", "\x1b]8;;http://x\x1b\\", "\x1b[31m", "\x1b[2J", "\x9b31m", "\r", "\x7f", "\x00"]
SEQUENCE_PARTS = ["\x1b", "]", "[", "8", ";", "\x07", "\x9b", "\r", "\x00", "\x7f", "\\", "m"]
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
COMMANDS = [
    ["assemble", "--format", "text"],
    ["assemble"],
    ["assemble", "--format", "yaml"],
    ["explain"],
    ["budget"],
    ["compress"],
    ["compress", "--format", "json"],
    ["replay"],
    ["replay", "--format", "json"],
    ["diff", "--provider", "openai", "--provider", "anthropic"],
]


def hostile(seq: str) -> dict[str, Any]:
    """Every text field a report may show carries `seq`."""
    return {
        "ctxkit": 1,
        "name": f"title{seq}",
        "now": "2026-03-14T09:30:00Z",
        "model": {"provider": "openai", "name": f"gpt{seq}", "max_input_tokens": 4000},
        "tokenizer": "approx",
        "prompts": {"custom_agent": f"agent{seq}", "task": f"task{seq}"},
        "tools": ["web_search", {"name": "lookup", "description": f"d{seq}"}],
        "files": [{"id": f"f{seq}", "name": f"n{seq}.txt", "kind": "text", "text": f"file{seq}"}],
        "messages": [
            {"id": f"u{seq}1", "role": "user", "text": f"hi{seq}there", "files": [f"f{seq}"]},
            {
                "id": "a1",
                "role": "assistant",
                "text": f"answer{seq}",
                "tool_calls": [{"id": f"c{seq}", "name": "lookup", "args": {"q": f"q{seq}"}, "response": f"r{seq}"}],
            },
            {"id": "u2", "role": "user", "text": f"again{seq}"},
        ],
        "in_flight": [
            {"role": "assistant", "tool_calls": [{"id": "c9", "name": "lookup", "args": {f"k{seq}": seq}}]},
            {"role": "tool", "tool_call_id": "c9", "text": f"result{seq}"},
        ],
    }


def assert_no_control_reaches_the_terminal(path: Path, command: list[str]) -> None:
    run = ctxkit(command[0], str(path), *command[1:], expect=None)
    assert run.code in (0, 1), str(run)
    for stream in (run.out, run.err):
        assert not CONTROL.search(stream.replace("\n", "").replace("\t", "")), (command, stream[:2000])


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
@pytest.mark.parametrize("seq", SEQUENCES, ids=repr)
def test_escape_sequences_in_fixture_text_never_reach_the_terminal(
    tmp_path: Path, command: list[str], seq: str
) -> None:
    path = tmp_path / "fx.json"
    path.write_text(json.dumps(hostile(seq)), encoding="utf-8")
    assert_no_control_reaches_the_terminal(path, command)


def test_text_formats_show_the_sequence_as_an_escape(tmp_path: Path) -> None:
    """Visible, not dropped: the reader sees that the fixture holds an escape sequence."""
    path = tmp_path / "fx.json"
    path.write_text(json.dumps(hostile("\x1b]0;PWNED\x07")), encoding="utf-8")
    text = ctxkit("assemble", str(path), "--format", "text").out
    assert text.startswith("# title\\x1b]0;PWNED\\x07 — openai gpt\\x1b]0;PWNED\\x07,")
    assert "hi\\x1b]0;PWNED\\x07there" in text
    assert ctxkit("replay", str(path)).out.startswith("title\\x1b]0;PWNED\\x07: openai")
    assert ctxkit("compress", str(path)).out.startswith("# title\\x1b]0;PWNED\\x07\n")


def test_printable_keeps_newlines_tabs_and_every_printable_character() -> None:
    assert printable("a\tb\nc é 🙂 — \u200d") == "a\tb\nc é 🙂 — \u200d"
    assert printable("\x1b[2J\r\x9b\x7f\x00") == "\\x1b[2J\\r\\x9b\\x7f\\x00"


def test_json_writer_escapes_c1_controls_and_refuses_non_finite_numbers() -> None:
    """Issue 19 items 13 and 14: U+009B is written `\\u009b` (the same JSON value), and
    `Infinity`/`NaN`, which are not JSON, are refused instead of written."""
    assert dumps({"t": "a\x9bb\x7f"}) == '{\n  "t": "a\\u009bb\\u007f"\n}\n'
    assert json.loads(dumps({"t": "a\x9bb"})) == {"t": "a\x9bb"}
    for bad in (float("inf"), float("-inf"), float("nan")):
        with pytest.raises(ValueError):
            dumps({"cost": bad})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seq=st.text(st.sampled_from(SEQUENCE_PARTS), min_size=1),
    command=st.sampled_from(COMMANDS),
)
def test_generated_escape_sequences_in_every_text_field(tmp_path: Path, seq: str, command: list[str]) -> None:
    path = tmp_path / "fx.json"
    path.write_text(json.dumps(hostile(seq)), encoding="utf-8")
    assert_no_control_reaches_the_terminal(path, command)
