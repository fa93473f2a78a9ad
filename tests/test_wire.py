"""R-ASM-9: the request as sent must fit; `wire_tokens` is the R-RPL-4 re-count.

The fixture's stored counts say 1 token per message while each text counts 25
with `approx`: the budget fits, the payload as sent does not.
"""

from __future__ import annotations

import json

import pytest

from ctxkit.reports.budget import report as budget_report
from ctxkit.translate.items import prompt_items, prompt_tokens

from .conftest import GALLERY, ctxkit
from .helpers import assemble, assembled_or_skip, write

LONG = "x" * 100  # 25 approx tokens, stored as 1
OVER = f"""\
model: {{provider: openai, name: test-model, max_input_tokens: 100}}
tokenizer: approx
settings: {{safety_margin: 0.05}}
prompts: {{system: "S", datetime_aware: false}}
messages:
  - {{id: u1, role: user, text: "{LONG}", tokens: 1}}
  - {{id: a1, role: assistant, text: "{LONG}", tokens: 1}}
  - {{id: u2, role: user, text: "{LONG}", tokens: 1}}
  - {{id: a2, role: assistant, text: "{LONG}", tokens: 1}}
  - {{id: u3, role: user, text: "{LONG}", tokens: 1}}
"""
# system "S": 1 + 3 + 1 (role) = 5; each user message 25 + 3 + 1 = 29, each
# assistant 25 + 3 + 2 = 30; + 3 reply priming.
WIRE = 5 + 3 * 29 + 2 * 30 + 3


def test_r_asm_9_wire_tokens_is_the_prompt_items_sum(tmp_path):
    r = assemble(tmp_path, OVER)
    assert r.wire_tokens() == WIRE == prompt_tokens(prompt_items(r.payload, meter=r.assembly.meter))
    data = budget_report(r)
    assert data["used_tokens"] < data["available_tokens"]  # the budget believes it fits
    assert data["wire_tokens"] == WIRE
    assert data["over_window_tokens"] == WIRE - 100


def test_r_asm_9_the_re_count_tokenizes_no_text_twice(tmp_path, monkeypatch):
    """The request as sent re-reads the texts assembly counted (five equal messages, roles on
    every message): each distinct text is tokenized once per run, not once per reading."""
    from ctxkit.counting import measure

    seen: list[str] = []

    class Recording:
        def count(self, text: str) -> int:
            seen.append(text)
            return max(1, len(text) // 4)

    monkeypatch.setattr(measure, "get_counter", lambda name: Recording())
    r = assemble(tmp_path, OVER.replace("tokens: 1", "tokens: 25"))
    assert r.wire_tokens() == WIRE
    assert seen.count(LONG) == 1
    assert sorted(seen) == sorted(set(seen))


def test_r_asm_9_over_window_is_zero_when_it_fits(tmp_path):
    data = budget_report(assemble(tmp_path, OVER.replace("max_input_tokens: 100", "max_input_tokens: 1000")))
    assert data["over_window_tokens"] == 0


def test_r_asm_9_wire_tokens_include_tool_definitions(tmp_path):
    body = OVER.replace("messages:", "tools:\n  - {name: f, parameters: {type: object}}\nmessages:", 1)
    r = assemble(tmp_path, body)
    assert budget_report(r)["tool_definitions_tokens"] > 0
    # As the model reads them (R-RPL-4): "namespace functions {\n\ntype f = () => any;\n\n} //
    # namespace functions" (68 chars, 17 approx tokens) + 9 - 4 (a system message opens the prompt).
    assert r.wire_tokens() == WIRE + 17 + 5


WARNING = f"warning: the request as sent counts {WIRE} tokens (wire_tokens), {WIRE - 100} more than the window of 100"


@pytest.mark.parametrize(
    "args",
    [
        ("assemble",),
        ("assemble", "--format", "text"),
        ("budget",),
        ("explain",),
        ("diff", "--leaf", "u3", "--leaf", "u3"),
    ],
)
def test_r_asm_9_every_assembling_command_warns_with_both_numbers(tmp_path, args):
    path = write(tmp_path, OVER)
    r = ctxkit(args[0], str(path), *args[1:])
    assert WARNING in r.err, str(r)


def test_r_asm_9_snapshot_warns(tmp_path):
    path = write(tmp_path, OVER)
    r = ctxkit("snapshot", str(path), "--snapshots", str(tmp_path / "snaps"), "--update")
    assert f"warning: {path}: {WARNING.removeprefix('warning: ')}" in r.err, str(r)


def test_r_asm_9_no_warning_when_it_fits(tmp_path):
    path = write(tmp_path, OVER.replace("max_input_tokens: 100", "max_input_tokens: 1000"))
    assert "wire_tokens" not in ctxkit("assemble", str(path)).err


def test_r_asm_9_assemble_check_exits_1_over_the_window(tmp_path):
    over = write(tmp_path, OVER)
    r = ctxkit("assemble", str(over), "--check", expect=1)
    assert json.loads(r.out)["model"] == "test-model"  # the payload is still printed
    fits = write(tmp_path, OVER.replace("max_input_tokens: 100", "max_input_tokens: 1000"), name="fits.yaml")
    ctxkit("assemble", str(fits), "--check", expect=0)


def test_json_numbers_safety_margin_is_a_number(tmp_path):
    """docs/rules.md#report-keys: numbers in JSON reports are JSON numbers."""
    path = write(tmp_path, OVER)
    data = json.loads(ctxkit("budget", str(path), "--format", "json").out)
    assert data["safety_margin"] == 0.05 and isinstance(data["safety_margin"], float)


def test_r_asm_9_budget_table_says_how_far_over(tmp_path):
    out = ctxkit("budget", str(write(tmp_path, OVER))).out
    assert f"wire {WIRE} tokens ({WIRE - 100} over the window, R-ASM-9)" in out


@pytest.mark.parametrize("path", GALLERY, ids=[p.stem for p in GALLERY])
def test_r_asm_9_the_byte_bound_never_undercounts(path):
    """The shortcut that skips counting small requests must bound the real count."""
    from ctxkit.pipeline import _ByteBound
    from ctxkit.translate.items import wire_tokens

    r = assembled_or_skip(path)
    assert r.wire_tokens() <= wire_tokens(r.payload, meter=_ByteBound(r.assembly))


def test_r_asm_9_warning_is_typed_over_window(tmp_path):
    """Issue 22 item 3: the over-the-window warning carries its kind; none other does."""
    from ctxkit.pipeline import WarningKind

    typed = assemble(tmp_path, OVER).typed_warnings()
    assert [w.kind for w in typed if w.kind is WarningKind.OVER_WINDOW] == [WarningKind.OVER_WINDOW]
    fits = assemble(tmp_path, OVER.replace("max_input_tokens: 100", "max_input_tokens: 1000")).typed_warnings()
    assert WarningKind.OVER_WINDOW not in {w.kind for w in fits}
