"""The closed list of break causes (R-RPL-6 for a fixture's calls, R-LOG-2 for a log's).

Input: nothing (these are types). Output: `Cause`, what a replay names as the reason a call
stopped matching its best candidate; `CAUSE_ADVICE`, one line per cause on what to change;
`HEALTHY`, the causes that need no change. Each kind of replay says which causes it can find
and the rule behind each (`breaks.CAUSE_RULES`, `logbreaks.CAUSE_RULES`). A `StrEnum`: its
value is what the table, the JSON and the page show.
"""

from __future__ import annotations

import enum


class Cause(enum.StrEnum):
    FIRST_CALL = "first_call"
    EXPIRED = "expired"
    MODEL = "model"
    PARAMETERS = "parameters"
    TOOLS = "tools"
    SYSTEM_DATE = "system_date"
    SYSTEM = "system"
    SUMMARY = "summary"
    BRANCH = "branch"
    EDIT = "edit"
    TRUNCATION = "truncation"
    HEAD_DROPPED = "head_dropped"
    PLACEHOLDER = "placeholder"
    IMAGE_CAP = "image_cap"
    DRIFT = "drift"
    APPEND = "append"
    OTHER = "other"


HEALTHY = frozenset({Cause.APPEND, Cause.FIRST_CALL})  # causes that need no change

# What to change, per cause (fixture and log replay): one line each, in the table footer, the JSON
# totals and the report page.
CAUSE_ADVICE = {
    Cause.FIRST_CALL: "nothing to change: the first call writes what later calls read",
    Cause.EXPIRED: "calls further apart than the cache lives: a longer TTL keeps it (Anthropic ttl 1h, OpenAI 24h)",
    Cause.MODEL: "a cache belongs to one model: keep one model for a conversation, or switch where little is cached",
    Cause.PARAMETERS: "a setting the provider keys its cache on changed: keep it the same for the whole conversation",
    Cause.TOOLS: "declare every tool up front, in a stable order, rather than adding or removing tools per turn",
    Cause.SYSTEM_DATE: "move the date after the cached prefix (the last user message), or print only the day",
    Cause.SYSTEM: "keep the system prompt fixed; put what changes per call after the cached prefix",
    Cause.SUMMARY: "each new summary rewrites the history after it: summarize less often, in larger steps",
    Cause.BRANCH: "an edit starts a new branch: the cache rightly starts again there",
    Cause.EDIT: "an earlier message changed in place: leave sent messages as they were",
    Cause.TRUNCATION: "dropping the oldest messages moves everything after them: drop in larger steps, or summarize",
    Cause.HEAD_DROPPED: "leading history is gone (truncation or compaction): drop or compact in larger steps",
    Cause.PLACEHOLDER: "a full tool result became the placeholder a turn later: shorten it once, when first sent",
    Cause.IMAGE_CAP: "an image sent before is capped now: drop old images for good instead of per call",
    Cause.DRIFT: "a message that changes every turn sits inside the prefix: move it after the cached prefix",
    Cause.APPEND: "healthy: only new content follows what was cached",
    Cause.OTHER: "an earlier item changed: compare the break's two sides",
}
