"""Layering: the core never imports click; heavy modules load only when needed."""

from __future__ import annotations

import subprocess
import sys

import pytest

CORE = [
    "ctxkit.assembly.pipeline",
    "ctxkit.loading.read",
    "ctxkit.compression.compress",
    "ctxkit.loading.importer",
    "ctxkit.snapshots.store",
    "ctxkit.reports.diff",
    "ctxkit.reports.transcript",
]


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(out.split())


@pytest.mark.parametrize("module", CORE)
def test_core_never_imports_click(module):
    assert "click" not in _modules_after(f"import {module}")


def test_cli_start_does_not_load_tokenizer_schema_or_yaml():
    loaded = _modules_after("import ctxkit.cli")
    for heavy in ("tiktoken", "jsonschema", "yaml", "tabulate"):
        assert heavy not in loaded, heavy


def test_stored_counts_never_load_the_tokenizer(tmp_path):
    fixture = tmp_path / "f.json"
    fixture.write_text(
        '{"ctxkit": 1, "now": "2026-03-14T09:30:00Z", "model": {"provider": '
        '"openai", "name": "gpt-4o"}, "prompts": {"system": ""}, '
        '"messages": [{"id": 1, "role": "user", "text": "hi", "tokens": 1}]}'
    )
    loaded = _modules_after(
        "from ctxkit.loading.read import load_fixture\nfrom ctxkit.assembly.pipeline import run\n"
        f"r = run(load_fixture({str(fixture)!r}))\nr.payload"
    )
    assert "tiktoken" not in loaded
