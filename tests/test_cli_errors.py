"""Bad input and usage end in exit 2 with one clear `error:` line, never a traceback;
rule failures end in exit 1 (docs/rules.md#exit-codes)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .conftest import FIXTURES, ctxkit

PLAIN = str(FIXTURES / "plain_chat.yaml")


def one_error_line(run) -> str:
    lines = run.err.splitlines()
    assert len(lines) >= 1 and all(line.startswith(("error: ", "warning: ")) for line in lines), run
    assert "Traceback" not in run.err
    return str(lines[-1])


@pytest.mark.parametrize(
    "args,expected",
    [
        (["assemble", "no/such/file.yaml"], "no/such/file.yaml"),
        (["assemble", str(FIXTURES)], str(FIXTURES)),
        (["assemble", PLAIN, "--now", "yesterday"], "--now"),
        (["assemble", PLAIN, "--leaf", "nope"], "--leaf"),
        (["assemble", PLAIN, "--provider", "acme"], "--provider"),
        (["assemble", PLAIN, "--max-input-tokens", "-5"], "--max-input-tokens"),
        (["assemble", PLAIN, "--max-size", "12Q"], "12Q"),
        (["assemble", PLAIN, "--templates", "missing.yaml"], "missing.yaml"),
        (["assemble"], "FIXTURE"),
        (["frobnicate"], "frobnicate"),
        (["diff", PLAIN], "nothing to compare"),
        (["diff", PLAIN, PLAIN, "--provider", "openai", "--provider", "gemini"], "not both"),
        (["import", PLAIN, "--from", "openai"], "not JSON"),
    ],
)
def test_usage_and_input_errors_exit_2(args, expected):
    r = ctxkit(*args, expect=2)
    assert expected in one_error_line(r)
    assert r.out == ""


def test_templates_file_errors_name_the_file_and_template(tmp_path):
    bad = tmp_path / "t.yaml"
    bad.write_text("file.text: 'no slots'\nnope: x\n", encoding="utf-8")
    r = ctxkit("assemble", PLAIN, "--templates", str(bad), expect=2)
    assert "file.text" in r.err and "{content}" in r.err and "nope" in r.err


def test_templates_file_overrides_fixture_and_builtin(tmp_path):
    t = tmp_path / "t.yaml"
    t.write_text("system_prompt: 'Custom {{CURRENT_DATETIME}}'\n", encoding="utf-8")
    r = ctxkit("assemble", PLAIN, "--templates", str(t), "--format", "text")
    assert "Custom Saturday, March 14, 2026" in r.out


def test_rule_failure_exit_1_one_line():
    r = ctxkit("assemble", str(FIXTURES / "budget_exhaustion.yaml"), expect=1)
    assert one_error_line(r).startswith("error: ")
    assert "5000 tokens" in r.err and "history budget is" in r.err


def test_stdin_fixture():
    text = (FIXTURES / "plain_chat.yaml").read_text(encoding="utf-8")
    r = ctxkit("assemble", "-", stdin=text)
    assert '"model": "gpt-4o-mini"' in r.out


def test_debug_shows_a_traceback_and_keeps_the_exit_code():
    """Issue 19 item 15: --debug re-raised the error, so bad input exited 1 instead of 2."""
    run = ctxkit("--debug", "assemble", "no/such/file.yaml", expect=2)
    assert "Traceback (most recent call last)" in run.err and "InputError" in run.err
    assert run.err.splitlines()[-1] == "error: no/such/file.yaml: cannot read: No such file or directory"


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "assemble",
                "budget",
                "explain",
                "diff",
                "validate",
                "compress",
                "--provider",
                "openai",
                "gemini",
                "--max-input-tokens",
                "0",
                "10",
                "--leaf",
                "1",
                "--format",
                "json",
                "yaml",
                "table",
                "--tokenizer",
                "approx",
                "--now",
                "2026-01-01",
                PLAIN,
                "-",
                "--raw",
                "--exit-code",
            ]
        ),
        max_size=7,
    )
)
def test_fuzzed_argv_never_tracebacks(argv):
    r = ctxkit(*argv, stdin="", expect=None)
    assert r.code in (0, 1, 2), r
    assert "Traceback" not in r.err
    if r.code == 2:
        one_error_line(r)


def test_r_fix_3_budget_only_image_needs_a_count(tmp_path):
    f = tmp_path / "f.yaml"
    f.write_text(
        "ctxkit: 1\nmodel: {provider: openai, name: gpt-4o}\n"
        "files: [{id: pi, name: p.png, kind: image}]\nproject_files: [pi]\n"
        "messages: [{id: 1, role: user, text: q}]\n"
    )
    r = ctxkit("validate", str(f), expect=2)
    assert "/files/0: a budget-only image" in r.err


def test_a_missing_command_module_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    """A renamed or missing command module is an import error, not a silently absent command."""
    import ctxkit.cli as cli_package

    monkeypatch.setattr(cli_package, "COMMAND_MODULES", ("no_such_command",))
    with pytest.raises(ModuleNotFoundError, match="no_such_command"):
        cli_package._register()


@pytest.mark.parametrize("command", ["validate", "assemble", "explain", "replay"])
def test_partial_parents_are_refused_alike_by_validate_and_assemble(tmp_path, command):
    """Issue 19 item 9 (R-FIX-2): messages without a parent among messages with one are an
    error at their place, exit 2, in every command (validate once said ok while assemble
    left u1 and a1 out of the request)."""
    path = tmp_path / "fx.yaml"
    path.write_text(
        "ctxkit: 1\nmodel: {provider: openai, name: gpt-4o}\nmessages:\n"
        "  - {id: u1, role: user, text: hi}\n"
        "  - {id: a1, role: assistant, text: hello}\n"
        "  - {id: a2, role: assistant, parent: u1, text: again}\n"
        "  - {id: u2, role: user, parent: a2, text: more}\n",
        encoding="utf-8",
    )
    run = ctxkit(command, str(path), expect=2)
    assert one_error_line(run).startswith(f"error: {path}:/messages/1: no parent, though other messages name theirs")
    assert run.out == ""


# --- issue 19 item 15: bad input that ended in exit 3 ----------------------------------------


@pytest.mark.parametrize("at", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00"])
def test_dates_whose_offset_leaves_years_1_to_9999_are_bad_input(tmp_path, at):
    """Replay converts every clock to UTC; these overflowed there (exit 3)."""
    path = tmp_path / "fx.yaml"
    path.write_text(
        "ctxkit: 1\nmodel: {provider: openai, name: gpt-4o}\nmessages:\n"
        f"  - {{id: u1, role: user, text: hi, at: '{at}'}}\n",
        encoding="utf-8",
    )
    run = ctxkit("replay", str(path), expect=2)
    assert one_error_line(run) == (
        f"error: {path}:/messages/0/at: not an ISO 8601 date-time with a zone: '{at}' "
        "(with its offset it falls outside years 1-9999 in UTC)"
    )
    run = ctxkit("assemble", PLAIN, "--now", at, expect=2)
    assert one_error_line(run).startswith(f"error: --now: '{at}' is not an ISO 8601 date-time (with its offset")


@pytest.mark.parametrize(
    "args",
    [
        ["replay", PLAIN, "--compress-as", "²"],  # "²".isdigit() is true, int("²") fails
        ["report", PLAIN, "--max-input-tokens", "1e309"],
        ["assemble", PLAIN, "--max-input-tokens", "1e309"],
    ],
)
def test_odd_numbers_in_options_are_bad_input(args):
    one_error_line(ctxkit(*args, expect=2))


def test_an_encoding_that_cannot_write_the_output_is_one_error_line(monkeypatch):
    """PYTHONIOENCODING=latin-1 and a payload with U+2014: exit 2 naming the cure, not exit 3."""
    import io
    import sys

    from ctxkit.cli import stdout

    latin = io.TextIOWrapper(io.BytesIO(), encoding="latin-1")
    monkeypatch.setattr(sys, "stdout", latin)
    guarded = stdout._Guarded(latin)
    with pytest.raises(stdout.OutputError) as caught:
        guarded.write("a \u2014 b")
    assert str(caught.value) == (
        "cannot write output: stdout's encoding (latin-1) cannot write '\u2014' (U+2014): set PYTHONIOENCODING=utf-8"
    )


def test_an_encoding_that_cannot_write_the_output_exits_2_in_a_real_process():
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONIOENCODING": "latin-1"}
    done = subprocess.run(
        [sys.executable, "-m", "ctxkit", "assemble", PLAIN, "--format", "text"],
        capture_output=True, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.decode("latin-1").splitlines()[-1].startswith("error: cannot write output: stdout's encoding")


def test_ctrl_c_while_the_command_line_is_imported_is_one_line_and_130():
    """A KeyboardInterrupt during start-up (here: while click is imported) printed a
    traceback; the entry point catches it around the import too."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "class Interrupt:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'click':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Interrupt())\n"
        "sys.argv = ['ctxkit', 'templates']\n"
        "from ctxkit.__main__ import main\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stderr, done.stdout) == (130, "error: interrupted\n", "")


def test_integral_floats_in_integer_fields_are_read_as_integers(tmp_path):
    """JSON Schema counts 2.0 as an integer: `image_cap: 2.0` crashed replay (exit 3, a float
    slice index) and `tokens: 3.0` came out as `"tokens": 3.0` in reports."""
    import json

    path = tmp_path / "fx.json"
    path.write_text(
        '{"ctxkit": 1, "now": "2026-03-14T09:30:00Z", '
        '"model": {"provider": "openai", "name": "gpt-4o", "max_input_tokens": 5000.0}, '
        '"settings": {"image_cap": 2.0, "tool_result_placeholder_tokens": 1e1}, '
        '"messages": [{"id": "u1", "role": "user", "text": "hi", "tokens": 3.0}]}',
        encoding="utf-8",
    )
    ctxkit("replay", str(path))
    budget = json.loads(ctxkit("budget", str(path), "--format", "json").out)
    assert budget["max_input_tokens"] == 5000 and isinstance(budget["max_input_tokens"], int)
    assert '"tokens": 3,' in ctxkit("explain", str(path), "--format", "json").out


def test_prices_are_bounded_at_load(tmp_path):
    """Issue 19 item 14: a price so large that costs overflowed to Infinity (invalid JSON) is
    bad input, at its place; a dollar a token (1,000,000 per million) is the ceiling."""
    path = tmp_path / "fx.json"
    path.write_text(
        '{"ctxkit": 1, "model": {"provider": "openai", "name": "gpt-4o"}, '
        '"settings": {"prices": {"input": 1e300, "output": 1000000}}, '
        '"messages": [{"id": "u1", "role": "user", "text": "hi"}]}',
        encoding="utf-8",
    )
    run = ctxkit("replay", str(path), expect=2)
    assert one_error_line(run) == (
        f"error: {path}:/settings/prices/input: must be <= 1000000, got 1e+300 (line 1, column 90)"
    )


def test_schema_errors_name_the_line_and_the_key_that_was_meant(tmp_path):
    """Issue 19 item 17: a schema error gave a JSON pointer only and no hint. Positions
    checked by hand: `rol` starts line 5 at column 5; `role` in the flow map of line 7 at
    column 14; in the JSON, `"txt"` starts column 44 of line 3."""
    yaml_path = tmp_path / "s.yaml"
    yaml_path.write_text(
        "ctxkit: 1\nmodel: {provider: openai, name: gpt-4o}\nmessages:\n  - id: u1\n    rol: user\n    text: hi\n"
        "  - {id: a1, role: assistent, text: yo}\n",
        encoding="utf-8",
    )
    assert ctxkit("validate", str(yaml_path), expect=2).err.splitlines() == [
        f"error: {yaml_path}:/messages/0: missing required key 'role' (line 4, column 5)",
        f"error: {yaml_path}:/messages/0/rol: unknown key 'rol' (did you mean 'role'?) (line 5, column 5)",
        f"error: {yaml_path}:/messages/1/role: 'assistent' is not one of ['user', 'assistant', 'summary'] "
        "(did you mean 'assistant'?) (line 7, column 14)",
    ]
    json_path = tmp_path / "s.json"
    json_path.write_text(
        '{"ctxkit": 1,\n "model": {"provider": "openai", "name": "gpt-4o"},\n'
        ' "messages": [{"id": "u1", "role": "user", "txt": "hi"}]}\n',
        encoding="utf-8",
    )
    assert ctxkit("validate", str(json_path), expect=2).err == (
        f"error: {json_path}:/messages/0/txt: unknown key 'txt' (did you mean 'text'?) (line 3, column 44)\n"
    )
