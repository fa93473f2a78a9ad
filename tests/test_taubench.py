"""End to end on real data: the 200 tau-bench conversations (../shared/data/taubench/).

Each imports (`ctxkit import --from openai`), validates, and assembles for every
provider at the full window and at a tight budget that forces truncation; every
payload satisfies the provider's official schema and the server-only rules.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from ctxkit import providers
from ctxkit.loading.config import Options
from ctxkit.loading.importer import build
from ctxkit.loading.read import load_fixture
from ctxkit.pipeline import run
from ctxkit.reports.budget import report as budget_report

from . import provider_schemas, server_rules
from .conftest import ROOT

CORPUS = ROOT.parent / "shared" / "data" / "taubench" / "gpt-4o-airline.json"
PROVIDERS = list(providers.names())
MODELS = {
    "openai": "gpt-4o",
    "azure": "gpt-4o",
    "anthropic": "claude-sonnet-4-5",
    "gemini": "gemini-2.5-flash",
    "ollama": "llama3.1",
}

pytestmark = pytest.mark.skipif(not CORPUS.exists(), reason=f"real corpus not present at {CORPUS}")


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory):
    conversations = json.loads(CORPUS.read_text(encoding="utf-8"))
    folder = tmp_path_factory.mktemp("taubench")
    paths = []
    for c in conversations:
        imported = build(c["traj"], "openai", model="gpt-4o")
        doc = imported.document
        doc["now"] = "2024-05-15T15:00:00Z"
        path = folder / f"task-{c['task_id']}-trial-{c.get('trial', 0)}.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")
        paths.append(path)
    return paths


def test_corpus_imports_all_200(fixtures):
    assert len(fixtures) == 200
    calls = 0
    for path in fixtures:
        f = load_fixture(str(path))
        calls += sum(len(m.tool_calls) for m in f.messages)
        calls += sum(len(m.tool_calls) for m in f.in_flight)
    assert calls == 1164  # every tool call of the corpus is carried over


def tight_window(path: Path) -> int:
    """A window that fits the fixed parts and this turn but only half the older history."""
    b = budget_report(run(load_fixture(str(path))))
    need = b["used_tokens"] - b["history"]["kept_tokens"] // 2
    return int(need / 0.95) + 1


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("tight", [False, True], ids=["full", "tight"])
def test_corpus_assembles_and_validates(fixtures, provider, tight):
    truncated = 0
    for path in fixtures:
        fixture = load_fixture(str(path))
        window = tight_window(path) if tight else None
        result = run(fixture, Options(provider=provider, model=MODELS[provider], max_input_tokens=window))
        body = result.payload.body
        problems = provider_schemas.validate(provider, body) + server_rules.check(provider, body)
        assert not problems, f"{path.name} ({provider}): {problems[:5]}"
        b = budget_report(result)
        assert b["used_tokens"] <= b["available_tokens"]
        truncated += b["history"]["dropped_messages"] > 0
    if tight:
        assert truncated > 100, "the tight budget should force truncation in most conversations"
    else:
        assert truncated == 0


def test_corpus_messages_round_trip(fixtures):
    """At the full window the OpenAI payload carries every message of the log again."""
    conversations = json.loads(CORPUS.read_text(encoding="utf-8"))
    for c, path in zip(conversations[:50], fixtures[:50], strict=True):
        body = run(load_fixture(str(path))).payload.body
        roles = [m["role"] for m in body["messages"]]
        assert roles.count("user") == sum(m["role"] == "user" for m in c["traj"])
