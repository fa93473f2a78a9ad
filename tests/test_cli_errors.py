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


def test_debug_shows_traceback_for_errors():
    from ctxkit.errors import InputError

    with pytest.raises(InputError):
        from ctxkit.cli import main

        main(["--debug", "assemble", "no/such/file.yaml"])


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
