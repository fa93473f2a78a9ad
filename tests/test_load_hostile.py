"""Hostile input to the loader and the CLI (issue 11): every one ends in one `error:` line.

Lone surrogates, special files, alias expansion by size, long cycles, repeated
attachments, template braces, empty options, Ctrl-C, empty input, size-limit units
and YAML error locations. Each test is named after the behaviour it pins down.
"""

from __future__ import annotations

import io
import json
import os
import re
import textwrap
from pathlib import Path
from typing import IO, cast

import pytest

from ctxkit.errors import InputError
from ctxkit.loading.files import TooBig, read_bounded
from ctxkit.loading.read import load_fixture, load_templates_file
from ctxkit.loading.templates import BUILTIN, SYSTEM_PLACEHOLDERS, brace_warning, check_override
from ctxkit.pipeline import run
from tests.conftest import ctxkit, peak_bytes
from tests.helpers import texts

HEAD = 'ctxkit: 1\nnow: "2026-03-14T09:30:00Z"\nmodel: {provider: openai, name: gpt-4o, max_input_tokens: 1000}\n'
JSON_HEAD = '{"ctxkit": 1, "now": "2026-03-14T09:30:00Z", "model": {"provider": "openai", "name": "gpt-4o"}'


@pytest.fixture(autouse=True)
def in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # error lines name `fx.yaml`, not a temporary path


def write(text: str, name: str = "fx.yaml") -> str:
    Path(name).write_text(HEAD + textwrap.dedent(text), encoding="utf-8")
    return name


def errors(path: str, **options: object) -> list[str]:
    with pytest.raises(InputError) as caught:
        load_fixture(path, **options)  # type: ignore[arg-type]
    return caught.value.lines()


# --- item 4: lone surrogates ---------------------------------------------------------------


def test_lone_surrogate_rejected_at_load() -> None:
    text = JSON_HEAD + ', "messages": [{"id": "m1", "role": "user", "text": "a\\ud800b"}]}'
    Path("fx.json").write_text(text, encoding="utf-8")
    column = text.index("\\ud800") + 1
    assert errors("fx.json") == [f"fx.json:1:{column}: lone surrogate \\ud800 (not valid Unicode)"]


def test_lone_surrogate_in_keys_and_every_half_is_located() -> None:
    body = '"text": "\\udc00 x \\ud83d", "\\udfff": 1'
    Path("fx.json").write_text(JSON_HEAD + ',\n"messages": [{"id": "m1", "role": "user", ' + body + "}]}")
    found = errors("fx.json")
    assert [line.rsplit(": ", 1)[0].split(":", 1)[1] for line in found] == ["2:52", "2:61", "2:71"]
    assert [line.split("lone surrogate ")[1] for line in found] == [
        "\\udc00 (not valid Unicode)",
        "\\ud83d (not valid Unicode)",
        "\\udfff (not valid Unicode)",
    ]


def test_surrogate_pairs_and_escaped_backslashes_are_fine() -> None:
    text = '"\\ud83d\\ude00 \\\\ud800 \\\\\\\\udc00"'  # an emoji, then the literal text `\ud800` and `\\udc00`
    Path("fx.json").write_text(JSON_HEAD + ', "messages": [{"id": "m1", "role": "user", "text": ' + text + "}]}")
    assert load_fixture("fx.json").messages[0].text == "\U0001f600 \\ud800 \\\\udc00"


def test_lone_surrogate_escape_in_yaml_is_refused_where_it_is() -> None:
    (line,) = errors(write('messages: [{id: m1, role: user, text: "a\\ud800b"}]\n'))
    assert line.startswith("fx.yaml:4:") and "Unicode" in line


def test_lone_surrogate_cannot_come_in_through_a_path_file() -> None:
    Path("notes.txt").write_bytes(b"a\xed\xa0\x80b")  # U+D800 encoded as if it were a character
    fx = write("files: [{id: f1, name: n, kind: text, path: notes.txt}]\n")
    assert errors(fx) == ["fx.yaml:/files/0/path: 'notes.txt' is not UTF-8 text"]


@pytest.mark.parametrize("command", ["validate", "assemble", "budget", "explain", "compress"])
def test_lone_surrogate_is_bad_input_for_every_command(command: str) -> None:
    Path("fx.json").write_text(JSON_HEAD + ', "messages": [{"id": "m1", "role": "user", "text": "\\ud800"}]}')
    r = ctxkit(command, "fx.json", expect=2)
    assert r.err.startswith("error: fx.json:1:") and "lone surrogate" in r.err and r.out == ""


def test_lone_surrogate_in_a_templates_file() -> None:
    Path("t.json").write_text('{"reminder.citation": "\\udfff"}')
    with pytest.raises(InputError) as caught:
        load_templates_file("t.json")
    assert caught.value.lines() == ["t.json:1:24: lone surrogate \\udfff (not valid Unicode)"]


# --- item 6: special files and bounded reads ---------------------------------------------------


def test_r_fix_5_fifo_fixture_is_refused_without_hanging(deadline: None) -> None:
    os.mkfifo("fx.yaml")
    assert errors("fx.yaml") == ["fx.yaml: cannot read: not a regular file (a FIFO)"]
    assert ctxkit("validate", "fx.yaml", expect=2).err == "error: fx.yaml: cannot read: not a regular file (a FIFO)\n"


def test_r_fix_4_fifo_path_is_refused_without_hanging(deadline: None) -> None:
    os.mkfifo("pipe.txt")
    fx = write("files: [{id: f1, name: n, kind: text, path: pipe.txt}]\n")
    assert errors(fx) == ["fx.yaml:/files/0/path: cannot read 'pipe.txt': not a regular file (a FIFO)"]


def test_r_fix_4_character_devices_are_refused(deadline: None) -> None:
    fx = write(
        "files: [{id: f1, name: n, kind: text, path: /dev/zero}, {id: f2, name: m, kind: image, path: /dev/null}]\n"
    )
    assert errors(fx, allow_outside_paths=True) == [
        "fx.yaml:/files/0/path: cannot read '/dev/zero': not a regular file (a device)",
        "fx.yaml:/files/1/path: cannot read '/dev/null': not a regular file (a device)",
    ]
    try:
        os.mknod("zero", 0o600 | 0o020000, os.makedev(1, 5))  # a character device inside the folder
    except (PermissionError, AttributeError):
        return
    fx = write("files: [{id: f1, name: n, kind: text, path: zero}]\n")
    assert errors(fx) == ["fx.yaml:/files/0/path: cannot read 'zero': not a regular file (a device)"]


def test_r_fix_4_a_directory_is_not_a_file() -> None:
    os.mkdir("sub")
    fx = write("files: [{id: f1, name: n, kind: text, path: sub}]\n")
    assert errors(fx) == ["fx.yaml:/files/0/path: cannot read 'sub': is a directory"]
    assert errors("sub") == ["sub: cannot read: is a directory"]


def test_r_fix_5_reads_are_bounded_even_when_stat_says_zero() -> None:
    class Endless(io.RawIOBase):
        served = 0

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
            buffer[:] = b"a" * len(buffer)
            self.served += len(buffer)
            return len(buffer)

    stream = Endless()
    with pytest.raises(TooBig):
        read_bounded(cast(IO[bytes], stream), 3 * 1024 * 1024)
    assert stream.served == 3 * 1024 * 1024 + 1
    assert errors("-", stdin=io.BufferedReader(Endless()), max_size=1024) == [
        "-: larger than the size limit of 1 KiB (see --max-size)"
    ]


def test_r_fix_5_size_limit_messages_use_one_unit() -> None:
    Path("big.txt").write_text("x" * 2049)
    fx = write("files: [{id: f1, name: n, kind: text, path: big.txt}]\n" + "name: " + "y" * 1000 + "\n")
    assert errors(fx, max_size=2 * 1024) == [
        "fx.yaml:/files/0/path: 'big.txt' is larger than the size limit of 2 KiB (see --max-size)"
    ]
    assert errors(fx, max_size=1024) == ["fx.yaml: larger than the size limit of 1 KiB (see --max-size)"]
    r = ctxkit("validate", fx, "--max-size", "1000", expect=2)
    assert r.err == "error: fx.yaml: larger than the size limit of 1000 bytes (see --max-size)\n"


# --- item 7: alias expansion bounded by size -----------------------------------------------------


def test_r_fix_5_alias_expansion_bounded_by_bytes() -> None:
    big = "x" * 10_000
    messages = "".join(f"  - {{id: m{i}, role: user, text: *big}}\n" for i in range(300))
    fx = write(f"name: &big {big}\nmessages:\n{messages}")
    assert errors(fx, max_size=1024**2) == [
        "fx.yaml:6:3: aliases expand the document past the size limit of 1 MiB (see --max-size)"
    ]
    assert len(load_fixture(fx, max_size=4 * 1024**2).messages) == 300  # 3 MB expanded fits in 4 MiB


def test_r_fix_5_alias_bomb_is_refused_before_it_is_expanded() -> None:
    """300 MB of expansion from a 300 KB file: refused holding a few MB, not hundreds."""
    big = "x" * 100_000
    messages = "".join(f"  - {{id: m{i}, role: user, text: *big}}\n" for i in range(3000))
    fx = write(f"name: &big {big}\nmessages:\n{messages}")
    errors(fx, max_size=1024**2)  # first: modules imported on the error path count no memory below
    found: list[str] = []
    peak = peak_bytes(lambda: found.extend(errors(fx, max_size=1024**2)))
    assert found == ["fx.yaml:6:3: aliases expand the document past the size limit of 1 MiB (see --max-size)"]
    assert peak < 32 * 1024**2, peak


def test_r_fix_5_nested_aliases_count_their_expanded_text() -> None:
    levels = ["a0: &a0 " + "x" * 100]
    levels += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 8)]
    fx = write("turn: {}\n" + "\n".join(f"# {line}" for line in levels) + "\n")
    assert load_fixture(fx).name is None  # comments only: nothing expands
    Path("t.yaml").write_text("\n".join(levels) + "\n")  # 4**7 × 100 characters: about 1.6 MB
    with pytest.raises(InputError) as caught:
        load_templates_file("t.yaml", max_size=1024**2)
    assert caught.value.lines() == [
        "t.yaml:8:5: aliases expand the document past the size limit of 1 MiB (see --max-size)"
    ]


def test_r_fix_5_huge_yaml_integers_are_refused_not_crashed() -> None:
    """`0x` followed by 5,000 digits is a valid YAML int with more digits than Python will print."""
    (line,) = errors(write("turn: {cycle: 0x" + "9" * 5000 + "}\n"))
    assert line.startswith("fx.yaml:4:15: invalid int '0x9999")
    assert ctxkit("validate", "fx.yaml", expect=2).err.startswith("error: fx.yaml:4:15: invalid int")


# --- item 15: cycles, attachments, templates ---------------------------------------------------


def test_r_fix_1_long_parent_cycle_is_one_short_line() -> None:
    count = 5000
    lines = [f"  - {{id: m{i}, role: user, parent: m{(i + 1) % count}}}\n" for i in range(count)]
    (line,) = errors(write("messages:\n" + "".join(lines)))
    assert line == ("fx.yaml:/messages/0/parent: parent cycle of 5000 messages: 'm0' → 'm1' → 'm2' → 'm3' → … → 'm0'")


def test_r_fix_1_short_cycles_are_listed_whole() -> None:
    fx = write("messages:\n  - {id: a, role: user, parent: b}\n  - {id: b, role: user, parent: a}\n")
    assert errors(fx) == ["fx.yaml:/messages/0/parent: parent cycle: 'a' → 'b' → 'a'"]


def test_r_fix_1_attachment_listed_twice_is_refused() -> None:
    fx = write(
        """\
        files: [{id: f1, name: a, kind: text, text: a}, {id: 2, name: b, kind: text, text: b}]
        project_files: [2, "2"]
        messages: [{id: m1, role: user, text: hi, files: [f1, 2, f1]}]
        """
    )
    assert errors(fx) == [
        "fx.yaml:/messages/0/files/2: file 'f1' is listed twice (first at /messages/0/files/0)",
        "fx.yaml:/project_files/1: file '2' is listed twice (first at /project_files/0)",
    ]


def test_template_word_in_braces_that_is_not_a_slot_is_sent_as_written_with_one_warning(tmp_path: Path) -> None:
    """docs/rules.md#templates (issue 19 item 12): `{size}` in `file.text` was an error with no escape, so an
    application's own text could not be reproduced. Now it loads, the text is sent exactly
    as written, and one warning per template names every such word."""
    fx = write(
        """\
        templates: {file.text: "File: {name} ({size}, {size}, {{id}})\\n{content}"}
        files: [{id: f1, name: a.txt, kind: text, text: hi}]
        messages: [{id: m1, role: user, text: x, files: [f1]}]
        """
    )
    result = run(load_fixture(fx))
    assert texts(result)[1] == ("user", "File: a.txt ({size}, {size}, {{id}})\nhi")
    assert [w for w in result.warnings if "template" in w] == [
        "template 'file.text' has {size}, {{id}}, which it does not fill (its slots: {name}, {content}): "
        "sent as written"
    ]


def test_templates_command_shows_the_system_prompt_placeholders() -> None:
    """`ctxkit templates` said `system_prompt (no slots)`; its placeholders are what it fills."""
    known = ["{{CURRENT_DATETIME}}", "{{REMINDER_TAG_DESCRIPTION}}", "{{CITATION_GUIDANCE}}"]
    assert ctxkit("templates").out.splitlines()[0] == "== system_prompt (placeholders " + ", ".join(known) + ")"
    listed = json.loads(ctxkit("templates", "--format", "json").out)
    assert listed["system_prompt"]["placeholders"] == known and "placeholders" not in listed["file.text"]


def test_template_missing_slot_is_still_refused_and_names_the_likely_typo() -> None:
    fx = write("templates: {image.label: '[image {ids}]', forgotten_files.line: '{id} {name} {chars'}\n")
    assert errors(fx) == [
        "fx.yaml:/templates/forgotten_files.line: template 'forgotten_files.line' is missing its slot(s) {chars}",
        "fx.yaml:/templates/image.label: template 'image.label' is missing its slot(s) {id} (it has {ids}: a typo?)",
    ]


def test_unknown_placeholder_is_warned_about_in_the_system_prompt_and_own_prompts() -> None:
    """`{{TODAY}}` in the system_prompt template, `prompts.system` or `prompts.custom_agent` is
    not one of the three placeholders: sent as written, one warning each."""
    assert check_override("system_prompt", "{{TODAY}} {{CURRENT_DATETIME}}") is None
    assert brace_warning("system_prompt", "Now: {{CURRENT_DATETIME}}. {{CITATION_GUIDANCE}}") is None
    known = "{{CURRENT_DATETIME}}, {{REMINDER_TAG_DESCRIPTION}}, {{CITATION_GUIDANCE}}"
    assert brace_warning("system_prompt", "{{TODAY}} {{TODAY}}") == (
        f"template 'system_prompt' has {{{{TODAY}}}}, which it does not fill (its placeholders: {known}): "
        "sent as written"
    )
    assert brace_warning("reminder.citation", "Cite. {{CURRENT_DATETIME}}") == (
        "template 'reminder.citation' has {{CURRENT_DATETIME}}, which it does not fill (it has no slots): "
        "sent as written"
    )
    fx = write(
        "prompts: {system: 'Hi {{TODAY}} {x}', custom_agent: 'Be {{ROLE}}.'}\n"
        "messages: [{id: m1, role: user, text: x}]\n"
    )
    result = run(load_fixture(fx))
    assert texts(result)[0][1].startswith("Hi {{TODAY}} {x}")
    assert [w for w in result.warnings if "placeholder" in w] == [
        f"prompts.system has {{{{TODAY}}}}, which is not a placeholder ({known}): sent as written",
        f"prompts.custom_agent has {{{{ROLE}}}}, which is not a placeholder ({known}): sent as written",
    ]


def test_template_literal_braces_not_touching_a_name_are_text() -> None:
    text = 'Answer as JSON: {"answer": "...", "sources": [1, 2]} or { } or {} or a lone { or }'
    assert check_override("reminder.citation", text) is None
    fx = load_fixture(write("templates: {summary.used_tools: '[{tools}] { \"json\": 1 }'}\n"))
    assert fx.templates == (("summary.used_tools", '[{tools}] { "json": 1 }'),)


def test_templates_builtin_texts_pass_their_own_check() -> None:
    for name, (text, _slots) in BUILTIN.items():
        assert check_override(name, text) is None, name


def test_templates_system_placeholders_match_the_assembler() -> None:
    from ctxkit.assembly import system

    assert {system.DATE_PLACEHOLDER, system.CITATION_PLACEHOLDER, system.TAG_PLACEHOLDER} == {
        "{{" + name + "}}" for name in SYSTEM_PLACEHOLDERS
    }


def test_templates_file_missing_slot_is_located() -> None:
    Path("t.yaml").write_text("datetime_line: 'It is {timezone}'\n")
    with pytest.raises(InputError) as caught:
        load_templates_file("t.yaml")
    assert caught.value.lines() == [
        "t.yaml:/datetime_line: template 'datetime_line' is missing its slot(s) {datetime} (it has {timezone}: a typo?)"
    ]


# --- item 15: the command line -------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "option"),
    [
        ("assemble", "--model"),
        ("assemble", "--leaf"),
        ("budget", "--now"),
        ("explain", "--templates"),
        ("validate", "--max-size"),
        ("diff", "--model"),
        ("diff", "--leaf"),
    ],
)
@pytest.mark.parametrize("value", ["", "  "])
def test_empty_string_options_are_refused(command: str, option: str, value: str) -> None:
    fx = write("messages: [{id: m1, role: user, text: hi}]\n")
    r = ctxkit(command, fx, option, value, expect=2)
    assert r.err == f"error: Invalid value for '{option}': must not be empty\n" and r.out == ""


def test_import_empty_model_is_refused() -> None:
    Path("log.json").write_text('{"messages": [{"role": "user", "content": "hi"}]}')
    r = ctxkit("import", "log.json", "--from", "openai", "--model", "", expect=2)
    assert r.err == "error: Invalid value for '--model': must not be empty\n"


def test_option_bytes_that_are_not_utf8_are_refused() -> None:
    fx = write("messages: [{id: m1, role: user, text: hi}]\n")
    r = ctxkit("assemble", fx, "--model", "gpt\udcff", expect=2)
    assert r.err == "error: Invalid value for '--model': b'gpt\\xff' is not UTF-8 text\n"


def test_ctrl_c_exits_130(monkeypatch: pytest.MonkeyPatch) -> None:
    from ctxkit.cli import core

    def interrupted(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(core, "run_pipeline", interrupted)
    r = ctxkit("assemble", write("messages: [{id: m1, role: user, text: hi}]\n"), expect=130)
    assert r.err.splitlines()[-1] == "error: interrupted" and r.out == ""


def test_empty_input_says_empty_input() -> None:
    Path("empty.yaml").write_text("")
    assert ctxkit("validate", "empty.yaml", expect=2).err == (
        "error: empty.yaml: empty input (no YAML or JSON document)\n"
    )
    assert ctxkit("assemble", "-", stdin="", expect=2).err == "error: -: empty input (no YAML or JSON document)\n"
    fx = Path(write("messages: [{id: m1, role: user, text: hi}]\n")).read_text()
    r = ctxkit("diff", "-", "-", stdin=fx, expect=2)  # stdin is read once: the second side is empty
    assert r.err == "error: -: empty input (no YAML or JSON document)\n"


def test_one_token_is_singular_in_cli_text() -> None:
    from ctxkit.output import plural

    assert [plural(n, "token") for n in (0, 1, 2)] == ["0 tokens", "1 token", "2 tokens"]
    assert plural(1024, "token", grouped=True) == "1,024 tokens"
    fx = write("tokenizer: approx\nmessages: [{id: m1, role: user, text: abcd}]\nprompts: {system: ''}\n")
    assert "--- [0] user · 1 token · kept R-ASM-3 ---" in ctxkit("assemble", fx, "--format", "text").out


def test_no_count_in_cli_text_is_pluralized_by_hand() -> None:
    """`f"{n} tokens"` says "1 tokens": every such count goes through `output.plural`."""
    root = Path(__file__).resolve().parent.parent / "ctxkit"
    by_hand = re.compile(r"\{[^{}]+\} (tokens|messages)\b")
    found = [
        f"{path.relative_to(root)}:{number}"
        for path in sorted(root.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if 'f"' in line and by_hand.search(line)
    ]
    assert found == []


# --- item 15: YAML error locations -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "location"),
    [
        ('name: "unclosed\n', "fx.yaml:4:7:"),  # the opening quote, not the line after the file
        ("name: [a, b\n", "fx.yaml:4:7:"),  # the opening bracket
        ("name\nleaf: m1\n", "fx.yaml:4:1:"),  # the key without its colon, not the next line
        ("turn:\n  cycle: 1\n bad: 2\n", "fx.yaml:6:2:"),  # a bad indent stays where it is
    ],
)
def test_yaml_syntax_error_points_at_the_line_to_fix(text: str, location: str) -> None:
    (line,) = errors(write(text))
    assert line.startswith(location + " "), line
