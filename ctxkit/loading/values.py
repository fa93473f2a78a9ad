"""Values as written: ISO 8601 date-times (R-RPL-3) and exact decimals (R-FIX-3).

Input: the parsed document's scalars, with the text of every float as the parser read it
(`FloatTexts`). Output: datetimes, `Decimal`s and the frozen settings and user info built
from them; a value that is not a date-time is a problem at its JSON pointer. `refs` builds
the fixture with these; `--now` and log records parse their times here too.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from ctxkit.loading import domain
from ctxkit.loading.schema import JsonPath

FloatTexts = dict[int, tuple[float, str]]  # id(float) -> (the float, its text as written)
_DECIMAL_SETTINGS = ("safety_margin", "compression_trigger_ratio", "recent_messages_ratio", "project_files_max_ratio")


def settings(written: dict[str, Any], floats: FloatTexts) -> domain.Settings:
    """R-FIX-3: ratios (and prices) become Decimals exactly as written, never via binary floats."""
    fields = dict(written)
    for key in _DECIMAL_SETTINGS:
        if key in fields:
            fields[key] = exact_decimal(fields[key], floats)
    fields["cache"] = domain.CacheRules(**fields.get("cache", {}))
    fields["request_fields"] = json_pairs(fields.get("request_fields", {}))
    prices = fields.get("prices")
    if prices is not None:
        given = {key: exact_decimal(value, floats) for key, value in prices.items()}
        given.setdefault("cached_input", given["input"])
        given.setdefault("cache_write", given["input"])
        fields["prices"] = domain.Prices(**given)
    return domain.Settings(**fields)


def json_pairs(fields: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """R-FIX-7: request fields as (name, JSON text), hashable and frozen like the rest of a fixture."""
    return tuple((name, json.dumps(value, ensure_ascii=False)) for name, value in fields.items())


def exact_decimal(value: float, floats: FloatTexts) -> Decimal:
    """A number as written: a float by its text in the document (0.1 stays 0.1), an integer as is."""
    if isinstance(value, float):
        entry = floats.get(id(value))
        return Decimal(entry[1] if entry is not None and entry[0] is value else repr(value))
    return Decimal(value)


def user_info(info: dict[str, Any], floats: FloatTexts) -> domain.UserInfo:
    organization = tuple((key, scalar_text(value, floats)) for key, value in info.get("organization", {}).items())
    return domain.UserInfo(**{**info, "organization": organization, "memories": tuple(info.get("memories", ()))})


def scalar_text(value: str | float | bool, floats: FloatTexts) -> str:
    """Organization values as written: booleans as true/false, numbers in their written form."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(exact_decimal(value, floats))
    return str(value)


def stored_at(item: dict[str, Any], where: JsonPath, found: list[tuple[JsonPath, str]]) -> datetime | None:
    """R-RPL-3: `at` is an ISO 8601 date-time with a zone (`Z` or an offset)."""
    text = item.get("at")
    if text is None:
        return None
    parsed = parse_datetime(text, zone_required=True)
    if parsed is None:
        found.append(((*where, "at"), f"not an ISO 8601 date-time with a zone: {text[:40]!r}{beyond_utc(text)}"))
    return parsed


def fixture_now(text: str, found: list[tuple[JsonPath, str]]) -> datetime | None:
    """The fixture's `now`: an ISO 8601 date-time (without a zone: UTC)."""
    parsed = parse_datetime(text)
    if parsed is None:
        found.append((("now",), f"not an ISO 8601 date-time: {text[:40]!r}{beyond_utc(text)}"))
    return parsed


def beyond_utc(text: str) -> str:
    """` (… outside years 1-9999 in UTC)` when a parsable date-time with an offset is out of
    range once in UTC (which replay's clocks need), else ""."""
    try:
        datetime.fromisoformat(text).astimezone(UTC)
    except OverflowError:
        return " (with its offset it falls outside years 1-9999 in UTC)"
    except ValueError:
        pass
    return ""


def parse_datetime(text: str, *, zone_required: bool = False) -> datetime | None:
    """An ISO 8601 date-time (`Z` accepted), or None when `text` is not one; the one parser
    of the fixture's `now` and `at` and of `--now`.

    Without `zone_required`, a value without offset is UTC and a date alone is midnight;
    with it, a value must carry a zone (and so a time).
    """
    try:
        parsed = datetime.fromisoformat(text)
        if parsed.tzinfo is not None:
            parsed.astimezone(UTC)  # 0001-01-01T00:00+05:00 is before year 1 in UTC: not a usable time
    except (ValueError, OverflowError):
        return None
    if parsed.tzinfo is None:
        return None if zone_required else parsed.replace(tzinfo=UTC)
    return None if zone_required and len(text) <= 10 else parsed
