"""Prompt items: a translated payload → the items a provider reads, each with its tokens (R-RPL-4).

Input: a `Payload` (body, wire messages and origins) and something that counts
(`ItemMeter`: a text's tokens and an image's cost; `counting.measure.Meter` is
one). Output: `prompt_items(payload, meter=...) -> Prompt` (its `Item`s in the
order the provider reads the prompt, and where each sits), and `prompt_tokens(items) -> int`
(`wire_tokens(payload, meter=...)` is the same number without building the keys);
`over_window_tokens` and `over_window_warning` say when that request does not fit the window (R-ASM-9).

The items, per provider:

* openai, azure, ollama — the tool definitions (one item, when present), then
  one item per message of `messages`;
* anthropic — the tool definitions, each block of `system`, then each content
  block of each message;
* gemini — the tool declarations, `systemInstruction` (one item), then each
  part of each content.

`Item.key` is the item's identity: equal for two items exactly when the canonical
JSON (sorted keys, no whitespace, non-ASCII kept) of `{"role": ROLE, "item": ITEM}`
with a top-level `cache_control` removed is, so two equal blocks under different
roles differ and a moved cache breakpoint changes nothing; it is a tuple holding the
item's own strings (`translate/keys.py`), not the JSON text. The tool-definitions
item has role `None` and is keyed by the canonical JSON `{"tools": ...}`; Anthropic's `system` blocks and Gemini's
`systemInstruction` have role `system`. `Item.breakpoint` marks the block that
carried the `cache_control` removed from the key (Anthropic's cache rules need it); `Item.run` names an
Anthropic `tool_use` or `tool_result` block (a run of either counts as one lookback position).

`Item.tokens` counts what the model reads, not the JSON around it: the texts as
sent (text, each tool call's name and argument string, a tool result's content,
Ollama's call and result lines, labels and markers), each image at its cost (the
stored count when the file has one, else the provider's rule for its size), and
the framing each provider adds — per message, per call and result, the reply
priming (`priming_tokens`), the definitions item (tools, output schema, Anthropic's
tool-use system prompt) — as `ctxkit/counting/wire.py` says for that provider
(docs/rules.md#r-rpl-4). `prompt_tokens` = the sum over the items + the priming.
It is an estimate: only a provider's own counter is exact. What one item costs is
`ctxkit/translate/costs.py`'s; what replay keeps of them between calls,
`ctxkit/translate/itemmemo.py`'s.

Back-references, for mapping an item to the decision record, are the `Prompt`'s, not the
item's (an item serves every request that sends it, wherever it sits): `Prompt.message(n)`
is the index of the payload message the item belongs to, counting Anthropic's
`system` and Gemini's `systemInstruction` as message 0 when present (None for
the tool definitions); `Prompt.source(n)` is the index, in the assembled list
(`Assembly.messages`), of the working message it was translated from — None
for the tool definitions and for content translation added (the image-drop
notice, a fix-up's inserted text).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from ctxkit import providers
from ctxkit.counting.wire import (
    NAME_TOKENS,
    REPLY_PRIMING_TOKENS,
    WireRules,
    has_preamble,
    openai_call_names,
    openai_call_tokens,
    preamble_tokens,
    rules_for,
)
from ctxkit.output import plural
from ctxkit.translate import reading
from ctxkit.translate.common import Sent
from ctxkit.translate.costs import Images, ItemMeter, item_tokens, texts_tokens
from ctxkit.translate.itemmemo import ItemMemo, Run, context_free
from ctxkit.translate.keys import Key, canonical, compact, item_key
from ctxkit.translate.prompt import Item, Prompt

__all__ = [
    "Item",
    "ItemMemo",
    "Key",
    "Prompt",
    "canonical",
    "compact",
    "frame",
    "known",
    "over_window_tokens",
    "over_window_warning",
    "priming_tokens",
    "prompt_items",
    "prompt_tokens",
    "read_items",
    "request_rules",
    "tool_definitions_tokens",
    "wire_tokens",
]

if TYPE_CHECKING:
    from ctxkit.translate import Payload


def prompt_tokens(items: Sequence[Item], priming: int = REPLY_PRIMING_TOKENS) -> int:
    """A request's prompt tokens: its items plus the reply priming (R-RPL-4; `priming_tokens`)."""
    total: int = sum(map(itemgetter(1), items))  # Item.tokens, summed in C
    return total + priming


def over_window_tokens(wire_tokens: int, max_input_tokens: int) -> int:
    """R-ASM-9: how far the request as sent exceeds the window (0 when it fits)."""
    return max(0, wire_tokens - max_input_tokens)


def over_window_warning(wire_tokens: int, max_input_tokens: int) -> str | None:
    """R-ASM-9: the warning every command that assembles prints when the request does not fit."""
    over = over_window_tokens(wire_tokens, max_input_tokens)
    if not over:
        return None
    return (
        f"the request as sent counts {plural(wire_tokens, 'token', grouped=True)} (wire_tokens), "
        f"{over:,} more than the window of {max_input_tokens:,} (max_input_tokens): "
        "a provider would reject it (R-ASM-9)"
    )


def tool_definitions_tokens(body: dict[str, Any], count: Callable[[str], int]) -> int:
    """R-TR-9: the compact JSON of the body's `tools`, counted; 0 without tools."""
    tools = body.get("tools")
    return count(compact(tools)) if tools else 0


def _rules(payload: Payload, meter: ItemMeter, memo: ItemMemo | None = None) -> WireRules:
    model = payload.model or str(payload.head.get("model") or "")
    if memo is not None:  # the same rules object while the provider, model and tokenizer stay
        return memo.rules(payload.provider, model, meter.tokenizer)
    return rules_for(payload.provider, model, meter.tokenizer)


def request_rules(provider: str, model: str, meter: ItemMeter) -> WireRules:
    """The provider's counting rules for a request translation builds (R-RPL-4)."""
    return rules_for(provider, model, meter.tokenizer)


def known(role: str, part: dict[str, Any], meter: ItemMeter, rules: WireRules) -> tuple[Key, int]:
    """(key, tokens without the framing) of an item without images, as `prompt_items` makes them:
    what a translator tells about the items it emits."""
    return item_key(role, part), rules.scaled(texts_tokens(part, meter, rules))


def frame(rules: WireRules, role: str, parts: list[Any], meter: ItemMeter, names: dict[str, str]) -> int:
    """A payload message's framing tokens (on its first item); `names`: call id → name (OpenAI)."""
    return _frame(rules, role, parts, meter, names)


def _preamble_key(provider: str, body: dict[str, Any]) -> str:
    """The definitions item's identity: the tools (or legacy functions) and an output schema."""
    value = {k: body[k] for k in _PREAMBLE_FIELDS if body.get(k)}
    if "text" in value and not (isinstance(value["text"], dict) and value["text"].get("format")):
        del value["text"]
    if "tool_choice" in value and not ("tools" in value or "functions" in value):
        del value["tool_choice"]
    return canonical(value if set(value) != {"tools"} else {"tools": body["tools"]})


_PREAMBLE_FIELDS = ("tools", "functions", "tool_choice", "response_format", "text")


def prompt_items(payload: Payload, *, meter: ItemMeter, memo: ItemMemo | None = None) -> Prompt:
    """The payload's prompt items in reading order, with tokens and back-references.

    The messages translation emitted (`Payload.messages`) with the keys and counts it already
    knew, or, for a body as sent, the messages read from the body (`read_items`): the items are
    the same either way. `memo`: the keys and counts of earlier calls' items (replay); the items
    are the same without it."""
    if payload.messages is None:
        return read_items(payload, meter=meter, memo=memo)
    return _items(payload, payload.messages, meter, memo, reuse=meter is payload.meter)


def read_items(payload: Payload, *, meter: ItemMeter, memo: ItemMemo | None = None) -> Prompt:
    """The prompt items as read back from the body (`reading.messages`), never from what translation knew."""
    origins = payload.origins
    read = [
        Sent(role, parts, origins[n] if n < len(origins) else ())
        for n, (role, parts) in enumerate(reading.messages(payload.provider, payload.body))
    ]
    return _items(payload, read, meter, memo, reuse=False)


def _items(
    payload: Payload, messages: Sequence[Sent], meter: ItemMeter, memo: ItemMemo | None, *, reuse: bool
) -> Prompt:
    rules = _rules(payload, meter, memo)
    if memo is not None and reuse:  # the last request's definitions item while what it reads stays
        first = messages[0].parts[0] if messages and messages[0].parts else None
        preamble = memo.preamble(payload, first, rules, meter, _preamble)
    else:
        preamble = _preamble(payload, messages, rules, meter)
    out = [] if preamble is None else [preamble]
    lead = len(out)
    maker = _Maker(payload, messages, meter, rules, memo, reuse)
    last, runs, plain = memo.carried(payload, messages, meter, out) if memo is not None and reuse else ((), [], None)
    at, single = 0, True  # the runs hold one item per message (`ItemMemo.carried`)
    shared: list[Run] = [(0, 0, lead)] if runs and lead else []  # the runs of `last`'s items, by item
    pieces: list[tuple[Item, ...]] = []  # the items made and the runs taken, in order (`out`: the ones making)
    size = 0  # how many items `pieces` holds
    bound: list[int] | None = [] if memo is not None and reuse else None  # the messages not context-free
    for i, j, k in [*runs, (len(messages), 0, 0)]:
        for n in range(at, i):  # a message no run brings: its items made (most from the memo)
            sent = messages[n]
            single = single and len(sent.parts) == 1
            plain = plain and sent.origins is None
            maker.make(n, sent, out)
            if bound is not None and not context_free(sent):
                bound.append(n)
        if k:  # a run of the last request's messages: their items, as one slice
            if bound is not None and memo is not None:  # equal messages: as context-free as those
                bound += memo.bound(j, k, i)
            if out:
                pieces.append(tuple(out))
                size, out = size + len(out), []
            _join(shared, size, lead + j, k)
            pieces.append(last[lead + j : lead + j + k])
            size += k
        at = i + k
    if out or not pieces:
        pieces.append(tuple(out))
    items = pieces[0] if len(pieces) == 1 else pieces[0] + pieces[1] if len(pieces) == 2 else _joined(pieces)
    if memo is not None and reuse:
        memo.keep(payload, messages, meter, items, single=single, plain=bool(single and plain), bound=bound)
    made = Prompt(items, lead, messages, payload.prepared.placed, single, None if plain is None else single and plain)
    if runs:
        made.carried = (last, shared)
    return made


class _Maker:
    """The items of the payload messages no run of the last request's brings."""

    def __init__(
        self,
        payload: Payload,
        messages: Sequence[Sent],
        meter: ItemMeter,
        rules: WireRules,
        memo: ItemMemo | None,
        reuse: bool,
    ) -> None:
        self.payload, self.messages, self.meter, self.rules, self.reuse = payload, messages, meter, rules, reuse
        self.lookup = memo.lookup if memo is not None else None
        self.images: Images | None = None  # made when an item is counted afresh
        self.names: dict[str, str] | None = None

    def make(self, n: int, sent: Sent, out: list[Item]) -> None:
        """Append the items of payload message `n` to `out`."""
        role, parts = sent.role, sent.parts
        knew = sent.known if self.reuse else None
        framing = sent.frame if self.reuse else None
        if framing is not None and knew is not None and len(knew) == 1 and knew[0] is not None:
            out.append(_one(knew[0], framing, parts[0], role))  # the common case, quickly
            return
        rules, meter = self.rules, self.meter
        if framing is None:  # on the message's first item
            if self.names is None:
                self.names = _names(self.payload.provider, self.messages)
            framing = _frame(rules, role, parts, meter, self.names)
        origins = sent.at(n)
        for q, part in enumerate(parts):
            found = knew[q] if knew is not None else None
            if found is None and self.lookup is not None:
                looked = self.lookup(role, part, meter, rules)
                if looked is not None:
                    found = looked[0], rules.scaled(looked[1])
            if found is None:
                origin = origins[q] if q < len(origins) else -1
                if self.images is None:
                    self.images = Images(self.payload)
                found = item_key(role, part), item_tokens(part, origin, self.images, meter, rules)
            out.append(_one(found, framing if q == 0 else 0, part, role))


def _joined(pieces: list[tuple[Item, ...]]) -> tuple[Item, ...]:
    """The pieces one after another, each copied in C (a chain would step item by item: about
    twice the time for a window's worth of items)."""
    out = list(pieces[0])
    for piece in pieces[1:]:
        out += piece
    return tuple(out)


def _join(runs: list[Run], i: int, j: int, k: int) -> None:
    """Add the run (i, j, k) to `runs`, as one with the last run when it goes on from it."""
    if runs and runs[-1][0] + runs[-1][2] == i and runs[-1][1] + runs[-1][2] == j:
        runs[-1] = (runs[-1][0], runs[-1][1], runs[-1][2] + k)
    else:
        runs.append((i, j, k))


_RUNS = frozenset({"tool_use", "tool_result"})  # Anthropic blocks whose consecutive runs count once (R-RPL-5)


def _one(known: tuple[Key, int], framing: int, part: Any, role: str) -> Item:
    """The item of `part` whose key and tokens (without the framing) are `known`."""
    mark, run = ("cache_control" in part, part.get("type")) if type(part) is dict else (False, None)
    return Item(known[0], known[1] + framing, role, mark, run if run in _RUNS else None)


def _preamble(payload: Payload, messages: Sequence[Sent], rules: WireRules, meter: ItemMeter) -> Item | None:
    """The definitions item (tools, output schema, Anthropic's tool-use prompt), None without one."""
    head = _preamble_body(payload, messages)
    if not has_preamble(payload.provider, head):
        return None
    return Item(_preamble_key(payload.provider, head), preamble_tokens(rules, head, meter.text), None)


def _preamble_body(payload: Payload, messages: Sequence[Sent]) -> dict[str, Any]:
    """What the preamble reads: the body's fields other than its messages, and (OpenAI, whose
    definitions join an opening system message) the first message."""
    if payload.messages is None:
        return payload.body
    if providers.wire_format(payload.provider) == "openai":
        return {**payload.head, "messages": [messages[0].parts[0]] if messages else []}
    return payload.head


def priming_tokens(payload: Payload, *, meter: ItemMeter, memo: ItemMemo | None = None) -> int:
    """The reply priming the provider adds once per request (Gemini: none; Anthropic: none after
    a final assistant message, which the reply continues). `memo`: the replay's item memo, whose
    counting rules are the same object while provider, model and tokenizer stay (`ItemMemo.rules`)."""
    return _rules(payload, meter, memo).priming_after(_last_role(payload))


def _last_role(payload: Payload) -> str | None:
    if payload.messages is not None:
        return payload.messages[-1].role if payload.messages else None
    roles = [role for role, _ in reading.messages(payload.provider, payload.body)]
    return roles[-1] if roles else None


def wire_tokens(payload: Payload, *, meter: ItemMeter) -> int:
    """`prompt_tokens(prompt_items(...))` without building the keys: the request as sent."""
    body = payload.body
    rules = _rules(payload, meter)
    total = rules.priming_after(_last_role(payload))
    if has_preamble(payload.provider, body):
        total += preamble_tokens(rules, body, meter.text)
    images = Images(payload)
    messages = list(reading.messages(payload.provider, body))
    names = _names(payload.provider, [Sent(role, parts, ()) for role, parts in messages])
    for n, (role, parts) in enumerate(messages):
        origins = payload.origins[n] if n < len(payload.origins) else ()
        total += _frame(rules, role, parts, meter, names)
        for k, part in enumerate(parts):
            total += item_tokens(part, origins[k] if k < len(origins) else -1, images, meter, rules)
    return total


def _frame(rules: WireRules, role: str, parts: list[Any], meter: ItemMeter, names: dict[str, str]) -> int:
    """A message's framing: fixed tokens, its role's and (OpenAI) its `name`'s, its calls'
    addresses and a result's role. Anthropic: a turn's header (none for the system text, the
    role not read as a name)."""
    if rules.anthropic:
        return 0 if role == "system" else rules.scaled(rules.framing)
    tokens = rules.framing + (meter.text(role) if rules.role else 0)
    if rules.openai and parts:
        first = parts[0]
        name = first.get("name") if isinstance(first, dict) and "role" in first else None
        if isinstance(name, str) and name:
            tokens += meter.text(name) + NAME_TOKENS
        tokens += openai_call_tokens(role, first, names, meter.text)
    return rules.scaled(tokens)


def _names(provider: str, messages: Sequence[Sent]) -> dict[str, str]:
    if providers.wire_format(provider) != "openai":
        return {}
    return openai_call_names([(s.role, s.parts) for s in messages])
