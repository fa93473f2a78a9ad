"""What each provider adds around a request's texts when it counts the prompt (R-RPL-4).

Input: provider, model, tokenizer name and the body. Output: `WireRules` — the per-message
framing and reply priming, the ratio applied to text counts, and the tokens of the
request's preamble (tool definitions, output schema, tool-use system prompt) — and
`image_tokens` for one image. The numbers are the providers' published ones
(docs/rules.md#r-rpl-4); the one fitted quantity is Anthropic's text ratio, whose
tokenizer is not public: `ctxkit/data/anthropic_ratio.json`, written by
`scripts/fit_anthropic_ratio.py` from the recorded traffic, applied to cl100k_base counts.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxkit.counting import openai_render
from ctxkit.counting.image_rules import image_tokens
from ctxkit.loading.domain import Provider

FRAMING_TOKENS = 3  # per payload message: OpenAI's published chat-format overhead
REPLY_PRIMING_TOKENS = 3  # once per request
NAME_TOKENS = 1  # a message's `name`: its tokens plus this one (OpenAI)
RATIO_FILE = Path(__file__).parents[1] / "data" / "anthropic_ratio.json"
RATIO_TOKENIZER = "cl100k_base"  # the counts the ratio was fitted on

# Anthropic's documented tool-use system prompt, (auto or none, any or tool), by model family.
_ANTHROPIC_TOOL_PROMPT = (
    (re.compile(r"claude-3-opus"), (530, 281)),
    (re.compile(r"claude-3-sonnet"), (159, 235)),
    (re.compile(r"claude-3-haiku"), (264, 340)),
    (re.compile(r"claude-3-5-haiku"), (264, 340)),
    (re.compile(r"claude-3-5-sonnet"), (294, 261)),
)
_ANTHROPIC_TOOL_PROMPT_LATEST = (346, 313)  # Claude 3.7 Sonnet, the Claude 4 family and later


@dataclass(frozen=True, slots=True)
class WireRules:
    provider: str
    model: str
    framing: int  # per payload message, on its first item
    role: bool  # the role name's tokens count once per message
    priming: int  # once per request
    ratio: float  # applied to text counts (Anthropic's fitted ratio; else 1)
    provider_rules: bool = True  # False: the uniform count (compact tool JSON, the tile estimate)

    def scaled(self, tokens: int) -> int:
        return tokens if self.ratio == 1.0 else round(tokens * self.ratio)

    def image(self, width: int, height: int, detail: str | None) -> int:
        return image_tokens(self.provider, self.model, width, height, detail)


@functools.cache
def anthropic_ratio() -> float:
    """The fitted ratio of Anthropic's token counts to cl100k_base counts (1 when not fitted)."""
    try:
        return float(json.loads(RATIO_FILE.read_text(encoding="utf-8"))["ratio"])
    except (OSError, KeyError, ValueError):
        return 1.0


UNIFORM_FRAMING = (FRAMING_TOKENS, True, REPLY_PRIMING_TOKENS, 1.0)


def rules_for(provider: str, model: str, tokenizer: str, *, sent: bool = True) -> WireRules:
    """The provider's rules for a body as sent; `sent=False` (a payload ctxkit translated from a
    fixture): the uniform count every provider shared before, until its snapshots move over."""
    if not sent:
        return WireRules(provider, model, *UNIFORM_FRAMING, provider_rules=False)
    if provider == Provider.GEMINI:  # counts the parts alone: no per-message framing
        return WireRules(provider, model, 0, False, 0, 1.0)
    ratio = anthropic_ratio() if provider == Provider.ANTHROPIC and tokenizer == RATIO_TOKENIZER else 1.0
    return WireRules(provider, model, FRAMING_TOKENS, True, REPLY_PRIMING_TOKENS, ratio)


def has_system(provider: str, body: dict[str, Any]) -> bool:
    """The prompt already opens with a system (or developer) message the definitions join."""
    if isinstance(body.get("instructions"), str) and body["instructions"]:
        return True
    given = body.get("messages") or body.get("input")
    if not isinstance(given, list) or not given or not isinstance(given[0], dict):
        return False
    return given[0].get("role") in ("system", "developer")


def anthropic_tool_prompt(model: str, body: dict[str, Any]) -> int:
    """Anthropic's tool-use system prompt for this model and tool_choice (0 without tools)."""
    if not body.get("tools"):
        return 0
    choice = body.get("tool_choice")
    forced = isinstance(choice, dict) and choice.get("type") in ("any", "tool")
    auto, any_or_tool = next((v for p, v in _ANTHROPIC_TOOL_PROMPT if p.search(model)), _ANTHROPIC_TOOL_PROMPT_LATEST)
    return any_or_tool if forced else auto


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def preamble_tokens(rules: WireRules, body: dict[str, Any], count: Callable[[str], int]) -> int:
    """Tokens of what the provider reads before the messages: definitions, schema, tool prompt."""
    if not rules.provider_rules:
        tools = body.get("tools")
        return count(_compact(tools)) if tools else 0
    if rules.provider in (Provider.OPENAI, Provider.AZURE):
        total = openai_render.tools_tokens(body, count, has_system=has_system(rules.provider, body))
        schema = openai_render.response_format_text(body)
        return total + (count(schema) if schema else 0)
    tools = body.get("tools")
    own = count(_compact(tools)) if tools else 0
    if rules.provider == Provider.ANTHROPIC:
        return rules.scaled(own) + anthropic_tool_prompt(rules.model, body)
    return own


def has_preamble(provider: str, body: dict[str, Any], *, sent: bool = True) -> bool:
    if not sent:
        return bool(body.get("tools"))
    if body.get("tools") or body.get("functions"):
        return True
    return provider in (Provider.OPENAI, Provider.AZURE) and bool(openai_render.response_format_text(body))
