"""What each provider adds around a request's texts when it counts the prompt (R-RPL-4).

Input: provider, model, tokenizer name and the body. Output: `WireRules` — the per-message
framing and reply priming (the provider's spec, `ctxkit/providers/`), the ratio applied to
text counts, and the tokens of the
request's preamble (tool definitions, output schema, tool-use system prompt) — and
`image_tokens` for one image. The numbers are the providers' published ones
(docs/rules.md#r-rpl-4); the one fitted quantity is a text ratio for a provider whose tokenizer is not public (the
spec's `text_ratio`: Anthropic's `ctxkit/data/anthropic_ratio.json`, written by
`scripts/fit_anthropic_ratio.py` from the recorded traffic), applied to cl100k_base counts.
What a provider adds beyond that depends on its wire format (`WireRules.format`).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxkit import providers
from ctxkit.counting import openai_render
from ctxkit.counting.image_rules import image_tokens

REPLY_PRIMING_TOKENS = providers.Framing().priming  # once per request (OpenAI's chat format)
NAME_TOKENS = 1  # a message's `name`: its tokens plus this one (OpenAI)
RATIO_FOLDER = Path(__file__).parents[1] / "data"  # where a spec's `text_ratio` file is
RATIO_TOKENIZER = "cl100k_base"  # the counts a ratio was fitted on

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
    """How a provider's request counts beyond its texts (R-RPL-4): framing, roles, priming."""

    provider: str
    model: str
    format: str  # the provider's wire format (its spec's)
    framing: int  # per payload message, on its first item
    role: bool  # the role name's tokens count once per message
    priming: int  # once per request
    ratio: float  # applied to text counts (Anthropic's fitted ratio; else 1)

    def scaled(self, tokens: int) -> int:
        return tokens if self.ratio == 1.0 else round(tokens * self.ratio)

    @property
    def anthropic(self) -> bool:
        return self.format == "anthropic"

    @property
    def openai(self) -> bool:
        return self.format == "openai"

    def priming_after(self, last_role: str | None) -> int:
        """The reply priming; Anthropic reads a final assistant message as the reply's start (none)."""
        return 0 if self.anthropic and last_role == "assistant" else self.scaled(self.priming)

    def image(self, width: int, height: int, detail: str | None) -> int:
        return image_tokens(self.provider, self.model, width, height, detail)


@functools.cache
def fitted_ratio(name: str) -> float:
    """A fitted ratio of a provider's token counts to cl100k_base counts (1 when not fitted)."""
    try:
        return float(json.loads((RATIO_FOLDER / name).read_text(encoding="utf-8"))["ratio"])
    except (OSError, KeyError, ValueError):
        return 1.0


def rules_for(provider: str, model: str, tokenizer: str) -> WireRules:
    """The provider's rules for a request to `model`, counted with `tokenizer`."""
    spec = providers.spec(provider)
    framing = spec.framing
    ratio = fitted_ratio(spec.text_ratio) if spec.text_ratio and tokenizer == RATIO_TOKENIZER else 1.0
    return WireRules(provider, model, spec.format, framing.per_message, framing.role, framing.priming, ratio)


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
    if rules.openai:
        total = openai_render.tools_tokens(body, count, has_system=has_system(rules.provider, body))
        schema = openai_render.response_format_text(body)
        return total + (count(schema) if schema else 0)
    tools = body.get("tools")
    if rules.anthropic:  # the definitions as JSON with the default separators
        own = count(json.dumps(tools, ensure_ascii=False)) if tools else 0
        schema = anthropic_output_schema(body)
        own += count(json.dumps(schema, ensure_ascii=False)) if schema else 0
        return rules.scaled(own) + anthropic_tool_prompt(rules.model, body)
    return count(_compact(tools)) if tools else 0


def anthropic_output_schema(body: dict[str, Any]) -> Any:
    """The JSON schema of Anthropic's structured outputs (`output_config.format`, `output_format`)."""
    for holder in (body.get("output_config"), body):
        fmt = holder.get("format" if holder is not body else "output_format") if isinstance(holder, dict) else None
        if isinstance(fmt, dict) and isinstance(fmt.get("schema"), dict):
            return fmt["schema"]
    return None


# Anthropic's published tool-use text format: calls as <function_calls> blocks, results as
# <function_results> blocks around the result's content.
_RESULT_WRAPPER = (
    "<function_results>\n<result>\n<tool_name></tool_name>\n<stdout>\n\n</stdout>\n</result>\n</function_results>"
)


def anthropic_call_text(block: dict[str, Any]) -> str:
    """A tool_use block as the model reads it."""
    given = block.get("input")
    args = given if isinstance(given, dict) else {}
    params = "".join(
        f'<parameter name="{k}">{v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}</parameter>\n'
        for k, v in args.items()
    )
    return f'<function_calls>\n<invoke name="{block.get("name", "")}">\n{params}</invoke>\n</function_calls>'


def anthropic_block_tokens(block: Any, count: Callable[[str], int]) -> int | None:
    """Tokens of a tool_use or tool_result block's wrapping and call (None for any other block)."""
    kind = block.get("type") if isinstance(block, dict) else None
    if kind == "tool_use":
        return count(anthropic_call_text(block))
    if kind == "tool_result":
        return count(_RESULT_WRAPPER)
    return None


def has_preamble(provider: str, body: dict[str, Any]) -> bool:
    if body.get("tools") or body.get("functions"):
        return True
    kind = providers.wire_format(provider)
    if kind == "anthropic":
        return anthropic_output_schema(body) is not None
    return kind == "openai" and bool(openai_render.response_format_text(body))


# OpenAI's published harmony format addresses a tool call `to=functions.<name>` and reads its
# result from the role `functions.<name>` (in place of `tool`).
CALL_HEADER, RESULT_ROLE = " to=functions.", "functions."


def openai_call_names(items: list[tuple[str, list[Any]]]) -> dict[str, str]:
    """Tool call id → the called function's name, over the body's messages (chat or Responses)."""
    names: dict[str, str] = {}
    for _, parts in items:
        for part in parts:
            if not isinstance(part, dict):
                continue
            for call in part.get("tool_calls") or ():
                if isinstance(call, dict) and isinstance(call.get("function"), dict):
                    names[str(call.get("id"))] = str(call["function"].get("name", ""))
            if part.get("type") == "function_call":
                names[str(part.get("call_id"))] = str(part.get("name", ""))
    return names


def openai_call_tokens(role: str, part: Any, names: dict[str, str], count: Callable[[str], int]) -> int:
    """The tokens a call's address or a result's role adds to an OpenAI message (0 for others)."""
    if not isinstance(part, dict):
        return 0
    if role == "assistant":
        calls = [c["function"].get("name", "") for c in part.get("tool_calls") or () if isinstance(c, dict)]
        if part.get("type") == "function_call":
            calls.append(str(part.get("name", "")))
        return sum(count(CALL_HEADER + str(name)) for name in calls)
    if role == "tool":
        name = names.get(str(part.get("tool_call_id", part.get("call_id"))))
        return count(RESULT_ROLE + name) - count("tool") if name else 0
    return 0
