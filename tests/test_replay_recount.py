"""R-RPL-9: the key counts `prefix.Numbers` carries from call to call, on windows that slide
(each key that left sent once, each key that joined new: `prefix._slid`, counted in C) and on
windows that do not, equal the counts worked out afresh from the two calls' keys: the surplus
keys, the repeated ones, and the tokens of the keys the last call never sent (`fresh_last`)."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from ctxkit.replay import prefix
from ctxkit.translate.items import Item


@pytest.mark.parametrize("seed", range(6))
def test_r_rpl_9_counts_carried_on_sliding_windows_equal_the_counts_afresh(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    slid = prefix._slid
    taken: Counter[bool] = Counter()

    def counted(*args: object) -> bool:
        out = slid(*args)  # type: ignore[arg-type]
        taken[out] += 1
        return out

    monkeypatch.setattr(prefix, "_slid", counted)
    # mostly distinct keys, some sent again later or twice in a row, some with other tokens
    stream = [Item(f"k{rng.randrange(400)}", rng.randrange(1, 60), "user") for _ in range(600)]
    numbers = prefix.Numbers()
    start, before = 0, Counter[int]()
    for _ in range(250):
        start = min(start + rng.choice([0, 0, 1, 2, 3, 9]), len(stream) - 40)
        size = rng.randrange(5, 40)
        prompt = [Item("s", 7, "system"), *stream[start : start + size]]
        if rng.random() < 0.2:
            prompt.append(prompt[rng.randrange(len(prompt))])  # a key sent twice
        if rng.random() < 0.2:
            prompt.append(Item(f"q{rng.randrange(3)}", rng.randrange(1, 9), "user"))  # a question sent again
        cols = numbers.columns(tuple(prompt))
        keys = list(cols.keys)
        now = Counter(keys)
        more = {key: now[key] - before[key] for key in now if now[key] > before[key]}
        assert sorted(cols.surplus) == sorted(more.items())
        assert cols.repeated == {key for key in now if now[key] > 1}
        assert cols.fresh_last == sum(t for k, t in zip(keys, cols.tokens, strict=True) if k not in before)
        assert sorted(cols.unplaced) == sorted((k, n) for k, n in more.items() if k in before)
        assert cols.total == sum(cols.tokens)
        before = now
    assert taken[True] > 50 and taken[False] > 20  # both ways were taken
