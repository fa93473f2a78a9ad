"""The replay loop: every call assembled by the ordinary pipeline, then compared and priced.

Input: a loaded fixture, options, `compress_as`. Output: `Replay`, a frozen value with one `CallRow`
per call (the HTML report and the table/JSON renderers read it; nothing here prints). Token counts
of item texts are shared between calls; earlier prompts live in the cache's trie.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import is_
from typing import TYPE_CHECKING

from ctxkit import collector
from ctxkit.counting.measure import call_args_text, stored_texts
from ctxkit.errors import RuleError
from ctxkit.history.tree import Ancestry
from ctxkit.loading.config import Effective, Options, resolve
from ctxkit.loading.domain import Fixture, InFlightMessage, Role, StoredMessage
from ctxkit.pipeline import RunWarning, WarningKind, run, settings_warnings
from ctxkit.replay import breaks, cache
from ctxkit.replay.calls import Output, Planner, ReplayCall
from ctxkit.replay.cost import Pricer
from ctxkit.replay.prefix import Numbers
from ctxkit.replay.rows import CallRow as CallRow  # the rows' type, read from here by reports and tests
from ctxkit.replay.rows import CallRows
from ctxkit.replay.state import State
from ctxkit.replay.warned import Warned
from ctxkit.translate.items import over_window_warning, priming_tokens, prompt_items

if TYPE_CHECKING:
    from ctxkit.counting.measure import Meter
    from ctxkit.pipeline import Result


@dataclass(frozen=True, slots=True)
class Replay:
    source: str
    name: str | None
    provider: str
    model: str
    max_input_tokens: int
    rules: cache.Rules
    calls: CallRows  # a sequence of `CallRow`s, held compact (`replay.rows`)
    warnings: tuple[str, ...]


OnCall = Callable[[int, ReplayCall, "Result"], None]


def replay(
    fixture: Fixture,
    options: Options | None = None,
    *,
    compress_as: int | None = None,
    on_call: OnCall | None = None,
) -> Replay:
    """Every call of the conversation; `on_call(index, call, result)` sees each assembled call."""
    # The collector stays paused for the whole replay, not re-enabled between calls: each
    # re-enabling let it rescan the whole fixture, once per call (a cost that grew with
    # calls × history). Replay builds no reference cycles (see `collector`).
    with collector.paused():
        return _replay(fixture, options, compress_as=compress_as, on_call=on_call)


def _replay(fixture: Fixture, options: Options | None, *, compress_as: int | None, on_call: OnCall | None) -> Replay:
    eff = resolve(fixture, options)
    state = State()  # everything assembly carries from one call to the next (R-RPL-9)
    planner = Planner(fixture, options, compress_as=compress_as, select=state.select, counts=state.counts)
    state.counts.prefill(eff.tokenizer, stored_texts(_asked(planner.path)))  # in one pass: see `prefill`
    loop = _Loop(fixture, eff, state, Warned(planner.warnings()), planner.ids)
    rows = CallRows()
    for index, call in enumerate(planner.calls()):
        result = loop.assembled(index, call)
        loop.row(index, call, result, rows)
        loop.forget(index)
        if on_call is not None:
            on_call(index, call, result)
        del result  # gone before the next call: its record need not be kept apart from the window (`Arrays.span`)
    return loop.replay(rows)


class _Loop:
    """What the replay loop keeps besides the assembly's state: the prompt cache (R-RPL-5), the
    earlier calls a later one may break against (R-RPL-6), prices and warnings."""

    def __init__(
        self, fixture: Fixture, eff: Effective, state: State, warned: Warned, ids: dict[str, int] | None = None
    ) -> None:
        """`ids`: `tree.indexes(fixture)`, the planner's."""
        self.fixture, self.eff, self.state, self.warned = fixture, eff, state, warned
        self.rules = cache.rules(str(eff.provider), eff.model, fixture.settings.cache)
        self.cache = cache.Cache(self.rules)
        self.pricer = Pricer(str(eff.provider), eff.model, fixture.settings.prices, one_hour=self.rules.ttl == "1h")
        self.ancestry = Ancestry(fixture, ids)
        self.views: dict[int, breaks.Candidate] = {}  # what later calls may still break against
        self.sides = breaks.Sides()
        self.numbers = Numbers()  # each distinct item key's number: the trie and the views hold numbers
        self._settings: tuple[tuple[object, ...], list[RunWarning]] | None = None  # see `_settings_warnings`

    def assembled(self, index: int, call: ReplayCall) -> Result:
        try:
            return run(call.fixture, call.options, state=self.state)
        except RuleError as exc:
            raise RuleError(f"call {index} ({call.label}): {exc}") from None

    def row(self, index: int, call: ReplayCall, result: Result, rows: CallRows) -> None:
        """The call's prompt, its cache hit and break, its cost: its row added to `rows` (the
        call's index is its position there); its warnings noted."""
        meter = result.assembly.meter
        request = prompt_items(result.payload, meter=meter, memo=self.state.items)
        items = request.items  # the tuple: the cache reads it in C
        columns = self.numbers.columns(items, request.carried)  # keys as numbers (4 bytes an item), tokens, breakpoints
        # `prompt_tokens` (R-RPL-4): the priming by the item memo's rules, kept while provider and model stay
        prompt = columns.total + priming_tokens(result.payload, meter=meter, memo=self.state.items)
        result.counted(prompt)  # R-RPL-4: the same sum as `wire_tokens`, not counted twice
        self._warnings(index, call, result, prompt)
        keys = columns.keys
        hit = self.cache.add(items, call.clock, keys, columns)
        view, dropped = breaks.view(result, request, keys, call.user.id, columns)
        against = hit.candidate if not hit.expired else index - 1
        other = self.views.get(against) if against is not None and against >= 0 else None
        common = 0 if hit.expired else hit.common  # expired: nothing of the previous call is reusable
        brk = breaks.find(view, dropped, other, common, expired=hit.expired, ancestry=self.ancestry)
        self.views[index] = view  # kept whole for the next call (an expired one reads it from item 0)
        output = _output_tokens(call.output, meter)
        cached, written = hit.cached_tokens, hit.write_tokens
        rows.add(  # CallRow's fields in order but the index, the label and the costs (made when read)
            call.user.id,
            call.step,
            call.on_branch,
            call.clock,
            (prompt, hit.prefix_tokens, cached, written),
            output,
            self.pricer.pricing(prompt, cached, written, output, call.clock),
            hit.candidate,
            brk,
            hit.limit,
            (bool(result.assembly.dropped), call.compression_due, call.synthetic),
        )

    def _warnings(self, index: int, call: ReplayCall, result: Result, wire_tokens: int) -> None:
        """The call's warnings noted (R-ASM-9's with how far it is over: see `Warned`); listed only
        when there is one (most calls have none). `wire_tokens`: `result.wire_tokens()`, given."""
        eff = result.assembly.eff
        settings = self._settings_warnings(eff)
        over = wire_tokens - eff.max_input_tokens  # R-ASM-9: `result.over_window_tokens()` when positive
        if settings or result.assembly.record.warnings or result.payload.prepared.warnings:
            for w in result.typed_warnings(settings):
                self.warned.add(index, call.label, w, over if w.kind is WarningKind.OVER_WINDOW else 0)
        elif over > 0:  # R-ASM-9's alone (at a small window, most calls): `typed_warnings`' one warning
            text = over_window_warning(wire_tokens, eff.max_input_tokens) or ""
            self.warned.add(index, call.label, RunWarning(WarningKind.OVER_WINDOW, text), over)

    def _settings_warnings(self, eff: Effective) -> list[RunWarning]:
        """`pipeline.settings_warnings(eff)`, again only when what they are made from changes (the
        calls of a replay share their settings' objects)."""
        basis = (eff.provider, eff.model, eff.templates, eff.fixture.prompts)
        last = self._settings
        if last is None or not all(map(is_, basis, last[0])):
            last = self._settings = (basis, settings_warnings(eff))
        return last[1]

    def forget(self, index: int) -> None:
        """After call `index`: of the earlier calls, keep what a later call can still break against."""
        views = self.views
        for earlier, depth in self.cache.overtaken.items():  # only their ends can still be a break
            _trim(views, earlier, depth, self.sides)
        if isinstance(views.get(index - 1), breaks.MappedCall):
            _trim(views, index - 1, 0, self.sides)
        oldest = min(self.cache.keep_from, index)
        while (first := next(iter(views))) < oldest:  # in call order: drop from the front
            del views[first]  # no later call can compare with it: beyond the TTL

    def replay(self, rows: CallRows) -> Replay:
        if (note := self.pricer.warning()) is not None:
            self.warned.note(note)
        unread = self.cache.unread_write  # a write pays back only if a later call reads it: known once every call is in
        for index, row in enumerate(rows.writes()):
            if row and unread(index):
                rows.unread(index, row)
        eff = self.eff
        return Replay(
            self.fixture.source,
            self.fixture.name,
            str(eff.provider),
            eff.model,
            eff.max_input_tokens,
            self.rules,
            rows,
            self.warned.texts(),
        )


def _trim(views: dict[int, breaks.Candidate], index: int, start: int, sides: breaks.Sides) -> None:
    kept = views.get(index)
    if kept is None:
        return
    trimmed = kept.trimmed(start, sides)
    if trimmed is None:
        del views[index]
    else:
        views[index] = trimmed


def _asked(path: Sequence[StoredMessage]) -> Sequence[StoredMessage]:
    """The path up to its last user message: what the replay's calls send of it (the stored answer
    after the last question is not sent, R-TURN-1)."""
    last = next((i for i in range(len(path) - 1, -1, -1) if path[i].role is Role.USER), -1)
    return path[: last + 1]


def count_calls(fixture: Fixture, options: Options | None = None) -> int:
    return Planner(fixture, options).count()


def _output_tokens(output: Output, meter: Meter) -> int | None:
    """R-RPL-7: what the stored conversation shows the model produced after this call."""
    if output is None:
        return None
    if isinstance(output, tuple):
        return sum(c.tokens if c.tokens is not None else meter.text(call_args_text(c)) for c in output)
    if isinstance(output, StoredMessage):
        return output.tokens if output.tokens is not None else meter.text(output.text)
    assert isinstance(output, InFlightMessage)
    text = output.tokens if output.tokens is not None else meter.text(output.text)
    return text + sum(c.tokens if c.tokens is not None else meter.text(call_args_text(c)) for c in output.tool_calls)
