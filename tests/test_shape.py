"""Shape (STYLE.md): one name per class, modules under 400 lines, functions under 50, reports
rendered outside the CLI.

Every public class in ctxkit has one name that says what it is.

Two modules defining the same public class name (`View` in three places, `Part` in two,
issue 22 item 6) make a reader, a search and an import guess which one is meant; so does
a class named like one of the standard library's (a `Counter` protocol beside
`collections.Counter`). An AST scan of every module keeps both from coming back. And no
module grows past the ~400 lines of STYLE.md unnoticed.
"""

from __future__ import annotations

import abc
import ast
import builtins
import collections
import collections.abc
import dataclasses
import datetime
import decimal
import enum
import pathlib
import re
import typing
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "ctxkit"

# The standard library modules whose names ctxkit's code imports and reads unqualified.
STANDARD = (builtins, collections, collections.abc, typing, dataclasses, enum, abc, pathlib, datetime, decimal)

# Public class name → why it is defined in more than one module. Empty: every name is unique.
SHARED_ON_PURPOSE: dict[str, str] = {}


def public_classes(source: str) -> list[str]:
    """The public classes a module defines at its top level (TypedDicts and NamedTuples too)."""
    return [n.name for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and not n.name.startswith("_")]


def defined_in() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        for name in public_classes(path.read_text(encoding="utf-8")):
            found.setdefault(name, []).append(module)
    return found


def test_no_two_modules_define_the_same_public_class_name():
    twice = {name: modules for name, modules in defined_in().items() if len(modules) > 1}
    unexplained = {name: modules for name, modules in twice.items() if name not in SHARED_ON_PURPOSE}
    assert unexplained == {}, "rename one of each so the name says what it is"
    assert set(SHARED_ON_PURPOSE) <= set(twice), "an allowed name that is no longer shared: remove it"


def test_no_public_class_takes_a_standard_library_name():
    standard = {name for module in STANDARD for name in dir(module) if not name.startswith("_")}
    taken = {name: modules for name, modules in defined_in().items() if name in standard}
    assert taken == {}


def test_the_scan_sees_top_level_public_classes_only():
    source = (
        "class View: ...\n"
        "class Part(typing.NamedTuple):\n    x: int\n"
        "class _Hidden: ...\n"
        "def f():\n    class Inner: ...\n"
    )
    assert public_classes(source) == ["View", "Part"]
    assert "Counter" in {name for module in STANDARD for name in dir(module)}
    assert len(defined_in()) > 50  # the whole package was read


MODULE_LINES = 400  # STYLE.md: no module over ~400 lines; split instead


def test_modules_stay_under_the_line_limit():
    over = {
        str(path.relative_to(PACKAGE.parent)): n
        for path in sorted(PACKAGE.rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MODULE_LINES
    }
    assert over == {}


FUNCTION_LINES = 50  # the house limit: a function this long or longer is split into its named steps
# Functions still over it, each to be split by the one who owns it (issue 22 item 6); the list
# only shrinks: a function split below the limit must leave it.
LONG_ON_PURPOSE: set[str] = set()


def long_functions(source: str, module: str) -> dict[str, int]:
    """`module::name` → lines (the `def` line to the last) of every function of `FUNCTION_LINES` or more."""
    return {
        f"{module}::{node.name}": n
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        if (n := (node.end_lineno or node.lineno) - node.lineno + 1) >= FUNCTION_LINES
    }


def test_functions_stay_under_the_line_limit():
    found: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        found |= long_functions(path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE.parent)))
    assert {name: n for name, n in found.items() if name not in LONG_ON_PURPOSE} == {}, "split it into its steps"
    assert LONG_ON_PURPOSE - set(found) == set(), "under the limit now: remove it from LONG_ON_PURPOSE"


def test_the_function_scan_counts_every_line_of_a_function():
    lines = [f"x{i} = {i}\n" for i in range(FUNCTION_LINES - 2)]
    short = "def short():\n" + "".join("    " + line for line in lines)
    long = (
        "class C:\n    async def long(self):\n" + "".join("        " + line for line in lines[1:]) + "\n        pass\n"
    )
    source = f"{short}\n{long}"
    assert long_functions(source, "m") == {"m::long": FUNCTION_LINES}


def test_the_command_line_draws_no_report():
    """Reports are rendered in ctxkit/reports (text and tables as plain values and strings); a
    command parses, calls and echoes. `compress`'s and `models`' reports once lived in their
    commands (issue 22 item 6): no CLI module lays out columns or imports the table library."""
    layout = re.compile(r"\btabulate\b|\.ljust\(|\.rjust\(|\{[^{}]*:[<>^]\d*\}|\{[^{}]*:[<>^]\{")
    found = {
        path.name: [m.group(0) for m in layout.finditer(path.read_text(encoding="utf-8"))]
        for path in sorted((PACKAGE / "cli").glob("*.py"))
    }
    assert {name: hits for name, hits in found.items() if hits} == {}
    assert layout.search('f"  {label:<18} {value:>8}"') and layout.search("cell.ljust(w)")
    assert layout.search("from tabulate import tabulate") and not layout.search('f"{n:,}"')
