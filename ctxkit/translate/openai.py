"""OpenAI and Azure OpenAI chat completions bodies (R-TR-1, R-TR-7).

Input: a `TranslationInput` and its `Prepared` wire messages. Output: the request
body `{"model", "messages", "tools"?}`, one payload message (one prompt item) per wire message.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from operator import indexOf, is_not
from typing import Any, TypeVar

from ctxkit.counting.measure import call_args_text
from ctxkit.counting.wire import WireRules
from ctxkit.translate import items
from ctxkit.translate.common import (
    MESSAGES,
    Part,
    Prepared,
    Sent,
    Translated,
    TranslationInput,
    WireMessage,
    definitions,
)
from ctxkit.translate.itemmemo import REACH
from ctxkit.translate.keys import Key
from ctxkit.translate.memo import TranslationMemo

REASONING = re.compile(r"(?:^|[ /-])(?:o1|o3|o4|gpt-5(?:\.\d+)?)(?:$|[ /-])")
NO_SYSTEM_MESSAGE = frozenset({"o1-mini", "o1-preview"})
MARKDOWN_PREFIX = "Formatting re-enabled. "
T = TypeVar("T")
Run = tuple[int, int, int]  # (start now, start in the last list, length)


def is_reasoning_model(name: str) -> bool:
    """R-TR-7: o1, o3, o4, gpt-5 or gpt-5.N delimited by start/end, space, - or /."""
    return REASONING.search(name) is not None


def _base_name(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def content(m: WireMessage) -> str | list[dict[str, Any]]:
    """A string, or content parts for a message that had images (R-TR-1), even
    when every image became a text marker (R-TR-5) or a budget-only label."""
    given = m.parts
    if not m.had_images and len(given) == 1 and given[0].image is None:
        return given[0].text  # `m.text` of one text part
    if not m.had_images and not any(p.image for p in given):
        return m.text
    parts: list[dict[str, Any]] = []
    for p in m.parts:
        if p.image is None:
            if p.text:
                parts.append({"type": "text", "text": p.text})
        else:
            parts.append({"type": "image_url", "image_url": {"url": p.data_url}})
    return parts


def message(m: WireMessage) -> dict[str, Any]:
    if m.role == "tool":
        return {"role": "tool", "tool_call_id": m.tool_call_id, "content": m.text}
    if m.role == "assistant":
        out: dict[str, Any] = {"role": "assistant", "content": m.text or None}
        if m.tool_calls:
            out["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": call_args_text(c)}}
                for c in m.tool_calls
            ]
        return out
    return {"role": m.role, "content": content(m)}


def _no_system(model: str) -> bool:
    return _base_name(model) in NO_SYSTEM_MESSAGE


def tools(a: TranslationInput) -> list[dict[str, Any]]:
    """R-TR-9's definitions; a replay's calls share them while their tools stay the same."""
    found: tuple[Any, list[dict[str, Any]]] | None = a.memo.per_context.get("tools") if a.memo is not None else None
    if found is not None and (found[0] is a.tools or found[0] == a.tools):
        return found[1]
    defs = [{"type": "function", "function": d} for d in definitions(a, "parameters")]
    if a.memo is not None:
        a.memo.per_context["tools"] = (a.tools, defs)
    return defs


def translate(a: TranslationInput, prepared: Prepared) -> Translated:
    first = prepared.messages[0] if prepared.messages else None
    reasoning, no_system = per_context(a.memo, "system", lambda: (is_reasoning_model(a.model), _no_system(a.model)))
    if first is not None and first.role == "system" and ((reasoning and not a.settings.as_logged) or no_system):
        # copies: a replay's memo keeps the wire messages and their list (`TranslationMemo.keep`)
        prepared.messages = prepared.messages[:]
        if reasoning and not a.settings.as_logged:  # R-FIX-6: the logged text as sent
            parts = [Part(MARKDOWN_PREFIX + first.parts[0].text), *first.parts[1:]]
            first = prepared.messages[0] = replace(first, parts=parts, entry=None)  # changed for this model
        if no_system:
            prepared.messages[0] = replace(first, role="user", entry=None)
            prepared.fixup(
                f"model {a.model!r} takes no system message: the system text is sent as the first user message",
                rule="R-TR-1",
            )
    return Translated.emitted(_head(a, tools(a)), sent_messages(a, prepared, message), fill)


def _head(a: TranslationInput, defs: list[dict[str, Any]]) -> dict[str, Any]:
    """The body's fields besides the messages; a replay's calls share the dict while the model and
    the definitions stay (`translate._head` then shares the request's head too)."""
    memo = a.memo
    found: tuple[str, list[dict[str, Any]], dict[str, Any]] | None = (
        memo.per_context.get("head:openai") if memo is not None else None
    )
    if found is not None and found[0] == a.model and found[1] is defs:
        return found[2]
    head: dict[str, Any] = {"model": a.model, "messages": MESSAGES}
    if defs:
        head["tools"] = defs
    if memo is not None:
        memo.per_context["head:openai"] = (a.model, defs, head)
    return head


def fill(messages: Sequence[Sent]) -> dict[str, Any]:
    """The body's `messages`: one dict per payload message."""
    return {"messages": [s.parts[0] for s in messages]}


class _Fragment:
    """A working message as one payload message, made once: its `Sent` (its dict, its item's
    (key, tokens) and framing), shared by every request wherever the message stands; a tool
    result's `Sent` per name of its call (OpenAI reads the result under that name): a result's
    framing without a name is worked out only when its call is not in the window (`_sent`)."""

    __slots__ = ("named", "sent", "tool")

    def __init__(self, body: dict[str, Any], known: tuple[Key, int], frame: int | None) -> None:
        self.sent = Sent(body["role"], [body], None, [known], frame)  # never changed once framed
        self.tool = body["role"] == "tool"
        self.named: dict[str, Sent] = {}


def sent_messages(a: TranslationInput, prepared: Prepared, make: Callable[[WireMessage], dict[str, Any]]) -> list[Sent]:
    """One payload message per wire message, made by `make` (a list that no one changes: with a
    memo, the memo keeps it for the next request). With a memo, each working message's
    payload message is made once and a run of the last request's messages takes its payload
    messages as one slice, wherever it moved (a `Sent` of one item from its own wire message
    holds no index, R-RPL-9); a tool result's framing names its call (OpenAI, R-RPL-4): it is
    made again only for the results whose call's name changed (`TranslationMemo.renamed`)."""
    rules = per_context(a.memo, "rules", lambda: items.request_rules(a.provider, a.model, a.meter))
    wires, memo = prepared.messages, a.memo
    if memo is None:
        names = {c.id: c.name for m in wires for c in m.tool_calls}
        return [_sent(a, rules, m, make, names) for m in wires]
    last = memo.sent
    out: list[Sent | None] = memo.carried(last)
    size = len(wires)
    if size > len(out):
        out += [None] * (size - len(out))  # the cap's notice
    # made afresh: what no run brings, the first message (a model's system-message rules), the
    # cap's notice, and what depends on the window: images, results of renamed calls
    again = {0}  # made again though a run may bring them
    if memo.imaged:
        again.update(memo.imaged)
    if memo.renamed:
        again.update(memo.answering(memo.renamed))
    redo = again.union(memo.fresh)
    if prepared.placed < size:
        redo.update(range(prepared.placed, size))
    names = memo.names
    for n in redo:
        if n < size:
            m = wires[n]
            fragment = m.entry.fragment if m.entry is not None else None
            out[n] = fragment.sent if fragment is not None and not fragment.tool else _sent(a, rules, m, make, names)
    memo.sent = out  # the very list: nothing changes it once made (the next request carries from it)
    # `Payload.runs`, worked out when asked (None: the first request)
    memo.sent_runs = (last, out, partial(same_runs, memo.runs, again, out, last)) if last else None
    return out  # type: ignore[return-value]  # every place filled above


def same_runs(runs: list[Run], again: set[int], out: Sequence[object], last: Sequence[object]) -> list[Run]:
    """The runs of `out` that are the very objects of `last`, in order of both: the memo's `runs`
    (`out` holds `last`'s slice at each) split at the places made again (`again`, which holds 0)
    whose payload message is not the very one `last` held; each run gone on, back and forth,
    over the very same messages (the system text or a question's stored copy made again shares
    its `Sent`); then, after the last one, the runs `itemmemo.runs` finds (each one's first
    message looked for a little way on: an in-flight message, rebuilt per request)."""
    if not last:
        return []
    if runs and (len(again) > 1 or (runs[0][0] == 0 and out[0] is not last[runs[0][1]])):
        runs = _split(runs, again, out, last)
    size, known, count = len(out), len(last), len(runs)
    grown: list[Run] = []
    a = b = 0  # where the last run taken ends, in `out` and in `last`
    if (not runs or (runs[0][0] and runs[0][1])) and size and out[0] is last[0]:
        grown.append((0, 0, 1))
        a = b = 1
    for n, (i, j, k) in enumerate(runs):
        while i > a and j > b and out[i - 1] is last[j - 1]:
            i, j, k = i - 1, j - 1, k + 1
        if i == a and j == b and grown:
            i, j, k = grown[-1][0], grown[-1][1], grown.pop()[2] + k
        most = min(runs[n + 1][0] - i, runs[n + 1][1] - j) if n + 1 < count else min(size - i, known - j)
        if k < most and out[i + k] is last[j + k]:
            k += _same(out, i + k, last, j + k, most - k)
        grown.append((i, j, k))
        a, b = i + k, j + k
    while a < size and b < known:  # the tail: `itemmemo.runs(out[a:], last[b:])`, in one loop
        x, q, end = out[a], b, min(known, b + REACH)
        while q < end and last[q] is not x:
            q += 1
        if q == end:
            a += 1
            continue
        k = 1 + _same(out, a + 1, last, q + 1, min(size - a, known - q) - 1)
        if grown and grown[-1][0] + grown[-1][2] == a and grown[-1][1] + grown[-1][2] == q:
            grown[-1] = (grown[-1][0], grown[-1][1], grown[-1][2] + k)
        else:
            grown.append((a, q, k))
        a, b = a + k, q + k
    return grown


def _split(runs: list[Run], again: set[int], out: Sequence[object], last: Sequence[object]) -> list[Run]:
    cut: list[Run] = []
    for i, j, k in runs:
        start = i
        for n in sorted(p for p in again if i <= p < i + k):
            if out[n] is not last[n - i + j]:
                if n > start:
                    cut.append((start, start - i + j, n - start))
                start = n + 1
        if start < i + k:
            cut.append((start, start - i + j, i + k - start))
    return cut


def _same(new: Sequence[object], i: int, old: Sequence[object], j: int, most: int) -> int:
    """How many objects from new[i] are the very objects from old[j] (at most `most`), found in C."""
    try:
        return indexOf(map(is_not, new[i : i + most], old[j : j + most]), True)
    except ValueError:
        return most


def _sent(
    a: TranslationInput,
    rules: WireRules,
    m: WireMessage,
    make: Callable[[WireMessage], dict[str, Any]],
    names: dict[str, str],
) -> Sent:
    entry = m.entry
    if entry is None:
        d = make(m)
        return Sent(d["role"], [d], None)
    fragment: _Fragment | None = entry.fragment
    if fragment is None:
        fragment = entry.fragment = _made(a, rules, make(m))
    if not fragment.tool:
        return fragment.sent
    call_id = str(m.tool_call_id)  # as the body is read
    name = names.get(call_id)
    if name is None:
        sent = fragment.sent
        if sent.frame is None:  # framed once, on the first request that has no call named for it
            frame = items.frame(rules, "tool", sent.parts, a.meter, {})
            sent = fragment.sent = Sent(sent.role, sent.parts, None, sent.known, frame)
        return sent
    found = fragment.named.get(name)
    if found is None:
        sent = fragment.sent
        frame = items.frame(rules, "tool", sent.parts, a.meter, {call_id: name})
        found = fragment.named[name] = Sent(sent.role, sent.parts, None, sent.known, frame)
    return found


def _made(a: TranslationInput, rules: WireRules, d: dict[str, Any]) -> _Fragment:
    """A payload dict's fragment: keyed and counted once (the memo shares it between working
    messages of equal content, such as an in-flight message and its stored copy)."""
    known = items.known(d["role"], d, a.meter, rules)
    return _Fragment(d, known, None if d["role"] == "tool" else _framing(a, rules, d))


def _framing(a: TranslationInput, rules: WireRules, d: dict[str, Any]) -> int:
    """`items.frame` of a payload dict. One that holds only a role and a content (no name, no
    calls, not a tool result) is framed by its role alone: worked out once per role while the
    replay's context holds (R-RPL-4)."""
    role = d["role"]
    if len(d) != 2 or "content" not in d or role == "tool":
        return items.frame(rules, role, [d], a.meter, {})
    by_role: dict[str, int] = per_context(a.memo, "framing", dict)
    found = by_role.get(role)
    if found is None:
        found = by_role[role] = items.frame(rules, role, [d], a.meter, {})
    return found


def per_context(memo: TranslationMemo | None, name: str, make: Callable[[], T]) -> T:
    """`make()`, asked once while a replay's context holds (its provider, model, tokenizer and
    cache setting: `TranslationMemo.per_context`); without a memo, every time."""
    if memo is None:
        return make()
    found: T | None = memo.per_context.get(name)
    if found is None:
        found = memo.per_context[name] = make()
    return found
