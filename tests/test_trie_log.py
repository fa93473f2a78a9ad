"""R-RPL-5, R-RPL-9: the trie's edges may hold a replay's key numbers as runs of one append-only
log (`trie.Trie.insert(..., log)`: the prompt's keys from item `lo` on are the log's from `at + lo`
on, and an edge made from `lo` on holds its run there, not the prompt's own array). The log is only
where the keys sit: every walk and every insert (the calls overtaken, and down to which depth) must
be the ones the same trie gives on the prompts' own keys, on windows that slide, grow, jump back and
repeat keys, and every edge's run must be the prompt's keys at its depth, after every later call.
"""

from __future__ import annotations

from array import array
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxkit.replay.trie import LEAF, Edge, Trie


def _steps() -> Any:
    """Each prompt drops a few leading items of an earlier one (the last, mostly), keeps the rest
    up to some length, and adds a few items from a small alphabet (repeated keys); each is placed
    in the log from some item `lo` on, at a place found earlier in the log when there is one."""
    step = st.tuples(
        st.integers(0, 3),  # which earlier prompt it starts from (0: the last)
        st.integers(0, 3),  # items dropped after the first
        st.integers(0, 30),  # items kept
        st.lists(st.integers(0, 6), max_size=5),  # items added
        st.integers(0, 40),  # lo (at most the prompt's length)
        st.booleans(),  # its keys from lo on looked for in the log first (else appended)
    )
    return st.lists(step, min_size=1, max_size=24)


def _runs(trie: Trie, prompt: list[int]) -> None:
    """Every edge on the prompt's path holds the prompt's keys at its depth (as far as it goes)."""
    edge: Edge = trie.root
    depth = 0
    while depth < len(prompt):
        edge = edge.children[prompt[depth]]
        run = min(edge.end - edge.start, len(prompt) - depth)  # it may end inside the edge
        assert list(edge.keys[edge.start : edge.start + run]) == prompt[depth : depth + run]
        depth += run


def _placed(log: array[int], keys: list[int], lo: int, look: bool) -> int:
    """Where `keys[lo:]` sits in the log, appended when not found (or not looked for): `at`, with
    keys[x] == log[at + x] from lo on."""
    rest = keys[lo:]
    if look and rest:
        for p in range(len(log) - len(rest) + 1):
            if list(log[p : p + len(rest)]) == rest:
                return p - lo
    at = len(log) - lo
    log.extend(rest)
    return at


@settings(max_examples=400, deadline=None)
@given(_steps(), st.integers(0, 24))
def test_r_rpl_9_trie_edges_in_a_shared_log_give_the_walks_and_inserts_of_the_prompts_own_keys(
    steps: list[tuple[int, int, int, list[int], int, bool]], probe: int
) -> None:
    logged, own, log = Trie(), Trie(), array("i")
    prompts: list[list[int]] = []
    last: list[int] = []
    for index, (back, drop, keep, added, lo, look) in enumerate(steps):
        base = prompts[-1 - min(back, len(prompts) - 1)] if prompts else []
        prompt = base[:1] + base[1 + drop : 1 + drop + keep] + added  # the system prompt stays
        prompts.append(prompt)
        shared = 0
        while shared < min(len(prompt), len(last)) and prompt[shared] == last[shared]:
            shared += 1
        lo = min(lo, len(prompt))
        at = _placed(log, prompt, lo, look)
        numbers, keys = array("i", prompt), tuple(prompt)
        assert logged.walk(numbers, 0, shared) == own.walk(keys, 0, shared), (index, prompts)
        got = logged.insert(index, numbers, shared, (log, at, lo))
        assert list(got.items()) == list(own.insert(index, keys, shared).items()), (index, prompts)
        for earlier in prompts:
            _runs(logged, earlier)
        again = prompts[min(probe, index)]
        assert logged.walk(array("i", again), 0) == own.walk(tuple(again), 0), (index, prompts)
        last = prompt
    assert not LEAF  # the leaves' shared children: never written


def test_r_rpl_9_a_sliding_window_keeps_no_prompt_array_in_the_trie() -> None:
    """Each prompt drops the oldest item after the system prompt and adds one, placed in the log
    from item 1 on (its keys but the new one are the last prompt's from its second item on): the
    log grows by one key a call, every edge the later calls made holds the log, and each edge's run
    is the prompt's."""
    trie, log = Trie(), array("i")
    for index in range(40):
        prompt = array("i", [1000, *range(index, index + 60)])
        if index == 0:
            log.extend(prompt[1:])
            at = -1
        else:
            log.append(prompt[-1])
            at = len(log) - 60 - 1
        trie.insert(index, prompt, 1 if index else 0, (log, at, 1))
        _runs(trie, list(prompt))
    assert not LEAF
    assert len(log) == 60 + 39
    top = trie.root.children[1000]
    assert len(top.children) == 40 and sum(e.keys is log for e in top.children.values()) == 39  # all but call 0's
