"""Which prompt-cache rules apply to a model (R-RPL-5): `data/cache_rules.json`, read once.

Input: provider, model name and the fixture's `settings.cache`. Output: `Rules`, the numbers the
cache (`replay.cache`) applies, with the model family they came from. A provider's table is the
entry of the data file its spec names (`ProviderSpec.cache_rules`, by default its own name), or
a table of the same shape the spec holds itself (a provider registered at run time). Its rows are
tried in order; the first whose `models` matches gives its `rules`, on top of the provider's
`common` rules; `settings.cache.ttl` / `retention` choose one of the row's `options`; then each
number given in `settings.cache` replaces the table's. Every number of the table names its source
(URL and date read) in the data file itself; `sources(provider, model)` lists them.
"""

from __future__ import annotations

import enum
import functools
import json
import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from ctxkit import providers
from ctxkit.errors import InputError
from ctxkit.loading.domain import CacheRules

_PATH = Path(__file__).parents[1] / "data" / "cache_rules.json"
_VERSION = re.compile(r"(\d+(?:\.\d+)*)")


class Mode(enum.StrEnum):
    """How a provider caches a prompt (the `mode` of a `data/cache_rules.json` row)."""

    AUTOMATIC = "automatic"  # the common prefix, in steps of `increment` (OpenAI before GPT-5.6)
    EXPLICIT = "explicit"  # prefixes stored at `cache_control` breakpoints, read within `lookback` (Anthropic)
    BREAKPOINTS = "breakpoints"  # stored at breakpoints, implicit and marked, no lookback (OpenAI GPT-5.6+)
    IMPLICIT = "implicit"  # the common prefix (Gemini 2.5 and later)
    PREVIOUS = "previous"  # the immediately previous request only (Ollama)
    NONE = "none"  # nothing is cached (Gemini before 2.5)

    @property
    def stores(self) -> bool:
        """A request stores prefixes at its breakpoints, and the provider reports and bills the writes."""
        return self in (Mode.EXPLICIT, Mode.BREAKPOINTS)


@dataclass(frozen=True, slots=True)
class Rules:
    """A provider's prompt-cache rules for one request (R-RPL-5)."""

    mode: Mode
    min_tokens: int
    increment: int
    lookback: int | None  # explicit: positions a breakpoint looks back, counting itself
    ttl_seconds: int
    write_multiplier: Decimal = Decimal(0)  # a written token's price ÷ an uncached input token's
    considered: int | None = None  # breakpoints: the latest stored breakpoints a request may match
    max_writes: int | None = None  # breakpoints: breakpoints one request writes at most
    family: str = ""  # the table row the rules come from
    ttl: str | None = None  # settings.cache.ttl as chosen (`1h`: Anthropic prices writes at 2x)
    retention: str | None = None  # settings.cache.retention as chosen (OpenAI before GPT-5.6)
    key: str | None = None  # settings.cache.key (OpenAI prompt_cache_key)


class CacheSettingError(InputError):
    """A `settings.cache` choice the model's rules do not offer (exit 2)."""


@functools.cache
def _table() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_PATH.read_text("utf-8"))
    return data


def _provider(provider: str) -> dict[str, Any]:
    own = providers.spec(provider).cache_rules
    if own is not None and not isinstance(own, str):
        return dict(own)
    entry: dict[str, Any] | None = _table()["providers"].get(own or provider)
    if entry is None:
        raise InputError(
            f"provider {provider!r} has no prompt-cache rules: add them to ctxkit/data/cache_rules.json "
            "or give them in its spec's cache_rules (R-RPL-5)"
        )
    while "same_as" in entry:
        entry = _table()["providers"][entry["same_as"]]
    return entry


def matches(pattern: str, model: str) -> bool:
    """`*` any name; `stem+` (`gpt-5.6+`) that version and later of the stem; else a prefix."""
    name = model.rsplit("/", 1)[-1].lower()
    if pattern == "*":
        return True
    if not pattern.endswith("+"):
        return name.startswith(pattern)
    found = _VERSION.search(pattern[:-1])
    if found is None:
        return name.startswith(pattern[:-1])
    stem, least = pattern[: found.start()], _numbers(found.group(1))
    if not name.startswith(stem):
        return False
    version = _VERSION.match(name, len(stem))
    return version is not None and _numbers(version.group(1)) >= least


def _numbers(text: str) -> tuple[int, ...]:
    return tuple(int(n) for n in text.split("."))


def row(provider: str, model: str) -> dict[str, Any]:
    """The first row of the provider's table that matches the model (a `*` row ends each table)."""
    entry = _provider(provider)
    found = next(r for r in entry["rows"] if any(matches(p, model) for p in r["models"]))
    common = entry.get("common", {})
    return {
        "family": found["family"],
        "rules": {**common.get("rules", {}), **found["rules"]},
        "options": {**common.get("options", {}), **found.get("options", {})},
        "sources": {**common.get("sources", {}), **found["sources"]},
    }


def rules(provider: str, model: str, overrides: CacheRules) -> Rules:
    """The model's row, the chosen ttl/retention option, then each number `settings.cache` gives."""
    r = row(provider, model)
    values = dict(r["rules"])
    for setting, choice in (("ttl", overrides.ttl), ("retention", overrides.retention)):
        if choice is None:
            continue
        offered = r["options"].get(setting, {})
        if choice not in offered:
            say = ", ".join(repr(k) for k in offered) or "none"
            raise CacheSettingError(
                f"settings.cache.{setting} {choice!r} does not apply to {provider} {model!r} "
                f"({r['family']}: {setting} {say}) (R-RPL-5)"
            )
        values.update(offered[choice])
    for name in ("min_tokens", "increment", "lookback", "ttl_seconds"):
        given = getattr(overrides, name)
        if given is not None:
            values[name] = given
    return Rules(
        mode=Mode(values["mode"]),
        min_tokens=values["min_tokens"],
        increment=values["increment"],
        lookback=values.get("lookback"),
        ttl_seconds=values["ttl_seconds"],
        write_multiplier=Decimal(str(values["write_multiplier"])),
        considered=values.get("considered"),
        max_writes=values.get("max_writes"),
        family=r["family"],
        ttl=overrides.ttl,
        retention=overrides.retention,
        key=overrides.key,
    )


def sources(provider: str, model: str) -> dict[str, dict[str, Any]]:
    """Each number of the model's rules → its source ({url, read, says})."""
    table = _table()["sources"]
    return {field: table[name] for field, name in sorted(row(provider, model)["sources"].items())}
