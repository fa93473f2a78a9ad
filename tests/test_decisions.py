"""Issue 22 item 1: every fate and rule id a report shows is decided in assembly; reports render."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from ctxkit.assembly import decisions
from ctxkit.errors import RuleError
from ctxkit.history.working import Fate
from ctxkit.loading.read import load_fixture
from ctxkit.pipeline import run
from ctxkit.reports import explain

from .conftest import GALLERY

REPORTS = Path(explain.__file__).parent
RULE_ID = re.compile(r"R-[A-Z]+-\d+")
_DECIDED_BY_KIND = {
    (f.fate, f.rule) for f in (decisions.SUMMARIZED, decisions.AFTER_LAST_USER, decisions.EMPTY_OMITTED, decisions.KEPT)
}


def _code_strings(tree: ast.AST) -> list[ast.Constant]:
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings
    ]


@pytest.mark.parametrize("path", sorted(REPORTS.rglob("*.py")), ids=lambda p: p.name)
def test_reports_name_no_rule_and_make_no_fate(path):
    """A report that decided a fate would name its rule id or build a `Fated`/`Fate` value itself."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert [n.value for n in _code_strings(tree) if RULE_ID.fullmatch(str(n.value))] == []
    built = [
        n.func.id
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("Fated", "Fate", "Row")
    ]
    assert built == []


@pytest.mark.parametrize("path", GALLERY, ids=[p.stem for p in GALLERY])
def test_every_explain_row_comes_from_the_decision_record(path):
    """Each row's fate and rule is the assembly's (its `fates` by key, a fate decided by what the
    message is, a generated message's rule) or translation's own row; never made up on the way."""
    try:
        result = run(load_fixture(str(path)))
        rows = explain.rows(result)
    except RuleError:
        pytest.skip("assembly fails by rule: explain shows the unassembled rows")
    a = result.assembly
    translated = {(r.fate, r.rule, r.key) for r in result.payload.prepared.rows}
    generated = set(decisions.GENERATED_RULES.values())
    project = {(fate, rule) for _, fate, rule, _ in a.project.fates}
    for row in rows:
        fated = a.fates.get(row.key or "")
        if (row.fate, row.rule, row.key) in translated:
            continue
        if row.fate is Fate.FORGOTTEN and row.rule == "R-FILE-1":  # R-FILE-1 over the message's fate
            continue
        if fated is not None:
            assert (row.fate, row.rule) == (fated.fate, fated.rule), row
        elif row.fate is Fate.GENERATED:
            assert row.rule in generated, row
        elif (row.key or "").startswith("project:"):
            assert (row.fate, row.rule) in project, row
        else:
            assert (row.fate, row.rule) in _DECIDED_BY_KIND | {(f.fate, f.rule) for f in a.fates.values()}, row
