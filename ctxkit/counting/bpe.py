"""Exact token counts in plain Python: verified ranks + the encoding's pattern → counts.

Input: the mergeable ranks and the pre-tokenizer pattern of a tiktoken encoding.
Output: `PlainBPE.count(text)`, equal to `len(encoding.encode_ordinary(text))` (a
property test holds it to tiktoken), or None for a text it leaves to tiktoken.
Building tiktoken's encoding costs more than a hundred milliseconds before the first
token (its Rust side converts and indexes the whole vocabulary); counting here costs
nothing up front and, per character, about twice tiktoken's time on new words and
about 1.3× once words recur (each piece's count is remembered for the run). `tokens.py` counts
here until a run has counted enough text that building tiktoken's encoding pays off.

The algorithm is BPE as tiktoken runs it: split the text with the pattern; a piece
that is a token counts 1; otherwise start from single bytes and repeatedly merge the
adjacent pair whose concatenation has the lowest rank (the leftmost on a tie) until
no adjacent pair is a token.

Merging a piece of n bytes here costs about n² steps, and one piece can be as long as
a run of one character class (20,000 letters, a page of CJK text, a line of dashes),
so the plain path is bounded by work, not by characters: a piece over MAX_PIECE bytes,
or a text whose pieces would take more than MERGE_WORK squared bytes of merging, is
declined (None) and tiktoken, whose merging is fast at any length, counts it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from itertools import accumulate

# Blocks whose pre-tokenizer classes (letter, number, mark, space) the `regex` module
# and tiktoken's Rust regex are checked to agree on, code point by code point
# (tests/test_tokens.py): old, stable blocks. A text with any other character is left
# to tiktoken, since the two libraries may carry different Unicode versions.
VERIFIED = (
    (0x0000, 0x07FF),  # Latin, Greek, Cyrillic, Armenian, Hebrew, Arabic, ...
    (0x1E00, 0x1EFF),  # Latin Extended Additional
    (0x2000, 0x2BFF),  # punctuation, symbols, arrows, mathematical operators
    (0x3000, 0x9FFC),  # CJK symbols, kana, CJK ideographs
    (0xAC00, 0xD7A3),  # Hangul syllables
    (0xFF00, 0xFFEF),  # half- and full-width forms
    (0x1F000, 0x1FAFF),  # emoji and pictographs
)
_MEMO_SIZE = 200_000  # pieces remembered per encoding (a few MB at most)
_MEMO_PIECE = 64  # longer pieces (long runs of spaces or digits) rarely recur
MAX_PIECE = 256  # bytes: ~20 ms of merging; longer pieces go to tiktoken
MERGE_WORK = 1 << 19  # squared bytes merged per text (~0.15 s): past it, tiktoken counts the text

Split = Callable[[str], list[str]]


class PlainBPE:
    def __init__(self, ranks: dict[bytes, int], pattern: str) -> None:
        import re

        from ctxkit.counting.classes import explicit

        self.ranks = ranks
        # The pattern's classes written out as ranges of the verified blocks (`classes`), for
        # `re`: on a text within them it splits as `regex` would, in about a third of the time,
        # and a character outside them is matched by no class, so the pieces fall short.
        self._split: Split = re.compile(explicit(pattern)).findall
        self._big: Callable[[str], str] | None = None  # CJK and Hangul letters -> classes.STAND_IN
        self._counts: dict[str, int] = {}  # piece -> its token count: words recur, merging is the slow part

    def _pieces(self, text: str) -> list[str] | None:
        """The pre-tokenizer's pieces of `text`, or None when a character is outside VERIFIED."""
        pieces = self._split(text)
        if text.isascii() or sum(map(len, pieces)) == len(text):
            return pieces
        if self._big is None:
            import re

            from ctxkit.counting.classes import STAND_IN, big_class

            self._big = functools.partial(re.compile(big_class()).sub, STAND_IN)
        stand_in = self._big(text)  # every class treats these letters alike: the same cuts
        pieces = self._split(stand_in)
        if sum(map(len, pieces)) != len(text):
            return None  # a character outside VERIFIED
        ends = list(accumulate(map(len, pieces)))
        return list(map(text.__getitem__, map(slice, [0, *ends[:-1]], ends)))

    def count(self, text: str) -> int | None:
        """The exact count, or None for a text left to tiktoken: a character outside the
        verified blocks, a piece over MAX_PIECE bytes, or more than MERGE_WORK of merging."""
        pieces = self._pieces(text)
        if pieces is None:
            return None
        ranks, counts = self.ranks, self._counts
        total, work = 0, MERGE_WORK
        for piece in pieces:
            n = counts.get(piece)
            if n is None:
                data = piece.encode("utf-8")
                if data in ranks:
                    n = 1
                else:
                    work -= len(data) ** 2
                    if len(data) > MAX_PIECE or work < 0:
                        return None
                    n = len(_merge(data, ranks))
                if len(piece) <= _MEMO_PIECE and len(counts) < _MEMO_SIZE:
                    counts[piece] = n
            total += n
        return total

    def token_bytes(self, text: str) -> list[bytes]:
        """The tokens of a text, as bytes (for tests: stricter than comparing counts)."""
        return [token for piece in self._pieces(text) or () for token in _merge(piece.encode("utf-8"), self.ranks)]


def _merge(data: bytes, ranks: dict[bytes, int]) -> list[bytes]:
    """Byte-pair merging of one piece: the tokens it leaves, in order."""
    parts = [data[i : i + 1] for i in range(len(data))]
    while len(parts) > 1:
        best, best_rank = -1, 0
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and (best < 0 or rank < best_rank):
                best, best_rank = i, rank
        if best < 0:
            break
        parts[best : best + 2] = [parts[best] + parts[best + 1]]
    return parts
