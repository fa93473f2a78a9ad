"""`ctxkit diff`: each way of choosing the two sides, the alignment, JSON, --exit-code."""

from __future__ import annotations

import json

from .conftest import FIXTURES, ctxkit

TRUNC = str(FIXTURES / "truncation.yaml")
EDIT = str(FIXTURES / "edited_branch.yaml")


def test_diff_two_budgets_names_what_was_dropped_and_why():
    r = ctxkit("diff", TRUNC, "--max-input-tokens", "200", "--max-input-tokens", "120")
    assert "messages: 1 present in only one context" in r.out
    assert "- 2 assistant 60 tokens [kept R-ASM-4]" in r.out
    assert "truncated (R-ASM-4)" in r.out
    assert '-      "content": "first answer"' in r.out


def test_diff_two_providers():
    r = ctxkit("diff", TRUNC, "--provider", "openai", "--provider", "anthropic", "--format", "json")
    d = json.loads(r.out)
    assert d["differ"] and d["a"].endswith("provider=openai")
    assert '+  "max_tokens"' in d["payload_diff"]
    assert d["only_in_a"] == [] and d["only_in_b"] == []


def test_diff_two_leaves():
    r = ctxkit("diff", EDIT, "--leaf", "m3", "--leaf", "m3b", "--format", "json")
    d = json.loads(r.out)
    assert [x["id"] for x in d["only_in_a"]] == ["m3"]
    assert [x["id"] for x in d["only_in_b"]] == ["m3b"]


def test_diff_two_tokenizers_same_payload():
    r = ctxkit("diff", TRUNC, "--tokenizer", "approx", "--tokenizer", "cl100k_base", "--exit-code")
    assert "payload: identical" in r.out


def test_diff_two_fixtures_and_exit_code(tmp_path):
    other = tmp_path / "t.yaml"
    other.write_text((FIXTURES / "truncation.yaml").read_text().replace("Be brief.", "Be kind."))
    r = ctxkit("diff", TRUNC, str(other), "--exit-code", expect=1)
    assert '-      "content": "Be brief."' in r.out and '+      "content": "Be kind."' in r.out
    assert ctxkit("diff", TRUNC, TRUNC).code == 0  # without --exit-code: 0 even when equal


def test_diff_exit_code_zero_when_identical():
    ctxkit("diff", TRUNC, TRUNC, "--exit-code", expect=0)


PLAIN = str(FIXTURES / "plain_chat.yaml")


def test_diff_two_tokenizers_show_the_numbers_that_differ():
    """`payload: identical` alone hid that every count differs (SPEC: diff shows the numbers)."""
    r = ctxkit("diff", PLAIN, "--tokenizer", "o200k_base", "--tokenizer", "cl100k_base")
    assert "numbers: 6 differ (a -> b)" in r.out
    lines = {
        line.split("  ")[1].strip(): line for line in r.out.splitlines() if line.startswith("  ") and " -> " in line
    }
    assert {"system tokens", "wire tokens", "cache prefix tokens"} <= set(lines)
    assert lines["wire tokens"].split() == ["wire", "tokens", "151", "->", "153", "(+2)"]
    assert r.out.rstrip().endswith("payload: identical (the numbers above differ)")
    d = json.loads(
        ctxkit("diff", PLAIN, "--tokenizer", "o200k_base", "--tokenizer", "cl100k_base", "--format", "json").out
    )
    assert not d["differ"] and d["numbers_differ"]
    assert {"name": "wire tokens", "a": 151, "b": 153} in d["numbers"]


def test_diff_budgets_show_kept_and_dropped_counts():
    d = json.loads(
        ctxkit("diff", TRUNC, "--max-input-tokens", "200", "--max-input-tokens", "120", "--format", "json").out
    )
    changes = {n["name"]: (n["a"], n["b"]) for n in d["numbers"]}
    assert changes["history kept messages"] == (3, 2) and changes["history dropped messages"] == (1, 2)
    assert changes["window"] == (200, 120)


def test_diff_exit_code_compares_payloads_only():
    """`--exit-code` is 1 when the payloads differ; equal payloads with other counts exit 0."""
    ctxkit("diff", PLAIN, "--tokenizer", "o200k_base", "--tokenizer", "cl100k_base", "--exit-code", expect=0)
    ctxkit("diff", PLAIN, "--provider", "openai", "--provider", "gemini", "--exit-code", expect=1)


def test_diff_identical_sides_say_the_numbers_are_the_same():
    r = ctxkit("diff", TRUNC, TRUNC)
    assert "numbers: the same" in r.out and r.out.rstrip().endswith("payload: identical")
