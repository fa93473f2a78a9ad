"""Writing fixtures back (compress --write, import): what is written loads back to the same values.

Issue 11 item 3: U+0085 written raw read back as a space, exact decimals came back
rounded. The property: load(write(load(f))) == load(f), on every gallery fixture
and on generated ones, in YAML and in JSON.
"""

from __future__ import annotations

import dataclasses
import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxkit.compression.compress import plan, write_back
from ctxkit.errors import InputError
from ctxkit.loading import domain
from ctxkit.loading.config import resolve
from ctxkit.loading.read import load_fixture
from ctxkit.loading.write import Number, exact_numbers, json_text, yaml_text

from .conftest import FIXTURES, GALLERY

BREAKS = "a\x85b\u2028c\u2029d\re\r\nf\tg\x0bh\ufeffi\x00j\x7fk"
TRICKY = [BREAKS, " lead", "trail ", "two\n\nlines\n", "\n", "- item", "# not a comment", "null", "1.5", "'q'", '"dq"']


def comparable(f: domain.Fixture) -> domain.Fixture:
    return dataclasses.replace(f, source="", raw=None, raw_floats=None)


def reload(text: str, base: Path) -> domain.Fixture:
    cwd = os.getcwd()
    os.chdir(base)  # stdin fixtures resolve paths from the current folder
    try:
        return load_fixture("-", stdin=io.BytesIO(text.encode("utf-8")))
    finally:
        os.chdir(cwd)


def round_trips(f: domain.Fixture) -> None:
    doc = exact_numbers(f.raw, f.raw_floats)
    for text in (yaml_text(doc), json_text(doc)):
        assert comparable(reload(text, f.base_dir)) == comparable(f), text[:2000]


@pytest.mark.parametrize("path", GALLERY, ids=lambda p: p.stem)
def test_write_round_trip_every_gallery_fixture(path):
    round_trips(load_fixture(str(path)))


def test_write_round_trip_yaml_line_breaks_in_texts_arguments_and_responses(tmp_path):
    """U+0085 and its kin are escaped, never written raw (they came back as spaces)."""
    doc: dict[str, Any] = {
        "ctxkit": 1,
        "model": {"provider": "openai", "name": "gpt-4o"},
        "messages": [
            {"id": "u", "role": "user", "text": BREAKS},
            {
                "id": "a2",
                "role": "assistant",
                "text": BREAKS,
                "tool_calls": [{"id": "c1", "name": "n", "args": {"q": BREAKS, "k": TRICKY}, "response": BREAKS}],
            },
            {"id": "u2", "role": "user", "text": " lead\n\ntrail "},
        ],
    }
    source = tmp_path / "f.json"
    source.write_text(json_text(doc), encoding="utf-8")
    f = load_fixture(str(source))
    assert f.message("a2").tool_calls[0].response == BREAKS
    round_trips(f)
    assert "\x85" not in yaml_text(f.raw) and "\u2028" not in yaml_text(f.raw)


@pytest.mark.parametrize("written", ["0.7499999999999999999999", "0.10", "1.", ".5", "+0.25", "0.1_5"])
def test_write_keeps_decimals_exactly_as_written(tmp_path, written):
    """R-FIX-3: `compression_trigger_ratio: 0.7499999999999999999999` came back as 0.75."""
    source = tmp_path / "f.yaml"
    source.write_text(
        "ctxkit: 1\nmodel: {provider: openai, name: gpt-4o}\n"
        f"settings: {{compression_trigger_ratio: {written}}}\n"
        "user_info: {organization: {share: " + written + "}}\n"
        "messages: [{id: u, role: user, text: hi}]\n",
        encoding="utf-8",
    )
    f = load_fixture(str(source))
    doc = exact_numbers(f.raw, f.raw_floats)
    assert f"compression_trigger_ratio: {written.replace('_', '')}" in yaml_text(doc)
    again = reload(yaml_text(doc), tmp_path)
    assert str(again.settings.compression_trigger_ratio) == str(f.settings.compression_trigger_ratio)
    assert again.user_info == f.user_info
    again = reload(json_text(doc), tmp_path)  # JSON cannot spell `1.` or `.5`: the same number
    assert again.settings.compression_trigger_ratio == f.settings.compression_trigger_ratio


def test_write_json_numbers_from_json_stay_as_written():
    assert json_text({"a": Number("1E-7"), "b": Number("0.7499999999999999999999")}) == (
        '{\n  "a": 1E-7,\n  "b": 0.7499999999999999999999\n}\n'
    )
    assert yaml_text({"a": Number("1e3")}) == "a: 1.0e+3\n"  # YAML 1.1 floats need a dot


def test_write_refuses_a_lone_surrogate_naming_where():
    with pytest.raises(InputError, match=r"out.yaml:/messages/1/text: cannot write a lone surrogate"):
        yaml_text({"messages": [{"text": "ok"}, {"text": "a\ud800b"}]}, source="out.yaml")


def test_r_cmp_5_write_back_round_trips_line_breaks_in_the_summary(tmp_path):
    """`--summary $'a\\u0085b'` read back as 'a b'."""
    f = load_fixture(str(FIXTURES / "compress_just_above.yaml"))
    p = plan(resolve(f))
    for suffix in (".yaml", ".json"):
        out = tmp_path / f"next{suffix}"
        write_back(f, p, BREAKS, out)
        again = load_fixture(str(out), allow_outside_paths=True)
        assert again.messages[-1].text == BREAKS
        assert comparable(dataclasses.replace(again, messages=again.messages[:-1], base_dir=f.base_dir)) == (
            comparable(f)
        )


def test_r_cmp_5_summary_not_utf8_is_exit_2_one_line(tmp_path):
    """Bytes that are not UTF-8 arrive as lone surrogates: refused, nothing written."""
    out = tmp_path / "next.yaml"
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            "from ctxkit.cli import main; main()",
            "compress",
            str(FIXTURES / "compress_just_above.yaml"),
            "--summary",
            b"a\xffb",
            "--write",
            str(out),
        ],
        capture_output=True,
        check=False,
    )
    assert run.returncode == 2
    assert run.stderr.decode().splitlines() == ["error: --summary: not valid UTF-8 text (byte 0xff)"]
    assert not out.exists()


# --- fuzzed fixtures ------------------------------------------------------------------------

texts = st.text(st.characters(exclude_categories=["Cs"]), max_size=12) | st.sampled_from(TRICKY)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**20), 10**20) | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=10,
)


@st.composite
def fixtures(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(1, 5))
    messages: list[dict[str, Any]] = []
    for i in range(n):
        m: dict[str, Any] = {"id": f"m{i}", "role": "user" if i % 2 == 0 else "assistant", "text": draw(texts)}
        if m["role"] == "assistant" and draw(st.booleans()):
            m["tool_calls"] = [
                {"id": "c", "name": draw(texts.filter(bool)), "args": draw(json_values), "response": draw(texts)}
            ]
        messages.append(m)
    digits = draw(st.integers(1, 30))
    ratio = "0." + "".join(draw(st.lists(st.sampled_from("0123456789"), min_size=digits, max_size=digits)))
    return {
        "ctxkit": 1,
        "name": draw(texts),
        "model": {
            "provider": "openai",
            "name": draw(texts.filter(lambda t: t.strip() != "")),
            "max_input_tokens": 1000,
        },
        "settings": {"compression_trigger_ratio": Number(ratio)},
        "user_info": {"memories": draw(st.lists(texts, max_size=3))},
        "messages": messages,
    }


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=fixtures(), as_yaml=st.booleans())
def test_write_round_trip_fuzzed_fixtures(doc, as_yaml, tmp_path_factory):
    text = yaml_text(doc) if as_yaml else json_text(doc)
    base = tmp_path_factory.getbasetemp()
    try:
        f = reload(text, base)
    except InputError:
        return  # a generated document the schema refuses: nothing to write back
    round_trips(f)
