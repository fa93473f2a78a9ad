"""R-RPL-9: what `TranslationMemo` works out per request equals the same thing worked out afresh,
and a replayed call's translation reuses the last call's work instead of redoing it.

The memo follows the window from one request to the next by what entered and left it (the
runs it shares with the last window, the call names, the positions of images and results).
These tests drive random windows, with repeated and reused call ids, and compare each request's
view with one made from the whole window; the replay tests check that the payload messages of
a sliding window are the last call's objects (a broken reuse gives the same bytes, only slower,
so the oracle of `tests/helpers.py::replay_against_fresh` would not see it).
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ctxkit import providers
from ctxkit.history.working import Call, Kind, Segment, Working
from ctxkit.loading.config import Options
from ctxkit.loading.read import load_fixture
from ctxkit.output import dumps
from ctxkit.pipeline import run, translation_input
from ctxkit.replay import driver
from ctxkit.translate import anthropic_turns, gemini, items, translate, turns
from ctxkit.translate.fragments import same_calls
from ctxkit.translate.itemmemo import REACH, runs
from ctxkit.translate.items import prompt_items, read_items
from ctxkit.translate.keys import Key, item_key
from ctxkit.translate.memo import _MISSES, _TAIL, TranslationMemo, _common

from .helpers import bench_history

translators = {"anthropic_turns": anthropic_turns, "gemini": gemini}


def _pool(rng: random.Random, size: int) -> list[Working]:
    """Working messages whose call ids repeat (a small id space) and whose names differ."""
    out = []
    for n in range(size):
        calls = tuple(Call(f"c{rng.randrange(6)}", rng.choice("xyz"), {}, 1) for _ in range(rng.randrange(0, 3)))
        if rng.random() < 0.3:
            out.append(Working(f"m:{n}:r", Kind.TOOL, "r", 1, tool_call_id=f"c{rng.randrange(6)}"))
        else:
            out.append(Working(f"m:{n}:a", Kind.ASSISTANT, "a", 1, tool_calls=calls))
    return out


def _windows(rng: random.Random, pool: list[Working], count: int) -> list[list[Working]]:
    """Windows that slide, grow, shrink, jump and get messages rebuilt (equal, other objects)."""
    out = []
    start, end = 0, 5
    for _ in range(count):
        move = rng.random()
        if move < 0.4:
            start, end = start + rng.randrange(0, 3), end + rng.randrange(0, 4)
        elif move < 0.6:
            start = max(0, start - rng.randrange(1, 5))
        elif move < 0.7:
            start = rng.randrange(len(pool))
            end = start + rng.randrange(1, 30)
        end = min(max(end, start + 1), len(pool))
        start = min(start, end - 1)
        window = pool[start:end]
        if rng.random() < 0.3:  # a message rebuilt for this request, or a stranger inserted
            at = rng.randrange(len(window))
            window = [*window[:at], rng.choice([window[at].with_(), *pool]), *window[at + 1 :]]
        out.append(window)
    return out


@pytest.mark.parametrize("seed", range(60))
def test_r_rpl_9_memo_names_and_positions_equal_afresh(seed: int) -> None:
    rng = random.Random(seed)
    pool = _pool(rng, 60)
    memo = TranslationMemo()
    last: dict[str, str] = {}
    last_window: list[Working] = []
    for window in _windows(rng, pool, 40):
        memo.begin(("p",), window)
        names = {c.id: c.name for w in window for c in w.tool_calls}
        assert memo.names == names
        assert memo.renamed == {i for i in {*names, *last} if names.get(i) != last.get(i)}
        assert memo.results == [p for p, w in enumerate(window) if w.tool_call_id is not None]
        answering = {p for p, w in enumerate(window) if w.tool_call_id in memo.renamed}
        assert {*memo.answering(memo.renamed), *memo.fresh} == {*answering, *memo.fresh}
        carried = memo.carried(last_window)
        assert [p for p, w in enumerate(carried) if w is None] == memo.fresh
        assert all(w == window[p] for p, w in enumerate(carried) if w is not None)
        last, last_window = names, window


def test_r_rpl_9_a_sliding_window_keeps_its_payload_messages(tmp_path: Path) -> None:
    """OpenAI: a message that stays in the window is sent as the last call's very payload
    message (`Sent`), wherever the window moved it; only the new messages and the first one
    are made again."""
    last: dict[str, Any] = {}
    made = moved = calls = 0

    def check(index: int, call: Any, result: Any) -> None:
        nonlocal made, moved, calls
        keys = [w.key for w in result.assembly.messages]
        sent = result.payload.messages
        now = dict(zip(keys, sent, strict=False))
        for n, key in enumerate(keys[1:], 1):
            if key in last and last[key][1] is not sent[n]:
                made += 1
            moved += key in last and last[key][0] != n
        last.clear()
        last.update({k: (n, s) for n, (k, s) in enumerate(now.items())})
        calls += 1

    (tmp_path / "h.json").write_text(json.dumps(bench_history(150)), encoding="utf-8")
    driver.replay(load_fixture(str(tmp_path / "h.json")), Options(max_input_tokens=3_000), on_call=check)
    assert calls > 50 and moved > 10 * calls  # the window slides
    assert made < calls  # yet its messages are kept, not made again


def _conversation(rng: random.Random, size: int) -> list[Working]:
    """Questions, answers calling tools and their results; now and then what a provider must
    mend: an empty answer, an id it does not accept, an id used twice, arguments not an object."""
    out: list[Working] = []
    for n in range(size):
        pick, odd = rng.random(), rng.random() < 0.04
        if pick < 0.3:
            out.append(Working(f"m:{n}:u", rng.choice([Kind.USER, Kind.REMINDER]), "q" if not odd else " ", 1))
        elif pick < 0.6:
            cid = (
                f"c{n if rng.random() < 0.9 else rng.randrange(max(n, 1))}" if not odd else rng.choice(["bad id", "c1"])
            )
            calls = (Call(cid, rng.choice("xy"), {} if not odd else 3, 1),) if rng.random() < 0.6 else ()
            out.append(Working(f"m:{n}:a", Kind.ASSISTANT, rng.choice(["a", ""]), 1, tool_calls=calls))
        else:
            answers = f"c{rng.randrange(max(n, 1))}" if not odd else "bad id"
            out.append(Working(f"m:{n}:r", Kind.TOOL, rng.choice(["r", ""]), 1, tool_call_id=answers))
    return out


@pytest.fixture(scope="module")
def request_input(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A request's settings, meter and templates (the messages are each test's own)."""
    path = tmp_path_factory.mktemp("memo") / "f.json"
    path.write_text(json.dumps(bench_history(4)), encoding="utf-8")
    return translation_input(run(load_fixture(str(path)), Options()).assembly)


@pytest.mark.parametrize("provider", providers.names())
@pytest.mark.parametrize("seed", range(12))
def test_r_rpl_9_carried_translation_equals_afresh_on_random_windows(
    request_input: Any, provider: str, seed: int
) -> None:
    """Every provider, random windows over one conversation (sliding, jumping, rebuilt messages,
    a system message or none, a cacheable prefix of any length): the body, rows, warnings and
    items through one memo equal a translation without it."""
    rng = random.Random(seed)
    pool = _conversation(rng, 80)
    system = Working("system", Kind.SYSTEM, "S", 1)
    memo = TranslationMemo()
    base = replace(request_input, provider=provider, model="m")
    for window in _windows(rng, pool, 40):
        if rng.random() < 0.8:
            window = [system, *window]
        cached = rng.randrange(len(window) + 1)
        window = [w.with_(cacheable=True) if p < cached else w for p, w in enumerate(window)]
        fresh = translate(replace(base, segments={Segment.HISTORY: window}))
        mine = translate(replace(base, segments={Segment.HISTORY: window}, memo=memo))
        assert dumps(mine.body) == dumps(fresh.body)  # as bytes
        assert (mine.prepared.rows, mine.prepared.warnings) == (fresh.prepared.rows, fresh.prepared.warnings)
        assert prompt_items(mine, meter=base.meter) == read_items(fresh, meter=base.meter)


@pytest.mark.parametrize(
    ("provider", "model", "module", "make"),
    [
        ("anthropic", "claude-sonnet-4-5", "anthropic_turns", "carried"),
        ("gemini", "gemini-2.5-pro", "gemini", "_carried"),
    ],
)
def test_r_rpl_9_turns_are_carried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: str, model: str, module: str, make: str
) -> None:
    """Anthropic's turns and Gemini's contents on a sliding window: a call makes only those at
    the window's changes; the others are the last call's (a window translated whole every call
    gives the same bytes)."""
    made, whole, calls, sent = 0, 0, 0, 0
    real_fill, real_carried = turns.Carry.fill, getattr(translators[module], make)

    def fill(self: Any) -> Any:
        nonlocal made
        made += sum(s is None for s in self.sents)
        return real_fill(self)

    def carried(*args: Any) -> Any:
        nonlocal whole
        out = real_carried(*args)
        whole += out is None
        return out

    def check(index: int, call: Any, result: Any) -> None:
        nonlocal calls, sent
        calls += 1
        sent += len(result.payload.messages)

    monkeypatch.setattr(turns.Carry, "fill", fill)
    monkeypatch.setattr(translators[module], make, carried)
    history = {**bench_history(150), "model": {"provider": provider, "name": model}}
    (tmp_path / "h.json").write_text(json.dumps(history), encoding="utf-8")
    driver.replay(load_fixture(str(tmp_path / "h.json")), Options(max_input_tokens=3_000), on_call=check)
    assert calls > 50 and sent > 10 * calls
    assert whole == 0 and made < 5 * calls


def test_r_rpl_9_each_payload_message_content_is_keyed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenAI: a payload message is keyed and counted once per content, not once per working
    message: an in-flight call stored under its own key, a rebuilt system text or reminder, the
    cacheable copy of a question and a message that leaves the window and comes back share what
    translation made of the first (fails when each working message is keyed afresh)."""
    keyed = 0
    real = items.known

    def known(*args: Any) -> Any:
        nonlocal keyed
        keyed += 1
        return real(*args)

    contents: set[Key] = set()

    def check(index: int, call: Any, result: Any) -> None:
        contents.update(item_key(s.role, s.parts[0]) for s in result.payload.messages)

    monkeypatch.setattr(items, "known", known)
    (tmp_path / "h.json").write_text(json.dumps(bench_history(400)), encoding="utf-8")
    driver.replay(load_fixture(str(tmp_path / "h.json")), Options(max_input_tokens=3_000), on_call=check)
    assert len(contents) > 300
    assert keyed <= len(contents)


@pytest.mark.parametrize("seed", range(40))
def test_r_rpl_9_memo_cacheable_prefix_equals_afresh(seed: int) -> None:
    """R-TR-8's prefix as the memo follows it from the last window's (the runs inside it are
    cacheable, a run holding its end stops there, the rest looked at) equals the count from the
    window's start, on windows that slide, jump and grow their cacheable copies."""
    rng = random.Random(seed)
    pool = _pool(rng, 60)
    copies = {w.key: w.with_(cacheable=True) for w in pool}
    memo = TranslationMemo()
    for window in _windows(rng, pool, 40):
        cut = rng.randrange(len(window) + 1)
        window = [copies[w.key] if p < cut and w in pool else w for p, w in enumerate(window)]
        if rng.random() < 0.3:
            at = rng.randrange(len(window))
            window[at] = window[at].with_(cacheable=not window[at].cacheable)
        memo.begin(("p",), window)
        assert memo.cacheable_prefix() == next((p for p, w in enumerate(window) if not w.cacheable), len(window))


def _equal_runs(new: list[Working], old: list[Working]) -> list[tuple[int, int, int]]:
    """`memo._common`'s runs worked out plainly: each run extended one `==` at a time."""

    def extend(new: Any, i: int, old: Any, j: int, most: int) -> int:
        k = 1
        while k < most and new[i + k] == old[j + k]:
            k += 1
        return k

    return runs(new, old, extend)


@pytest.mark.parametrize("seed", range(40))
def test_r_rpl_9_memo_runs_extend_over_equal_messages_as_compared_one_by_one(seed: int) -> None:
    """The memo's runs (`_common`: slices compared by identity first, the message past the matched
    part compared once) equal runs extended one comparison at a time, on windows whose messages
    are rebuilt (equal, other objects) or changed (the cacheable flag, the text) anywhere, the
    message right after a run's first one included."""
    rng = random.Random(seed)
    pool = _pool(rng, 60)
    old: list[Working] = []
    for window in _windows(rng, pool, 40):
        for _ in range(rng.randrange(4)):
            at = rng.randrange(len(window))
            window[at] = rng.choice(
                [window[at].with_(), window[at].with_(cacheable=True), window[at].with_(text="other")]
            )
        if len(window) > 2 and rng.random() < 0.3:
            window[1] = window[1].with_(cacheable=rng.random() < 0.5)
        assert runs(window, old, _common) == _equal_runs(window, old)
        old = window


def test_r_rpl_9_a_repeated_call_id_takes_the_name_of_its_latest_call_when_calls_move() -> None:
    """`TranslationMemo.renamed` when the very calls that left came back (an in-flight message's
    stored copy) but an id is held by two calls: the latest call with that id is another one now,
    and its name is the id's (the names are made again from the window, not kept)."""
    memo = TranslationMemo()
    first = Working("m:1:a", Kind.ASSISTANT, "a", 1, tool_calls=(Call("c1", "lookup", {}, 1),))
    second = Working("m:2:a", Kind.ASSISTANT, "b", 1, tool_calls=(Call("c1", "fetch", {}, 1),))
    memo.begin(("p",), [first, second])
    assert memo.names == {"c1": "fetch"} and memo.repeated == 1
    memo.begin(("p",), [second.with_(key="m:2:a:copy"), first])
    assert memo.names == {"c1": "lookup"} and memo.renamed == {"c1"}


def test_r_rpl_9_calls_sent_alike_are_the_same_calls() -> None:
    """`same_calls`, which skips writing the arguments as JSON when they are the very same object,
    says what `==` on the calls says (`Call.__eq__`: the arguments compared as the JSON they are
    sent as): the same arguments object under another id, name, stored count or written text is
    another call, and so is any one call of several."""
    args = {"city": "Oslo", "days": 1}
    one = Call("c1", "get", args, 3)
    cases = [
        ((one,), (Call("c1", "get", args, 3),)),
        ((one,), (Call("c1", "get", dict(args), 3),)),
        ((one,), (Call("c1", "get", {"days": 1, "city": "Oslo"}, 3),)),
        ((one,), (Call("c1", "get", {"city": "Oslo", "days": 1.0}, 3),)),
        ((one,), (Call("c1", "get", {"city": "Oslo", "days": True}, 3),)),
        ((one,), (Call("c2", "get", args, 3),)),
        ((one,), (Call("c1", "put", args, 3),)),
        ((one,), (Call("c1", "get", args, None),)),
        ((one,), (Call("c1", "get", args, 3, '{"city":"Oslo","days":1}'),)),
        ((one, one), (one, Call("c1", "get", args, 4))),
        ((one, Call("c2", "get", [1], 1)), (one, Call("c2", "get", [1.0], 1))),
        ((one,), (one, one)),
        ((), ()),
    ]
    for a, b in cases:
        assert same_calls(a, b) == (a == b) == same_calls(b, a), (a, b)
    assert sum(same_calls(a, b) for a, b in cases) == 3


def test_r_rpl_9_memo_gives_a_wire_message_only_for_an_equal_message() -> None:
    """`TranslationMemo.plain` gives the wire message made for a message equal to the one asked
    about (a rebuilt copy), never for one under the same key with other calls, other arguments,
    another text or another cacheable flag; a new one shares the fragment of a message of the
    same content."""
    memo = TranslationMemo()
    args = {"q": 1}
    w = Working("m:1:a", Kind.ASSISTANT, "a", 1, tool_calls=(Call("c1", "x", args, 1),))
    memo.begin(("p",), [w])

    def make(_: Working) -> Any:
        return SimpleNamespace(entry=None)

    wire = memo.plain(w, make)
    assert memo.plain(w, make) is wire and memo.plain(w.with_(), make) is wire
    assert memo.plain(w.with_(tool_calls=(Call("c1", "x", dict(args), 1),)), make) is wire
    assert memo.plain(w.with_(text="".join(["a", ""]) + ""), make) is wire  # an equal text, another object
    for other in [
        w.with_(text="".join(["b", "a"])),
        w.with_(tool_calls=(Call("c2", "x", args, 1),)),
        w.with_(tool_calls=(Call("c1", "x", {"q": 1.0}, 1),)),
        w.with_(tool_calls=(Call("c1", "x", args, 1), Call("c1", "x", args, 1))),
        w.with_(tool_calls=()),
        w.with_(cacheable=True),
    ]:
        memo = TranslationMemo()  # afresh: a message under the same key takes its place
        memo.begin(("p",), [w])
        made = memo.plain(w, make)
        assert memo.plain(other, make) is not made, other
    memo = TranslationMemo()
    memo.begin(("p",), [w])
    fragment = memo.plain(w, make).entry
    assert memo.plain(w.with_(key="m:1:a:copy", cacheable=True), make).entry is fragment
    other_args = w.with_(key="k2", tool_calls=(Call("c1", "x", {"q": True}, 1),))
    assert memo.plain(other_args, make).entry is not fragment


def test_r_rpl_9_a_replay_shares_the_body_fields_only_when_they_are_the_same_objects() -> None:
    """A replay's calls share one dict of the body's fields besides the messages
    (`translate._shared`) only when it holds the very same values under the same fields in the same
    order: `1` and `1.0`, `true` and `1`, or the same fields in another order are other bodies."""
    from ctxkit.translate import _shared

    memo = TranslationMemo()
    request: Any = SimpleNamespace(memo=memo)
    tools = [{"type": "function"}]
    first = {"model": "m", "tools": tools, "temperature": 1}
    assert _shared(request, first) is first
    assert _shared(request, {"model": "m", "tools": tools, "temperature": 1}) is first
    others: list[dict[str, Any]] = [
        {"model": "m", "tools": tools, "temperature": 1.0},
        {"model": "m", "tools": tools, "temperature": True},
        {"tools": tools, "model": "m", "temperature": 1},
        {"model": "m", "tools": [{"type": "function"}], "temperature": 1},
        {"model": "m", "tools": tools},
    ]
    for other in others:
        assert _shared(request, other) is other, other
        assert json.dumps(_shared(request, dict(other))) == json.dumps(other)
    assert _shared(SimpleNamespace(memo=None), first) is first  # type: ignore[arg-type]


def test_r_fix_7_a_replay_shares_the_request_head_only_while_the_settings_stay() -> None:
    """`translate._head`: a replay's calls whose translator gave the very same head under the very
    same settings get the last call's merged head; other settings (their request fields, R-FIX-7)
    or another head are merged again."""
    from ctxkit.loading.domain import Settings
    from ctxkit.translate import _head

    memo = TranslationMemo()
    head = {"model": "m"}
    one, two = Settings(request_fields=(("temperature", "1"),)), Settings(request_fields=(("temperature", "1.0"),))
    first = _head(SimpleNamespace(memo=memo, settings=one), head, None)  # type: ignore[arg-type]
    assert json.dumps(first) == '{"model": "m", "temperature": 1}'
    assert _head(SimpleNamespace(memo=memo, settings=one), head, None) is first  # type: ignore[arg-type]
    second = _head(SimpleNamespace(memo=memo, settings=two), head, None)  # type: ignore[arg-type]
    assert json.dumps(second) == '{"model": "m", "temperature": 1.0}'
    other = _head(SimpleNamespace(memo=memo, settings=two), {"model": "n"}, None)  # type: ignore[arg-type]
    assert json.dumps(other) == '{"model": "n", "temperature": 1.0}'


def test_r_rpl_4_openai_framing_by_role_equals_the_framing_of_each_message() -> None:
    """OpenAI's fragments take the framing of a message of only a role and a content from the
    first such message of that role (`openai._framing`, once per replay context); every message
    gets the framing `items.frame` gives it, the ones with a name, calls or a result's id too,
    whichever came first."""
    from ctxkit.counting.measure import Meter
    from ctxkit.loading.templates import Templates
    from ctxkit.translate import openai

    meter = Meter("o200k_base", supports_images=True, templates=Templates.build())
    rules = items.request_rules("openai", "gpt-4o", meter)
    request: Any = SimpleNamespace(memo=TranslationMemo(), meter=meter)
    call = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
    bodies: list[dict[str, Any]] = [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "assistant", "content": "Sure."},
        {"role": "user", "content": "Hi", "name": "ann"},
        {"role": "user", "content": "Hi"},
        {"role": "tool", "tool_call_id": "c1", "content": "sun"},
        {"role": "system", "content": "Be brief."},
        {"role": "assistant", "content": "More.", "tool_calls": [call, call]},
    ]
    for d in [*bodies, *reversed(bodies)]:
        assert openai._framing(request, rules, d) == items.frame(rules, d["role"], [d], meter, {}), d
    assert len({openai._framing(request, rules, d) for d in bodies}) > 2


@pytest.mark.parametrize("seed", range(30))
def test_r_rpl_9_called_tools_followed_equal_the_window_afresh(seed: int) -> None:
    """R-RPL-9 for R-TR-3/R-TR-4's tools declared from the calls (Anthropic without definitions,
    Gemini's calls without one): the names `turns.state` follows from what entered the window
    (names appended when calls only entered after every message that stayed) equal the names of
    the whole window's calls in first-call order, tool results' calls left out. Windows that
    grow only at their end take the appended way; appending to the wrong end or keeping a
    name whose calls left fails it."""
    rng = random.Random(seed)
    pool = _pool(rng, 60)
    odd = 0.3 if seed % 2 else 0.0  # with some results that carry calls (they never name a tool), or none
    pool = [
        w.with_(tool_calls=(Call("c9", rng.choice("uvw"), {}, 1),)) if w.kind is Kind.TOOL and rng.random() < odd else w
        for w in pool
    ]
    windows = _windows(rng, pool, 30)
    start = rng.randrange(20)
    windows += [pool[start:end] for end in range(start + 1, start + 25)]  # a window that only grows
    windows += _windows(rng, pool, 30)
    memo = TranslationMemo()
    appended = 0
    for window in windows:
        memo.begin(("p",), window)
        for p in memo.fresh:  # as `common.prepare` does: a run starts at a message the memo holds
            memo.plain(window[p], lambda w: SimpleNamespace(entry=None))
        appended += bool(memo.entered) and not any(w.tool_calls for w in memo.left)
        found = turns.state(memo, lambda w: False).called
        calls = (c.name for w in window if w.kind is not Kind.TOOL for c in w.tool_calls)
        assert found == list(dict.fromkeys(calls))
    assert appended > 10


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "ollama"])
def test_r_rpl_9_a_replay_builds_no_request_body(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    """R-RPL-9 (a call's cost follows what changed) with R-RPL-4 (items from what translation
    emitted): a replay's rows need each call's prompt items and tokens, which translation hands
    over as payload messages with their keys and counts; no request body is built unless asked
    (`--payloads`, the report, a test reading `Payload.body`). Building every call's body, or
    reading the items back from it, fails this."""
    from ctxkit.translate.common import Translated

    built = 0
    real = Translated.body

    def body(self: Translated, head: Any = None) -> Any:
        nonlocal built
        built += 1
        return real(self, head)

    monkeypatch.setattr(Translated, "body", body)
    history = {**bench_history(60), "model": {"provider": provider, "name": "m"}}
    (tmp_path / "h.json").write_text(json.dumps(history), encoding="utf-8")
    replayed = driver.replay(load_fixture(str(tmp_path / "h.json")), Options(max_input_tokens=3_000))
    assert len(replayed.calls) > 20 and built == 0
    last = run(load_fixture(str(tmp_path / "h.json")), Options(max_input_tokens=3_000))
    assert dumps(last.payload.body) and built == 1  # asked: built from the same messages


@pytest.mark.parametrize("seed", range(30))
def test_r_rpl_9_memo_runs_over_long_windows_equal_one_by_one(seed: int) -> None:
    """`_common` on windows longer than its tail (`_TAIL`): the part before the last messages is
    compared first, then the tail or the bisection; runs equal runs extended one comparison at a
    time when messages are changed or rebuilt in the tail, just before it, or anywhere."""
    rng = random.Random(seed)
    pool = _pool(rng, 400)
    old: list[Working] = []
    start = 0
    for _ in range(30):
        start += rng.randrange(0, 4)
        window = list(pool[start : start + rng.randrange(20, 300)])
        for _ in range(rng.randrange(4)):
            near = len(window) - 1 - rng.randrange(min(len(window), 2 * _TAIL + 2))
            at = rng.choice([near, rng.randrange(len(window))])
            window[at] = rng.choice([window[at].with_(), window[at].with_(cacheable=True), rng.choice(pool)])
        assert runs(window, old, _common) == _equal_runs(window, old)
        old = window


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("seed", range(20))
def test_r_rpl_9_memo_runs_look_only_for_held_messages_and_lose_none(
    request_input: Any, provider: str, seed: int
) -> None:
    """`TranslationMemo._runs` looks for a run's first message only when the memo's entry for its
    key holds that very message (`plain` holds the message last asked for): on windows without
    images that slide, grow, shrink and jump, with messages rebuilt (equal, other objects) and
    strangers inserted, and two system texts under one key, one of them made again now and then,
    its runs equal `itemmemo.runs` with `_common`, which looks for every message."""
    rng = random.Random(seed)
    pool = _conversation(rng, 80)
    systems = [Working("system", Kind.SYSTEM, t, 1) for t in ("S", "T")]
    memo = TranslationMemo()
    base = replace(request_input, provider=provider, model="m")
    old: list[Working] = []
    for window in _windows(rng, pool, 40):
        window = [rng.choice(systems), *window] if rng.random() < 0.8 else window
        if rng.random() < 0.2:  # a system text made again for this request
            window[0] = window[0].with_()
        translate(replace(base, segments={Segment.HISTORY: window}, memo=memo))
        assert memo.runs == runs(window, old, _common)
        old = window


@pytest.mark.parametrize("seed", range(40))
def test_r_rpl_9_carried_values_equal_those_placed_run_by_run(seed: int) -> None:
    """`TranslationMemo.carried` (the longest run's slice as the list, the other runs and the
    fresh places put before and after it) holds, at each place, the very value placed there run
    by run, on windows that slide, grow, shrink, jump and get rebuilt messages."""
    rng = random.Random(seed)
    pool = _pool(rng, 60)
    memo = TranslationMemo()
    old: list[Working] = []
    for window in _windows(rng, pool, 40):
        memo.begin(("p",), window)
        for p in memo.fresh:  # as `common.prepare` does
            memo.plain(window[p], lambda w: SimpleNamespace(entry=None))
        values = [object() for _ in old]
        placed: list[object | None] = [None] * len(window)
        for i, j, k in memo.runs:
            placed[i : i + k] = values[j : j + k]
        carried = memo.carried(values)
        assert len(carried) == len(placed) and all(a is b for a, b in zip(carried, placed, strict=True))
        old = window


def _scanned_runs(memo: TranslationMemo, new: list[Working], old: list[Working]) -> list[tuple[int, int, int]]:
    """`TranslationMemo._runs` as it was: every held message looked for in the last window past
    the last run, one scan each (no map of the last window's positions)."""
    out: list[tuple[int, int, int]] = []
    i, j = 0, 0
    while i < len(new):
        held = memo._entries.get(new[i].key)
        if held is not None and held[0] is new[i]:
            at = next((p for p in range(j, min(len(old), j + REACH)) if old[p] is new[i]), -1)
            if at >= 0:
                k = _common(new, i, old, at, min(len(new) - i, len(old) - at))
                out.append((i, at, k))
                i, j = i + k - 1, at + k
        i += 1
    return out


@pytest.mark.parametrize("seed", range(40))
def test_r_rpl_9_memo_runs_equal_one_scan_per_held_message(seed: int) -> None:
    """`_runs` maps the last window's objects to their positions once held messages are missed
    past the last run (`_MISSES`, and scans of a window's length: messages back in a window that
    grows at its old end): its runs equal those of one scan per held message, on long windows
    (past `REACH`) that shrink and grow back at either end, jump, and hold one object twice."""
    rng = random.Random(seed)
    pool = _pool(rng, 500)
    memo = TranslationMemo()
    old: list[Working] = []
    start, end = 100, 130
    mapped = 0
    for _ in range(60):
        move = rng.random()
        if move < 0.3:
            start = max(0, start - rng.randrange(1, 40))  # grows back at its old end
        elif move < 0.5:
            start, end = start + rng.randrange(0, 30), end + rng.randrange(0, 60)
        elif move < 0.6:
            start = rng.randrange(400)
            end = start + rng.randrange(1, 250)
        else:
            end += rng.randrange(0, 5)
        end = min(max(end, start + 1), len(pool))
        window = pool[start:end]
        for _ in range(rng.randrange(3) if rng.random() < 0.5 else 0):  # one object twice (no replay's window)
            window.insert(rng.randrange(len(window) + 1), rng.choice(window))
        expected = _scanned_runs(memo, window, old)
        memo.begin(("p",), window)
        assert memo.runs == expected
        held = sum(1 for p in memo.fresh if (memo._entries.get(window[p].key) or (None,))[0] is window[p])
        mapped += held >= _MISSES and held * REACH >= len(old)
        for p in memo.fresh:  # as `common.prepare` does
            memo.plain(window[p], lambda w: SimpleNamespace(entry=None))
        old = window
    assert mapped > 5
