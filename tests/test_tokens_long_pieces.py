"""Adversarial texts for the plain-Python counter (issue 19 item 5): a long run of one
character class is one pre-tokenizer piece, and merging a piece in plain Python costs the
square of its length. The plain path declines such texts and tiktoken counts them; the
counts are the same either way. Time is measured by `make bench`, not here: these tests
bound the work (bytes merged) instead."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxkit.counting import bpe, tokens

ENCODINGS = ("cl100k_base", "o200k_base")

# One character of each class the patterns treat as a run: letters (Latin, CJK, Hangul),
# digits, spaces, newlines, punctuation, emoji, a combining mark.
RUN_CHARACTERS = ["y", "A", "中", "한", "7", " ", "\n", "-", "!", "🙂", "\u0301", "é"]
ADVERSARIAL = [
    "y" * 20_000,
    "中" * 6_000,
    "ab" + "q" * 5_000 + " tail",
    " " * 3_000 + "x",
    "-" * 4_000,
    "\n" * 2_000,
    " ".join("q" * 255 for _ in range(60)),  # many pieces just under MAX_PIECE: the work bound
]


@functools.cache
def _encoding(name: str) -> Any:
    return tokens._load_encoding(name, tokens._ranks(name))


@contextlib.contextmanager
def merges() -> Iterator[list[int]]:
    """The byte length of every piece the plain path merges meanwhile."""
    lengths: list[int] = []
    merge = bpe._merge

    def recording(data: bytes, ranks: dict[bytes, int]) -> list[bytes]:
        lengths.append(len(data))
        return merge(data, ranks)

    bpe._merge = recording
    try:
        yield lengths
    finally:
        bpe._merge = merge


def assert_within_bounds(lengths: list[int]) -> None:
    assert max(lengths, default=0) <= bpe.MAX_PIECE
    assert sum(n * n for n in lengths) <= bpe.MERGE_WORK


@pytest.mark.parametrize("name", ENCODINGS)
@pytest.mark.parametrize("text", ADVERSARIAL, ids=lambda text: f"{text[:3]!r}x{len(text)}")
def test_long_single_class_runs_count_as_tiktoken_counts_them(name: str, text: str) -> None:
    """A fresh counter (plain path first) gives tiktoken's exact count; the plain path
    declined the text, having merged no piece over MAX_PIECE bytes and at most MERGE_WORK."""
    counter = tokens._Tiktoken(name)
    with merges() as lengths:
        assert counter.count(text) == len(_encoding(name).encode_ordinary(text))
    assert counter._encoding is not None  # declined: tiktoken counted it
    assert_within_bounds(lengths)


@pytest.mark.parametrize("name", ENCODINGS)
def test_plain_path_still_counts_pieces_up_to_max_piece(name: str) -> None:
    """The bound declines only what it must: a piece of exactly MAX_PIECE bytes is merged
    in plain Python (and counted as tiktoken counts it), one byte more is declined."""
    plain = bpe.PlainBPE(tokens._ranks(name), tokens._SPECS[name].pat_str)
    at_bound = "q" * bpe.MAX_PIECE
    assert plain.count(at_bound) == len(_encoding(name).encode_ordinary(at_bound))
    assert plain.count(at_bound + "q") is None


runs = st.tuples(st.sampled_from(RUN_CHARACTERS), st.integers(1, 3_000)).map(lambda pair: pair[0] * pair[1])
filler = st.text(st.sampled_from(list("ab c.\n1é中")), max_size=12)


@pytest.mark.parametrize("name", ENCODINGS)
@settings(max_examples=60, deadline=None)
@given(parts=st.lists(runs | filler, min_size=1, max_size=6))
def test_texts_with_long_runs_count_exactly_within_the_work_bound(name: str, parts: list[str]) -> None:
    """Generated: runs of one character class (up to 3,000 long) between short texts. The
    plain path gives tiktoken's count or declines, and never merges more than its bound."""
    text = "".join(parts)
    plain = bpe.PlainBPE(tokens._ranks(name), tokens._SPECS[name].pat_str)
    with merges() as lengths:
        count = plain.count(text)
    assert count in (len(_encoding(name).encode_ordinary(text)), None)
    assert_within_bounds(lengths)
