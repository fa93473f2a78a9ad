"""Replay's fixture fields: `at` (R-RPL-3), `settings.cache` (R-RPL-5), `settings.prices` (R-RPL-7).

See docs/rules.md#fixture-format and docs/rules.md#replay-r-rpl.
"""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import pytest

from ctxkit.errors import InputError
from ctxkit.loading import domain
from ctxkit.loading.read import load_fixture

from .conftest import ctxkit

HEAD = "ctxkit: 1\nmodel: {provider: openai, name: gpt-4o, max_input_tokens: 1000}\n"


@pytest.fixture(autouse=True)
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def load(text: str) -> domain.Fixture:
    Path("fx.yaml").write_text(HEAD + textwrap.dedent(text), encoding="utf-8")
    return load_fixture("fx.yaml")


def errors(text: str) -> list[str]:
    with pytest.raises(InputError) as info:
        load(text)
    return info.value.lines()


def test_r_rpl_3_at_on_messages_and_in_flight_items() -> None:
    fx = load(
        """
        messages:
          - {id: u1, role: user, text: hi, at: "2026-03-14T09:12:00Z"}
          - {id: a1, role: assistant, text: yo, at: "2026-03-14T10:12:00+01:00"}
          - {id: u2, role: user, text: more}
        in_flight:
          - {role: assistant, tool_calls: [{id: c1, name: f, args: {}}], at: "2026-03-14T09:13:30Z"}
          - {role: tool, tool_call_id: c1, text: done}
        """
    )
    assert fx.messages[0].at == datetime(2026, 3, 14, 9, 12, tzinfo=UTC)
    assert fx.messages[1].at == datetime(2026, 3, 14, 10, 12, tzinfo=timezone(timedelta(hours=1)))
    assert fx.messages[2].at is None
    assert fx.in_flight[0].at == datetime(2026, 3, 14, 9, 13, 30, tzinfo=UTC)
    assert fx.in_flight[1].at is None


@pytest.mark.parametrize("value", ["2026-03-14", "2026-03-14T09:12:00", "yesterday", "2026-13-01T00:00:00Z"])
def test_r_rpl_3_at_needs_a_date_time_with_a_zone(value: str) -> None:
    lines = errors(f'messages:\n  - {{id: u1, role: user, text: hi, at: "{value}"}}\n')
    assert lines == [f"fx.yaml:/messages/0/at: not an ISO 8601 date-time with a zone: {value!r}"]


def test_r_rpl_3_at_must_be_a_string() -> None:
    assert errors("in_flight:\n  - {role: assistant, text: x, at: 5}\nmessages: [{id: u, role: user}]\n") == [
        "fx.yaml:/in_flight/0/at: expected string, got integer 5 (line 4, column 32)"
    ]


def test_r_rpl_5_settings_cache_overrides() -> None:
    fx = load("settings: {cache: {min_tokens: 2048, increment: 64, lookback: 5, ttl_seconds: 3600}}\n")
    assert fx.settings.cache == domain.CacheRules(min_tokens=2048, increment=64, lookback=5, ttl_seconds=3600)
    assert load("messages: []\n").settings.cache == domain.CacheRules()


def test_r_rpl_5_unknown_settings_cache_key_is_a_validation_error() -> None:
    lines = errors("settings: {cache: {min_token: 1}}\n")
    assert lines == [
        "fx.yaml:/settings/cache/min_token: unknown key 'min_token' (did you mean 'min_tokens'?) (line 3, column 20)"
    ]


def test_r_rpl_5_unknown_cache_key_exits_2_with_one_line(tmp_path: Path) -> None:
    Path("fx.yaml").write_text(HEAD + "settings: {cache: {ttl_minutes: 60}}\nmessages: [{id: u, role: user}]\n")
    r = ctxkit("validate", "fx.yaml", expect=2)
    assert r.err == "error: fx.yaml:/settings/cache/ttl_minutes: unknown key 'ttl_minutes' (line 3, column 20)\n"


def test_r_rpl_7_settings_prices_are_exact_decimals() -> None:
    fx = load("settings: {prices: {input: 2.5, output: 10, cached_input: 1.25}}\n")
    assert fx.settings.prices == domain.Prices(
        input=Decimal("2.5"), output=Decimal("10"), cached_input=Decimal("1.25"), cache_write=Decimal("2.5")
    )
    assert load("settings: {prices: null}\n").settings.prices is None


def test_r_rpl_7_settings_prices_need_input_and_output() -> None:
    assert errors("settings: {prices: {input: 1}}\n") == [
        "fx.yaml:/settings/prices: missing required key 'output' (line 3, column 12)"
    ]
