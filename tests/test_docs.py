"""docs/rules.md and docs/architecture.md stay true to the code.

* every rule id cited in ctxkit/, tests/ or a gallery report (explain's `rule`
  column, warnings, rule errors) is described in docs/rules.md;
* every rule described there is cited in ctxkit/ or tests/ (an id in the text, or a
  test named `test_r_asm_4_...`), except the few listed in PENDING;
* every `path::name` and file path the docs name exists, and every
  `docs/rules.md#anchor` link in the code points at a heading;
* the code and tests refer to the rules by id or doc link, not by section numbers of
  a specification kept outside the repository.
"""

from __future__ import annotations

import fnmatch
import re
from functools import cache
from pathlib import Path

import pytest

from ctxkit.errors import RuleError
from ctxkit.loading.config import Options
from ctxkit.loading.read import load_fixture
from ctxkit.pipeline import run
from ctxkit.reports.explain import rows as explain_rows

from .conftest import GALLERY, ROOT

DOCS = ROOT / "docs"
RULES = DOCS / "rules.md"
ID = re.compile(r"\bR-[A-Z]+-\d+\b")
FAMILIES = ("FIX", "TURN", "TREE", "CONV", "SYS", "PROJ", "ASM", "FILE", "REM", "TR", "CMP", "RPL", "HTML", "LOG")
# `def test_r_asm_4_...` or `def test_r_tree_1_and_2_...`: the ids a test's name carries
TEST_NAME = re.compile(r"def (test_\w+)")
NAME_ID = re.compile(r"(?<![a-z])r_(" + "|".join(f.lower() for f in FAMILIES) + r")_(\d+)((?:_and_\d+)*)")

# Rules documented before any code cites them. Whoever lands the first citation of one of
# these ids removes it here (test_pending_ids_are_not_cited_yet says which). Keep this list
# as short as the truth allows.
PENDING: set[str] = set()


def _sources() -> list[Path]:
    """Where a citation counts: the package and the tests (this file's PENDING list excluded)."""
    found = [p for p in (ROOT / "ctxkit").rglob("*") if p.suffix in (".py", ".json") and p.is_file()]
    found += [p for p in (ROOT / "tests").rglob("*") if p.suffix in (".py", ".yaml", ".json") and p.is_file()]
    return sorted(p for p in found if p != Path(__file__).resolve() and "__snapshots__" not in p.parts)


@cache
def cited() -> dict[str, set[str]]:
    """Rule id → the files that cite it (in text, or in a test's name)."""
    where: dict[str, set[str]] = {}
    for path in _sources():
        text = path.read_text(encoding="utf-8")
        ids = set(ID.findall(text))
        for name in TEST_NAME.findall(text):
            for family, first, more in NAME_ID.findall(name):
                ids |= {f"R-{family.upper()}-{n}" for n in (first, *re.findall(r"\d+", more))}
        for rule in ids:
            where.setdefault(rule, set()).add(str(path.relative_to(ROOT)))
    return where


@cache
def reported() -> dict[str, set[str]]:
    """Rule id → the gallery fixtures whose explain rows, warnings or rule error cite it."""
    where: dict[str, set[str]] = {}
    for path in GALLERY:
        try:
            result = run(load_fixture(str(path)), Options())
            texts = [row.rule for row in explain_rows(result)] + result.warnings
        except RuleError as exc:
            texts = [str(exc)]
        for rule in ID.findall("\n".join(texts)):
            where.setdefault(rule, set()).add(path.name)
    return where


@cache
def documented() -> list[str]:
    return re.findall(r"^### (R-[A-Z]+-\d+)$", RULES.read_text(encoding="utf-8"), flags=re.MULTILINE)


def anchors(path: Path) -> set[str]:
    """The heading anchors a Markdown viewer makes: lower case, punctuation dropped, spaces → '-'."""
    headings = re.findall(r"^#+ (.+)$", path.read_text(encoding="utf-8"), flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_rules_are_documented_once_in_order_of_the_pipeline():
    ids = documented()
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1]
    families = list(dict.fromkeys(i.rsplit("-", 1)[0] for i in ids))
    assert families == [f"R-{f}" for f in FAMILIES]
    for family in families:
        numbers = [int(i.rsplit("-", 1)[1]) for i in ids if i.startswith(family + "-")]
        assert numbers == sorted(numbers), family


def test_every_cited_id_is_documented():
    missing = {rule: sorted(files) for rule, files in cited().items() if rule not in documented()}
    assert not missing, f"describe these in docs/rules.md (cited in): {missing}"


def test_every_reported_id_is_documented():
    missing = {rule: sorted(files) for rule, files in reported().items() if rule not in documented()}
    assert not missing, f"describe these in docs/rules.md (reported for): {missing}"


def test_every_id_in_the_readmes_is_documented():
    pages = [ROOT / "README.md", ROOT / "fixtures" / "README.md"]
    found = {rule: page.name for page in pages for rule in ID.findall(page.read_text(encoding="utf-8"))}
    missing = {rule: page for rule, page in found.items() if rule not in documented()}
    assert not missing, f"describe these in docs/rules.md: {missing}"


def test_every_documented_id_is_cited_or_pending():
    uncited = [rule for rule in documented() if rule not in cited() and rule not in PENDING]
    assert not uncited, f"no code or test cites these: cite them, or remove them from docs/rules.md: {uncited}"


def test_pending_ids_are_not_cited_yet():
    landed = {rule: sorted(cited()[rule]) for rule in sorted(PENDING) if rule in cited()}
    assert not landed, f"now cited: remove them from PENDING in tests/test_docs.py: {landed}"


def test_pending_ids_are_documented():
    assert PENDING <= set(documented())


REFERENCE = re.compile(r"`((?:ctxkit|tests|fixtures|docs|benchmarks)/[\w./-]+)(?:::([\w*]+))?`")


def _defines(path: Path, name: str) -> bool:
    """`name` (or a glob of names) is a function, class or top-level assignment in `path`."""
    source = path.read_text(encoding="utf-8")
    names = re.findall(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)", source, flags=re.MULTILINE)
    names += re.findall(r"^(\w+)\s*(?::[^=\n]+)?=", source, flags=re.MULTILINE)
    return any(fnmatch.fnmatchcase(n, name) for n in names)


@pytest.mark.parametrize("doc", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_named_files_and_definitions_exist(doc: Path):
    stale = []
    for path, name in REFERENCE.findall(doc.read_text(encoding="utf-8")):
        target = ROOT / path
        if not target.exists():
            stale.append(path)
        elif name and not _defines(target, name):
            stale.append(f"{path}::{name}")
    assert not stale, f"{doc.name} names what no longer exists; update it: {stale}"


def test_doc_links_in_code_point_at_headings():
    link = re.compile(r"docs/(\w+\.md)#([\w-]+)")
    broken = []
    for path in _sources():
        for page, anchor in link.findall(path.read_text(encoding="utf-8")):
            if not (DOCS / page).exists() or anchor not in anchors(DOCS / page):
                broken.append(f"{path.relative_to(ROOT)}: docs/{page}#{anchor}")
    assert not broken, broken


def test_code_refers_to_rules_not_to_spec_sections():
    section = re.compile(r"SPEC §|§\s?\d")
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in _sources()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if section.search(line)
    ]
    assert not found, f"use a rule id or a docs/rules.md#anchor link instead: {found}"


def test_every_module_is_in_the_module_map():
    """docs/architecture.md lists every module of the package, one line each."""
    listed = set(REFERENCE.findall((DOCS / "architecture.md").read_text(encoding="utf-8")))
    paths = {path for path, _ in listed}
    modules = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "ctxkit").rglob("*.py") if p.name != "__init__.py")
    missing = [m for m in modules if m not in paths]
    assert not missing, f"add a line for each to the module map in docs/architecture.md: {missing}"
