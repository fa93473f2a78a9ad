"""The loader (docs/rules.md#fixture-format, R-FIX-0…5): each rule's bad fixture is refused at its pointer."""

from __future__ import annotations

import io
import json
import os
import textwrap
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from ctxkit.errors import InputError
from ctxkit.loading import domain
from ctxkit.loading.read import load_fixture, load_schema, load_templates_file, parse_size
from ctxkit.loading.schema import _fast_check

DATA = Path(__file__).parent / "data"
HEAD = "ctxkit: 1\nmodel: {provider: openai, name: gpt-4o, max_input_tokens: 1000}\n"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="


@pytest.fixture(autouse=True)
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test runs in its own folder, so error lines name `fx.yaml`, not a temp path."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(text: str, name: str = "fx.yaml", head: bool = True) -> str:
    Path(name).write_text((HEAD if head else "") + textwrap.dedent(text), encoding="utf-8")
    return name


def load(text: str, name: str = "fx.yaml", **options: object) -> domain.Fixture:
    return load_fixture(write(text, name), **options)  # type: ignore[arg-type]


def errors(text: str, name: str = "fx.yaml", head: bool = True, **options: object) -> list[str]:
    with pytest.raises(InputError) as caught:
        load_fixture(write(text, name, head), **options)  # type: ignore[arg-type]
    return caught.value.lines()


# --- the spec's own example -----------------------------------------------------------------


def test_spec_example_loads() -> None:
    fx = load_fixture(str(DATA / "spec_example.yaml"))
    assert fx.model == domain.ModelFields("openai", "gpt-4o", 128000, True, 4096)
    assert fx.now == datetime(2026, 3, 14, 9, 30, tzinfo=UTC)
    assert fx.tokenizer == "o200k_base"
    assert fx.settings == domain.Settings()
    assert fx.prompts.custom_agent == "Answer as the finance team's analyst."
    assert fx.user_info is not None and fx.user_info.organization == (("industry", "fintech"),)
    assert [t.full for t in fx.tools] == [False, False, False, False, True]
    assert fx.tools[-1].parameters == {"type": "object", "properties": {"city": {"type": "string"}}}
    assert [m.id for m in fx.messages] == ["m1", "m2", "m3", "m3b", "s1"]
    assert [m.parent for m in fx.messages] == [None, "m1", "m2", "m2", "m3b"]
    assert fx.message("s1").summarizes_through == "m1"
    assert fx.message("m2").tool_calls[0].args == {"queries": ["q3 plan"]}
    data = fx.file("img-1").data
    assert data is not None and data.startswith(b"\x89PNG")
    assert fx.file("notes-1").chars == len("Remember the FX rounding rule.")
    assert fx.project_files == ("6f1c0c1e-0000-4000-8000-000000000001",)
    assert fx.leaf == "m3b"
    assert [m.role for m in fx.in_flight] == ["assistant", "tool"]
    assert fx.in_flight[1].tool_call_id == "call_9"
    assert fx.raw["messages"][0]["id"] == "m1"
    assert fx.source == str(DATA / "spec_example.yaml") and fx.base_dir == DATA.resolve()


def test_fast_path_and_schema_agree_on_the_spec_example() -> None:
    fx = load_fixture(str(DATA / "spec_example.yaml"))
    assert _fast_check()(fx.raw) and Draft202012Validator(load_schema()).is_valid(fx.raw)


def test_fast_path_defers_to_jsonschema_on_what_it_cannot_read() -> None:
    """jsonschema-rs raises on a map key that is not a string (the parsers refuse those first);
    a raise only means "ask jsonschema", never a crash or a silent pass."""
    doc = {"ctxkit": 1, "model": {"provider": "openai", "name": "m"}, "templates": {1: "x"}}
    assert not _fast_check()(doc) and Draft202012Validator(load_schema()).is_valid(doc)


def test_schema_is_draft_2020_12_and_cached() -> None:
    Draft202012Validator.check_schema(load_schema())
    assert load_schema() is load_schema()


# --- R-FIX-0: required keys, types, enums, unknown keys ------------------------------------------


def test_r_fix_0_required_keys() -> None:
    assert errors("name: x\n", head=False) == [
        "fx.yaml: missing required key 'ctxkit'",
        "fx.yaml: missing required key 'model'",
    ]
    assert errors("ctxkit: 1\nmodel: {}\n", head=False) == [
        "fx.yaml:/model: missing required key 'name' (line 2, column 1)",
        "fx.yaml:/model: missing required key 'provider' (line 2, column 1)",
    ]


def test_r_fix_0_version_must_be_1() -> None:
    assert errors("ctxkit: 2\nmodel: {provider: openai, name: x}\n", head=False) == [
        "fx.yaml:/ctxkit: must be 1, got integer 2 (line 1, column 1)"
    ]


def test_r_fix_0_enum_and_type_messages() -> None:
    assert errors("messages: [{id: m1, role: bot}]\n") == [
        "fx.yaml:/messages/0/role: 'bot' is not one of ['user', 'assistant', 'summary'] (line 3, column 21)"
    ]
    assert errors("messages: [{id: [1], role: user, tokens: '4'}]\n") == [
        "fx.yaml:/messages/0/id: expected string or integer, got array (line 3, column 13)",
        "fx.yaml:/messages/0/tokens: expected integer, got string '4' (line 3, column 34)",
    ]
    assert errors("settings: {safety_margin: 1, last_n_user_messages: 0}\n") == [
        "fx.yaml:/settings/last_n_user_messages: must be >= 1, got 0 (line 3, column 30)",
        "fx.yaml:/settings/safety_margin: must be < 1, got 1 (line 3, column 12)",
    ]
    assert errors("tools: [3]\n") == ["fx.yaml:/tools/0: expected string or object, got integer 3 (line 3, column 9)"]


def test_r_fix_0_unknown_keys_at_any_depth() -> None:
    text = """\
    colour: red
    model: {provider: openai, name: gpt-4o, windw: 3}
    settings: {safety: 0.1}
    tools: [{name: t, descripton: d}]
    files: [{id: f1, name: a.txt, kind: text, text: a, size: 3}]
    messages:
      - {id: m1, role: user, txt: hi}
      - id: m2
        role: assistant
        tool_calls: [{id: c1, name: t, args: {}, result: x, generated_images: [{file_id: i, url: u}]}]
    in_flight: [{role: assistant, tool_calls: [{id: c2, name: t, args: {}, tokenz: 1}]}]
    """
    assert errors(text, head=False) == [
        "fx.yaml: missing required key 'ctxkit'",
        "fx.yaml:/colour: unknown key 'colour' (line 1, column 1)",
        "fx.yaml:/files/0/size: unknown key 'size' (line 5, column 52)",
        "fx.yaml:/in_flight/0/tool_calls/0/tokenz: unknown key 'tokenz' (did you mean 'tokens'?) (line 11, column 72)",
        "fx.yaml:/messages/0/txt: unknown key 'txt' (did you mean 'text'?) (line 7, column 26)",
        "fx.yaml:/messages/1/tool_calls/0/generated_images/0/url: unknown key 'url' (line 10, column 89)",
        "fx.yaml:/messages/1/tool_calls/0/result: unknown key 'result' (line 10, column 46)",
        "fx.yaml:/model/windw: unknown key 'windw' (line 2, column 41)",
        "fx.yaml:/settings/safety: unknown key 'safety' (did you mean 'safety_margin'?) (line 3, column 12)",
        "fx.yaml:/tools/0/descripton: unknown key 'descripton' (did you mean 'description'?) (line 4, column 19)",
    ]


def test_all_errors_at_once_in_pointer_order() -> None:
    """Indices sort as numbers (/messages/2 before /messages/10), then messages alphabetically."""
    messages = "".join(f"  - {{id: m{i}, role: user}}\n" for i in range(11))
    messages = messages.replace("m2, role: user", "m2, role: bot").replace("m10, role: user", "m10")
    assert errors("messages:\n" + messages) == [
        "fx.yaml:/messages/2/role: 'bot' is not one of ['user', 'assistant', 'summary'] (line 6, column 14)",
        "fx.yaml:/messages/10: missing required key 'role' (line 14, column 5)",
    ]


def test_role_dependent_keys() -> None:
    text = """\
    files: [{id: f1, name: a, kind: text, text: a}]
    messages:
      - {id: m1, role: user, tool_calls: [], summarizes_through: m1}
      - {id: s1, role: summary, parent: m1, files: [f1]}
    in_flight:
      - {role: tool, text: x, tool_calls: []}
      - {role: assistant, tool_call_id: c}
    """
    assert errors(text) == [
        "fx.yaml:/in_flight/0: missing required key 'tool_call_id' (line 8, column 5)",
        "fx.yaml:/in_flight/0/tool_calls: a tool message has no 'tool_calls' (line 8, column 27)",
        "fx.yaml:/in_flight/1/tool_call_id: only tool messages have 'tool_call_id' (line 9, column 23)",
        "fx.yaml:/messages/0/summarizes_through: only summary nodes have 'summarizes_through' (line 5, column 42)",
        "fx.yaml:/messages/0/tool_calls: only assistant messages have 'tool_calls' (line 5, column 26)",
        "fx.yaml:/messages/1: a summary needs 'summarizes_through' (line 6, column 5)",
        "fx.yaml:/messages/1/files: only user messages have attachments ('files') (line 6, column 41)",
    ]


def test_file_content_keys_by_kind() -> None:
    text = f"""\
    files:
      - {{id: a, name: a, kind: text}}
      - {{id: b, name: b, kind: text, text: x, path: b.txt}}
      - {{id: c, name: c, kind: image, data: "{PNG}", path: c.png}}
      - {{id: d, name: d, kind: image, text: x}}
      - {{id: e, name: e, kind: metadata_only, path: e, data: "{PNG}"}}
      - {{id: f, name: f, kind: metadata_only, chars: 10}}
      - {{id: g, name: g, kind: image}}
    """
    assert errors(text) == [
        "fx.yaml:/files/0: a text file needs 'text' or 'path' (line 4, column 5)",
        "fx.yaml:/files/1: a text file takes 'text' or 'path', not both (line 5, column 5)",
        "fx.yaml:/files/2: an image takes 'data' or 'path', not both (line 6, column 5)",
        "fx.yaml:/files/3/text: only text files have 'text' (line 7, column 35)",
        "fx.yaml:/files/4/data: only images have 'data' (line 8, column 52)",
        "fx.yaml:/files/4/path: a metadata_only file has no content ('path' is not allowed) (line 8, column 43)",
    ]


# --- R-FIX-1: ids and references ---------------------------------------------------------------


def test_r_fix_1_ids_compare_by_string_form() -> None:
    text = """\
    files: [{id: 7, name: a, kind: text, text: a}, {id: "7", name: b, kind: text, text: b}]
    messages: [{id: 1, role: user}, {id: "1", role: assistant}, {id: m, role: user, files: ["7"]}]
    """
    assert errors(text) == [
        "fx.yaml:/files/1/id: duplicate file id '7' (first at /files/0)",
        "fx.yaml:/messages/1/id: duplicate message id '1' (first at /messages/0)",
    ]


def test_r_fix_1_integer_ids_become_strings() -> None:
    fx = load(
        "files: [{id: 7, name: a, kind: text, text: a}]\n"
        "messages: [{id: 1, role: user, files: [7]}, {id: 2, role: assistant, parent: 1}]\n"
        "leaf: 2\nproject_files: [7]\n"
    )
    assert [(m.id, m.parent, m.files) for m in fx.messages] == [("1", None, ("7",)), ("2", "1", ())]
    assert (fx.leaf, fx.project_files, fx.files[0].id) == ("2", ("7",), "7")


def test_loaded_messages_are_the_records_their_constructors_make() -> None:
    """The loader builds stored messages and tool calls as rows sealed in one pass
    (`sealed.records`): each is exactly the class, equal to, hashed and frozen as one its
    constructor makes."""
    import dataclasses

    fx = load(
        "messages:\n"
        "  - {id: 1, role: user, text: q, tokens: 3}\n"
        "  - {id: a, role: assistant, tool_calls: [{id: 9, name: f, args: {x: [1]}, turn: 2, response: r}]}\n"
    )
    call = domain.ToolCall(id="9", name="f", args={"x": [1]}, turn=2, response="r")
    expected = (
        domain.StoredMessage(id="1", role=domain.Role.USER, parent=None, index=0, text="q", tokens=3),
        domain.StoredMessage(id="a", role=domain.Role.ASSISTANT, parent="1", index=1, tool_calls=(call,)),
    )
    assert fx.messages == expected
    assert [type(m) for m in fx.messages] == [domain.StoredMessage] * 2
    assert type(fx.messages[1].tool_calls[0]) is domain.ToolCall
    assert hash(fx.messages[0]) == hash(expected[0])
    with pytest.raises(dataclasses.FrozenInstanceError):
        fx.messages[0].text = "changed"  # type: ignore[misc]


def test_sealed_records_refuse_a_class_that_is_not_frozen() -> None:
    import dataclasses

    from ctxkit.loading import sealed

    @dataclasses.dataclass(slots=True)
    class Mutable:
        a: int

    with pytest.raises(TypeError, match="not a frozen dataclass"):
        sealed.records(Mutable, [(1,)])
    assert sealed.records(domain.GeneratedImage, [("f", None)]) == (domain.GeneratedImage("f"),)


def test_r_fix_1_each_reference_must_resolve() -> None:
    text = """\
    files: [{id: f1, name: a, kind: text, text: a}]
    project_files: [f1, f9]
    messages:
      - {id: m1, role: user, files: [f1, f2]}
      - {id: m2, role: assistant, parent: m9}
      - {id: s1, role: summary, parent: m1, summarizes_through: m8}
    leaf: m7
    in_flight:
      - {role: tool, tool_call_id: c9, text: x}
    """
    assert errors(text) == [
        "fx.yaml:/in_flight/0/tool_call_id: no earlier unanswered call 'c9' in in_flight",
        "fx.yaml:/leaf: unknown message id 'm7'",
        "fx.yaml:/messages/0/files/1: unknown file id 'f2'",
        "fx.yaml:/messages/1/parent: unknown message id 'm9'",
        "fx.yaml:/messages/2/summarizes_through: unknown message id 'm8'",
        "fx.yaml:/project_files/1: unknown file id 'f9'",
    ]


def test_r_fix_1_summary_placement() -> None:
    text = """\
    messages:
      - {id: m1, role: user}
      - {id: m2, role: assistant, parent: m1}
      - {id: m3, role: user, parent: m1}
      - {id: s1, role: summary, parent: m3, summarizes_through: m2}
      - {id: s2, role: summary, parent: s1, summarizes_through: m1}
      - {id: s3, role: summary, parent: m3, summarizes_through: m3}
      - {id: m4, role: user, parent: s3}
    leaf: s1
    """
    assert errors(text) == [
        "fx.yaml:/leaf: 's1' is a summary node; the leaf must be a user or assistant message",
        "fx.yaml:/messages/3/summarizes_through: 'm2' is not the summary's parent or one of its ancestors",
        "fx.yaml:/messages/4/parent: 's1' is a summary node, which cannot be a parent",
        "fx.yaml:/messages/6/parent: 's3' is a summary node, which cannot be a parent",
    ]


def test_r_fix_1_parent_cycles() -> None:
    text = """\
    messages:
      - {id: a, role: user}
      - {id: b, role: assistant, parent: c}
      - {id: c, role: user, parent: b}
      - {id: d, role: assistant, parent: d}
      - {id: e, role: user, parent: c}
    """
    assert errors(text) == [
        "fx.yaml:/messages/1/parent: parent cycle: 'b' → 'c' → 'b'",
        "fx.yaml:/messages/3/parent: parent cycle: 'd' → 'd'",
    ]


def test_r_fix_1_in_flight_calls_and_results_pair_up() -> None:
    text = """\
    in_flight:
      - role: assistant
        tool_calls: [{id: c1, name: web_search, args: {}}, {id: c2, name: open_url, args: {}}]
      - {role: tool, tool_call_id: c1, text: a}
      - {role: tool, tool_call_id: c1, text: again}
      - role: assistant
        tool_calls: [{id: c3, name: t, args: {}}, {id: c3, name: t, args: {}}]
      - {role: tool, tool_call_id: c3, text: b}
    """
    assert errors(text) == [
        "fx.yaml:/in_flight/0/tool_calls/1: call 'c2' has no result in in_flight",
        "fx.yaml:/in_flight/2/tool_call_id: no earlier unanswered call 'c1' in in_flight",
        "fx.yaml:/in_flight/3/tool_calls/1/id: call id 'c3' is already waiting for its result",
    ]


def test_r_fix_1_stored_tool_call_ids_may_repeat_across_turns() -> None:
    text = """\
    messages:
      - {id: m1, role: user}
      - {id: m2, role: assistant, tool_calls: [{id: c, name: t, args: {}, response: r}]}
      - {id: m3, role: user}
      - {id: m4, role: assistant, tool_calls: [{id: c, name: t, args: [], turn: 1}]}
    """
    fx = load(text)
    assert [c.turn for m in fx.messages for c in m.tool_calls] == [0, 1]


def test_r_fix_1_tool_arguments_nested_too_deep() -> None:
    deep = "[" * 150 + "]" * 150
    text = f"in_flight: [{{role: assistant, tool_calls: [{{id: c, name: t, args: {deep}}}]}}]\n"
    assert errors(text) == [
        "fx.yaml:/in_flight/0/tool_calls/0: call 'c' has no result in in_flight",
        "fx.yaml:/in_flight/0/tool_calls/0/args: nested more than 100 levels deep",
    ]


@pytest.mark.parametrize(("lists", "refused"), [(99, False), (100, True)])
def test_r_fix_1_tool_arguments_depth_boundary(lists: int, refused: bool) -> None:
    """Stored arguments may be 100 levels deep, counting the innermost value: 99 nested lists
    around a number are accepted, 100 are not."""
    nested = "[" * lists + "1" + "]" * lists
    text = f"messages: [{{id: m, role: assistant, tool_calls: [{{id: c, name: t, args: {nested}}}]}}]\n"
    if refused:
        assert errors(text) == ["fx.yaml:/messages/0/tool_calls/0/args: nested more than 100 levels deep"]
    else:
        assert load(text).messages[0].tool_calls[0].args[0] is not None


# --- R-FIX-2: linear lists and summaries ---------------------------------------------------------


def test_r_fix_2_a_list_without_parents_is_linear() -> None:
    text = """\
    messages:
      - {id: m1, role: user}
      - {id: m2, role: assistant}
      - {id: s1, role: summary, parent: m2, summarizes_through: m1}
      - {id: m3, role: user}
    """
    assert [m.parent for m in load(text).messages] == [None, "m1", "m2", "m2"]


def test_r_fix_2_parent_null_makes_a_child_of_the_root() -> None:
    """R-FIX-2: the first message may leave `parent` out; `parent: null` puts a later one
    at the root as well (an edit of the first message)."""
    text = (
        "messages: [{id: m1, role: user}, {id: m2, role: user, parent: null}, {id: m3, role: assistant, parent: m2}]\n"
    )
    assert [m.parent for m in load(text).messages] == [None, None, "m2"]


def test_r_fix_2_partial_parents_are_refused_where_they_are_missing() -> None:
    """Issue 19 item 9: u1, a1, u2 without parents and a2 naming u2 once made u1, a1 and u2
    siblings at the root, and u1 and a1 left the branch without a word. Now every message
    after the first that names no parent is an error at its place, with the fix."""
    text = """\
    messages:
      - {id: u1, role: user}
      - {id: a1, role: assistant}
      - {id: s1, role: summary, parent: u1, summarizes_through: u1}
      - {id: 7, role: user}
      - {id: "a 2", role: assistant, parent: 7}
      - {id: u3, role: user}
    """
    fix = "to follow the previous message, or `parent: null` for another child of the root (R-FIX-2)"
    assert errors(text) == [
        f"fx.yaml:/messages/1: no parent, though other messages name theirs: write `parent: u1` {fix}",
        f"fx.yaml:/messages/3: no parent, though other messages name theirs: write `parent: a1` {fix}",
        f'fx.yaml:/messages/5: no parent, though other messages name theirs: write `parent: "a 2"` {fix}',
    ]


def test_r_fix_2_many_partial_parents_are_ten_lines_and_a_count() -> None:
    messages = [{"id": f"m{i}", "role": "user"} for i in range(30)] + [{"id": "x", "role": "user", "parent": "m0"}]
    doc = {"ctxkit": 1, "model": {"provider": "openai", "name": "gpt-4o"}, "messages": messages}
    lines = errors(json.dumps(doc), "fx.json", head=False)
    assert len(lines) == 11
    assert lines[0].startswith("fx.json:/messages/1: no parent") and lines[9].startswith("fx.json:/messages/10: ")
    assert lines[10] == "fx.json:/messages/11: no parent, nor do 18 later messages (R-FIX-2)"


def test_r_fix_2_a_summary_must_name_its_parent() -> None:
    text = "messages: [{id: m1, role: user}, {id: s1, role: summary, summarizes_through: m1}]\n"
    assert errors(text) == ["fx.yaml:/messages/1: a summary node must name its parent (R-FIX-2)"]


def test_r_fix_2_long_chain_is_checked_without_recursion() -> None:
    messages = [{"id": i, "role": "user" if i % 2 == 0 else "assistant"} for i in range(20000)]
    messages.append({"id": "s", "role": "summary", "parent": 19999, "summarizes_through": 0})
    doc = {"ctxkit": 1, "model": {"provider": "openai", "name": "gpt-4o"}, "messages": messages}
    Path("big.json").write_text(json.dumps(doc))
    fx = load_fixture("big.json")
    assert fx.messages[-2].parent == "19998" and fx.messages[-1].summarizes_through == "0"


# --- R-FIX-3: decimals exactly as written --------------------------------------------------------


def test_r_fix_3_ratios_are_exact_decimals_yaml() -> None:
    fx = load(
        "settings: {safety_margin: 0.1, compression_trigger_ratio: 0.7500, "
        "recent_messages_ratio: 0, project_files_max_ratio: 0.33333333333333333333}\n"
    )
    s = fx.settings
    assert s.safety_margin == Decimal("0.1") and str(s.safety_margin) == "0.1"
    assert str(s.compression_trigger_ratio) == "0.7500"
    assert s.recent_messages_ratio == Decimal(0)
    assert s.project_files_max_ratio == Decimal("0.33333333333333333333")


def test_r_fix_3_ratios_are_exact_decimals_json() -> None:
    Path("fx.json").write_text(
        '{"ctxkit": 1, "model": {"provider": "openai", "name": "x"},'
        ' "settings": {"safety_margin": 0.10, "recent_messages_ratio": 5E-2,'
        ' "project_files_max_ratio": 0.60000000000000000001}}'
    )
    s = load_fixture("fx.json").settings
    assert str(s.safety_margin) == "0.10"
    assert s.recent_messages_ratio == Decimal("0.05")
    assert s.project_files_max_ratio == Decimal("0.60000000000000000001")
    assert s.compression_trigger_ratio == Decimal("0.75")


def test_r_fix_3_organization_values_as_written() -> None:
    fx = load("user_info: {organization: {size: 12, share: 0.50, public: false, name: Acme}}\n")
    assert fx.user_info is not None
    assert fx.user_info.organization == (("size", "12"), ("share", "0.50"), ("public", "false"), ("name", "Acme"))


# --- R-FIX-4: file paths -------------------------------------------------------------------


def test_r_fix_4_paths_resolve_from_the_fixture_folder(here: Path) -> None:
    (here / "sub").mkdir()
    (here / "sub" / "plan.md").write_bytes(b"Q3 plan\r\n")
    (here / "sub" / "chart.png").write_bytes(b"\x89PNG-bytes")
    text = """\
    files:
      - {id: t, name: plan.md, kind: text, path: plan.md}
      - {id: i, name: chart.png, kind: image, path: chart.png, tokens: 85}
    """
    fx = load(text, name="sub/fx.yaml")
    assert fx.file("t").text == "Q3 plan\r\n" and fx.file("t").chars == 9
    assert fx.file("i").data == b"\x89PNG-bytes" and fx.file("i").tokens == 85
    assert fx.base_dir == (here / "sub").resolve()


def test_r_fix_4_paths_must_stay_inside(here: Path) -> None:
    (here / "sub").mkdir()
    (here / "outside.txt").write_text("secret")
    (here / "sub" / "link.txt").symlink_to(here / "outside.txt")
    outside = "is outside the fixture's folder (see --allow-outside-paths)"
    text = f"""\
    files:
      - {{id: a, name: a, kind: text, path: ../outside.txt}}
      - {{id: b, name: b, kind: text, path: {here / "outside.txt"}}}
      - {{id: c, name: c, kind: text, path: link.txt}}
      - {{id: d, name: d, kind: text, path: missing.txt}}
    """
    assert errors(text, name="sub/fx.yaml") == [
        f"sub/fx.yaml:/files/0/path: '../outside.txt' {outside}",
        f"sub/fx.yaml:/files/1/path: '{here / 'outside.txt'}' {outside}",
        f"sub/fx.yaml:/files/2/path: 'link.txt' {outside}",
        "sub/fx.yaml:/files/3/path: file not found: 'missing.txt'",
    ]
    text = text.replace("  - {id: d, name: d, kind: text, path: missing.txt}\n", "")
    fx = load(text, name="sub/fx.yaml", allow_outside_paths=True)
    assert [f.text for f in fx.files] == ["secret", "secret", "secret"]


def test_r_fix_4_bad_file_contents(here: Path) -> None:
    (here / "latin1.txt").write_bytes(b"caf\xe9")
    text = """\
    files:
      - {id: a, name: a, kind: text, path: latin1.txt}
      - {id: b, name: b, kind: image, data: "not base64!"}
      - {id: c, name: c, kind: image, data: "iVBO\\nRw0K\\nGgo="}
    """
    assert errors(text) == [
        "fx.yaml:/files/0/path: 'latin1.txt' is not UTF-8 text",
        "fx.yaml:/files/1/data: not valid base64",
    ]


def test_r_fix_4_stdin_paths_resolve_against_cwd(here: Path) -> None:
    (here / "notes.txt").write_text("from cwd")
    text = HEAD + "files: [{id: n, name: notes.txt, kind: text, path: notes.txt}]\n"
    fx = load_fixture("-", stdin=io.BytesIO(text.encode()))
    assert fx.source == "-" and fx.file("n").text == "from cwd" and fx.base_dir == here.resolve()


# --- R-FIX-5: safe YAML, keys, bombs, sizes ----------------------------------------------------


def test_r_fix_5_duplicate_keys_yaml_with_line_and_column() -> None:
    text = "ctxkit: 1\nmodel:\n  provider: openai\n  name: a\n  name: b\nctxkit: 1\n"
    assert errors(text, head=False) == [
        "fx.yaml:5:3: duplicate key 'name'",
        "fx.yaml:6:1: duplicate key 'ctxkit'",
    ]


def test_r_fix_5_duplicate_keys_json_with_line_and_column() -> None:
    text = '{"ctxkit": 1,\n "model": {"provider": "openai", "name": "a", "name": "b"},\n "ctxkit": 1}'
    assert errors(text, name="fx.json", head=False) == [
        "fx.json:2:47: duplicate key 'name'",
        "fx.json:3:2: duplicate key 'ctxkit'",
    ]


def test_r_fix_5_merge_keys_are_not_duplicates() -> None:
    text = "base: &b {provider: openai, name: a}\n"
    assert errors(text) == ["fx.yaml:/base: unknown key 'base' (line 3, column 1)"]  # parsed fine; `base` is unknown
    fx = load_fixture(write("ctxkit: 1\nmodel: {<<: {provider: openai, name: a}, name: b}\n", head=False))
    assert fx.model.name == "b"


def test_r_fix_5_non_string_keys() -> None:
    text = "ctxkit: 1\nmodel: {provider: openai, name: a}\ntemplates:\n  1: x\n  yes: y\n  [a]: z\n"
    assert errors(text, head=False) == [
        "fx.yaml:4:3: non-string key '1' (quote it)",
        "fx.yaml:5:3: non-string key 'yes' (quote it)",
        "fx.yaml:6:3: non-string key (a mapping or list used as a key)",
    ]


def test_r_fix_5_billion_laughs_is_refused() -> None:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, 10):
        refs = ", ".join([f"*a{level - 1}"] * 9)
        lines.append(f"a{level}: &a{level} [{refs}]")
    (line,) = errors("\n".join(lines) + "\n", head=False)
    assert line.startswith("fx.yaml:") and line.endswith("aliases expand the document too much (alias bomb?)")


def test_r_fix_5_recursive_alias_is_refused() -> None:
    assert errors("ctxkit: 1\nmodel: &m {provider: openai, name: x, self: *m}\n", head=False) == [
        "fx.yaml:2:8: recursive alias"
    ]


def test_r_fix_5_a_few_aliases_are_fine() -> None:
    text = "files: [{id: &f f1, name: a, kind: text, text: a}]\nmessages: [{id: m, role: user, files: [*f]}]\n"
    assert load(text).messages[0].files == ("f1",)


def test_r_fix_5_unsafe_and_non_json_tags_are_refused() -> None:
    assert errors("name: !!python/object:os.system x\n") == [
        "fx.yaml:3:7: could not determine a constructor for the tag 'tag:yaml.org,2002:python/object:os.system'"
    ]
    assert errors("name: !!set {a, b}\n") == ["fx.yaml:3:7: tag tag:yaml.org,2002:set is not allowed in a fixture"]
    assert errors("name: !!binary aGk=\n") == ["fx.yaml:3:7: tag tag:yaml.org,2002:binary is not allowed in a fixture"]
    assert errors("settings: {safety_margin: .nan}\n") == ["fx.yaml:3:27: number not allowed: .nan"]


def test_r_fix_5_bad_explicit_scalars_are_located() -> None:
    text = "name: !!bool maybe\nleaf: !!int abc\ntokenizer: !!map [a]\n"
    assert errors(text) == ["fx.yaml:3:7: invalid bool 'maybe'"]  # construction stops at the first
    assert errors("leaf: " + "9" * 5000 + "\n") == [f"fx.yaml:3:7: invalid int '{'9' * 40}'…"]
    assert errors("tokenizer: !!map [a]\n") == ["fx.yaml:3:12: expected a mapping, found sequence"]


def test_r_fix_5_json_duplicates_with_trailing_garbage() -> None:
    assert errors('{"a": {"b": 1, "b": 2}}}', name="fx.json", head=False) == ["fx.json:1:16: duplicate key 'b'"]


def test_r_fix_5_size_limit(here: Path) -> None:
    write("name: x\n")
    size = os.path.getsize("fx.yaml")
    assert load_fixture("fx.yaml", max_size=size).name == "x"
    with pytest.raises(InputError) as caught:
        load_fixture("fx.yaml", max_size=size - 1)
    assert caught.value.lines() == [f"fx.yaml: larger than the size limit of {size - 1} bytes (see --max-size)"]
    with pytest.raises(InputError) as caught:
        load_fixture("-", max_size=1024, stdin=io.BytesIO(b"#" * 1025))
    assert caught.value.lines() == ["-: larger than the size limit of 1 KiB (see --max-size)"]


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("1024", 1024),
        ("64M", 64 * 1024**2),
        ("64m", 64 * 1024**2),
        ("512K", 512 * 1024),
        ("2G", 2 * 1024**3),
        ("1GiB", 1024**3),
        ("10KB", 10240),
        (" 7 ", 7),
        ("100b", 100),
    ],
)
def test_r_fix_5_parse_size(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "0", "-1", "1.5M", "12T", "M", "1 2", "9" * 40])
def test_r_fix_5_parse_size_rejects(text: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_size(text)
    assert caught.value.lines() == [f"--max-size: expected a positive size such as 512K or 64M, got {text!r}"]


def test_r_fix_5_format_is_decided_by_content() -> None:
    Path("looks.yaml").write_text('{"ctxkit": 1, "model": {"provider": "gemini", "name": "g"}}')
    Path("looks.json").write_text("ctxkit: 1\nmodel: {provider: ollama, name: llama3}\n")
    Path("flow.json").write_text("{ctxkit: 1, model: {provider: azure, name: gpt-4o}}")
    assert load_fixture("looks.yaml").model.provider == "gemini"
    assert load_fixture("looks.json").model.provider == "ollama"
    assert load_fixture("flow.json").model.provider == "azure"  # YAML flow style


def test_r_fix_5_stdin() -> None:
    fx = load_fixture("-", stdin=io.BytesIO(HEAD.encode() + b"name: piped\n"))
    assert fx.name == "piped" and fx.source == "-"
    with pytest.raises(InputError) as caught:
        load_fixture("-", stdin=io.BytesIO(b"ctxkit: [\n"))
    (line,) = caught.value.lines()
    assert line.startswith("-:1:10: ")  # the end of the last line, not the line after it


def test_syntax_errors_are_one_line_with_line_and_column() -> None:
    assert errors("name: [unclosed\nleaf: x\n", head=False) == [  # where the unclosed `[` is
        "fx.yaml:1:7: while parsing a flow sequence did not find expected ',' or ']' (noticed at 2:5)"
    ]
    assert errors('{"ctxkit": 1 "model": {}}', name="fx.json", head=False) == [
        "fx.json:1:14: Expecting ',' delimiter"  # not YAML either: JSON's complaint is reported
    ]
    assert errors('{"ctxkit": NaN}', name="fx.json", head=False) == ["fx.json: number not allowed: NaN"]
    assert errors('{"ctxkit": 1e999}', name="fx.json", head=False) == ["fx.json: number not allowed: 1e999"]


def test_encoding_utf8_with_bom_ok_invalid_refused() -> None:
    Path("bom.yaml").write_bytes(b"\xef\xbb\xbf" + HEAD.encode() + "name: café\n".encode())
    assert load_fixture("bom.yaml").name == "café"
    Path("bad.yaml").write_bytes(HEAD.encode() + b"name: caf\xe9\n")
    with pytest.raises(InputError) as caught:
        load_fixture("bad.yaml")
    assert caught.value.lines() == ["bad.yaml:3:10: not valid UTF-8 (byte 0xe9)"]


def test_missing_file_and_empty_document() -> None:
    with pytest.raises(InputError) as caught:
        load_fixture("nope.yaml")
    assert caught.value.lines() == ["nope.yaml: cannot read: No such file or directory"]
    assert errors("", head=False) == ["fx.yaml: empty input (no YAML or JSON document)"]
    assert errors("# only a comment\n", head=False) == ["fx.yaml: empty input (no YAML or JSON document)"]
    assert errors("null\n", head=False) == ["fx.yaml: expected object, got null"]


def test_yaml_timestamps_stay_strings() -> None:
    fx = load(
        "now: 2026-03-14T09:30:00Z\nname: 2026-03-14\nmessages: [{id: 2026-01-01, role: user, text: 2026-03-14}]\n"
    )
    assert fx.now == datetime(2026, 3, 14, 9, 30, tzinfo=UTC)
    assert fx.name == "2026-03-14" and fx.messages[0].id == "2026-01-01"
    assert fx.messages[0].text == "2026-03-14"


# --- other fields ------------------------------------------------------------------------------


def test_now_parsing() -> None:
    assert load("now: '2026-03-14T09:30:00'\n").now == datetime(2026, 3, 14, 9, 30, tzinfo=UTC)
    offset = timezone(timedelta(hours=2))
    assert load("now: '2026-03-14T09:30:00+02:00'\n").now == datetime(2026, 3, 14, 9, 30, tzinfo=offset)
    assert errors("now: yesterday\n") == ["fx.yaml:/now: not an ISO 8601 date-time: 'yesterday'"]


@pytest.mark.parametrize(
    "text", ["2026-03-14T09:30:00Z", "2026-03-14T09:30:00", "2026-03-14", "2026-03-14T09:30+02:00", "2026-03-14Z", "x"]
)
def test_now_option_and_fixture_now_agree(text: str) -> None:
    """`--now` and the fixture's `now:` are read by one parser: same instant, or both refused."""
    from ctxkit.cli.options import parse_now

    try:
        option: datetime | None = parse_now(text)
    except InputError as exc:
        assert exc.lines() == [f"--now: {text!r} is not an ISO 8601 date-time"]
        option = None
    if option is None:
        assert errors(f"now: '{text}'\n") == [f"fx.yaml:/now: not an ISO 8601 date-time: {text!r}"]
    else:
        assert load(f"now: '{text}'\n").now == option


def test_defaults_and_absent_fields() -> None:
    fx = load("")
    assert fx.model.max_input_tokens == 1000 and fx.model.supports_images is None
    assert fx.tokenizer is None and fx.now is None and fx.user_info is None and fx.leaf is None
    assert fx.settings == domain.Settings() and fx.prompts == domain.Prompts()
    assert fx.turn == domain.TurnOverrides() and fx.messages == () and fx.in_flight == ()


def test_prompts_turn_and_templates_pass_through() -> None:
    fx = load(
        "prompts: {system: '', task: null}\nturn: {cycle: 2, searched: true}\n"
        "templates: {reminder.citation: 'Cite.', image.label: '[{id}]'}\n"
    )
    assert fx.prompts.system == "" and fx.prompts.task is None
    assert fx.turn == domain.TurnOverrides(cycle=2, searched=True)
    assert fx.templates == (("reminder.citation", "Cite."), ("image.label", "[{id}]"))


def test_templates_problems_reported_at_the_template_pointer() -> None:
    """The registry's own checks run on `templates:` (a plain import, no silent fallback)."""
    assert errors("templates: {reminder.citation: ok, zz: b, a/b: c, image.label: '[{nope}]'}\n") == [
        "fx.yaml:/templates/a~1b: unknown template name 'a/b' (see `ctxkit templates`)",
        "fx.yaml:/templates/image.label: template 'image.label' is missing its slot(s) {id} (it has {nope}: a typo?)",
        "fx.yaml:/templates/zz: unknown template name 'zz' (see `ctxkit templates`)",
    ]


def test_templates_file() -> None:
    Path("t.yaml").write_text("reminder.citation: Cite it.\n")
    assert load_templates_file("t.yaml") == (("reminder.citation", "Cite it."),)
    Path("bad.yaml").write_text("- a\n")
    with pytest.raises(InputError) as caught:
        load_templates_file("bad.yaml")
    assert caught.value.lines() == ["bad.yaml: expected a map of template name → text"]


def test_deeply_nested_documents_are_refused_not_crashed() -> None:
    deep = "[" * 900 + "]" * 900
    assert errors(f"messages: [{{id: m, role: {deep}}}]\n") == [
        "fx.yaml:/messages/0/role/0/0/0: nested more than 120 levels deep"
    ]
    assert errors('{"ctxkit": ' + "[" * 5000 + "]" * 5000 + "}", name="fx.json", head=False) == [
        "fx.json: nested too deeply"
    ]


def test_templates_are_checked_by_the_registry() -> None:
    (line,) = errors("templates: {no.such.template: x}\n")
    assert line.startswith("fx.yaml:/templates/no.such.template: ")
