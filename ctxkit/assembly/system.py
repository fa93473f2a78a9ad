"""The system prompt, the custom agent message, the turn state and the reminder.

Input: `Effective` settings and whether citations are required. Output: texts
(R-SYS-1…6, R-TURN-2, R-REM-1/2) and whether they depend on the clock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from ctxkit.loading.config import Effective
from ctxkit.loading.domain import Fixture, UserInfo
from ctxkit.loading.templates import Templates

GUIDED_TOOLS = (
    "internal_search",
    "web_search",
    "open_url",
    "python",
    "generate_image",
    "memory",
)
SEARCH_TOOLS = frozenset({"internal_search", "web_search"})
DATE_PLACEHOLDER = "{{CURRENT_DATETIME}}"
CITATION_PLACEHOLDER = "{{CITATION_GUIDANCE}}"
TAG_PLACEHOLDER = "{{REMINDER_TAG_DESCRIPTION}}"
REMINDER_WRAP = "<system-reminder>\n{text}\n</system-reminder>"


def format_date(now: datetime) -> str:
    """R-SYS-2: one fixed English format, e.g. `Saturday, March 14, 2026`."""
    days = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
    months = (
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    )
    return f"{days[now.weekday()]}, {months[now.month - 1]} {now.day}, {now.year}"


@dataclass(frozen=True, slots=True)
class Turn:
    cycle: int
    max_cycles: int
    just_ran_web_search: bool
    ran_image_generation: bool
    searched: bool
    generated_files: bool

    @property
    def last_cycle(self) -> bool:
        return self.cycle == self.max_cycles - 1


def turn_state(fixture: Fixture) -> Turn:
    """R-TURN-2: derived from `in_flight`, each field overridable by `turn:`."""
    calling = [m for m in fixture.in_flight if m.role == "assistant" and m.tool_calls]
    latest = {c.name for c in calling[-1].tool_calls} if calling else set()
    every = {c.name for m in calling for c in m.tool_calls}
    o = fixture.turn

    def pick(value: object, derived: object) -> object:
        return derived if value is None else value

    return Turn(
        cycle=int(pick(o.cycle, len(calling))),  # type: ignore[call-overload]
        max_cycles=int(pick(o.max_cycles, 6)),  # type: ignore[call-overload]
        just_ran_web_search=bool(pick(o.just_ran_web_search, "web_search" in latest)),
        ran_image_generation=bool(pick(o.ran_image_generation, "generate_image" in latest)),
        searched=bool(pick(o.searched, bool(every & SEARCH_TOOLS))),
        generated_files=bool(pick(o.generated_files, False)),
    )


@dataclass(frozen=True, slots=True)
class SystemTexts:
    system: str | None  # the system message, or None
    agent: str | None  # the custom agent user message, or None
    clock_dependent: bool


def _apply_placeholders(text: str, t: Templates, date: str, citations: bool) -> str:
    text = text.replace(DATE_PLACEHOLDER, date)
    text = text.replace(CITATION_PLACEHOLDER, t.raw("citation_guidance") if citations else "")
    return text.replace(TAG_PLACEHOLDER, t.raw("reminder_tag_description"))


def _user_section(info: UserInfo | None) -> str | None:
    if info is None:
        return None
    parts = []
    basic = [
        f"{label}: {value}"
        for label, value in (("Name", info.name), ("Email", info.email), ("Role", info.role))
        if value
    ]
    if basic:
        parts.append("\n".join(basic))
    if info.organization:
        parts.append("Organization:\n" + "\n".join(f"- {k}: {v}" for k, v in info.organization))
    if info.team:
        parts.append(f"Team: {info.team}")
    if info.preferences:
        parts.append(f"Preferences: {info.preferences}")
    if info.memories:
        parts.append("Memories:\n" + "\n".join(f"- {m}" for m in info.memories))
    if not parts:
        return None
    return "# User Information\n\n" + "\n\n".join(parts)


def _tools_section(t: Templates, tools: frozenset[str]) -> str | None:
    names = (["search"] if tools & SEARCH_TOOLS else []) + [n for n in GUIDED_TOOLS if n in tools]
    names = [n for n in names if t.raw(f"tool_guidance.{n}").strip()]
    if not names:
        return None
    return "# Tools\n\n" + "\n\n".join(t.raw(f"tool_guidance.{n}").strip() for n in names)


def build(eff: Effective, *, citations: bool, tools: frozenset[str], date: str) -> SystemTexts:
    """R-SYS-1…5 for the given switches (R-SYS-6 calls it with both on)."""
    p = eff.fixture.prompts
    t = eff.templates
    base = p.system if p.system is not None else t.raw("system_prompt")
    agent = p.custom_agent or None
    if agent and (p.replace_base_system_prompt or base == ""):
        return SystemTexts(
            _dated(agent, t, date, citations, p.datetime_aware), None, DATE_PLACEHOLDER in agent or p.datetime_aware
        )
    if base == "":
        return SystemTexts(None, agent, False)
    if eff.fixture.settings.as_logged and not p.datetime_aware:  # R-FIX-6: the recorded prompt as written
        return SystemTexts(base, agent, False)
    text = _dated(base, t, date, citations, p.datetime_aware)
    if eff.fixture.settings.as_logged:  # R-FIX-6: nothing appended
        return SystemTexts(text, agent, DATE_PLACEHOLDER in base or p.datetime_aware)
    if citations and CITATION_PLACEHOLDER not in base:
        cite = t.raw("citation_guidance").strip()
    else:
        cite = None
    blocks = [_user_section(eff.fixture.user_info), cite, _tools_section(t, tools)]
    for block in blocks:
        if block:
            text = f"{text}\n\n{block}"
    return SystemTexts(text, agent, DATE_PLACEHOLDER in base or p.datetime_aware)


def _dated(text: str, t: Templates, date: str, citations: bool, aware: bool) -> str:
    body = _apply_placeholders(text, t, date, citations).rstrip()
    if aware and DATE_PLACEHOLDER not in text:
        body = f"{body}\n\n{t.fill('datetime_line', datetime=date)}"
    return body


def reserved_tokens(eff: Effective, count: Callable[[str], int], date: str) -> int:
    """R-SYS-6: the worst-case system prompt (every guided tool, citations on),
    plus the custom agent message when it is a separate message."""
    worst = build(eff, citations=True, tools=frozenset(GUIDED_TOOLS), date=date)
    return sum(count(t) for t in (worst.system, worst.agent) if t)


def reminder_text(eff: Effective, turn: Turn, *, citations: bool) -> str | None:
    """R-REM-1: the reminder chosen for this call, unwrapped; None for none."""
    t = eff.templates
    if eff.fixture.settings.as_logged:  # R-FIX-6: only the fixture's own task prompt
        task = (eff.fixture.prompts.task or "").strip()
        return task or None
    if turn.ran_image_generation:
        return t.raw("reminder.image_generation").strip()
    if turn.just_ran_web_search and "open_url" in eff.tool_names and not turn.last_cycle:
        return t.raw("reminder.open_url").strip()
    parts = [
        eff.fixture.prompts.task,
        t.raw("reminder.last_cycle") if turn.last_cycle else None,
        t.raw("reminder.citation") if citations else None,
        t.raw("reminder.generated_files") if turn.generated_files else None,
    ]
    stripped = [s.strip() for s in parts if s and s.strip()]
    return "\n\n".join(stripped) if stripped else None


def wrap_reminder(text: str) -> str:
    """R-REM-2: the reminder as sent."""
    return REMINDER_WRAP.replace("{text}", text)
