"""R-RPL-9: what later calls keep of an earlier call (`replay/earlier.py`), numbered whole against
the last view when the view is plain, equals the numbering of the kept items one by one.

A plain view (`Prompt.plain`: one item per payload message, none naming its origins: OpenAI,
Ollama) takes the numbers of the runs it shares with the last plain view as slices, checked by
comparing slices of the two assembled lists; every other view builds its places column. Both
must give every kept item the same side (tokens, role, breakpoint, the working message behind
it and its segment).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ctxkit.history.working import Kind, Origin, Segment
from ctxkit.loading.config import Options
from ctxkit.loading.read import load_fixture
from ctxkit.replay import breaks, driver, plainview
from ctxkit.translate.prompt import Item, Prompt

from .conftest import FIXTURES
from .helpers import bench_history


def _kept(fixture: Any, options: Options, monkeypatch: pytest.MonkeyPatch, *, plain: bool) -> tuple[list[Any], int]:
    """Every earlier call as kept (each item and its source, from where it is kept on), and how
    many views were numbered on the plain way."""
    kept: list[Any] = []
    whole = breaks.Sides._whole
    counted = [0]

    def trimmed(self: breaks.MappedCall, start: int, sides: breaks.Sides) -> Any:
        out = breaks.MappedCall.trimmed.__wrapped__(self, start, sides)  # type: ignore[attr-defined]
        if out is not None:
            kept.append([(out.item(n), out.source_at(n)) for n in range(out.start, out.length)])
        return out

    def counting(self: breaks.Sides, view: Any) -> Any:
        counted[0] += 1
        return whole(self, view)

    with monkeypatch.context() as m:
        original = breaks.MappedCall.trimmed
        trimmed.__wrapped__ = original  # type: ignore[attr-defined]
        m.setattr(breaks.MappedCall, "trimmed", trimmed)
        m.setattr(breaks.Sides, "_whole", counting)
        if not plain:
            m.setattr(Prompt, "plain", lambda self: False)
        driver.replay(fixture, options)
    return kept, counted[0]


@pytest.mark.parametrize(
    ("name", "window"),
    [("history", 3000), ("history", None), ("tool_loop_in_flight.yaml", 700), ("tool_loop_in_flight.yaml", None)],
)
def test_r_rpl_9_plain_views_numbered_whole_keep_the_sides_of_the_places_column(
    name: str, window: int | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if name == "history":
        path = tmp_path / "h.json"
        path.write_text(json.dumps(bench_history(160)), encoding="utf-8")
    else:
        path = FIXTURES / name
    fixture = load_fixture(str(path))
    for provider in ("openai", "ollama"):
        options = Options(provider=provider, max_input_tokens=window)
        fast, numbered = _kept(fixture, options, monkeypatch, plain=True)
        slow, none = _kept(fixture, options, monkeypatch, plain=False)
        assert numbered > 0 and none == 0  # each way was taken
        assert fast == slow, (name, window, provider)


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "ollama"])
@pytest.mark.parametrize(("name", "window"), [("history", 3000), ("tool_loop_in_flight.yaml", 700)])
def test_r_rpl_9_a_kept_call_reads_as_its_view(
    provider: str, name: str, window: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each kept item's tokens, role, breakpoint and source, read back from the side table (whose
    parts equal values share), equal the call's own view's."""
    if name == "history":
        path = tmp_path / "h.json"
        path.write_text(json.dumps(bench_history(160)), encoding="utf-8")
    else:
        path = FIXTURES / name
    original = breaks.MappedCall.trimmed
    checked = [0]

    def trimmed(self: breaks.MappedCall, start: int, sides: breaks.Sides) -> Any:
        out = original(self, start, sides)
        if out is not None:
            for n in range(out.start, out.length):
                mine, kept = self.item(n), out.item(n)
                assert kept is not None and mine is not None
                assert kept[1:4] == mine[1:4] and out.source_at(n) == self.source_at(n), (provider, n)
                checked[0] += 1
        return out

    monkeypatch.setattr(breaks.MappedCall, "trimmed", trimmed)
    driver.replay(load_fixture(str(path)), Options(provider=provider, max_input_tokens=window))
    assert checked[0] > 0


def _as_kept(call: Any, start: int, length: int) -> list[str]:
    """Each item from `start` on as a break reads it (key, tokens, role, breakpoint, source), as
    text (an earlier call keeps no item's run)."""
    return [repr((tuple(call.item(n))[:4], call.source_at(n))) for n in range(start, length)]


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "ollama"])
@pytest.mark.parametrize(("limit", "recent"), [(None, None), (40, None), (None, 4), (40, 4)])
def test_r_rpl_9_kept_calls_read_the_same_after_every_later_call(
    provider: str, limit: int | None, recent: int | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The oracle of the shared logs (`earlier.Sides`): every earlier call kept, and every trimmed
    copy of it, read back once the replay is over (after every later call appended its codes to
    the logs, copied pieces again and, with a small `LOG_LIMIT`, started new tables; with a small
    `_RECENT`, looked up old message parts once more or numbered them anew) gives each
    kept item's key, tokens, role, breakpoint and source as the call's own view gave them."""
    from ctxkit.replay import earlier, sidetable

    if limit is not None:
        monkeypatch.setattr(earlier, "LOG_LIMIT", limit)
    if recent is not None:  # message parts looked up: the recent ones, then once more (numbered anew)
        monkeypatch.setattr(sidetable, "_RECENT", recent)
    path = tmp_path / "h.json"
    path.write_text(json.dumps(bench_history(160)), encoding="utf-8")
    made = breaks.MappedCall.trimmed, breaks.Earlier.trimmed
    kept: list[tuple[Any, list[str]]] = []

    def from_view(self: breaks.MappedCall, start: int, sides: breaks.Sides) -> Any:
        out = made[0](self, start, sides)
        if out is not None:
            expected = [
                repr(((str(self.keys[n]), *tuple(self.item(n))[1:4]), self.source_at(n)))  # type: ignore[arg-type]
                for n in range(out.start, len(self.keys))
            ]
            kept.append((out, expected))
        return out

    def from_kept(self: breaks.Earlier, start: int, sides: breaks.Sides) -> Any:
        out = made[1](self, start, sides)
        if out is not None and out is not self:
            kept.append((out, _as_kept(self, out.start, out.length)))  # read before any later call
        return out

    monkeypatch.setattr(breaks.MappedCall, "trimmed", from_view)
    monkeypatch.setattr(breaks.Earlier, "trimmed", from_kept)
    for window in (3000, None):
        kept.clear()
        driver.replay(load_fixture(str(path)), Options(provider=provider, max_input_tokens=window))
        assert len(kept) > 20
        for out, expected in kept:
            assert _as_kept(out, out.start, out.length) == expected, (provider, window)


_SIDES = st.tuples(
    st.integers(0, 3),  # the item: its tokens
    st.sampled_from([None, "user", "assistant"]),  # its role
    st.booleans(),  # its breakpoint
    st.integers(0, 4),  # the working message: its key (the pad when 0)
    st.sampled_from([Kind.USER, Kind.ASSISTANT]),
    st.sampled_from([Origin.MESSAGE, Origin.IN_FLIGHT]),
    st.sampled_from([None, Segment.HISTORY, Segment.LAST_USER]),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_SIDES, max_size=24), max_size=6))
def test_r_rpl_9_codes_read_back_as_their_sides(chunks: list[list[tuple[Any, ...]]]) -> None:
    """`Table.codes` (item by item) gives each item a code that reads back as its side (its
    tokens, role, breakpoint, working message and segment), chunk after chunk into one table, and
    two items the same code exactly when their sides are equal."""
    from types import SimpleNamespace

    from ctxkit.replay import sidetable

    table, seen = sidetable.Table(), dict[int, str]()
    for chunk in chunks:
        items = [Item(f"k{tokens}", tokens, role, mark) for tokens, role, mark, *_ in chunk]
        ws = [
            plainview._PAD
            if key == 0
            else SimpleNamespace(
                key=f"w{key}", kind=kind, origin=origin, file_id=None, source_id=f"m{key}", placeholder=0
            )
            for _, _, _, key, kind, origin, _ in chunk
        ]
        segments = [segment for *_, segment in chunk]
        codes = table.codes(items, ws, segments)
        sides = [
            repr((sidetable._ITEM_SIDE(i), sidetable.W_SIDE(w), s)) for i, w, s in zip(items, ws, segments, strict=True)
        ]
        assert [repr(table[c]) for c in codes] == sides
        for code, side in zip(codes, sides, strict=True):
            assert seen.setdefault(code, side) == side
    assert len(set(seen.values())) == len(seen)  # no two codes for one side


_MESSAGE_PARTS = st.tuples(
    st.sampled_from(["a", "bb", "m:1:a"]),  # the stored message id (the last one looks like a key)
    st.sampled_from(["", "#calls0", "#result1", ":f1"]),  # the key's part
    st.booleans(),  # the key is that message's (else another message's)
    st.sampled_from([Kind.USER, Kind.TOOL]),
    st.sampled_from([Origin.MESSAGE, Origin.TOOL_RESULT]),
    st.sampled_from([None, "f1"]),  # file id
    st.booleans(),  # source id given
)
# per stored message: its key as a plain str that spells a MessageKey (else a MessageKey), its placeholder (0 is
# not False); equal sides are the same object values (the table numbers equal sides once, by ==)
_STYLE: dict[str, tuple[bool, Any]] = {"a": (False, 0), "bb": (True, False), "m:1:a": (False, False)}


_TWO_SHAPES = [
    ("a", "", True, Kind.USER, Origin.MESSAGE, None, True),
    ("m:1:a", "", True, Kind.USER, Origin.MESSAGE, None, True),
]


@settings(max_examples=300, deadline=None)
@given(st.lists(_MESSAGE_PARTS, max_size=30), st.integers(1, 6))
@example(_TWO_SHAPES * 2, 1)  # two messages' parts whose shapes differ only in 0 and False
def test_r_rpl_9_message_parts_read_back_as_their_w_side(parts: list[tuple[Any, ...]], recent: int) -> None:
    """The side table keeps a message part as its source id and a shared shape, the key made again
    (`MessageKey(source, part)`) when it is that message's: each reads back as its `W_SIDE`, by
    value, type and `repr` (a `MessageKey` stays one, a str that spells one stays a str, 0 is not
    False), read after every later part, also when the recent parts are looked up once more or
    numbered anew (small `_RECENT`)."""
    from types import SimpleNamespace

    from ctxkit.history.working import MessageKey
    from ctxkit.replay import sidetable

    table, read = sidetable.Table(), list[tuple[int, Any]]()
    for mid, part, own, kind, origin, file_id, sourced in parts:
        plain, placeholder = _STYLE[mid]
        key: Any = MessageKey(mid if own else mid + "x", part)
        if plain:
            key = str(key)
        source = mid if sourced else None
        w = SimpleNamespace(
            key=key, kind=kind, origin=origin, file_id=file_id, source_id=source, placeholder=placeholder
        )
        sidetable._RECENT, was = recent, sidetable._RECENT
        try:
            (code,) = table.codes([Item("k", 1, "user", False)], [w], [Segment.HISTORY])
        finally:
            sidetable._RECENT = was
        read.append((code, sidetable.W_SIDE(w)))
    for code, expected in read:  # read back after every later part was numbered
        side = table[code][1]
        assert side == expected and repr(side) == repr(expected)
        assert list(map(type, side)) == list(map(type, expected))


def _alike_one_by_one(new: Any, i: int, old: Any, j: int, k: int) -> int:
    """`earlier._alike` item by item: how many items from new's i and old's j (at most k) are both
    definitions, or sit on equal working messages in equal segments; items past both lists (no
    message) are alike to the run's end."""
    for t in range(k):
        x, y = i + t, j + t
        if x < new.lead or y < old.lead:
            if x >= new.lead or y >= old.lead:
                return t
            continue
        a, b = x - new.lead, y - old.lead
        if a >= new.limit and b >= old.limit:
            return k
        if a >= new.limit or b >= old.limit:
            return t
        if new.messages[a] != old.messages[b] or new.segments[a] != old.segments[b]:
            return t
    return k


_PLACES = st.tuples(
    st.integers(0, 2),  # the definitions items
    st.lists(st.tuples(st.integers(0, 2), st.sampled_from([None, Segment.HISTORY, Segment.LAST_USER])), max_size=14),
    st.integers(0, 3),  # items past the list
)


@settings(max_examples=400, deadline=None)
@given(_PLACES, _PLACES, st.data())
def test_r_rpl_9_runs_alike_as_compared_one_by_one(new: Any, old: Any, data: st.DataObject) -> None:
    """`earlier._alike` (segments compared first, then the messages only as far: the runs a plain
    view takes from the last one) equals the items compared one by one, on working messages equal
    but not the same objects, and the same objects."""

    shared = [[n] for n in range(3)]  # the very same message objects on both sides

    def plain(drawn: Any, same: bool) -> Any:
        lead, places, past = drawn
        messages = [shared[m] if same else [m] for m, _ in places]  # lists: equal, not the same object
        limit = data.draw(st.integers(0, len(places)))
        return plainview._Plain(lead, limit, messages, [s for _, s in places]), lead + limit + past

    here, n = plain(new, data.draw(st.booleans()))
    there, m = plain(old, data.draw(st.booleans()))
    i, j = data.draw(st.integers(0, n)), data.draw(st.integers(0, m))
    k = data.draw(st.integers(0, min(n - i, m - j)))
    assert plainview._alike(here, i, there, j, k) == _alike_one_by_one(here, i, there, j, k)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2), st.integers(0, 6), st.integers(0, 3), st.data())
def test_r_rpl_9_placed_items_as_looked_up_one_by_one(lead: int, size: int, past: int, data: st.DataObject) -> None:
    """`_Plain.placed` (two slices when every item sits on a message, else slices and pads) gives
    each item from `lo` to `hi` its working message and segment as looked up one by one: none for
    the definitions and past the assembled list's placed messages."""

    messages, segments = [[n] for n in range(size)], [Segment.HISTORY] * size
    limit = data.draw(st.integers(0, size))
    plain = plainview._Plain(lead, limit, messages, segments)
    lo = data.draw(st.integers(0, lead + limit + past))
    hi = data.draw(st.integers(lo, lead + limit + past))
    inside = [n for n in range(lo, hi) if lead <= n < lead + limit]
    ws, got = plain.placed(lo, hi)
    assert list(ws) == [messages[n - lead] if n in inside else plainview._PAD for n in range(lo, hi)]
    assert list(got) == [segments[n - lead] if n in inside else None for n in range(lo, hi)]


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 12), st.data())
def test_r_rpl_9_an_earlier_call_reads_its_keys_from_a_shared_log_as_from_its_own(n: int, data: st.DataObject) -> None:
    """An `Earlier` whose keys are a shared log (`prefix.Numbers`' log: the call's keys at
    `offset`, other calls' keys before and after them) reads each kept item and the keys from any
    item on exactly as one holding the call's own array does, and so do its trimmed copies (the
    log, longer than the call, is never copied; the own array is, when little of it is left)."""
    from array import array

    from ctxkit.replay import earlier, sidetable

    keys = array("i", data.draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)))
    before = array("i", data.draw(st.lists(st.integers(0, 5), max_size=6)))
    log = before + keys + array("i", data.draw(st.lists(st.integers(0, 5), max_size=6)))
    start = data.draw(st.integers(0, n - 1))
    table, sides = sidetable.Table(), earlier.Sides()
    items = [Item(str(k), 1, "user", False) for k in keys]
    segments: list[Segment | None] = [Segment.HISTORY] * n
    codes = table.codes(items[start:], [plainview._PAD] * (n - start), segments[start:])
    pieces = sidetable._Pieces(table)
    pieces.add(codes, segments[start:], True)
    call = ("u", None, None, "m", ())
    own = earlier.Earlier(start, n, keys, start, pieces.kept(start, 0), table, call)
    logged = earlier.Earlier(start, n, log, len(before) + start, pieces.kept(start, 0), table, call)
    for cut in [start, *data.draw(st.lists(st.integers(start, n), max_size=3))]:
        a, b = own.trimmed(cut, sides), logged.trimmed(cut, sides)
        if a is None or b is None:
            assert a is None and b is None
            break
        assert b.keys is log or len(log) == n  # (a log that holds only this call reads as its own array)
        for m in range(a.start, n + 1):
            assert list(a.keys_from(m)) == list(b.keys_from(m)) == list(keys[m:])
            assert repr(a.item(m)) == repr(b.item(m))
        own, logged = a, b


_SEQ = st.lists(st.integers(0, 4), max_size=16)


@settings(max_examples=400, deadline=None)
@given(_SEQ, _SEQ, _SEQ)
def test_r_rpl_9_composed_runs_are_runs_of_equal_items_in_order(a: list[int], b: list[int], c: list[int]) -> None:
    """`earlier.composed` (the runs of A against C from A's against B and B's against C, for a plain
    view whose last view was dropped whole) gives runs of equal items, in order of both sides and
    apart, and every item of A that a run of B's against C covers through an A-B run is in one."""
    from ctxkit.replay import earlier, prefix

    ab, bc = prefix.runs(a, b), prefix.runs(b, c)
    got = earlier.composed(ab, bc)
    for i, j, k in got:
        assert k > 0 and a[i : i + k] == c[j : j + k]
    for (i, j, k), (x, y, _) in zip(got, got[1:], strict=False):
        assert i + k <= x and j + k <= y
    through = {i + t for i, j, k in ab for t in range(k) if any(p <= j + t < p + m for p, _, m in bc)}
    assert through == {i + t for i, _, k in got for t in range(k)}


@pytest.mark.parametrize("window", [1500, 3000, 8000, None])
def test_r_rpl_9_views_dropped_whole_hand_their_runs_on(
    window: int | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plain view dropped whole (`Sides.skipped`: a later call overtook all of it) hands its columns'
    runs, composed, to the next plain view, which then searches no runs (`equal_runs`), and every kept
    item reads as its own view's (OpenAI: Ollama keeps only the last call)."""
    path, provider = tmp_path / "h.json", "openai"
    path.write_text(json.dumps(bench_history(160)), encoding="utf-8")
    original, searched, skipped = breaks.MappedCall.trimmed, [0], [0]

    def trimmed(self: breaks.MappedCall, start: int, sides: breaks.Sides) -> Any:
        out = original(self, start, sides)
        if out is None:
            skipped[0] += 1
        else:
            for n in range(out.start, out.length):
                mine, kept = self.item(n), out.item(n)
                assert kept is not None and mine is not None
                assert kept[1:4] == mine[1:4] and out.source_at(n) == self.source_at(n), (provider, n)
        return out

    def equal_runs(*args: Any) -> Any:
        searched[0] += 1
        return plainview.equal_runs(*args)

    from ctxkit.replay import earlier

    monkeypatch.setattr(breaks.MappedCall, "trimmed", trimmed)
    monkeypatch.setattr(earlier, "equal_runs", equal_runs)
    driver.replay(load_fixture(str(path)), Options(provider=provider, max_input_tokens=window))
    assert skipped[0] > 0 and searched[0] == 0, (skipped, searched)
