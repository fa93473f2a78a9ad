"""R-RPL-5 cache rules per model family, from `ctxkit/data/cache_rules.json`, on the providers'
own worked examples (issue 21): each number has its source; GPT-5.6 breakpoints; the TTLs;
Gemini's minimums; write-aware prices and writes that never pay back (R-RPL-7)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from ctxkit.loading.cache_rules import CacheSettingError, Mode, matches, sources
from ctxkit.loading.domain import CacheRules
from ctxkit.replay import cache
from ctxkit.translate.items import Item

from .conftest import FIXTURES, ctxkit
from .test_replay import rows

DATA = Path(__file__).parents[1] / "ctxkit" / "data" / "cache_rules.json"
REPLAY = FIXTURES / "replay"


def _numbers(value: Any, at: str = "") -> list[str]:
    """Dotted paths of every number under a row's `rules` and `options`."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _numbers(v, f"{at}.{k}" if at else k)]
    return [at] if isinstance(value, int | float) and not isinstance(value, bool) else []


def test_r_rpl_5_every_mode_of_the_cache_rules_is_a_mode() -> None:
    """The table's modes are the closed list `Mode` (a new one is a new member, with its rules)."""
    table = json.loads(DATA.read_text(encoding="utf-8"))
    modes = [
        rules["mode"]
        for entry in table["providers"].values()
        for rules in [entry.get("common", {}).get("rules", {}), *(r["rules"] for r in entry.get("rows", []))]
        if "mode" in rules
    ]
    assert {Mode(m) for m in modes} == set(Mode)


def test_r_rpl_5_every_number_of_the_cache_rules_names_its_source() -> None:
    table = json.loads(DATA.read_text(encoding="utf-8"))
    known = table["sources"]
    for name, source in known.items():
        assert set(source) == {"url", "read", "says"}, name
        assert name == "ctxkit" or (source["url"].startswith("https://") and source["read"] == "2026-12-03")
    checked = 0
    for provider, entry in table["providers"].items():
        for row in [*entry.get("rows", []), entry.get("common", {})]:
            if not row:
                continue
            paths = [*_numbers(row.get("rules", {})), *(f"options.{p}" for p in _numbers(row.get("options", {})))]
            for path in paths:
                assert row["sources"].get(path) in known, (provider, row.get("family"), path)
                checked += 1
    assert checked > 30


@pytest.mark.parametrize(
    ("pattern", "model", "expected"),
    [
        ("gpt-5.6+", "gpt-5.6-terra", True),
        ("gpt-5.6+", "gpt-5.10", True),
        ("gpt-5.6+", "gpt-6", True),
        ("gpt-5.6+", "azure/gpt-5.7-luna", True),
        ("gpt-5.6+", "gpt-5.5", False),
        ("gpt-5.6+", "gpt-5-mini", False),
        ("gpt-5.6+", "gpt-4o", False),
        ("gemini-3+", "models/gemini-3.1-pro-preview", True),
        ("gemini-3+", "gemini-2.5-flash", False),
        ("claude-opus-4-7", "claude-opus-4-7-20261001", True),
        ("*", "anything", True),
    ],
)
def test_r_rpl_5_model_family_patterns(pattern: str, model: str, expected: bool) -> None:
    assert matches(pattern, model) is expected


@pytest.mark.parametrize(
    ("provider", "model", "family", "mode", "minimum", "ttl"),
    [
        ("openai", "gpt-4o", "earlier models (gpt-4o and newer)", "automatic", 1024, 300),
        ("openai", "gpt-5.5", "earlier models (gpt-4o and newer)", "automatic", 1024, 300),
        ("azure", "gpt-5.6-sol", "gpt-5.6 and later", "breakpoints", 1024, 1800),
        ("anthropic", "claude-opus-5", "Claude Opus 5", "explicit", 512, 300),
        ("anthropic", "claude-opus-4-7", "Claude Opus 4.7", "explicit", 2048, 300),
        ("anthropic", "claude-opus-4-8", "Claude Opus 4.8", "explicit", 1024, 300),
        ("anthropic", "claude-haiku-4-5-20251001", "Claude Opus 4.5, 4.6, Haiku 4.5", "explicit", 4096, 300),
        ("anthropic", "claude-sonnet-4-5", "other Claude models (Sonnet 3.7-5, Opus 4, 4.1)", "explicit", 1024, 300),
        ("gemini", "gemini-2.5-flash", "Gemini 2.5 (and names of no known family)", "implicit", 2048, 300),
        ("gemini", "gemini-3.1-pro-preview", "Gemini 3 and later", "implicit", 4096, 300),
        ("gemini", "gemini-2.0-flash", "before Gemini 2.5 (no implicit caching)", "none", 0, 300),
    ],
)
def test_r_rpl_5_rules_per_model_family(
    provider: str, model: str, family: str, mode: str, minimum: int, ttl: int
) -> None:
    r = cache.rules(provider, model, CacheRules())
    assert (r.family, r.mode, r.min_tokens, r.ttl_seconds) == (family, mode, minimum, ttl)
    assert set(sources(provider, model)) >= {"min_tokens"}


def _items(*spec: tuple[str, int, str], marked: tuple[int, ...] = ()) -> tuple[Item, ...]:
    """(key, tokens, role) per message item."""
    return tuple(Item(k, t, role, n in marked) for n, (k, t, role) in enumerate(spec))


def test_r_rpl_5_openai_gpt_5_6_breakpoint_walk() -> None:
    """GPT-5.6: an implicit breakpoint at the end of the newest message that is not the
    assistant's; a read is an exact match at a stored breakpoint, never a shorter unmarked prefix;
    cached counts are exact (no 128-token steps); what is stored beyond the read is written."""
    r = cache.rules("openai", "gpt-5.6-terra", CacheRules())
    assert (r.increment, r.considered, r.max_writes, r.write_multiplier) == (1, 80, 4, Decimal("1.25"))
    c = cache.Cache(r)
    dev = ("dev", 2000, "system")
    first = c.add(_items(dev, ("u1", 100, "user")), None)
    assert (first.cached_tokens, first.write_tokens) == (0, 2100)  # stored at the end of u1
    # only the last user message changed: the 2,000-token instructions are common but no breakpoint
    # was stored at their end, so nothing is read (before GPT-5.6: 2,000 rounded down to 1,920)
    second = c.add(_items(dev, ("u2", 50, "user")), None)
    assert (second.prefix_tokens, second.cached_tokens, second.write_tokens, second.limit) == (2000, 0, 2050, None)
    # an explicit breakpoint on the instructions stores them (written again: nothing to read yet)
    third = c.add(_items(dev, ("u3", 70, "user"), marked=(0,)), None)
    assert (third.cached_tokens, third.write_tokens) == (0, 2070)
    # from then on the instructions are read exactly, and the rest up to the implicit breakpoint written
    fourth = c.add(_items(dev, ("u4", 30, "user"), marked=(0,)), None)
    assert (fourth.cached_tokens, fourth.write_tokens) == (2000, 30)
    # the conversation grows: the prefix stored at u4 is read, the new turn written
    fifth = c.add(_items(dev, ("u4", 30, "user"), ("a4", 200, "assistant"), ("u5", 20, "user"), marked=(0,)), None)
    assert (fifth.cached_tokens, fifth.write_tokens) == (2030, 220)
    older = cache.Cache(cache.rules("openai", "gpt-5.5", CacheRules()))
    older.add(_items(dev, ("u1", 100, "user")), None)
    assert older.add(_items(dev, ("u2", 50, "user")), None).cached_tokens == 1920  # 15 × 128


def test_r_rpl_5_openai_gpt_5_6_writes_at_most_four_breakpoints() -> None:
    """Implicit mode writes the implicit breakpoint and the latest three marked ones."""
    c = cache.Cache(cache.rules("openai", "gpt-5.6", CacheRules()))
    spec = [(f"m{n}", 1100, "user") for n in range(6)]
    assert c._breakpoints(_items(*spec, marked=(0, 1, 2, 3, 4))) == [2, 3, 4, 5]


def test_r_rpl_5_ttl_30_minutes_for_gpt_5_6_and_retention_for_earlier_models() -> None:
    """GPT-5.6 keeps a breakpoint at least 30 minutes; earlier models' in-memory cache is gone after
    5 to 10 idle minutes (ctxkit: 5), `retention: 24h` keeps it a day."""
    from datetime import UTC, datetime, timedelta

    start = datetime(2026, 12, 3, 9, tzinfo=UTC)
    prompt = _items(("dev", 2000, "system"), ("u1", 100, "user"))
    for model, cache_settings, kept in [
        ("gpt-5.6-luna", CacheRules(), True),
        ("gpt-5.6-luna", CacheRules(ttl="30m"), True),
        ("gpt-4o", CacheRules(), False),
        ("gpt-4o", CacheRules(retention="in_memory"), False),
        ("gpt-4o", CacheRules(retention="24h"), True),
    ]:
        c = cache.Cache(cache.rules("openai", model, cache_settings))
        c.add(prompt, start)
        hit = c.add(prompt, start + timedelta(minutes=29))
        assert (hit.cached_tokens > 0) is kept, (model, cache_settings)


def test_r_rpl_5_cache_setting_the_model_does_not_take_exits_2(tmp_path: Path) -> None:
    with pytest.raises(CacheSettingError, match="ttl '1h' does not apply to openai 'gpt-4o'"):
        cache.rules("openai", "gpt-4o", CacheRules(ttl="1h"))
    with pytest.raises(CacheSettingError, match="retention '24h' does not apply"):
        cache.rules("openai", "gpt-5.6-sol", CacheRules(retention="24h"))  # superseded by prompt_cache_options
    path = tmp_path / "f.yaml"
    path.write_text(
        "ctxkit: 1\nmodel: {provider: openai, name: gpt-4o}\nsettings: {cache: {ttl: 1h}}\n"
        "messages: [{id: u, role: user, text: hi}]\n",
        encoding="utf-8",
    )
    r = ctxkit("replay", str(path), expect=2)
    assert r.err.startswith("error: settings.cache.ttl '1h' does not apply") and r.err.count("\n") == 1


def test_r_rpl_5_gemini_before_2_5_caches_nothing() -> None:
    c = cache.Cache(cache.rules("gemini", "gemini-2.0-flash", CacheRules()))
    prompt = _items(("sys", 5000, "system"), ("u1", 100, "user"))
    c.add(prompt, None)
    hit = c.add(prompt, None)
    assert (hit.prefix_tokens, hit.cached_tokens, hit.limit) == (5100, 0, "uncached")
    newer = cache.Cache(cache.rules("gemini", "gemini-2.5-pro", CacheRules()))
    newer.add(prompt, None)
    assert newer.add(prompt, None).cached_tokens == 5100


def test_r_rpl_7_anthropic_one_hour_writes_cost_twice_the_input(tmp_path: Path) -> None:
    """`ttl: 1h`: writes at 2x the input price (5m: 1.25x), the cache kept an hour."""
    text = (REPLAY / "lookback.yaml").read_text(encoding="utf-8")
    path = tmp_path / "hour.yaml"
    path.write_text(text.replace("{cache: {min_tokens: 32}}", "{cache: {min_tokens: 32, ttl: 1h}}"), encoding="utf-8")
    c = rows(path)[0]
    p, written, out = c["prompt_tokens"], c["cache_write_tokens"], c["output_tokens"]
    assert written > 0 and c["cached_tokens"] == 0
    # claude-sonnet-4-5: $3 input, $6 1h cache write (2 × 3), $15 output per million
    assert Decimal(str(c["cost"])) == (Decimal(p - written) * 3 + written * 6 + out * 15) / 10**6


def test_r_rpl_7_write_never_read_is_reported() -> None:
    """A write pays back only when a later call reads it while it is alive."""
    calls = rows(REPLAY / "lookback.yaml")
    # 433: the tools and messages' 87 (R-RPL-4, Anthropic: no role names, no system framing, tools
    # as JSON) + Anthropic's documented 346-token tool-use system prompt; read by u1·1
    assert calls[0]["cache_write_tokens"] == 87 + 346 and calls[0]["unread_write_tokens"] == 0
    last = calls[12]
    assert last["cache_write_tokens"] > 0 and last["unread_write_tokens"] == last["cache_write_tokens"]


def _body(tmp_path: Path, model: str, cache_settings: str, provider: str = "openai") -> dict[str, Any]:
    path = tmp_path / "f.yaml"
    path.write_text(
        f"ctxkit: 1\nmodel: {{provider: {provider}, name: {model}, max_input_tokens: 100000}}\n"
        f"settings: {{cache: {cache_settings}}}\nmessages: [{{id: u, role: user, text: hi}}]\n",
        encoding="utf-8",
    )
    body: dict[str, Any] = json.loads(ctxkit("assemble", str(path), "--format", "json").out)
    return body


def test_r_rpl_5_translators_send_the_cache_parameters(tmp_path: Path) -> None:
    """settings.cache as the application sends it: OpenAI prompt_cache_key and, before GPT-5.6,
    prompt_cache_retention; GPT-5.6 and later prompt_cache_options in implicit mode; Anthropic's
    breakpoint with its ttl."""
    older = _body(tmp_path, "gpt-4o", "{key: tenant-7, retention: 24h}")
    assert (older["prompt_cache_key"], older["prompt_cache_retention"]) == ("tenant-7", "24h")
    assert "prompt_cache_options" not in older
    assert "prompt_cache_key" not in _body(tmp_path, "gpt-4o", "{}")  # nothing unless asked
    newer = _body(tmp_path, "gpt-5.6-terra", "{}")
    assert newer["prompt_cache_options"] == {"mode": "implicit"}
    assert _body(tmp_path, "gpt-5.6-terra", "{ttl: 30m}")["prompt_cache_options"] == {"mode": "implicit", "ttl": "30m"}
    claude = _body(tmp_path, "claude-opus-4-8", "{ttl: 1h}", provider="anthropic")
    marks = [b["cache_control"] for m in claude["messages"] for b in m["content"] if "cache_control" in b]
    marks += [b["cache_control"] for b in claude.get("system", []) if "cache_control" in b]
    assert marks == [{"type": "ephemeral", "ttl": "1h"}]
