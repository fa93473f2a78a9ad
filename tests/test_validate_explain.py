"""`validate` runs the assembly; `explain` shows what it can of a fixture that fails by rule
(docs/rules.md#commands: validate says whether a fixture can be used; exit 1 for R-ASM-2/3)."""

from __future__ import annotations

import json

import pytest

from .conftest import FIXTURES, ROOT, ctxkit

RULE_FAILURES = {"budget_exhaustion.yaml": "R-ASM-3", "fixed_parts_too_big.yaml": "R-ASM-2"}


@pytest.mark.parametrize("name,rule", sorted(RULE_FAILURES.items()))
def test_validate_reports_r_asm_2_3_failure_exit_1(name, rule):
    r = ctxkit("validate", str(FIXTURES / name), expect=1)
    assert r.out == ""
    lines = r.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and f"({rule})" in lines[0]


def test_validate_ok_and_rule_failure_together_exit_1():
    r = ctxkit("validate", str(FIXTURES / "plain_chat.yaml"), str(FIXTURES / "budget_exhaustion.yaml"), expect=1)
    assert r.out == f"ok: {FIXTURES / 'plain_chat.yaml'}\n"


def test_validate_bad_input_wins_over_rule_failure_exit_2():
    bad = ROOT / "tests" / "data" / "bad_reference.yaml"
    r = ctxkit("validate", str(FIXTURES / "budget_exhaustion.yaml"), str(bad), expect=2)
    assert "(R-ASM-3)" in r.err and "unknown file id" in r.err


def test_explain_rule_failure_shows_the_computable_rows_and_the_error():
    r = ctxkit("explain", str(FIXTURES / "budget_exhaustion.yaml"), expect=1)
    assert r.out.splitlines()[0].split() == ["id", "kind", "segment", "tokens", "fate", "rule"]
    assert "q2    user       last_user     5,000  ?" in r.out
    assert r.err.splitlines()[-1].startswith("error: ") and "(R-ASM-3)" in r.err


def test_explain_rule_failure_json_rows_have_no_fate():
    r = ctxkit("explain", str(FIXTURES / "budget_exhaustion.yaml"), "--format", "json", expect=1)
    rows = json.loads(r.out)
    assert [(row["id"], row["segment"], row["tokens"], row["fate"]) for row in rows] == [
        ("q1", "history", 4, None),
        ("a1", "history", 4, None),
        ("q2", "last_user", 5000, None),
    ]
    assert all(row["notes"] and row["rule"] is None for row in rows)
    assert "(R-ASM-3)" in r.err
