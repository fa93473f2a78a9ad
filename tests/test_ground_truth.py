"""The counts-vs-providers benchmark (issue 20) computes its numbers on the recorded traffic.

Asserts that every row is computed from the data (not the targets, which `make bench` reports).
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import pytest

from .conftest import ROOT


def _module() -> ModuleType:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location("ground_truth", ROOT / "benchmarks" / "ground_truth.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["ground_truth"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_counts_vs_providers_are_computed_for_every_provider_and_kind() -> None:
    gt = _module()
    if not gt.DATA.is_file():
        pytest.skip(f"{gt.DATA} not found (the shared data folder)")
    lines = gt.table(gt.score(gt.load()))
    kinds = {(x["provider"], x["kind"]) for x in lines}
    assert kinds == {(x["provider"], x["kind"]) for x in gt.before()}
    for x in lines:
        assert x["n"] > 0 and x["not_countable"] < x["n"], x
        assert x["median_abs"] is not None and x["p90_abs"] is not None and x["median_abs"] <= x["p90_abs"], x
    rendered = gt.before_after(lines)
    assert rendered.count("\n") == len(lines) + 2
