"""Log replay: recorded calls as they were sent, cached and priced, against the provider (R-LOG-2…4).

Input: a `traffic.Log` and the options that make sense for a body (`provider`, `tokenizer`,
`model` to re-price). Output: `LogReplay`, one `LogCall` per record in time order (ties: file
order) with its items' tokens, the cache prediction (one cache per provider and model across
the whole log, R-RPL-5's rules), the break and its cause (`logbreaks`), the provider's reported
numbers, the verdict, and the costs. Nothing is reassembled: the items are the body's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal
from typing import Any

from ctxkit import providers
from ctxkit.counting.measure import Counts, Meter
from ctxkit.counting.reported import Reported, reported_usage, reports_cache
from ctxkit.errors import InputError, Problem
from ctxkit.loading.domain import CacheRules
from ctxkit.loading.traffic import Log, TrafficRecord
from ctxkit.replay import cache, logbreaks
from ctxkit.replay.breaks import Break
from ctxkit.replay.cache import Cache, Hit, Limit, Mode, Rules
from ctxkit.replay.cost import Pricer
from ctxkit.replay.verdicts import Verdict, count_error, verdict
from ctxkit.translate.bodies import Body, body_items
from ctxkit.translate.items import ItemMemo, prompt_tokens
from ctxkit.translate.keys import Key
from ctxkit.translate.sent import body_meter

EVER = 10**12  # seconds: the TTL of the cache that remembers every earlier call (for `warm_elsewhere`)


@dataclass(frozen=True, slots=True)
class LogCall:
    index: int
    source_index: int
    session: str | None
    provider: str
    endpoint: str
    model: str
    clock: datetime | None
    prompt_tokens: int
    prefix_tokens: int
    cached_tokens: int
    cache_write_tokens: int
    output_tokens: int | None  # as the provider reported it
    candidate: int | None
    brk: Break
    limit: Limit | None
    reported: Reported | None
    count_error: float | None
    verdict: Verdict | None
    cache_reported: bool  # the usage says what was cached (else no verdict, no reported cache)
    cost: Decimal | None
    cost_without_cache: Decimal | None
    reported_cost: Decimal | None
    unread_write_tokens: int = 0  # R-RPL-7: written, never read by a later call while alive


@dataclass(frozen=True, slots=True)
class LogReplay:
    source: str
    format: str
    calls: tuple[LogCall, ...]
    warnings: tuple[str, ...]
    skipped: dict[str, int] = field(default_factory=dict)
    bad: int = 0


@dataclass(slots=True)
class _Group:
    """One provider and model: its cache, and what later calls compare with."""

    rules: Rules
    cache: Cache
    ever: Cache  # every earlier call, no TTL and no minimum: what any call could have warmed
    retention: int = 0  # seconds the previous call's cache entries live (its own TTL request)
    indices: list[int] = field(default_factory=list)  # local → global call index
    views: dict[int, logbreaks.KeyedBody] = field(default_factory=dict)  # local index → view, within the TTL


OnLogCall = Callable[[int, TrafficRecord, Body], None]


def replay_log(
    log: Log,
    *,
    provider: str | None = None,
    tokenizer: str | None = None,
    model: str | None = None,
    skip_bad: bool = False,
    on_call: OnLogCall | None = None,
) -> LogReplay:
    """Every call of the log (see the module docstring); `on_call(index, record, body)` sees each."""
    return _Run(log, provider, tokenizer, model, skip_bad, on_call).run()


class _Run:
    def __init__(
        self,
        log: Log,
        provider: str | None,
        tokenizer: str | None,
        model: str | None,
        skip_bad: bool,
        on_call: OnLogCall | None,
    ) -> None:
        self.log, self.provider, self.tokenizer, self.model = log, provider, tokenizer, model
        self.skip_bad, self.on_call = skip_bad, on_call
        self.groups: dict[tuple[str, str], _Group] = {}
        self.meters: dict[tuple[str, str], Meter] = {}
        self.counts = Counts()  # each distinct text counted once for all the log's calls (R-RPL-9)
        self.pricers: dict[tuple[str, str], Pricer] = {}
        self.memos: dict[str, ItemMemo] = {}
        self.last_of_session: dict[str | None, tuple[str, str]] = {}
        self.placed: dict[int, tuple[_Group, int]] = {}  # call index → its group and index there
        self.bad = log.bad

    def run(self) -> LogReplay:
        calls: list[LogCall] = []
        for record in _in_time_order(self.log.records):
            call = self._call(len(calls), record)
            if call is not None:
                calls.append(call)
        calls = [  # R-RPL-7: a write no later call of its group read while it was alive
            replace(c, unread_write_tokens=c.cache_write_tokens)
            if c.cache_write_tokens and self.placed[c.index][0].cache.unread_write(self.placed[c.index][1])
            else c
            for c in calls
        ]
        warnings = []
        unknown = sorted({f"{p.provider} {p.model}" for p in self.pricers.values() if p.unknown})
        if unknown:
            warnings.append(
                f"no price known for {len(unknown)} model(s) ({', '.join(unknown[:5])}"
                f"{', …' if len(unknown) > 5 else ''}): their costs are null (pass --model to price them as one "
                "model, R-RPL-7)"
            )
        if self.log.skipped:
            listed = ", ".join(f"{n} × {name}" for name, n in self.log.skipped.items())
            warnings.append(f"skipped {sum(self.log.skipped.values())} record(s) that are not model calls: {listed}")
        if self.bad:
            warnings.append(f"skipped {self.bad} record(s) that could not be read (--skip-bad)")
        return LogReplay(self.log.source, self.log.format, tuple(calls), tuple(warnings), self.log.skipped, self.bad)

    def _call(self, index: int, record: TrafficRecord) -> LogCall | None:
        """One record as a call: its body's items, the cache's answer and the break in its provider
        and model's group, the provider's own numbers and the verdict, the costs."""
        provider = self.provider or record.provider
        body = self._body(provider, record)
        if body is None:
            return None
        prompt = prompt_tokens(body.items, body.priming)
        group = self._group(provider, record.model)
        keys = tuple(item.key for item in body.items)
        hit, ever = self._cached(group, record, body, keys)
        view = logbreaks.KeyedBody(body, keys)
        brk = self._break(group, record, provider, view, hit)
        self._place(group, index, record, provider, view)
        rep = self._reported(record, provider)
        cache_known = reports_cache(record.usage, rep)
        output = output_tokens(record.usage)
        cost, without, reported_cost = self._costs(provider, record, prompt, hit, output, rep)
        if self.on_call is not None:
            self.on_call(index, record, body)
        return LogCall(
            index=index,
            source_index=record.source_index,
            session=record.session,
            provider=provider,
            endpoint=record.endpoint,
            model=record.model,
            clock=record.at,
            prompt_tokens=prompt,
            prefix_tokens=hit.prefix_tokens,
            cached_tokens=hit.cached_tokens,
            cache_write_tokens=hit.write_tokens,
            output_tokens=output,
            candidate=group.indices[hit.candidate] if hit.candidate is not None else None,
            brk=brk,
            limit=hit.limit,
            reported=rep,
            count_error=count_error(prompt, rep),
            verdict=verdict(group.rules, prompt, hit, ever.prefix_tokens, rep) if cache_known else None,
            cache_reported=cache_known,
            cost=cost,
            cost_without_cache=without,
            reported_cost=reported_cost,
        )

    def _body(self, provider: str, record: TrafficRecord) -> Body | None:
        """The record's body as prompt items; None when it cannot be read and `--skip-bad` counts it."""
        meter = self._meter(provider, record.model)
        try:
            return body_items(provider, record.endpoint, record.body, meter=meter, memo=self._memo(meter))
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            if self.skip_bad:
                self.bad += 1
                return None
            what = f"not a {provider} {record.endpoint} request body ({type(exc).__name__}: {exc})"
            raise InputError(Problem(record.where, "", f"{what} (--skip-bad skips such records)")) from None

    def _cached(self, group: _Group, record: TrafficRecord, body: Body, keys: tuple[Key, ...]) -> tuple[Hit, Hit]:
        """The call added to its group's cache, and to the cache of every earlier call (no TTL)."""
        # What the previous call stored lives as long as that call asked (R-LOG-2): its retention.
        group.cache.rules = replace(group.rules, ttl_seconds=group.retention)
        hit = group.cache.add(body.items, record.at, keys)
        group.retention = retention(record.body, group.rules.ttl_seconds)
        return hit, group.ever.add(body.items, record.at, keys)

    def _break(self, group: _Group, record: TrafficRecord, provider: str, view: logbreaks.KeyedBody, hit: Hit) -> Break:
        """The break against the call's candidate; the first call of its group has none (`model` when
        its session's previous call used another provider or model)."""
        if not group.indices:
            before = self.last_of_session.get(record.session)
            return logbreaks.first(before is not None and before != (provider, record.model))
        other = group.views[hit.candidate if hit.candidate is not None else len(group.indices) - 1]  # within the TTL
        return logbreaks.find(view, other, hit.common, expired=hit.expired)

    def _place(
        self, group: _Group, index: int, record: TrafficRecord, provider: str, view: logbreaks.KeyedBody
    ) -> None:
        """The call kept in its group for the calls after it; views beyond the TTL let go."""
        local = len(group.indices)
        group.indices.append(index)
        self.placed[index] = (group, local)
        group.views[local] = view
        for old in [k for k in group.views if k < group.cache.window_start and k < local]:
            del group.views[old]  # no later call compares with it
        self.last_of_session[record.session] = (provider, record.model)

    def _costs(
        self, provider: str, record: TrafficRecord, prompt: int, hit: Hit, output: int | None, rep: Reported | None
    ) -> tuple[Decimal | None, Decimal | None, Decimal | None]:
        """The call's cost as predicted, with no cache at all, and by the provider's own numbers."""
        pricer = self._pricer(provider, self.model or record.model)
        at = record.at
        predicted = pricer.cost(prompt, hit.cached_tokens, hit.write_tokens, output, at)
        without = pricer.cost(prompt, 0, 0, output, at)
        if rep is None:
            return predicted, without, None
        return predicted, without, pricer.cost(rep.input_tokens, rep.cached_tokens, rep.cache_write_tokens, output, at)

    def _reported(self, record: TrafficRecord, provider: str) -> Reported | None:
        if record.usage is None:
            return None
        try:
            return reported_usage(record.usage, providers.wire_format(provider))
        except InputError as exc:
            raise InputError(Problem(record.where, "", str(exc))) from None

    def _meter(self, provider: str, model: str) -> Meter:
        """The model's meter (`sent.body_meter`), or one with `--tokenizer`; one per model."""
        meter = self.meters.get((provider, model))
        if meter is None:
            meter = body_meter(provider, model, self.counts)
            if self.tokenizer is not None and self.tokenizer != meter.tokenizer:
                meter = Meter(
                    self.tokenizer, supports_images=meter.supports_images, templates=meter.templates, counts=self.counts
                )
            self.meters[(provider, model)] = meter
        return meter

    def _memo(self, meter: Meter) -> ItemMemo:
        return self.memos.setdefault(f"{meter.tokenizer}/{meter.supports_images}", ItemMemo())

    def _group(self, provider: str, model: str) -> _Group:
        group = self.groups.get((provider, model))
        if group is None:
            rules = cache.rules(provider, model, CacheRules())
            ever = Rules(Mode.IMPLICIT, 0, 1, None, EVER)
            group = self.groups[(provider, model)] = _Group(rules, Cache(rules), Cache(ever), rules.ttl_seconds)
        return group

    def _pricer(self, provider: str, model: str) -> Pricer:
        pricer = self.pricers.get((provider, model))
        if pricer is None:
            pricer = self.pricers[(provider, model)] = Pricer(provider, model, None)
        return pricer


RETENTION = {"5m": 300, "1h": 3600, "in-memory": 300, "in_memory": 300, "24h": 86400}


def retention(body: dict[str, Any], default: int) -> int:
    """How long a request asked its cache entries to live: the longest `ttl` of Anthropic's
    `cache_control` (block or top level), OpenAI's `prompt_cache_retention`; else the table's."""
    asked = [body.get("prompt_cache_retention")]
    controls = [body.get("cache_control")]
    system = body.get("system")
    blocks = list(system) if isinstance(system, list) else []
    messages, tools = body.get("messages"), body.get("tools")
    for m in messages if isinstance(messages, list) else ():
        content = m.get("content") if isinstance(m, dict) else None
        blocks += content if isinstance(content, list) else []
    controls += [
        b.get("cache_control") for b in blocks + (tools if isinstance(tools, list) else []) if isinstance(b, dict)
    ]
    asked += [c.get("ttl") for c in controls if isinstance(c, dict)]
    seconds = [RETENTION[a] for a in asked if isinstance(a, str) and a in RETENTION]
    return max(seconds, default=default)


OUTPUT_FIELDS = (
    "completion_tokens",
    "output_tokens",
    "candidatesTokenCount",
    "eval_count",
    "gen_ai.usage.output_tokens",
)


def output_tokens(usage: dict[str, Any] | None) -> int | None:
    """The output tokens a usage object reports (Gemini: candidates and thoughts), or None."""
    if not usage:
        return None
    found = [usage[k] for k in (*OUTPUT_FIELDS, "thoughtsTokenCount") if type(usage.get(k)) is int and usage[k] >= 0]
    return sum(found) if found else None


def _in_time_order(records: tuple[TrafficRecord, ...]) -> list[TrafficRecord]:
    """By time, ties in file order; an undated record keeps its place after the last dated one before it."""
    keyed = []
    last: datetime | None = None
    for r in records:
        if r.at is not None:
            last = r.at
        keyed.append((last, r.source_index, r))
    floor = min((k[0] for k in keyed if k[0] is not None), default=None)
    return [r for _, _, r in sorted(keyed, key=lambda k: (k[0] or floor or datetime.min, k[1]))]
