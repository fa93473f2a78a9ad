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
from pathlib import Path
from typing import Any

import pytest

from ctxkit.history.working import Call, Kind, Working
from ctxkit.loading.config import Options
from ctxkit.loading.read import load_fixture
from ctxkit.replay import driver
from ctxkit.translate.memo import TranslationMemo

from .helpers import bench_history


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
