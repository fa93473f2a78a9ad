"""R-RPL-9: a replay's translation memo keeps the very list of wire messages a request's
`Prepared` holds (`TranslationMemo.keep`: no copy of the window per call), so nothing may change
that list once made; OpenAI's payload messages are the very list the memo carries from
(`sent_messages`), so no later request may change that one either. OpenAI's reasoning models
(R-TR-7's Markdown prefix) and models that take no system message (R-TR-1) send another first
message: the translator copies the list first; a translator registered at run time gets a copy.
Each test compares requests through one memo with the same requests translated afresh, as bytes."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ctxkit import providers
from ctxkit.history.working import Kind, Segment, Working
from ctxkit.loading.config import Options
from ctxkit.loading.read import load_fixture
from ctxkit.output import dumps
from ctxkit.pipeline import run, translation_input
from ctxkit.translate import register_format, translate, unregister_format
from ctxkit.translate.common import Part, Prepared, Translated, TranslationInput
from ctxkit.translate.memo import TranslationMemo

from .helpers import bench_history


@pytest.fixture(scope="module")
def request_input(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path: Path = tmp_path_factory.mktemp("kept") / "f.json"
    path.write_text(json.dumps(bench_history(4)), encoding="utf-8")
    return translation_input(run(load_fixture(str(path)), Options()).assembly)


def _windows(seed: int) -> list[list[Working]]:
    """A system message, then a window that slides and grows over one conversation."""
    rng = random.Random(seed)
    pool = [
        Working(f"m:{n}", Kind.USER if n % 2 else Kind.ASSISTANT, f"text {n}", 1, cacheable=rng.random() < 0.5)
        for n in range(60)
    ]
    system = Working("system", Kind.SYSTEM, "Be brief.", 1)
    out, start, end = [], 0, 3
    for _ in range(30):
        start, end = start + rng.randrange(0, 2), end + rng.randrange(0, 3)
        out.append([system, *pool[start:end]])
    return out


@pytest.mark.parametrize("model", ["gpt-5", "o1-mini", "o3-mini"])
@pytest.mark.parametrize("seed", range(4))
def test_r_rpl_9_a_changed_first_message_leaves_the_kept_wire_messages_alone(
    request_input: Any, model: str, seed: int
) -> None:
    """R-TR-7 / R-TR-1 through a memo: each request's first message gets the Markdown prefix
    once, or becomes a user message, exactly as afresh."""
    memo = TranslationMemo()
    base = replace(request_input, provider="openai", model=model)
    for window in _windows(seed):
        fresh = translate(replace(base, segments={Segment.HISTORY: window}))
        mine = translate(replace(base, segments={Segment.HISTORY: window}, memo=memo))
        assert dumps(mine.body) == dumps(fresh.body)
        assert (mine.prepared.rows, mine.prepared.warnings) == (fresh.prepared.rows, fresh.prepared.warnings)


@pytest.mark.parametrize("provider", ["openai", "ollama"])
@pytest.mark.parametrize("seed", range(4))
def test_r_rpl_9_earlier_payloads_stay_as_made_while_the_memo_goes_on(
    request_input: Any, provider: str, seed: int
) -> None:
    """Every request's payload, kept while the memo translates the later ones (its body built
    only at the end, from the payload messages), equals the same request translated afresh."""
    memo = TranslationMemo()
    base = replace(request_input, provider=provider, model="m")
    kept = [
        (
            translate(replace(base, segments={Segment.HISTORY: w}, memo=memo)),
            replace(base, segments={Segment.HISTORY: w}),
        )
        for w in _windows(seed)
    ]
    for mine, request in kept:
        assert dumps(mine.body) == dumps(translate(request).body)


NAME = "scribble"


def _scribble(request: TranslationInput, prepared: Prepared) -> Translated:
    """A translator that writes over the wire messages it is given (allowed: they are its own)."""
    for n, m in enumerate(prepared.messages):
        prepared.messages[n] = replace(m, parts=[Part(f"{n}: {m.text}")], entry=None)
    body = {"model": request.model, "turns": [{"role": m.role, "content": m.text} for m in prepared.messages]}
    return Translated(body, tuple((n,) for n in range(len(prepared.messages))))


def test_r_rpl_9_a_registered_translator_changes_a_copy_of_the_kept_wire_messages(request_input: Any) -> None:
    providers.register(replace(providers.spec("openai"), name=NAME, format=NAME))
    register_format(NAME, _scribble, read=lambda body: iter([(t["role"], [t]) for t in body["turns"]]))
    try:
        memo = TranslationMemo()
        base = replace(request_input, provider=NAME, model="m")
        for window in _windows(0):
            fresh = translate(replace(base, segments={Segment.HISTORY: window}))
            mine = translate(replace(base, segments={Segment.HISTORY: window}, memo=memo))
            assert dumps(mine.body) == dumps(fresh.body)
    finally:
        unregister_format(NAME)
        providers.unregister(NAME)
