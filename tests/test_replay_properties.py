"""R-RPL-9: the checked properties of replay, on random conversations and on the gallery.

* without `--compress-as` the last call equals `assemble`;
* every call's payload passes the provider schema and the server-only rules;
* cached ≤ prefix ≤ prompt on every call;
* a conversation that only grows is all `append` with 0 tokens lost;
* the same input gives the same bytes, in any hash seed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, reject, settings
from hypothesis import strategies as st

from ctxkit import providers
from ctxkit.errors import RuleError
from ctxkit.loading.config import Options
from ctxkit.loading.read import load_fixture
from ctxkit.pipeline import run
from ctxkit.replay.driver import replay
from ctxkit.reports.replay import report

from . import provider_schemas, server_rules
from .conftest import FIXTURES, ROOT
from .helpers import tool_calls

CLI = "from ctxkit.cli import main; main()"
PROVIDERS = list(providers.names())
WORDS = st.text(alphabet="abcdefgh ", min_size=1, max_size=60).map(lambda s: s.strip() or "x")


def _at(minute: int) -> str:
    return f"2026-03-14T{9 + minute // 60:02d}:{minute % 60:02d}:00Z"


@st.composite
def conversations(draw: Any, *, grow_only: bool = False) -> dict[str, Any]:
    """A branchy, dated conversation with tool loops, edits, a summary and in-flight calls."""
    messages: list[dict[str, Any]] = []
    parent: str | None = None
    minute, call_n = 0, 0
    turns = draw(st.integers(1, 6))
    for i in range(turns):
        minute += draw(st.integers(0, 4 if grow_only else 9))  # grow-only: within the 5-minute TTL
        if not grow_only and parent is not None and draw(st.integers(0, 4)) == 0:  # an edited-away question
            messages.append({"id": f"e{i}", "role": "user", "parent": parent, "text": draw(WORDS), "at": _at(minute)})
            messages.append({"id": f"ea{i}", "role": "assistant", "parent": f"e{i}", "text": draw(WORDS)})
        user: dict[str, Any] = {"id": f"u{i}", "role": "user", "text": draw(WORDS), "at": _at(minute)}
        if parent is not None:
            user["parent"] = parent
        messages.append(user)
        parent = f"u{i}"
        if i == turns - 1:
            break
        answer: dict[str, Any] = {"id": f"a{i}", "role": "assistant", "parent": parent, "text": draw(WORDS)}
        if not grow_only and draw(st.booleans()):
            answer["tool_calls"] = draw(tool_calls(call_n, ["internal_search", "get_x", "lookup"], WORDS))
            call_n += len(answer["tool_calls"])
        messages.append(answer)
        parent = f"a{i}"
    if not grow_only and turns > 2 and draw(st.booleans()):
        messages.append({"id": "s1", "role": "summary", "parent": "u1", "summarizes_through": "a0", "text": "earlier"})
    doc: dict[str, Any] = {
        "ctxkit": 1,
        "now": _at(minute + (0 if grow_only else draw(st.integers(0, 9)))),
        "model": {"provider": draw(st.sampled_from(PROVIDERS)), "name": "m", "max_input_tokens": 100_000},
        "tokenizer": "approx",
        "messages": messages,
    }
    if grow_only:
        doc["prompts"] = {"system": "You are terse.", "datetime_aware": False}
        return doc
    doc["tools"] = draw(st.sampled_from([[], ["internal_search", "web_search"], [{"name": "lookup"}]]))
    if draw(st.booleans()):
        doc["prompts"] = {"custom_agent": "Be an analyst."}
    if draw(st.booleans()):
        doc["in_flight"] = [
            {"role": "assistant", "tool_calls": [{"id": "f1", "name": "lookup", "args": {}}]},
            {"role": "tool", "tool_call_id": "f1", "text": draw(WORDS)},
        ]
    if draw(st.booleans()):
        doc["model"]["max_input_tokens"] = draw(st.integers(250, 450))  # around the fixed parts: some calls truncate
    return doc


def replay_bodies(fixture: Any, options: Options | None = None) -> tuple[Any, list[dict[str, Any]]]:
    """The replay and every call's payload body, in order."""
    bodies: list[dict[str, Any]] = []
    done = replay(fixture, options, on_call=lambda i, call, result: bodies.append(result.payload.body))
    return done, bodies


def _load(tmp_path: Any, doc: dict[str, Any]) -> Any:
    path = tmp_path / "random.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return load_fixture(str(path))


def _window_too_small(exc: RuleError, which: str) -> None:
    """The one way a generated conversation may fail: its small window cannot hold a call's fixed
    parts or the turn itself (R-ASM-2/R-ASM-3). Counted in hypothesis' statistics
    (`pytest --hypothesis-show-statistics`), and never a pass: the example is rejected."""
    assert re.search(r"for the fixed parts: .* \(R-ASM-2\)|the history budget is -?\d+ \(R-ASM-3\)", str(exc)), exc
    event(f"rejected: window too small for {which}")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=conversations())
def test_r_rpl_9_random_conversations(tmp_path: Any, doc: dict[str, Any]) -> None:
    fixture = _load(tmp_path, doc)
    provider = doc["model"]["provider"]
    try:
        expected = run(fixture).payload.body
    except RuleError as exc:
        _window_too_small(exc, "the fixture's own call")
        with pytest.raises(RuleError):  # replay's last call is the fixture's own: it fails by rule too
            replay(fixture)
        reject()  # nothing else to check: hypothesis draws another example instead of counting this one
    try:
        done, bodies = replay_bodies(fixture)
    except RuleError as exc:
        _window_too_small(exc, "an earlier call")  # e.g. a tool loop that the last call no longer carries
        reject()
    event("truncated" if any(c.truncated for c in done.calls) else "not truncated")
    assert bodies[-1] == expected  # the last call is the fixture's own call
    for body in bodies:
        assert not provider_schemas.validate(provider, body) + server_rules.check(provider, body)
    for c in done.calls:
        assert 0 <= c.cached_tokens <= c.prefix_tokens <= c.prompt_tokens
        assert c.brk.lost_tokens <= c.prompt_tokens
    again = replay(fixture)
    assert report(again) == report(done)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=conversations(grow_only=True))
def test_r_rpl_9_grow_only_conversation_is_all_append(tmp_path: Any, doc: dict[str, Any]) -> None:
    calls = replay(_load(tmp_path, doc)).calls
    assert calls[0].brk.cause == "first_call"
    for c in calls[1:]:
        assert (c.brk.cause, c.brk.lost_tokens) == ("append", 0), c
        assert c.prefix_tokens > 0


def test_r_rpl_9_same_bytes_in_any_hash_seed() -> None:
    outputs = set()
    for seed in ("0", "1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        for name in ("long_session.yaml", "branch.yaml", "lookback.yaml"):
            done = subprocess.run(
                [sys.executable, "-c", CLI, "replay", f"fixtures/replay/{name}", "--format", "json"],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            outputs.add((name, done.stdout))
    assert len(outputs) == 3


def test_r_rpl_9_gallery_calls_pass_the_provider_checks() -> None:
    for path in sorted((FIXTURES / "replay").glob("*.yaml")):
        fixture = load_fixture(str(path))
        for provider in PROVIDERS:
            for body in replay_bodies(fixture, Options(provider=provider))[1]:
                problems = provider_schemas.validate(provider, body) + server_rules.check(provider, body)
                assert not problems, f"{path.name} {provider}: {problems[:3]}"


def test_r_rpl_9_schema_check_per_message_still_finds_a_bad_message_of_a_later_call() -> None:
    """`provider_schemas.PerMessage` (the tau-bench replay test) checks each distinct message once."""
    schema = provider_schemas.PerMessage("openai")
    first = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    later = {**first, "messages": [*first["messages"], {"role": "wizard", "content": "x"}]}
    assert schema.validate(first) == []
    assert schema.validate(later)  # only the new message is checked, and it is invalid
    assert schema.validate({**first, "model": 4}), "a new rest of the body is checked too"
    assert schema.validate(first) == [] and schema.checked == 3
