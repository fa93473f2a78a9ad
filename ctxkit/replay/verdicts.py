"""A logged call's prediction against what the provider reported (R-LOG-3).

Input: the provider's cache rules, the call's predicted prompt and cache `Hit`, the longest prefix
any earlier call of the log shares with it (no TTL, no minimum), and the provider's `Reported`
numbers. Output: the count error and the verdict, first match wins:

* `agree` — predicted cached = reported (Anthropic: the writes too);
* `count_off` — the difference is what the count error alone explains: both sides cached
  (or wrote) something and differ by no more than the count error's share of the larger
  number plus one increment, or (automatic and implicit caches) the provider's rules applied
  to the prefix rescaled to the provider's count give what it reported;
* `provider_miss` — the provider served less than its rules allowed (eviction, routing, a
  shorter retention: not the application's doing);
* `warm_elsewhere` — it served more than any earlier call of the log could have warmed (the
  longest prefix shared with any of them, with the same tolerance);
* `disagree` — anything else (the rules or the TTL do not match what the provider did).

A usage object that does not report the cache at all (`counting.reported.reports_cache`: Ollama's, and OpenAI
chat usage without `prompt_tokens_details.cached_tokens` from compatible hosts and older API
versions) gives no verdict; its count error still counts.
"""

from __future__ import annotations

import enum
import math

from ctxkit.counting.reported import Reported
from ctxkit.replay.cache import Hit, Mode, Rules


class Verdict(enum.StrEnum):
    """A logged call's prediction against the provider's numbers (see the module docstring)."""

    AGREE = "agree"
    COUNT_OFF = "count_off"
    PROVIDER_MISS = "provider_miss"
    WARM_ELSEWHERE = "warm_elsewhere"
    DISAGREE = "disagree"


VERDICTS = tuple(Verdict)  # in the order the totals list them


def count_error(prompt: int, rep: Reported | None) -> float | None:
    """(predicted − reported) ÷ reported input tokens; None without a reported count."""
    if rep is None or rep.input_tokens == 0:
        return None
    return (prompt - rep.input_tokens) / rep.input_tokens


def verdict(rules: Rules, prompt: int, hit: Hit, ever_prefix: int, rep: Reported | None) -> Verdict | None:
    if rep is None:
        return None
    explicit = rules.mode is Mode.EXPLICIT
    predicted, served = hit.cached_tokens, rep.cached_tokens
    if predicted == served and (not explicit or hit.write_tokens == rep.cache_write_tokens):
        return Verdict.AGREE
    scale = rep.input_tokens / prompt if prompt else 1.0

    def close(ours: int, theirs: int) -> bool:
        """Equal but for the count error's share of the larger one, plus one increment."""
        return abs(ours - theirs) <= math.ceil(max(ours, theirs) * abs(scale - 1)) + rules.increment

    if explicit:
        written, served_written = hit.write_tokens, rep.cache_write_tokens
        if (predicted or written) and (served or served_written):
            if close(predicted, served) and close(written, served_written):
                return Verdict.COUNT_OFF
    elif (predicted and served and close(predicted, served)) or applied(
        rules, round(hit.prefix_tokens * scale)
    ) == served:
        return Verdict.COUNT_OFF
    if served < predicted:
        return Verdict.PROVIDER_MISS
    if served > ever_prefix and not close(ever_prefix, served):
        return Verdict.WARM_ELSEWHERE
    return Verdict.DISAGREE


def applied(rules: Rules, prefix: int) -> int:
    """What the provider's rules cache of a prefix of this many tokens (no breakpoints: automatic kinds)."""
    if prefix < rules.min_tokens:
        return 0
    if rules.mode is Mode.AUTOMATIC and rules.increment > 1:
        return prefix - prefix % rules.increment
    return prefix
