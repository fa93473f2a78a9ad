"""R-RPL-9 on real data: every replayed call of the tau-bench conversations, OpenAI and Anthropic.

Every call of all 200 conversations is replayed at the full window and at a tight window that
truncates (the smallest window that fits each call's fixed parts and this turn with half of its
older history); its last call equals `assemble`, cached ≤ prefix ≤ prompt holds, and each payload
passes the official schema (`provider_schemas.PerMessage`: each distinct message checked once,
the way the schema checks them) and the server-only rules.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ctxkit.loading.config import Options
from ctxkit.loading.read import load_fixture
from ctxkit.pipeline import run
from ctxkit.reports.budget import report as budget_report

from . import provider_schemas, server_rules
from .test_replay_properties import replay_bodies
from .test_taubench import CORPUS, MODELS, fixtures

__all__ = ["fixtures"]  # the module-scoped corpus fixture, shared with test_taubench

pytestmark = pytest.mark.skipif(not CORPUS.exists(), reason=f"real corpus not present at {CORPUS}")


def tight_window(fixture: Any, options: Options) -> int:
    """The smallest window that fits every call's fixed parts and turn with half its older history."""
    need = 0

    def measure(index: int, call: Any, result: Any) -> None:
        nonlocal need
        b = budget_report(result)
        need = max(need, b["used_tokens"] - b["history"]["kept_tokens"] // 2)

    from ctxkit.replay.driver import replay

    replay(fixture, options, on_call=measure)
    return int(need / 0.95) + 1


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("tight", [False, True], ids=["full", "tight"])
def test_r_rpl_9_replayed_calls_of_the_corpus_validate(fixtures: list[Path], provider: str, tight: bool) -> None:
    calls = truncated = 0
    for path in fixtures:
        fixture = load_fixture(str(path))
        options = Options(provider=provider, model=MODELS[provider])
        if tight:
            window = tight_window(fixture, options)
            options = Options(provider=provider, model=MODELS[provider], max_input_tokens=window)
        done, bodies = replay_bodies(fixture, options)
        schema = provider_schemas.PerMessage(provider)
        for body in bodies:
            problems = server_rules.check(provider, body) + schema.validate(body)
            assert not problems, f"{path.name} ({provider}): {problems[:5]}"
        assert bodies[-1] == run(fixture, options).payload.body
        for c in done.calls:
            assert 0 <= c.cached_tokens <= c.prefix_tokens <= c.prompt_tokens
        calls += len(done.calls)
        truncated += any(c.truncated for c in done.calls)
    assert len(fixtures) == 200 and calls > 2500
    if tight:
        assert truncated > 100, "the tight window should truncate in most conversations"
