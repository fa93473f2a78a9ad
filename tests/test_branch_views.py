"""R-RPL-9: a branch is a view over its root path, never a copy, and never changes afterwards.

`tree.Paths` hands each call's path as a `Stretch` of one list it only appends to; a path that
leaves the last one below its end starts a new list. So a branch kept from an earlier call (a
report keeps every call's result) still reads the path it was selected on, and every part of it
equals what slicing a fresh copy of the path gives.
"""

from __future__ import annotations

import random
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import pytest

from ctxkit.history import tree
from ctxkit.loading.domain import Fixture, Role, StoredMessage
from ctxkit.loading.read import load_fixture

from .conftest import FIXTURES, GALLERY

REPLAY_GALLERY = sorted((FIXTURES / "replay").glob("*.yaml"))


def _parts(b: tree.Branch) -> tuple[tuple[object, ...], ...]:
    return tuple(map(tuple, (b.path, b.summarized, b.live, b.after_last_user, b.after_cutoff))) + (
        (b.summary, b.last_user),
    )


def _leaves(fixture: Fixture) -> list[str]:
    """Every stored message as a leaf, in an order that climbs, branches off and comes back."""
    ids = [m.id for m in fixture.messages if m.role.value != "summary"]
    return ids + ids[::-1] + ids[::2] + ids[1::2]


@pytest.mark.parametrize("path", GALLERY + REPLAY_GALLERY, ids=lambda p: p.name)
def test_branches_from_shared_paths_equal_fresh_ones_and_stay_as_given(path: Path) -> None:
    fixture = load_fixture(str(path))
    paths = tree.Paths()
    given: list[tuple[tree.Branch, tuple[tuple[object, ...], ...]]] = []
    for leaf in _leaves(fixture):
        shared = tree.select(fixture, leaf, paths=paths)
        fresh = tree.select(fixture, leaf)
        assert _parts(shared) == _parts(fresh), leaf
        given.append((shared, _parts(fresh)))
    for branch, parts in given:  # later selections moved the shared path: the views did not move
        assert _parts(branch) == parts


def test_a_stretch_reads_like_the_tuple_it_stands_for() -> None:
    fixture = load_fixture(str(FIXTURES / "replay" / "branch.yaml"))
    messages = tuple(fixture.messages)
    whole = tree.Stretch(list(messages))
    for start, stop in pairwise([0, 1, 3, len(messages)]):
        part = whole[start:stop]
        assert tuple(part) == messages[start:stop] and len(part) == stop - start
        assert tuple(reversed(part)) == messages[start:stop][::-1]
        assert part == messages[start:stop] and tuple(part[1:]) == messages[start:stop][1:]
        assert [part[i] for i in range(-len(part), len(part))] == list(messages[start:stop] * 2)
        with pytest.raises(IndexError):
            part[len(part)]
    assert tuple(whole[-2:]) == messages[-2:] and tuple(whole[5:2]) == ()


@pytest.mark.parametrize("seed", range(10))
def test_ancestry_by_entry_numbers_equals_walking_up(seed: int) -> None:
    """R-RPL-6's branch cause asks whether one stored message is above another: `Ancestry`'s
    entry numbers answer as walking up the parents does, for every pair of a random tree (half
    of them mostly linear, as histories are: the walk follows runs of only children)."""
    rng = random.Random(seed)
    messages = []
    for n in range(40):
        linear = seed % 2 and rng.random() < 0.8
        parent = (f"m{n - 1}" if linear else f"m{rng.randrange(n)}") if n and rng.random() < 0.9 else None
        messages.append(StoredMessage(id=f"m{n}", role=Role.USER, parent=parent, index=n, text="t"))
    fixture = replace(load_fixture(str(FIXTURES / "replay" / "branch.yaml")), messages=tuple(messages))
    parents = {m.id: m.parent for m in messages}
    ancestry = tree.Ancestry(fixture)
    for a in parents:
        for b in parents:
            node: str | None = b
            walked = False
            while node is not None and not walked:
                walked, node = node == a, parents[node]
            assert ancestry.above(a, b) == walked, (a, b)
    assert not ancestry.above("m1", "nowhere") and not ancestry.above("nowhere", "m1")
