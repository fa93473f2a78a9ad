"""R-RPL-4 / R-RPL-9: the prompt items translation emits equal the items read back from the body.

Translation hands `items` the payload's messages with the keys and counts it already knows
(`common.Sent`, through a replay's `TranslationMemo`), so a replayed call never re-parses its
body. That shortcut is exact only if, for every fixture and provider, the items it gives are
the items `reading` finds in the finished body: these tests are its proof.
"""

from __future__ import annotations

from typing import Any

import pytest

from ctxkit import providers
from ctxkit.errors import RuleError
from ctxkit.loading.config import Options, resolve
from ctxkit.loading.read import load_fixture
from ctxkit.output import dumps
from ctxkit.pipeline import run
from ctxkit.replay.state import State
from ctxkit.translate.items import priming_tokens, prompt_items, read_items
from ctxkit.translate.memo import TranslationMemo

from .conftest import GALLERY

PROVIDERS = providers.names()


def _both(fixture: Any, options: Options) -> list[Any]:
    """The fixture translated afresh, then twice through one replay state (the second time from
    its `TranslationMemo`'s entries)."""
    state = State()
    assert isinstance(state.translation, TranslationMemo)
    return [run(fixture, options), run(fixture, options, state=state), run(fixture, options, state=state)]


def _same_items(result: Any) -> int:
    meter = result.assembly.meter
    emitted = prompt_items(result.payload, meter=meter)
    assert emitted == read_items(result.payload, meter=meter)
    messages = result.payload.messages
    assert messages is not None and priming_tokens(result.payload, meter=meter) == _read_priming(result)
    return sum(k is not None for s in messages for k in s.known or ())


def _read_priming(result: Any) -> int:
    from dataclasses import replace

    return priming_tokens(replace(result.payload, messages=None, head=result.payload.body), meter=result.assembly.meter)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("path", GALLERY, ids=[p.stem for p in GALLERY])
def test_r_rpl_4_items_emitted_by_translation_equal_the_items_read_from_the_body(path: Any, provider: str) -> None:
    """Every gallery fixture × provider: the items (keys, tokens, back-references, breakpoints)
    and the reply priming from the emitted messages equal those read from the body, translated
    afresh and through a memo; the memo's translation gives the same body."""
    fixture = load_fixture(str(path))
    try:
        window = resolve(fixture).max_input_tokens
        results = _both(fixture, Options(provider=provider, max_input_tokens=window))
    except RuleError:
        pytest.skip("the fixture fails by rule (exit 1)")
    fresh, first, again = results
    assert dumps(first.payload.body) == dumps(fresh.payload.body) == dumps(again.payload.body)
    assert first.payload.prepared.warnings == fresh.payload.prepared.warnings == again.payload.prepared.warnings
    assert first.payload.prepared.rows == fresh.payload.prepared.rows == again.payload.prepared.rows
    for result in results:
        _same_items(result)
    assert prompt_items(again.payload, meter=again.assembly.meter) == read_items(
        fresh.payload, meter=fresh.assembly.meter
    )


@pytest.mark.parametrize("model", ["o1-mini", "gpt-5", "gpt-4o"])
def test_r_rpl_4_openai_system_rules_apply_to_emitted_items(model: str) -> None:
    """R-TR-1/R-TR-7 change the first system message for some models (a prefix, the user role):
    the memo's entry for it is not used, and the items still equal the body's."""
    fixture = load_fixture(str(GALLERY[0]))
    fresh, _, again = _both(fixture, Options(provider="openai", model=model, max_input_tokens=100_000))
    assert dumps(again.payload.body) == dumps(fresh.payload.body)
    assert _same_items(again) > 0
    assert prompt_items(again.payload, meter=again.assembly.meter) == read_items(
        fresh.payload, meter=fresh.assembly.meter
    )


def test_r_rpl_9_a_body_is_built_only_when_asked() -> None:
    """A translated payload carries its messages; the body is built on first use, once."""
    result = run(load_fixture(str(GALLERY[0])), Options(provider="anthropic"))
    assert result.payload.messages is not None and not result.payload._body
    body = result.payload.body
    assert result.payload.body is body and body["messages"]


TOOL_IDS = """\
model: {provider: anthropic, name: test-model, max_input_tokens: 10000}
tokenizer: approx
settings: {safety_margin: 0}
prompts: {system: "S", datetime_aware: false}
messages:
  - {id: u0, role: assistant, text: "hello"}
  - {id: u1, role: user, text: "q"}
  - id: a1
    role: assistant
    text: "done"
    tool_calls:
      - {id: "call.1", name: lookup, args: {q: 1}, response: "r1"}
      - {id: "call_1", name: lookup, args: [2], response: "r2"}
      - {id: c1, name: first, args: {}, turn: 1, response: "r3"}
      - {id: c1, name: second, args: {}, turn: 2, response: ""}
  - {id: u2, role: user, text: "next"}
  - id: a2
    role: assistant
    text: ""
    tool_calls:
      - {id: c1, name: first, args: {}, response: "r4"}
  - {id: u3, role: user, text: "last"}
"""


@pytest.mark.parametrize("provider", PROVIDERS)
def test_r_rpl_9_tool_ids_names_and_fixups_are_the_requests_own(
    tmp_path: Any, provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R-TR-3/R-TR-4 through the memo: Anthropic's renamed and repeated ids, Gemini's calls
    before the first user content and its response names, wrapped arguments and the fix-up
    lines are decided per request; every replayed call equals the call assembled afresh, and
    its emitted items equal the items read back from its own body."""
    from .helpers import replay_against_fresh, write

    fixture = load_fixture(str(write(tmp_path, TOOL_IDS)))
    assert replay_against_fresh(fixture, Options(provider=provider), monkeypatch, also=_same_items) == 7
