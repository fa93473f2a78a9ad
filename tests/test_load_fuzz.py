"""Fuzzing the loader (docs/rules.md#quality-targets): any input gives a Fixture or one-line errors, never a crash.

Mutations of the SPEC example also check that the compiled fast path (jsonschema-rs) and
jsonschema agree.
"""

from __future__ import annotations

import copy
import io
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from ctxkit.errors import InputError
from ctxkit.loading import domain
from ctxkit.loading.read import load_fixture, load_schema
from ctxkit.loading.schema import _fast_check
from tests.conftest import ctxkit, peak_bytes

SPEC_EXAMPLE = Path(__file__).parent / "data" / "spec_example.yaml"
VALID: dict[str, Any] = yaml.safe_load(SPEC_EXAMPLE.read_text(encoding="utf-8"))
FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 200_000)
    | st.floats(-2, 2, allow_nan=False)
    | st.text(max_size=8)
    | st.sampled_from(["m1", "m2", "s1", "img-1", "call_9", "user", "text"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


@pytest.fixture(scope="module")
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as name:
        yield Path(name)


def assert_loads_or_explains(path: str, **options: Any) -> None:
    try:
        fixture = load_fixture(path, **options)
    except InputError as error:
        lines = error.lines()
        assert lines, "an InputError must name at least one problem"
        for line in lines:
            assert line.startswith(path + ":"), line
            assert len(line.splitlines()) == 1, repr(line)
    else:
        assert isinstance(fixture, domain.Fixture)


@FUZZ
@given(data=st.binary(max_size=300))
def test_random_bytes(folder: Path, data: bytes) -> None:
    (folder / "fx.yaml").write_bytes(data)
    assert_loads_or_explains(str(folder / "fx.yaml"))
    try:
        load_fixture("-", stdin=io.BytesIO(data))
    except InputError as error:
        assert all(line.startswith("-:") and len(line.splitlines()) == 1 for line in error.lines())


yaml_ish = st.lists(
    st.sampled_from(
        [
            "ctxkit: 1\n",
            "model: {provider: openai, name: x}\n",
            "messages:\n",
            "  - ",
            "{id: m1, role: user}\n",
            "&a ",
            "*a",
            "[",
            "]",
            "{",
            "}",
            ": ",
            "- ",
            "\t",
            "'",
            '"',
            "<<: *a\n",
            "!!set ",
            "? ",
            "\n",
            "  ",
            "1: x\n",
            "~",
            "0.1",
            "\x00",
            "\ufeff",
            "é",
            "\\u2028",
            "\u2028",
            "now: 2026-03-14\n",
            "---\n",
            "...\n",
            "!!bool ",
            "!!map ",
            "!!int ",
            "!!float ",
            "!!str ",
            "!!seq ",
            "!!null ",
            "!x ",
            "!!timestamp ",
            "9" * 5000,
            "1e999",
            ".inf",
            "0x",
            "%YAML 1.1\n",
        ]
    ),
    max_size=30,
).map("".join)


@FUZZ
@given(text=st.text(max_size=200) | yaml_ish)
def test_random_text(folder: Path, text: str) -> None:
    (folder / "fx.yaml").write_text(text, encoding="utf-8", errors="surrogatepass")
    assert_loads_or_explains(str(folder / "fx.yaml"))


# --- hostile fixtures through the CLI (issue 11): shapes that loaded but crashed or hung later ---

HOSTILE_IDS = ["m0", "m1", "m2", "m3", "m4", 1, "1"]
FILE_IDS = ["f0", "f1", "f2"]
SPECIAL_PATHS = ["plain.txt", "fifo", "sub", "zero", "missing.txt", "latin1.txt", "big.txt", "/dev/zero", "../up.txt"]
BRACE_SOUP = ["{", "}", "{{", "}}", "name", "content", "id", "chars", "CURRENT_DATETIME", "x", " ", '"a": 1', "\n"]
TEMPLATE_NAMES = ["file.text", "forgotten_files.line", "image.label", "reminder.citation", "system_prompt"]

PLAIN_CHARS = ["a", " ", "é", "\U0001f600", "{", "}"]
LONE_SURROGATES = ["\ud800", "\udfff"]  # json.dumps writes them as `\ud800`-style escapes


@pytest.fixture(scope="module")
def hostile_folder(folder: Path) -> Path:
    """Special files beside the fixtures: a FIFO, a directory, a device (when allowed), odd bytes."""
    hostile = folder / "hostile"
    hostile.mkdir()
    (hostile / "plain.txt").write_text("plain")
    (hostile / "latin1.txt").write_bytes(b"caf\xe9 \xed\xa0\x80")
    (hostile / "big.txt").write_bytes(b"x" * 5000)
    (hostile / "sub").mkdir()
    os.mkfifo(hostile / "fifo")
    try:
        os.mknod(hostile / "zero", 0o600 | stat.S_IFCHR, os.makedev(1, 5))
    except (PermissionError, AttributeError):
        (hostile / "zero").symlink_to("/dev/zero")
    (folder / "up.txt").write_text("outside")
    return hostile


@st.composite
def hostile_fixtures(draw: st.DrawFn) -> dict[str, Any]:
    """A small fixture whose parts are drawn to collide, each now and then: parent cycles,
    repeated attachments, special `path:` files, brace soup in templates, lone surrogates
    in any string (keys too); often none of them, so that assembly runs as well."""

    def rarely() -> bool:
        return draw(st.sampled_from([False, False, False, False, True]))

    alphabet = PLAIN_CHARS + (LONE_SURROGATES if rarely() else [])
    hostile_text = st.text(alphabet=st.sampled_from(alphabet), max_size=6)
    file_lists = st.lists(st.sampled_from(FILE_IDS), max_size=3, unique=not rarely())
    count = draw(st.integers(1, 5))
    linear = not rarely()
    messages: list[dict[str, Any]] = []
    for index in range(count):
        message: dict[str, Any] = {"id": f"m{index}", "role": "user" if index % 2 == 0 else "assistant"}
        message["text"] = draw(hostile_text)
        if not linear:  # a tree: named parents, `parent: null` (a root child) or none (R-FIX-2's partial parents)
            parent = draw(st.sampled_from([*HOSTILE_IDS[:count], None, "(none)"]))
            if parent != "(none)":
                message["parent"] = parent
        if message["role"] == "user":
            message["files"] = draw(file_lists)
        messages.append(message)
    files = []
    for file_id in FILE_IDS:
        kind = draw(st.sampled_from(["text", "image", "metadata_only"]))
        entry: dict[str, Any] = {"id": file_id, "name": draw(hostile_text), "kind": kind}
        if kind == "image" and not rarely():
            entry["tokens"] = draw(st.integers(0, 50))
        elif kind != "metadata_only" and rarely():
            entry["path"] = draw(st.sampled_from(SPECIAL_PATHS))
        elif kind == "text":
            entry["text"] = draw(hostile_text)
        files.append(entry)
    templates = {
        name: "".join(draw(st.lists(st.sampled_from(BRACE_SOUP), max_size=8)))
        for name in draw(st.lists(st.sampled_from(TEMPLATE_NAMES), max_size=2, unique=True))
        if rarely()
    }
    if rarely():
        templates[draw(hostile_text)] = "x"  # an unknown name, which may hold a lone surrogate
    window = draw(st.sampled_from([60, 4000, 4000]))
    return {
        "ctxkit": 1,
        "now": "2026-03-14T09:30:00Z",
        "model": {"provider": "openai", "name": "gpt-4o", "max_input_tokens": window},
        "tokenizer": "approx",
        "files": files,
        "project_files": draw(file_lists),
        "messages": messages,
        "templates": templates,
    }


def assert_cli_ends_cleanly(*args: str) -> None:
    run = ctxkit(*args, expect=None)
    assert run.code in (0, 1, 2), str(run)
    lines = run.err.splitlines()
    assert all(line.startswith(("error: ", "warning: ")) for line in lines if line), str(run)
    assert "Traceback" not in run.err and "internal error" not in run.err, str(run)
    if run.code == 2:
        assert any(line.startswith("error: ") for line in lines), str(run)


@FUZZ
@given(doc=hostile_fixtures(), outside=st.booleans(), command=st.sampled_from(["assemble", "validate", "explain"]))
def test_hostile_fixtures_end_in_exit_0_1_or_2(
    hostile_folder: Path, doc: dict[str, Any], outside: bool, command: str
) -> None:
    path = hostile_folder / "fx.json"
    path.write_text(json.dumps(doc), encoding="utf-8")  # ensure_ascii: surrogates become `\udXXX` escapes
    options = ["--allow-outside-paths"] if outside else []
    assert_cli_ends_cleanly(command, str(path), "--max-size", "4K", *options)


@FUZZ
@given(size=st.integers(1, 3000), fanout=st.integers(1, 40), depth=st.integers(1, 4), limit=st.integers(1, 64))
def test_alias_expansion_is_bounded_quickly(folder: Path, size: int, fanout: int, depth: int, limit: int) -> None:
    """Anchored text referenced `fanout` times per level: refused past the size limit, else loaded."""
    lines = ["ctxkit: 1", "model: {provider: openai, name: gpt-4o}", f"name: &l0 {'x' * size}"]
    lines += [f"turn_{level}: &l{level} [{', '.join([f'*l{level - 1}'] * fanout)}]" for level in range(1, depth + 1)]
    text = "\n".join(lines) + "\n"
    (folder / "alias.yaml").write_text(text, encoding="utf-8")
    expanded = size * sum(fanout**level for level in range(depth + 1))  # the anchored text, as often as it is reached
    caught: list[InputError] = []

    def load() -> None:
        try:
            load_fixture(str(folder / "alias.yaml"), max_size=limit * 1024)
        except InputError as exc:
            caught.append(exc)

    load()  # first: modules imported on the error path count no memory below
    caught.clear()
    assert peak_bytes(load) < 16 * 1024**2  # the expansion is refused, never built
    assert caught, f"{expanded} characters expanded were loaded under a {limit} KiB limit"
    first = caught[0].lines()[0]
    if len(text) > limit * 1024:
        assert first.endswith(f"alias.yaml: larger than the size limit of {limit} KiB (see --max-size)"), first
    elif expanded > limit * 1024:
        assert "aliases expand the document past the size limit" in first, first
    elif expanded + 100 < limit * 1024:  # fits (keys and numbers add a few characters): `turn_1` is an unknown key
        assert "size limit" not in first, first


@FUZZ
@given(name=st.sampled_from(["fifo", "sub", "zero"]))
def test_special_files_as_the_fixture_are_refused(hostile_folder: Path, name: str) -> None:
    run = ctxkit("validate", str(hostile_folder / name), expect=2)
    assert run.err.startswith("error: ") and "cannot read" in run.err and len(run.err.splitlines()) == 1


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths(item, (*prefix, index))


def get(doc: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        doc = doc[part]
    return doc


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    doc = copy.deepcopy(VALID)
    for _ in range(draw(st.integers(1, 3))):
        every = list(paths(doc))
        path = draw(st.sampled_from(every))
        operation = draw(st.sampled_from(["delete", "retype", "unknown", "dangle", "swap", "dup"]))
        parent: Any = get(doc, path[:-1]) if path else None
        if operation == "delete" and path:
            del parent[path[-1]]
        elif operation == "retype" and path:
            parent[path[-1]] = draw(json_values)
        elif operation == "unknown":
            target = get(doc, path)
            if isinstance(target, dict):
                target[draw(st.sampled_from(["extra", "Text", "parnt", ""]))] = draw(json_values)
        elif (
            operation == "dangle"
            and path
            and path[-1] in ("parent", "leaf", "summarizes_through", "tool_call_id", "id", "file_id")
        ):
            parent[path[-1]] = draw(st.sampled_from(["m9", "m1", "1", 1, "s1", "call_9"]))
        elif operation == "swap" and isinstance(doc.get("messages"), list) and len(doc["messages"]) >= 2:
            messages = doc["messages"]
            i, j = draw(st.integers(0, len(messages) - 1)), draw(st.integers(0, len(messages) - 1))
            if isinstance(messages[i], dict) and isinstance(messages[j], dict):
                a, b = messages[i].get("id"), messages[j].get("id")
                messages[i]["id"], messages[j]["id"] = b, a
        elif operation == "dup" and path and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[path[-1]]))
        if not isinstance(doc, dict):
            break
    return doc


@FUZZ
@given(doc=mutated(), as_json=st.booleans())
def test_mutated_spec_example(folder: Path, doc: dict[str, Any], as_json: bool) -> None:
    path = folder / ("fx.json" if as_json else "fx.yaml")
    text = json.dumps(doc) if as_json else yaml.safe_dump(doc, allow_unicode=True)
    path.write_text(text, encoding="utf-8")
    assert_loads_or_explains(str(path))


@settings(FUZZ, max_examples=300)
@given(doc=mutated())
def test_fast_path_agrees_with_jsonschema(doc: dict[str, Any]) -> None:
    """jsonschema-rs's compiled check accepts exactly what jsonschema accepts."""
    assert _fast_check()(doc) == Draft202012Validator(load_schema()).is_valid(doc)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("messages", 0, "tokens"), 3.0),  # an integral float is an integer in JSON Schema
        (("messages", 0, "tokens"), True),  # a boolean is not
        (("ctxkit",), 1.0),
        (("ctxkit",), True),
        (("messages", 0, "tokens"), -1),
        (("model", "max_input_tokens"), 0.5),
        (("messages", 0, "id"), 1.5),
        (("messages", 0, "role"), "summary"),  # then it needs summarizes_through
        (("settings", "safety_margin"), 1),
    ],
)
def test_fast_path_agrees_with_jsonschema_on_edge_values(path: tuple[Any, ...], value: Any) -> None:
    doc = copy.deepcopy(VALID)
    get(doc, path[:-1])[path[-1]] = value
    assert _fast_check()(doc) == Draft202012Validator(load_schema()).is_valid(doc)


def test_alias_expansion_past_both_bounds_names_the_size_limit(folder: Path) -> None:
    """One character referenced 32 times over four levels passes the node bound and a 32 KiB
    limit at the same node: the message names the limit the user can change."""
    lines = ["ctxkit: 1", "model: {provider: openai, name: gpt-4o}", "name: &l0 x"]
    lines += [f"turn_{level}: &l{level} [{', '.join([f'*l{level - 1}'] * 32)}]" for level in range(1, 5)]
    (folder / "alias.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_fixture(str(folder / "alias.yaml"), max_size=32 * 1024)
    assert "aliases expand the document past the size limit of 32 KiB" in caught.value.lines()[0]


# --- odd numbers (issue 19 items 14, 15): any number in any numeric field → exit 0, 1 or 2,
# and a JSON report that is JSON (no Infinity or NaN) ----------------------------------------

ODD_NUMBERS = [
    "1e400", "-1e400", "1e308", "1.7976931348623157e308", "1e-400", "4.9e-324", "-0.0", "0", "0.5", "1",
    "1e6", "1000000.5", "99999999999999999999999", "NaN", "Infinity", "-1",
]  # fmt: skip
NUMERIC_FIELDS = [
    '"settings": {"prices": {"input": N, "output": 1}}',
    '"settings": {"prices": {"input": 1, "output": N, "cache_write": N}}',
    '"settings": {"safety_margin": N}',
    '"settings": {"compression_trigger_ratio": N}',
    '"settings": {"tool_result_placeholder_tokens": N}',
    '"settings": {"cache": {"ttl_seconds": N, "min_tokens": N}}',
    '"settings": {"image_cap": N, "last_n_user_messages": N}',
    '"model": {"provider": "anthropic", "name": "claude-sonnet-4-5", "max_input_tokens": N, "max_output_tokens": N}',
    '"files": [{"id": "f1", "name": "a", "kind": "text", "text": "x", "tokens": N, "chars": N}]',
]
ODD_COMMANDS = [["replay", "--format", "json"], ["budget", "--format", "json"], ["compress", "--format", "json"]]


def _no_constants(name: str) -> None:
    raise AssertionError(f"{name} is not JSON")


@FUZZ
@given(
    number=st.sampled_from(ODD_NUMBERS),
    field=st.sampled_from(NUMERIC_FIELDS),
    command=st.sampled_from(ODD_COMMANDS),
)
def test_odd_numbers_end_cleanly_and_reports_stay_json(
    folder: Path, number: str, field: str, command: list[str]
) -> None:
    body = field.replace("N", number)
    head = '"model": {"provider": "openai", "name": "gpt-4o"}, ' if '"model"' not in body else ""
    files = ', "files": ["f1"]' if '"files"' in body else ""
    messages = (
        '"messages": [{"id": "u1", "role": "user", "text": "hi"}, '
        '{"id": "a1", "role": "assistant", "text": "yo"}, '
        f'{{"id": "u2", "role": "user", "text": "again"{files}}}]'
    )
    path = folder / "odd.json"
    text = '{"ctxkit": 1, "now": "2026-03-14T09:30:00Z", ' + head + body + ", " + messages + "}"
    path.write_text(text, encoding="utf-8")
    run = ctxkit(command[0], str(path), *command[1:], expect=None)
    assert run.code in (0, 1, 2), str(run)
    assert "Traceback" not in run.err and "internal error" not in run.err, str(run)
    if run.code == 0:
        json.loads(run.out, parse_constant=_no_constants)


# --- long runs of one character class (issue 19 item 5): counted quickly, exactly -------------

RUN_CHARACTERS = ["y", "A", "中", "한", "7", " ", "\n", "-", "!", "🙂", "é"]


@settings(FUZZ, max_examples=40)
@given(
    char=st.sampled_from(RUN_CHARACTERS),
    length=st.integers(200, 20_000),
    where=st.sampled_from(["message", "file", "system", "args"]),
    tokenizer=st.sampled_from(["cl100k_base", "o200k_base"]),
)
def test_long_single_class_runs_in_any_text_validate(
    folder: Path, char: str, length: int, where: str, tokenizer: str
) -> None:
    """Each once took the plain-Python counter quadratic time (`"y" * 20000`: 53 s)."""
    run = char * length
    doc: dict[str, Any] = {
        "ctxkit": 1,
        "now": "2026-03-14T09:30:00Z",
        "model": {"provider": "openai", "name": "gpt-4o", "max_input_tokens": 1_000_000},
        "tokenizer": tokenizer,
        "prompts": {"system": run if where == "system" else "Be brief."},
        "files": [{"id": "f1", "name": "a.txt", "kind": "text", "text": run if where == "file" else "x"}],
        "messages": [
            {"id": "u1", "role": "user", "text": run if where == "message" else "hi", "files": ["f1"]},
            {
                "id": "a1",
                "role": "assistant",
                "text": "ok",
                "tool_calls": [{"id": "c1", "name": "f", "args": {"q": run if where == "args" else "q"}}],
            },
            {"id": "u2", "role": "user", "text": "more"},
        ],
    }
    path = folder / "runs.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    assert ctxkit("validate", str(path)).out == f"ok: {path}\n"
