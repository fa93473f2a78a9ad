"""Replay's rows (one per call), kept compact and made into `CallRow`s when read.

Input: each call's numbers and shared objects as the driver works them out (`CallRows.add`).
Output: `CallRows`, a sequence of `CallRow`s equal to the ones the driver used to make per call.

A replay keeps a row for every call (the report lists them all), so the held form matters at
20,000 messages: a `CallRow` with its own ints and two `Decimal`s held about 400 bytes a call.
`CallRows` holds each call's eight numbers in one `array` (32 bytes) and five references to shared
objects (the user message's id, the clock, the break, the cache limit and the call's `Pricing`,
which works the two costs out when the row is read: the same Decimal arithmetic on the same
numbers). The label is made again from the user message's id and the step. Reading every row
(iterating, a slice) makes the rows once and keeps them: a report reads them several times.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, overload

from ctxkit.history.working import Copier
from ctxkit.replay import breaks, cache
from ctxkit.replay.calls import label
from ctxkit.replay.cost import Pricing


@dataclass(slots=True, unsafe_hash=True)  # hashed as a frozen one is, never changed once made
class CallRow:
    index: int
    user_message: str
    step: int
    label: str  # `m7`, `m7·2`
    on_branch: bool
    clock: datetime | None
    prompt_tokens: int
    prefix_tokens: int
    cached_tokens: int
    cache_write_tokens: int
    output_tokens: int | None
    cost: Decimal | None
    cost_without_cache: Decimal | None
    candidate: int | None
    brk: breaks.Break
    limit: cache.Limit | None
    truncated: bool
    compression_due: bool
    synthetic: bool
    unread_write_tokens: int = 0  # written to the cache, never read by a later call while alive (R-RPL-7)


_new_row = Copier(CallRow).new  # each field set in C, not through `object.__setattr__` calls

_INTS = 8  # prompt, prefix, cached, written, output, candidate, bits, unread written
_REFS = 5  # user message id, clock, break, limit, pricing
# bits: on_branch 1, truncated 2, compression_due 4, synthetic 8, no output 16, no candidate 32; the step above
_STEP = 6


class CallRows(Sequence[CallRow]):
    """The rows of a replay, in call order (a row's index is its position)."""

    __slots__ = ("_big", "_ints", "_made", "_refs")

    def __init__(self) -> None:
        self._ints = array("i")  # 4 bytes a number: a row with a larger one is kept in `_big`
        self._refs: list[Any] = []
        self._big: dict[int, tuple[int, ...]] = {}  # rows with a number past 32 bits (their place in `_ints` is 0s)
        self._made: tuple[CallRow, ...] | None = None

    def add(
        self,
        user_message: str,
        step: int,
        on_branch: bool,
        clock: datetime | None,
        numbers: tuple[int, int, int, int],
        output: int | None,
        pricing: Pricing,
        candidate: int | None,
        brk: breaks.Break,
        limit: cache.Limit | None,
        flags: tuple[bool, bool, bool],
    ) -> None:
        """The next call's row: `numbers` are its prompt, prefix, cached and written tokens,
        `flags` its `truncated`, `compression_due` and `synthetic`."""
        truncated, due, synthetic = flags
        bits = step << _STEP | on_branch | truncated << 1 | due << 2 | synthetic << 3
        if output is None:
            output, bits = 0, bits | 16
        if candidate is None:
            candidate, bits = 0, bits | 32
        ints, row = self._ints, (*numbers, output, candidate, bits, 0)
        try:
            ints.extend(row)
        except OverflowError:  # a number past 32 bits: the row kept as ints beside
            del ints[len(self._refs) // _REFS * _INTS :]
            ints.extend((0,) * _INTS)
            self._big[len(self._refs) // _REFS] = row
        self._refs.extend((user_message, clock, brk, limit, pricing))

    def writes(self) -> Sequence[int]:
        """Each row's `cache_write_tokens`, in order."""
        found = self._ints[3::_INTS]
        if not self._big:
            return found
        writes = list(found)
        for i, row in self._big.items():
            writes[i] = row[3]
        return writes

    def unread(self, index: int, tokens: int) -> None:
        """Row `index`'s `unread_write_tokens` (known once every call is in)."""
        if index in self._big:
            self._big[index] = (*self._big[index][:-1], tokens)
        else:
            self._ints[index * _INTS + _INTS - 1] = tokens

    def __len__(self) -> int:
        return len(self._refs) // _REFS

    @overload
    def __getitem__(self, i: int) -> CallRow: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[CallRow, ...]: ...
    def __getitem__(self, i: int | slice) -> CallRow | tuple[CallRow, ...]:
        if isinstance(i, slice) or self._made is not None:
            return self._all()[i]
        n = len(self)
        if not -n <= i < n:
            raise IndexError("call row index out of range")
        return self._row(i % n)

    def __iter__(self) -> Iterator[CallRow]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CallRows):
            return self._all() == other._all()
        if isinstance(other, tuple):
            return self._all() == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._all())

    def __repr__(self) -> str:
        return repr(self._all())

    def _all(self) -> tuple[CallRow, ...]:
        if self._made is None:
            self._made = tuple(map(self._row, range(len(self))))
        return self._made

    def _row(self, i: int) -> CallRow:
        at = i * _INTS
        big = self._big
        numbers = big[i] if big and i in big else self._ints[at : at + _INTS]
        prompt, prefix, cached, written, output, candidate, bits, unread = numbers
        user, clock, brk, limit, pricing = self._refs[i * _REFS : i * _REFS + _REFS]
        cost, without = pricing.costs(prompt, cached, written, output)
        step = bits >> _STEP
        return _new_row(
            i,
            user,
            step,
            label(user, step),
            bool(bits & 1),
            clock,
            prompt,
            prefix,
            cached,
            written,
            None if bits & 16 else output,
            cost,
            without,
            None if bits & 32 else candidate,
            brk,
            limit,
            bool(bits & 2),
            bool(bits & 4),
            bool(bits & 8),
            unread,
        )
