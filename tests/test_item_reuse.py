"""R-RPL-9: a replayed call's prompt items are the last call's item objects wherever the window
moved, and the same as the items read back from the call assembled afresh.

An `Item` holds no position (`Prompt.message` / `Prompt.source` read it from the payload
messages), so a message the 8k-style window moved keeps its items: `ItemMemo.carried` finds the
runs of messages that hold the last request's parts lists with the same framing and role.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxkit.loading.config import Options
from ctxkit.loading.read import load_fixture
from ctxkit.replay import driver
from ctxkit.translate.common import Sent
from ctxkit.translate.itemmemo import Run, _framed_alike, _shape
from ctxkit.translate.items import Prompt, prompt_items

from .helpers import bench_history, replay_against_fresh


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("reuse") / "h.json"
    path.write_text(json.dumps(bench_history(160)), encoding="utf-8")
    return path


@pytest.mark.parametrize("provider", ["openai", "ollama"])
def test_r_rpl_9_moved_messages_keep_their_item_objects(
    history: Path, provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At a window that slides every call, nearly every item of a call that an earlier call
    sent is that call's very object; and each call's items and places equal a fresh call's."""
    prompts: list[Prompt] = []

    def recording(payload: Any, **kw: Any) -> Prompt:
        prompts.append(prompt_items(payload, **kw))
        return prompts[-1]

    monkeypatch.setattr(driver, "prompt_items", recording)
    done = driver.replay(load_fixture(str(history)), Options(provider=provider, max_input_tokens=3000))
    assert sum(c.brk.cause == "truncation" for c in done.calls) > 20  # the window slid
    same = shared = 0
    for before, after in zip(prompts, prompts[1:], strict=False):
        objects = {id(i) for i in before.items}
        keys = {i.key for i in before.items}
        shared += sum(i.key in keys for i in after.items)
        same += sum(id(i) in objects for i in after.items)
        assert after.sources()[-1] is not None  # places read from this call's messages
    assert shared > 1000 and same >= 0.95 * shared, (same, shared)


def test_r_rpl_9_reused_items_equal_a_fresh_call(history: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = replay_against_fresh(load_fixture(str(history)), Options(max_input_tokens=3000), monkeypatch)
    assert calls > 50


def _runs(new: list[Sent], old: list[Sent]) -> list[Run]:
    return _framed_alike(_shape(new), _shape(old))


def _sent(parts: list[Any], frame: int, role: str = "user", origin: int = 0) -> Sent:
    return Sent(role, parts, (origin,), None, frame)


def test_r_rpl_9_runs_follow_the_parts_lists_their_framing_and_role() -> None:
    a, b, c, d = ([{"n": n}] for n in range(4))
    old = [_sent(a, 1), _sent(b, 2), _sent(c, 3), _sent(d, 4)]
    # the window slid by one; message c is framed otherwise now (its call was renamed); a new one
    new = [_sent(b, 2, origin=0), _sent(c, 9, origin=1), _sent(d, 4, origin=2), _sent([{"n": 5}], 5)]
    assert _runs(new, old) == [(0, 1, 1), (2, 3, 1)]
    # equal parts that are not the same lists are made again; so is a changed role
    assert _runs([_sent([{"n": 0}], 1), _sent(b, 2, "assistant")], old) == []
    assert _runs(old, old) == [(0, 0, 4)]
    # a run framed otherwise in its middle goes on after it
    assert _runs([old[0], _sent(b, 7), old[2], old[3]], old) == [(0, 0, 1), (2, 2, 2)]


def test_r_rpl_9_moved_runs_take_the_very_messages_then_their_parts_lists() -> None:
    """Between the runs in place, the very messages of the last request are found first, then
    (between those) the messages that hold a moved message's parts list with its framing and role."""
    from ctxkit.translate.itemmemo import ItemMemo

    a, b, c, d = ([{"n": n}] for n in range(4))
    old = [_sent(a, 1), _sent(b, 2), _sent(c, 3), _sent(d, 4)]
    fresh = _sent([{"n": 5}], 5)
    # slid by one: b and d are the very objects, c made again from its parts list, then a new one
    new = [old[1], _sent(c, 3, origin=1), old[3], fresh]
    assert ItemMemo()._moved(new, 0, 4, old, 0, 4) == [(0, 1, 1), (1, 2, 1), (2, 3, 1)]
    assert ItemMemo()._moved(new, 1, 3, old, 2, 4) == [(1, 2, 1), (2, 3, 1)]
    # c framed otherwise: not its items; the new message is in no run
    assert ItemMemo()._moved([old[1], _sent(c, 9), fresh], 0, 3, old, 0, 4) == [(0, 1, 1)]


SESSIONS = ["replay/long_session.yaml", "replay/lookback.yaml", "replay/taubench_airline.yaml"]


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "ollama"])
@pytest.mark.parametrize("fixture", SESSIONS)
def test_r_rpl_9_the_kept_definitions_item_equals_the_one_made_afresh(
    provider: str, fixture: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The item memo gives the last request's definitions item again while the body's other fields,
    the first message's item, the rules and the tokenizer stay (`ItemMemo.preamble`): on every
    replayed call it equals the one made from that call's body."""
    from ctxkit.replay import driver
    from ctxkit.translate import items as items_module
    from ctxkit.translate.itemmemo import ItemMemo

    kept = ItemMemo.preamble
    checked: list[bool] = []

    def compared(self: ItemMemo, payload: Any, first: Any, rules: Any, meter: Any, make: Any) -> Any:
        given = kept(self, payload, first, rules, meter, make)
        fresh = items_module._preamble(payload, payload.messages, items_module._rules(payload, meter), meter)
        assert repr(given) == repr(fresh)
        checked.append(given is not None)
        return given

    monkeypatch.setattr(ItemMemo, "preamble", compared)
    path = Path(__file__).resolve().parent.parent / "fixtures" / fixture
    driver.replay(load_fixture(str(path)), Options(provider=provider))
    assert checked
    if provider == "anthropic" or fixture != "replay/taubench_airline.yaml":
        assert any(checked)  # a definitions item was kept and compared


def test_r_rpl_9_the_definitions_item_is_made_again_when_what_it_reads_changes() -> None:
    """`ItemMemo.preamble` makes the item again for another head dict, a value replaced in it, a
    name added, another first message's item, other rules or another tokenizer; else it keeps it."""
    from types import SimpleNamespace

    from ctxkit.translate.itemmemo import ItemMemo

    memo, made = ItemMemo(), []
    tools: list[Any] = [{"type": "function"}]
    rules: Any = object()
    other_rules: Any = object()

    def make(payload: Any, messages: Any, rules: Any, meter: Any) -> Any:
        made.append(payload)
        return ("item", len(made))

    head = {"model": "m", "tools": tools}
    system = {"role": "system", "content": "s"}
    meter = SimpleNamespace(tokenizer="t")
    call: Any = SimpleNamespace(provider="openai", head=head, messages=())
    steps: list[tuple[Any, Any, Any, Any, bool]] = [
        (call, system, rules, meter, True),  # the first
        (call, system, rules, meter, False),  # all the same
        (SimpleNamespace(provider="openai", head=head, messages=()), system, rules, meter, False),  # another payload
        (call, {"role": "system", "content": "s"}, rules, meter, True),  # an equal first item, another object
        (call, system, other_rules, meter, True),
        (call, system, other_rules, SimpleNamespace(tokenizer="u"), True),
        (SimpleNamespace(provider="openai", head=dict(head), messages=()), system, other_rules, meter, True),
    ]
    for payload, first, given_rules, given_meter, again in steps:
        before = len(made)
        memo.preamble(payload, first, given_rules, given_meter, make)
        assert (len(made) > before) == again
    memo.preamble(call, system, other_rules, meter, make)
    for change in ({**head, "tools": [*tools]}, {**head, "tool_choice": "auto"}):
        head.clear()
        head.update(change)  # the same dict, changed in place
        before = len(made)
        memo.preamble(call, system, other_rules, meter, make)
        assert len(made) == before + 1


# --- the counting rules kept by the memo (8a2d973) ------------------------------------------


def test_r_rpl_4_the_memos_counting_rules_follow_provider_model_and_tokenizer() -> None:
    """`ItemMemo.rules` keeps the last rules made; each change of provider, model or tokenizer
    (a log replay shares one memo per tokenizer across providers) makes them again: each answer
    reads as `rules_for` made afresh."""
    from ctxkit.counting.wire import rules_for
    from ctxkit.translate.itemmemo import ItemMemo

    memo = ItemMemo()
    bases = [
        ("openai", "gpt-4o", "o200k_base"),
        ("anthropic", "claude-sonnet-4-5", "o200k_base"),
        ("anthropic", "claude-sonnet-4-5", "approx"),
        ("openai", "gpt-4o", "approx"),
        ("openai", "gpt-4o-mini", "approx"),
        ("gemini", "gemini-2.5-pro", "approx"),
        ("gemini", "gemini-2.5-pro", "approx"),
        ("ollama", "llama3.1", "cl100k_base"),
        ("openai", "gpt-4o", "o200k_base"),
    ]
    got = [repr(memo.rules(*basis)) for basis in bases]
    assert got == [repr(rules_for(*basis)) for basis in bases]
    assert len(set(got)) > 4  # the bases differ in what the rules hold


def test_r_rpl_4_a_log_replay_counts_as_with_rules_made_per_record(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reviewer's case: OpenAI and Anthropic records of one log share a memo under the
    `approx` tokenizer, where Anthropic's fitted ratio applies; the replay's JSON is the same
    text as when every record's rules are made afresh."""
    from ctxkit.counting.wire import rules_for
    from ctxkit.translate.itemmemo import ItemMemo

    from .conftest import ROOT, ctxkit

    args = ("replay", str(ROOT / "fixtures" / "logs" / "crewai_cached_prompt_tokens.jsonl"), "--format", "json")
    kept = ctxkit(*args, "--tokenizer", "approx").out
    monkeypatch.setattr(ItemMemo, "rules", lambda self, provider, model, tok: rules_for(provider, model, tok))
    assert kept == ctxkit(*args, "--tokenizer", "approx").out


def _free(parts: list[Any], frame: int | None = 1, role: str = "user") -> Sent:
    """A message whose items follow from its own fields (`context_free`), unless `frame` is None."""
    return Sent(role, parts, None, [(("k", str(parts)), 3)], frame)


def test_r_rpl_9_moved_runs_go_on_over_equal_messages_only_where_they_are_context_free() -> None:
    """A moved run starts at the very same message and goes on over equal ones (compared in C)
    while the last request's message is context-free; an equal copy of one that is not (its
    framing read from the request's call names, or its images' files) ends the run unless it is
    the very same object."""
    from dataclasses import replace

    from ctxkit.translate.itemmemo import ItemMemo, context_free

    a, b, c, d = ([{"n": n}] for n in range(4))
    old = [_free(a), _free(b), _free(c, None), _free(d)]
    assert [context_free(s) for s in old] == [True, True, False, True]
    bound = [2]  # the positions in `old` that are not context-free
    fresh = _free([{"n": 5}])
    copies = [replace(s, parts=list(s.parts)) for s in old]  # equal, not the same objects nor parts lists
    # slid by one: a is the very object, b an equal copy (context-free: its items), c an equal copy
    # that is not context-free (made again), d the very object
    new = [fresh, old[0], copies[1], copies[2], old[3]]
    assert ItemMemo()._moved(new, 0, 5, old, 0, 4, bound) == [(1, 0, 2), (4, 3, 1)]
    # the very object of one that is not context-free goes on with the run
    assert ItemMemo()._moved([fresh, old[0], copies[1], old[2], old[3]], 0, 5, old, 0, 4, bound) == [(1, 0, 4)]
    # without the positions (None), only the very objects
    assert ItemMemo()._moved(new, 0, 5, old, 0, 4) == [(1, 0, 1), (4, 3, 1)]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_r_rpl_9_each_moved_run_holds_the_very_messages_equal_context_free_ones_or_their_parts(data: Any) -> None:
    """Every pair of messages a moved run matches is the very same message, or equal with the last
    request's one context-free, or holds the very same parts list with the same framing and role."""
    from dataclasses import replace

    from ctxkit.translate.itemmemo import ItemMemo, context_free

    parts = [[{"n": n}] for n in range(6)]
    old = [
        _free(parts[data.draw(st.integers(0, 5))], data.draw(st.sampled_from([1, 2, None])))
        for _ in range(data.draw(st.integers(1, 12)))
    ]
    bound = [n for n, s in enumerate(old) if not context_free(s)]
    new: list[Sent] = []
    for _ in range(data.draw(st.integers(1, 14))):
        how = data.draw(st.sampled_from(["same", "copy", "deep", "reframed", "other"]))
        s = data.draw(st.sampled_from(old))
        if how == "copy":
            s = replace(s)
        elif how == "deep":
            s = replace(s, parts=list(s.parts))
        elif how == "reframed":
            s = replace(s, frame=7)
        elif how == "other":
            s = _free([{"n": data.draw(st.integers(0, 9))}], data.draw(st.sampled_from([1, None])))
        new.append(s)
    for i, j, k in ItemMemo()._moved(new, 0, len(new), old, 0, len(old), bound):
        for x, y in zip(new[i : i + k], old[j : j + k], strict=True):
            assert (
                x is y
                or (x == y and context_free(y))
                or (x.parts is y.parts and (x.frame, x.role) == (y.frame, y.role))
            )


@pytest.mark.parametrize("provider", ["openai", "ollama"])
@pytest.mark.parametrize("fixture", ["image_cap_azure.yaml", "replay/image_cap.yaml", "project_files.yaml", "history"])
def test_r_rpl_9_the_kept_positions_of_messages_not_context_free_equal_a_fresh_scan(
    provider: str, fixture: str, history: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ItemMemo.keep` is given, for each request, the positions of its messages that are not
    context-free, carried through the runs from the last request's: the same as looking at every
    message of the request. On the sliding history every assistant message counts as not
    context-free besides (so that runs carry some), and each call's items still equal a fresh
    call's (fewer equal messages are taken, never others)."""
    from ctxkit.translate import itemmemo, items

    keep, seen = itemmemo.ItemMemo.keep, []
    free = itemmemo.context_free
    if fixture == "history":

        def free(sent: Sent) -> bool:
            return sent.role != "assistant" and itemmemo.context_free(sent)

        monkeypatch.setattr(items, "context_free", free)

    def checking(self: Any, payload: Any, messages: Any, *args: Any, **kw: Any) -> None:
        seen.append(kw["bound"])
        assert kw["bound"] == [n for n, s in enumerate(messages) if not free(s)]
        keep(self, payload, messages, *args, **kw)

    monkeypatch.setattr(itemmemo.ItemMemo, "keep", checking)
    if fixture == "history":
        assert (
            replay_against_fresh(
                load_fixture(str(history)), Options(provider=provider, max_input_tokens=3000), monkeypatch
            )
            > 50
        )
    else:
        path = Path(__file__).parent.parent / "fixtures" / fixture
        driver.replay(load_fixture(str(path)), Options(provider=provider, max_input_tokens=3000))
    assert len(seen) > 1 and any(seen)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_r_rpl_9_one_moved_message_each_side_is_taken_as_among_others(data: Any) -> None:
    """One message between the runs on each side (the two system prompts, mostly) is taken as
    it would be among other messages that match nothing: the very message, or its parts list
    with the same framing and role; and the request is told renamed alike."""
    from dataclasses import replace

    from ctxkit.translate.itemmemo import ItemMemo

    a, b = [{"n": 0}], [{"n": 1}]
    y = Sent("user", a, data.draw(st.sampled_from([None, (0,)])), None, 1)
    x = data.draw(
        st.sampled_from(
            [
                y,
                replace(y),
                replace(y, frame=2),
                replace(y, role="assistant"),
                replace(y, parts=list(a)),
                Sent("user", b, (0,)),
            ]
        )
    )
    others = [Sent("user", [{"n": 2}], None), Sent("user", [{"n": 3}], None)]
    one, many = ItemMemo(), ItemMemo()
    alone = one._moved([x], 0, 1, [y], 0, 1, [])
    among = [r for r in many._moved([x, others[0]], 0, 2, [y, others[1]], 0, 2, []) if r[0] == 0]
    assert (alone, one._renamed) == (among, many._renamed)


@settings(max_examples=500, deadline=None)
@given(st.data())
def test_r_rpl_9_runs_in_place_equal_the_ones_counted_one_by_one(data: Any) -> None:
    """`itemmemo._in_place`: each run starts at the very same message at the same place and goes
    on while the messages there are equal; after a message that differs, the next run starts at
    the next very same message within `_NEAR` places, else none does (the window moved) — as
    counted message by message, also where only the first message of a run is in place."""
    from dataclasses import replace

    from ctxkit.translate.itemmemo import _NEAR, _in_place

    pool = [_free([{"n": n}]) for n in range(4)]
    old = [data.draw(st.sampled_from(pool)) for _ in range(data.draw(st.integers(0, 14)))]
    new = []
    for n in range(data.draw(st.integers(0, 14))):
        how = data.draw(st.sampled_from(["same", "copy", "other"] if n < len(old) else ["other"]))
        new.append(old[n] if how == "same" else replace(old[n]) if how == "copy" else data.draw(st.sampled_from(pool)))
    want, i, most = [], 0, min(len(new), len(old))
    while i < most:
        if new[i] is not old[i]:
            i = next((x for x in range(i, min(most, i + _NEAR)) if new[x] is old[x]), most)
            continue
        k = 1
        while i + k < most and new[i + k] == old[i + k]:
            k += 1
        want.append((i, i, k))
        i += k
    assert _in_place(new, old) == want
