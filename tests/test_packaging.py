"""Packaging (issue 11 item 16, issue 12 item 9): the distribution's name, version, typing and extras."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib

import ctxkit

from .conftest import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]


def test_distribution_is_ctxkit_cli_with_the_ctxkit_command_and_package():
    """`ctxkit` on the package index is an unrelated project: the distribution is ctxkit-cli."""
    assert PROJECT["name"] == "ctxkit-cli"
    assert PROJECT["scripts"] == {"ctxkit": "ctxkit.__main__:main"}
    assert PROJECT["entry-points"]["pytest11"] == {"ctxkit": "ctxkit.snapshots.pytest_plugin"}
    assert importlib.metadata.version("ctxkit-cli") == ctxkit.__version__


def test_every_install_instruction_names_the_distribution():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = [line for line in readme.splitlines() if "pip install" in line and "is another project" not in line]
    assert lines
    for line in lines:
        for target in re.findall(r"pip install ((?:'[^']*'|\S)+)", line):
            assert target.strip("'`").startswith(("ctxkit-cli", ".", "-e")), line


def test_one_version_source_and_typed_package():
    assert "version" not in PROJECT and PROJECT["dynamic"] == ["version"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "ctxkit.__version__"}
    assert (ROOT / "ctxkit" / "py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["ctxkit"]
    assert any(c == "Typing :: Typed" for c in PROJECT["classifiers"])


def test_runtime_dependencies_carry_no_test_or_benchmark_pins():
    runtime = {re.split(r"[<>=\[;]", dep)[0] for dep in PROJECT["dependencies"]}
    extras = PROJECT["optional-dependencies"]
    for heavy in (*extras["bench"], *extras["lint"], *extras["pytest"], "hypothesis", "playwright"):
        assert re.split(r"[<>=\[;]", heavy)[0] not in runtime, heavy
    assert extras["pytest"] == ["pytest>=8", "syrupy>=7.0,<8.0"]


def _names(requirements: list[str]) -> list[str]:
    return [re.split(r"[<>=\[;]", r)[0] for r in requirements]


def test_browser_driver_has_its_own_extra_installed_by_ci():
    """Issue 22 item 8: playwright (about 165 MB) is not in the `test` extra every `make install`
    brings; the `browser` extra has it, and `.ci/run` installs that extra so CI runs the browser tests."""
    extras = PROJECT["optional-dependencies"]
    assert "playwright" not in _names(extras["test"]) + _names(extras["pytest"]) + _names(extras["lint"])
    assert _names(extras["browser"]) == ["playwright"]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "EXTRAS ?= test,lint\n" in makefile
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "CI=true make test EXTRAS=test,lint,browser" in ci and "apt-get install -y chromium" in ci


def test_browser_tests_without_the_driver_skip_saying_which_extra():
    """A developer's `make test` without the browser extra skips the browser tests with one line naming it."""
    import builtins
    from unittest import mock

    from . import browser

    real_import = builtins.__import__

    def no_playwright(name: str, *args: object, **kw: object) -> object:
        if name.startswith("playwright"):
            raise ImportError(name)
        return real_import(name, *args, **kw)  # type: ignore[arg-type]

    with mock.patch.object(builtins, "__import__", no_playwright):
        reason = browser.missing()
    assert reason is not None and "pip install -e '.[browser]'" in reason
