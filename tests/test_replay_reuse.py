"""R-RPL-9: what the replay's state reuses from one call to the next gives what the step gives afresh.

Each reused step of assembly (`assemble.Incremental`) is checked call by call against the plain
step, on replays whose windows slide (truncation), shrink and grow (tool turns, a new question),
switch branch (edited questions) and change date (a conversation across midnight); the
fixed parts also for settings the replay never gives (no `now`, another window).
"""

from __future__ import annotations

import dataclasses
import json
import random
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any
from unittest.mock import Mock

import pytest

from ctxkit import pipeline
from ctxkit.assembly import assemble, truncation
from ctxkit.assembly.fates import Fated
from ctxkit.errors import CtxkitError
from ctxkit.history import convert
from ctxkit.history.working import Call, Copier, Fate, Kind, Record, Segment, Working
from ctxkit.loading.config import Options, resolve
from ctxkit.loading.domain import TurnOverrides
from ctxkit.loading.read import load_fixture
from ctxkit.replay import driver, state
from ctxkit.replay.calls import Planner
from ctxkit.replay.warned import Warned
from ctxkit.translate import translate
from ctxkit.translate.common import TranslationInput

from .conftest import FIXTURES
from .helpers import bench_history

REPLAYS = [
    FIXTURES / "replay" / name
    for name in ("system_date.yaml", "branch.yaml", "tools.yaml", "long_session.yaml", "summary.yaml")
] + [FIXTURES / "tool_loop_in_flight.yaml", FIXTURES / "replaced_system_prompt.yaml"]


def _replay(path: Path, options: Options, check: Any) -> int:
    calls = 0

    def each(index: int, call: Any, result: Any) -> None:
        nonlocal calls
        check(index, result.assembly)
        calls += 1

    try:
        driver.replay(load_fixture(str(path)), options, on_call=each)
    except CtxkitError:
        pytest.skip("fails by rule")
    return calls


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("reuse") / "h.json"
    path.write_text(json.dumps(bench_history(150)), encoding="utf-8")
    return path


def _fixed_equal(a: Any) -> object:
    """The state's fixed parts for this call and for variants of it equal `fixed_parts` afresh,
    warnings included; returns the state's value for the call itself."""
    state = a.converted.state
    got = None
    variants = (
        a.eff,
        replace(a.eff, now=None),
        replace(a.eff, max_input_tokens=a.eff.max_input_tokens + 1),
        replace(a.eff, max_input_tokens=a.eff.max_input_tokens * 2),  # the same date and turn, another budget
    )
    for eff in variants:
        mine, theirs = Record(), Record()
        fixed = state.fixed_parts(eff, a.meter, mine)
        assert fixed == assemble.fixed_parts(eff, a.meter, theirs)
        assert mine.warnings == theirs.warnings
        got = fixed if got is None else got
    assert state.fixed_parts(a.eff, a.meter, Record()) is got  # the same call's parts are reused
    return got


@pytest.mark.parametrize("path", REPLAYS, ids=lambda p: p.name)
def test_fixed_parts_reused_equal_afresh(path: Path) -> None:
    assert _replay(path, Options(max_input_tokens=2_000), lambda i, a: _fixed_equal(a)) >= 1


def test_fixed_parts_reused_across_the_date_change() -> None:
    """Across midnight the system prompt shows another date: the parts are made again."""
    systems: list[str] = []

    def check(index: int, a: Any) -> None:
        fixed = _fixed_equal(a)
        systems.append(fixed.system.text)  # type: ignore[attr-defined]

    _replay(FIXTURES / "replay" / "system_date.yaml", Options(), check)
    assert len(set(systems)) == 2


def test_fixed_parts_reused_on_a_sliding_window(generated: Path) -> None:
    made: set[int] = set()

    def check(index: int, a: Any) -> None:
        made.add(id(_fixed_equal(a)))

    calls = _replay(generated, Options(max_input_tokens=3_000), check)
    assert calls > 50 and len(made) < calls // 4  # reused, yet right for every call


def _message(rng: random.Random, n: int, odd: bool) -> Working:
    """A random working message: a question, an answer calling tools, a tool result (whose call
    may be anywhere, or nowhere), rarely a result that calls tools itself."""
    pick = rng.random()
    calls = tuple(Call(f"c{rng.randrange(9)}", "t", {}, 1) for _ in range(rng.randrange(1, 3)))
    if pick < 0.2:
        return Working(f"m:{n}:0", Kind.USER, "q", 1)
    if pick < 0.45:
        return Working(f"m:{n}:0", Kind.ASSISTANT, "a", 1, tool_calls=calls)
    answers = f"c{rng.randrange(9)}" if rng.random() < 0.95 else None
    return Working(f"m:{n}:0", Kind.TOOL, "r", 1, tool_call_id=answers, tool_calls=calls if odd else ())


def _walk_equals_afresh(shared: state.State, kept: list[Working], in_turn: list[Working]) -> None:
    answered = shared.drop_orphans(kept, in_turn)
    assert answered == truncation.drop_orphans(kept, in_turn)
    copies = shared.cacheable(answered.kept)
    afresh = {w.key: truncation.kept_fate(w) for w in copies}  # in order: the record's order
    assert list(shared.kept_fates(copies).items()) == list(afresh.items())


@pytest.mark.parametrize("seed", range(40))
def test_r_asm_8_orphans_by_position_equal_the_walk(seed: int) -> None:
    """R-ASM-8 from the positions the state keeps equals the walk, for runs of the window starting
    anywhere (results whose call falls before the run, just before or far before it, or nowhere),
    with other messages before and after the run and in-turn results answering calls of the run;
    while the window grows and is cut back (an edit) and whether or not a result calls tools."""
    rng = random.Random(seed)
    shared = state.State()
    made = 0
    for _ in range(6):
        if shared.works and rng.random() < 0.4:  # an edit: the window is cut back
            shared._cut(rng.randrange(len(shared.works)))
        for _ in range(rng.randrange(1, 80)):
            shared._append(_message(rng, made, odd=seed % 10 == 9 and rng.random() < 0.05))
            made += 1
        works = shared.works
        other = [_message(rng, 10_000 + k, odd=False) for k in range(3)]
        for _ in range(25):
            a = rng.randrange(len(works) + 1)
            b = rng.randrange(a, len(works) + 1)
            before, after = other[: rng.randrange(3)], other[rng.randrange(3) :]
            if works and rng.random() < 0.3:  # a message with a window message's key, not it
                before.append(rng.choice(works).with_(notes=("edited",)))
            in_turn = [*after[:1], *rng.sample(works, min(2, len(works)))]
            _walk_equals_afresh(shared, [*before, *works[a:b], *after], in_turn)
            _walk_equals_afresh(shared, works[a:b], [])
    assert shared.answers.far  # results far from their calls were looked at


@pytest.mark.parametrize("path", REPLAYS, ids=lambda p: p.name)
def test_r_asm_8_orphans_and_kept_fates_of_every_call_equal_afresh(path: Path) -> None:
    """The same on replays: each call's kept history, runs of it starting anywhere, with its
    in-turn messages."""

    def check(index: int, a: Any) -> None:
        shared = a.converted.state
        run = list(a.converted.history)
        for start in range(0, len(run), 3):
            _walk_equals_afresh(shared, run[start:], list(a.converted.in_turn))

    _replay(path, Options(max_input_tokens=2_000), check)


def test_r_asm_8_orphans_on_a_sliding_window(generated: Path) -> None:
    def check(index: int, a: Any) -> None:
        shared = a.converted.state
        run = list(a.converted.history)
        for start in range(0, min(len(run), 40)):
            _walk_equals_afresh(shared, run[start:], list(a.converted.in_turn))

    assert _replay(generated, Options(max_input_tokens=3_000), check) > 50


def test_r_cmp_1_reserved_tokens_per_date_equal_afresh() -> None:
    """Replay's R-CMP-1 check reserves the worst-case system prompt once per date (`Summaries`):
    what it keeps for each call's date equals `reserved_tokens` afresh, across midnight."""
    from ctxkit.replay.calls import Planner

    planner = Planner(load_fixture(str(FIXTURES / "replay" / "system_date.yaml")))
    dates = set()
    for call in planner.calls():
        if call.clock is None:
            continue
        eff, reserved = planner.summaries._settings_of(call.clock, call.fixture, call.options)
        meter = planner.summaries._meter_of(eff)
        assert reserved == assemble.reserved_tokens(eff, meter, assemble.today(eff))
        assert assemble.today(eff) == assemble.today(resolve(call.fixture, call.options))
        dates.add(assemble.today(eff))
    assert len(dates) == 2


def test_r_cmp_1_due_from_the_threshold_kept_per_settings_equals_trigger_afresh() -> None:
    """R-CMP-1 (R-RPL-9): replay works out the trigger's reserve and threshold once per settings
    (`Summaries._decide`) and compares each question's history with them: for histories at and
    around the threshold, under each date's settings and under settings of a smaller window asked
    in between (the kept threshold must not serve them), the decision is `trigger`'s afresh."""
    from ctxkit.compression.compress import trigger

    planner = Planner(load_fixture(str(FIXTURES / "replay" / "system_date.yaml")))
    summaries, asked = planner.summaries, 0
    for call in planner.calls():
        eff, reserved = summaries._settings_of(call.clock, call.fixture, call.options)
        meter = summaries._meter_of(eff)
        smaller = replace(eff, max_input_tokens=eff.max_input_tokens // 2)
        for settings in (eff, smaller, eff):
            threshold = trigger(settings, meter, 0, reserved).threshold
            for history in (0, threshold - 1, threshold, threshold + 1, 10 * threshold + 10):
                expected = trigger(settings, meter, history, reserved).due
                assert summaries._decide(settings, meter, reserved, history) is expected
                asked += expected
    assert asked  # some histories were due


def _settings_variants(fixture: Any, options: Options) -> list[tuple[Any, Options]]:
    """The call as given, then with each thing its settings are resolved from changed."""
    others = (("datetime_line", "It is {datetime}."),)
    return [
        (fixture, options),
        (replace(fixture, now=None), options),
        (replace(fixture, templates=fixture.templates + others), options),
        (replace(fixture, tools=()), options),
        (replace(fixture, tokenizer="o200k_base"), options),
        (replace(fixture, model=replace(fixture.model, max_input_tokens=1_234)), options),
        (fixture, replace(options, max_input_tokens=3_000)),
        (fixture, replace(options, leaf=fixture.leaf)),
        (fixture, options),
    ]


@pytest.mark.parametrize("path", REPLAYS, ids=lambda p: p.name)
def test_settings_resolved_once_equal_resolving_afresh(path: Path) -> None:
    """`State.effective` gives each call `resolve`'s settings, however the call and the settings
    it is resolved from change between calls."""
    fixture = load_fixture(str(path))
    mine = state.State()
    seen = 0
    for call in Planner(fixture, Options(max_input_tokens=2_000)).calls():
        for f, o in _settings_variants(call.fixture, call.options):
            got, fresh = mine.effective(f, o), resolve(f, o)
            # field by field with the type: `==` takes 1, 1.0 and True as equal
            assert [(n, type(v), v) for n, v in _fields(got)] == [(n, type(v), v) for n, v in _fields(fresh)], (
                call.label,
                f.templates,
                o,
            )
            seen += 1
    assert seen


def _fields(obj: Any) -> list[tuple[str, Any]]:
    return [(f.name, getattr(obj, f.name)) for f in fields(obj)]


def test_copies_by_copier_equal_dataclasses_replace() -> None:
    """`Working.with_` and the planner's fixture and call copies (`Copier`) give what
    `dataclasses.replace` gives, field by field, and refuse a field the class does not have."""
    fixture = load_fixture(str(FIXTURES / "replay" / "tools.yaml"))
    call = next(iter(Planner(fixture).calls()))
    w = Working("k", Kind.TOOL, "text", None, tool_call_id="c1", notes=("n",), placeholder=True)
    cases: list[tuple[Any, dict[str, Any]]] = [
        (w, {"cacheable": True}),
        (w, {"images": (), "notes": ("other",), "tokens": 3}),
        (w, {}),
        (fixture, {"leaf": "x", "in_flight": (), "turn": TurnOverrides(cycle=2), "now": None}),
        (call, {"compression_due": True}),
    ]
    for obj, changes in cases:
        copy = Copier(type(obj))(obj, **changes)
        assert copy == replace(obj, **changes) and copy is not obj
        assert all(getattr(copy, name) is value for name, value in changes.items())
        changed = Copier(type(obj)).changing(*changes)(obj, *changes.values())  # the same, positionally
        assert repr(changed) == repr(replace(obj, **changes)) and changed is not obj
        assert all(getattr(changed, f.name) is getattr(copy, f.name) for f in fields(obj))
        assert type(changed) is type(obj) and changed == replace(obj, **changes)  # a frozen one's too (its twin)
        values = [getattr(changed, f.name) for f in fields(obj)]
        made = Copier(type(obj)).new(*values)
        assert type(made) is type(obj) and repr(made) == repr(type(obj)(*values)) and made == type(obj)(*values)
    frozen = fixture.settings  # a frozen record: filled through a twin, then given its class
    assert Copier(type(frozen))._twin not in (None, type(frozen))
    with pytest.raises(dataclasses.FrozenInstanceError):
        Copier(type(frozen)).changing()(frozen).cache = None  # type: ignore[misc,assignment]
    assert hash(Copier(type(frozen)).changing()(frozen)) == hash(frozen)

    @dataclass(frozen=True)
    class Unslotted:  # another layout than a twin's: filled through `object.__setattr__`
        x: int
        y: int

    assert Copier(Unslotted)._twin is None
    assert Copier(Unslotted).changing("y")(Unslotted(1, 2), 3) == Unslotted(1, 3) == Copier(Unslotted).new(1, 3)
    with pytest.raises(TypeError, match="change 1 field"):
        Copier(Working).changing("cacheable")(w)
    with pytest.raises(TypeError, match="no field 'colour'"):
        Copier(Working).changing("colour")

    @dataclass(frozen=True, slots=True)
    class Pair:
        x: int
        y: int

    assert Copier(Pair).changing("y")(Pair(1, 2), 3) == Pair(1, 3)  # one field kept
    assert Copier(Pair).changing("y", "x")(Pair(1, 2), 3, 4) == Pair(4, 3)  # none kept, in the order named
    assert w.with_(cacheable=True) == replace(w, cacheable=True)
    with pytest.raises(TypeError, match="no field 'colour'"):
        w.with_(colour=1)

    @dataclass(frozen=True)
    class Checked:
        x: int

        def __post_init__(self) -> None:  # a copy made without it would skip the check
            pass

    with pytest.raises(TypeError, match="needs dataclasses.replace"):
        Copier(Checked)


def test_rows_made_field_by_field_equal_the_class_made_ones() -> None:
    """The driver makes each call's row from its fields in order (`Copier.new`): every row of a
    replay equals the row `CallRow(...)` makes from the same values, field by field and in JSON."""
    done = driver.replay(load_fixture(str(FIXTURES / "replay" / "tools.yaml")))
    names = [f.name for f in fields(driver.CallRow)]
    for row in done.calls:
        values = [getattr(row, name) for name in names]
        made = Copier(driver.CallRow).new(*values)
        assert repr(made) == repr(driver.CallRow(*values)) == repr(row)
        assert all(getattr(made, name) is value for name, value in zip(names, values, strict=True))
    with pytest.raises(TypeError, match="takes 20 field values, not 2"):
        Copier(driver.CallRow).new(1, 2)


def test_translation_input_made_field_by_field_equals_the_class_made_one() -> None:
    """The pipeline makes each call's translation input from its fields in order (`Copier.new`):
    each field is the value the keyword-made one holds (a field added or moved fails here)."""
    a = pipeline.run(load_fixture(str(FIXTURES / "replay" / "tools.yaml"))).assembly
    eff = a.eff
    want = TranslationInput(
        provider=str(eff.provider),
        model=eff.model,
        max_input_tokens=eff.max_input_tokens,
        max_output_tokens=eff.max_output_tokens,
        segments=a.segments,
        tools=eff.fixture.tools,
        settings=eff.settings,
        templates=eff.templates,
        supports_images=eff.supports_images,
        meter=a.meter,
        memo=None,
        joined=(a.messages, a.segments),
    )
    got = pipeline.translation_input(a)
    assert all(getattr(got, f.name) is getattr(want, f.name) for f in fields(TranslationInput) if f.name != "joined")
    assert got.joined is not None and got.joined[0] is a.messages and got.joined[1] is a.segments


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
@pytest.mark.parametrize("name", ["tools.yaml", "image_cap.yaml", "truncation.yaml", "branch.yaml"])
def test_r_rpl_9_an_assemblys_messages_are_its_segments_in_order(name: str, provider: str) -> None:
    """Translation takes the assembly's message list instead of joining the segments again
    (R-RPL-9): on every replayed call that list is the segments' messages one after another,
    object for object, and translating with the list given or joined gives the same request."""

    def check(index: int, a: Any) -> None:
        joined = [w for ws in a.segments.values() for w in ws]
        assert len(a.messages) == len(joined) and all(x is y for x, y in zip(a.messages, joined, strict=True))
        given = translate(pipeline.translation_input(a)).body
        joined_body = translate(replace(pipeline.translation_input(a), joined=None)).body
        assert json.dumps(given, ensure_ascii=False) == json.dumps(joined_body, ensure_ascii=False)

    assert _replay(FIXTURES / "replay" / name, Options(provider=provider, max_input_tokens=3_000), check) > 1


def test_calls_are_equal_only_when_sent_alike() -> None:
    """Replay shares a translation between equal working messages (R-RPL-9), so two tool calls
    are equal only when their arguments are sent as the same JSON: a dict's `==` ignores key
    order and takes 1, 1.0 and True as equal."""
    one = Call("c1", "get_weather", {"city": "Oslo", "days": 1}, None)
    assert one == Call("c1", "get_weather", {"city": "Oslo", "days": 1}, None)
    assert hash(one) == hash(Call("c1", "get_weather", {"city": "Oslo", "days": 1}, None))
    for args in ({"days": 1, "city": "Oslo"}, {"city": "Oslo", "days": 1.0}, {"city": "Oslo", "days": True}):
        assert one != Call("c1", "get_weather", args, None), args
    assert one != Call("c1", "get_weather", {"city": "Oslo", "days": 1}, None, '{"city":"Oslo","days":1}')


def test_in_flight_messages_converted_once_per_question_equal_afresh(generated: Path) -> None:
    """R-CONV-4 through the state: a question's calls share the working message of each in-flight
    message (one object, costed once), equal to converting it afresh; another question's message
    at the same index is converted anew."""
    seen: dict[int, tuple[Any, Working]] = {}
    shared = 0

    def check(index: int, a: Any) -> None:
        nonlocal shared
        for m, w in zip(a.eff.fixture.in_flight, a.converted.in_turn, strict=True):
            assert w == convert.in_flight(m), index
            last = seen.get(m.index)
            if last is not None and last[0] is m:
                assert last[1] is w
                shared += 1
            elif last is not None:
                assert last[1] is not w
            seen[m.index] = (m, w)

    for path in (generated, FIXTURES / "replay" / "tools.yaml", FIXTURES / "tool_loop_in_flight.yaml"):
        seen.clear()
        _replay(path, Options(max_input_tokens=3_000), check)
    assert shared


def test_noted_pieces_describe_the_lists_they_are_given_for(generated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pieces a step notes for the list it gives (truncation's kept history, R-ASM-8's, their
    copies: the next step reads them instead of comparing the list with the window) are that
    list: each window piece is the window's run, each other message is not the window's; and
    most lists of a sliding window are read from their notes."""
    noted = 0

    class Checked(state.State):
        def _pieces(self, ws: list[Working], ref: list[Working]) -> Any:
            nonlocal noted
            noted += self.noted.of(ws, ref) is not None
            pieces = super()._pieces(ws, ref)
            covered: list[Working] = []
            for i, n, k in pieces:
                assert i == len(covered)
                if n < 0:
                    assert k == 1 and not (ws[i].key in self.at and ref[self.at[ws[i].key]] is ws[i])
                    covered.append(ws[i])
                else:
                    assert k > 0 and all(a is b for a, b in zip(ws[i : i + k], ref[n : n + k], strict=True))
                    covered += ref[n : n + k]
            assert len(covered) == len(ws)
            return pieces

    monkeypatch.setattr(driver, "State", Checked)
    calls = _replay(generated, Options(max_input_tokens=3_000), lambda index, a: None)
    assert noted >= 2 * calls


@pytest.mark.parametrize("seed", range(20))
def test_r_asm_4_decided_from_the_window_span_equals_afresh(seed: int) -> None:
    """The fates decided one by one when only truncation decided (the start of the unit it left
    out, then the kept run of copies), read off the window's arrays (`pieces.Span`), equal the
    record made afresh, in its order, with the fates the assembly sets after (R-ASM-3's): for spans
    that slide, grow, shrink, jump and move their split, while the window grows, is cut back and
    forgets; a span kept in use while the window changes under it (a result a caller keeps) still
    gives its call's record, looked up one by one and whole (the window is cut back and made
    again with other messages at the same positions)."""
    rng = random.Random(seed)
    shared = state.State()
    made = 0
    kept_in_use: list[tuple[Any, list[tuple[str, Any]], list[str]]] = []
    for _ in range(6):
        if shared.works and rng.random() < 0.3:
            shared._cut(rng.randrange(len(shared.works)))
        for _ in range(rng.randrange(1, 60)):
            w = _message(rng, made, odd=False)
            shared._append(w.with_(placeholder=True, notes=("p",)) if rng.random() < 0.2 else w)
            made += 1
        n = len(shared.works)
        h = a = b = 0
        for _ in range(40):
            if rng.random() < 0.2:  # anywhere
                h = rng.randrange(n + 1)
                a = rng.randrange(h, n + 1)
                b = rng.randrange(a, n + 1)
            else:  # near the last span
                h = min(max(h + rng.randrange(-2, 5), 0), n)
                a = min(max(a + rng.randrange(-2, 5), h), n)
                b = min(max(b + rng.randrange(-3, 6), a), n)
            head, kept = shared.works[h:a], shared.copies[a:b]
            got = shared.decided(head, [], [], kept)
            want = assemble.decided(head, [], [], truncation.kept_fates(kept))
            late = Fated(Fate.KEPT, "R-ASM-3", Segment.LAST_USER, ())
            got["last"] = want["last"] = late  # what the assembly adds after
            keys = [w.key for w in shared.works] + ["last", "other"]
            assert [repr(got.get(k)) for k in keys] == [repr(want.get(k)) for k in keys], (h, a, b)
            if rng.random() < 0.3:  # a caller keeps the result: read after the window changed
                kept_in_use.append((got, list(want.items()), keys))
            else:
                assert repr(list(got.items())) == repr(list(want.items())), (h, a, b)
            # R-FILE-3's evictions and R-ASM-8's orphans taken out of the kept run: recorded before
            # it; messages the window does not hold around the run (a summary, pinned files, in-turn
            # orphans), some under the key of a window message
            out = sorted(rng.sample(range(a, b), min(b - a, rng.randrange(3))))
            left = [w for j, w in enumerate(shared.copies[a:b], start=a) if j not in out]
            evicted, orphans = [shared.works[j] for j in out[:1]], [shared.works[j] for j in out[1:]]
            made += 1
            if rng.random() < 0.3:
                left.insert(0, Working(f"summary{made}", Kind.ASSISTANT, "s", 1, cacheable=True))
            if rng.random() < 0.3:
                left.append(Working(f"pinned{made}", Kind.USER, "f", 1, notes=("n",)))
            if rng.random() < 0.2:
                orphans.append(Working(f"in_flight{made}", Kind.TOOL, "r", 1))
            if rng.random() < 0.2 and n:  # another message under a window message's key
                left.append(shared.works[rng.randrange(n)].with_(notes=("other",)))
            heads = [head, shared.works[max(h - 1, 0) : a], [left[0]] if left and rng.random() < 0.1 else head]
            some = rng.choice(heads)
            got = shared.decided(some, evicted, orphans, left)
            want = assemble.decided(some, evicted, orphans, truncation.kept_fates(left))
            got["last"] = want["last"] = late
            assert [repr(got.get(k)) for k in keys] == [repr(want.get(k)) for k in keys], (h, a, b, out)
            if rng.random() < 0.3:
                kept_in_use.append((got, list(want.items()), keys))
            else:
                assert repr(list(got.items())) == repr(list(want.items())), (h, a, b, out)
    for got, want_items, keys in kept_in_use:
        wanted = dict(want_items)
        assert [repr(got.get(k)) for k in keys] == [repr(wanted.get(k)) for k in keys]
        assert repr(list(got.items())) == repr(want_items)


def test_settings_warnings_made_once_per_settings_equal_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """The warnings about the settings alone (another provider's model, unfilled braces) are
    worked out once per replay and equal each call's own; other settings give their own."""
    made = Mock(wraps=pipeline.settings_warnings)
    monkeypatch.setattr(driver, "settings_warnings", made)
    fixture = load_fixture(str(FIXTURES / "replay" / "tools.yaml"))
    options = Options(provider="anthropic", model="gpt-4o", max_input_tokens=2_000)
    seen: list[Any] = []
    done = driver.replay(fixture, options, on_call=lambda i, call, result: seen.append(result))
    assert made.call_count <= 2 < len(seen)  # the fixture's own call resolves its own settings
    assert any("belongs to openai" in w for w in done.warnings)
    loop = driver._Loop(fixture, resolve(fixture, options), state.State(), Warned([]))
    for result in seen:
        eff = result.assembly.eff
        assert result.typed_warnings(loop._settings_warnings(eff)) == result.typed_warnings()
        other = replace(eff, model="claude-sonnet-4-5")
        assert loop._settings_warnings(other) == pipeline.settings_warnings(other)
        assert loop._settings_warnings(eff) == pipeline.settings_warnings(eff)


def test_r_asm_3_the_tails_shared_fates_equal_the_fates_made_afresh() -> None:
    """R-ASM-3's fates of the last user message and the in-flight ones are one shared value each
    when the message has no notes (every call): equal to the fate made for it, notes or not."""
    for shared, segment in ((assemble._LAST_USER, Segment.LAST_USER), (assemble._IN_TURN, Segment.IN_TURN)):
        for notes in ((), ("a note",), ("one", "two")):
            made = assemble._tail_fate(shared, notes)
            assert repr(made) == repr(Fated(Fate.KEPT, "R-ASM-3", segment, notes))
            assert (made is shared) == (not notes)


def test_per_call_values_hash_and_compare_as_frozen_ones() -> None:
    """The values replay makes per message or per call (`Working`, `Branch`, `ReplayCall`,
    `CallRow`, `Result`) are not frozen, so they are made without an `object.__setattr__` call
    per field (`Copier` sets theirs with `setattr`, `Copier.new` calls their `__init__`); they
    compare and hash as the frozen classes did: by their fields, in order."""
    done = driver.replay(load_fixture(str(FIXTURES / "replay" / "tools.yaml")))
    for row in done.calls:
        values = tuple(getattr(row, f.name) for f in fields(row))
        assert row == driver.CallRow(*values) and repr(row) == repr(driver.CallRow(*values))
    w = Working("m:1:u", Kind.USER, "hi", None, source_id="u", notes=("a",))
    copy = w.with_(cacheable=True)
    assert hash(w) == hash(tuple(getattr(w, f.name) for f in fields(w)))
    assert copy != w and copy == replace(w, cacheable=True) and hash(copy) == hash(replace(w, cacheable=True))


def test_r_asm_9_replay_warnings_equal_each_calls_typed_warnings(tmp_path: Path) -> None:
    """R-ASM-9 (R-RPL-9): the driver notes a call whose only warning is R-ASM-9's without listing
    `Result.typed_warnings` (most calls at a small window); the replay's warnings equal those of
    every call's typed warnings given one by one, with how far each is over the window, on a
    history over the window at most calls and on gallery fixtures with other warnings."""
    history = tmp_path / "h.json"
    history.write_text(json.dumps(bench_history(150)), encoding="utf-8")
    cases = [
        (history, 4_000),
        (FIXTURES / "fixed_parts_too_big.yaml", 3_000),
        (FIXTURES / "project_too_big.yaml", 3_000),
    ]
    cases += [(FIXTURES / "forgotten_files.yaml", 3_000), (FIXTURES / "replaced_system_prompt.yaml", 3_000)]
    over_calls = 0
    for path, window in cases:
        fixture, options = load_fixture(str(path)), Options(max_input_tokens=window)
        try:
            expected = Warned(Planner(fixture, options).warnings())
        except CtxkitError:
            continue

        def seen(index: int, call: Any, result: pipeline.Result, expected: Warned = expected) -> None:
            for w in result.typed_warnings():
                over = result.over_window_tokens() if w.kind is pipeline.WarningKind.OVER_WINDOW else 0
                expected.add(index, call.label, w, over)

        try:
            replayed = driver.replay(fixture, options, on_call=seen)
        except CtxkitError:
            continue
        texts = expected.texts()
        assert replayed.warnings[: len(texts)] == texts, path
        over_calls += sum(c.prompt_tokens > window for c in replayed.calls)
    assert over_calls > 20
