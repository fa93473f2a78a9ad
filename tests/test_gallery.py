"""Golden snapshots of `assemble`, `budget` and `explain` for every gallery fixture.

Adding a fixture under fixtures/ adds its cases. Review snapshot changes like
code: `make snapshots` rewrites them, `git diff` shows what the model now sees.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxkit import providers

from .conftest import GALLERY, ctxkit

IDS = [p.stem for p in GALLERY]


@pytest.fixture(autouse=True)
def _in_root(monkeypatch):
    from .conftest import ROOT

    monkeypatch.chdir(ROOT)  # so reports name fixtures by their relative paths


def _run(*args: str):
    r = ctxkit(*args, expect=None)
    assert r.code in (0, 1), str(r)
    if r.code == 1:
        assert r.err.count("\n") == 1 and r.err.startswith("error: ")
        if r.out:  # explain shows the rows it could compute (docs/rules.md#commands)
            return {"exit": 1, "stdout": r.out, "stderr": r.err}
        return {"exit": 1, "stderr": r.err}
    return {"exit": 0, "stdout": r.out, "stderr": r.err}


@pytest.mark.parametrize("path", GALLERY, ids=IDS)
def test_gallery_assemble(path, snapshot):
    assert _run("assemble", str(path.relative_to(path.parent.parent))) == snapshot


@pytest.mark.parametrize("path", GALLERY, ids=IDS)
def test_gallery_assemble_text(path, snapshot):
    assert _run("assemble", str(path.relative_to(path.parent.parent)), "--format", "text") == snapshot


@pytest.mark.parametrize("path", GALLERY, ids=IDS)
def test_gallery_budget(path, snapshot):
    assert _run("budget", str(path.relative_to(path.parent.parent)), "--format", "json") == snapshot


@pytest.mark.parametrize("path", GALLERY, ids=IDS)
def test_gallery_explain(path, snapshot):
    assert _run("explain", str(path.relative_to(path.parent.parent))) == snapshot


def test_gallery_is_listed_in_its_readme():
    from .conftest import FIXTURES

    listing = (FIXTURES / "README.md").read_text(encoding="utf-8")
    missing = [p.name for p in GALLERY if f"`{p.name}`" not in listing]
    assert not missing, f"add a line for each to fixtures/README.md: {missing}"


def _own_provider(path: Path) -> str:
    from ctxkit.loading.config import Options, resolve
    from ctxkit.loading.read import load_fixture

    return str(resolve(load_fixture(str(path)), Options()).provider)


def _other_providers() -> list[tuple[Path, str]]:
    """Each fixture with every provider but its own (`test_gallery_assemble` pins that one)."""
    return [(path, p) for path in GALLERY for p in providers.names() if p != _own_provider(path)]


@pytest.mark.parametrize(("path", "provider"), _other_providers(), ids=lambda v: v if isinstance(v, str) else v.stem)
def test_gallery_assemble_every_provider(path, provider, snapshot):
    assert _run("assemble", str(path.relative_to(path.parent.parent)), "--provider", provider) == snapshot


@pytest.mark.parametrize("path", GALLERY, ids=IDS)
def test_gallery_provider_option_naming_the_fixtures_own_changes_nothing(path):
    """Why the every-provider snapshots leave out each fixture's own provider: `--provider`
    naming it gives the same output as no option (those snapshots were duplicates)."""
    rel = str(path.relative_to(path.parent.parent))
    assert _run("assemble", rel, "--provider", _own_provider(path)) == _run("assemble", rel)
