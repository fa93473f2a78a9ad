"""A request's prompt items as values: `Item` (what the provider reads, and its tokens) and
`Prompt` (a request's items in reading order, and where each sits) (R-RPL-4).

Input: the items `translate/items.py` makes and the payload messages they were made from.
Output: `Prompt.items`, the tuple the cache and the break finder read; `Prompt.message(n)` and
`Prompt.source(n)`, item n's payload message and working message, read from the payload
messages when asked (see `translate/items.py` for each field's meaning).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import partial
from itertools import repeat
from operator import attrgetter, is_, itemgetter
from typing import TYPE_CHECKING, NamedTuple, overload

from ctxkit.translate.keys import Key

if TYPE_CHECKING:
    from ctxkit.translate.common import Sent


class Item(NamedTuple):
    """One prompt item (see the module docstring for each field's meaning).

    A named tuple, not a dataclass: replay handles one per message per call, and a tuple is
    made and compared several times faster than a frozen dataclass. It holds no position: the
    same object serves every request that sends the item, wherever it sits (R-RPL-9)."""

    key: Key
    tokens: int
    role: str | None
    breakpoint: bool = False  # the block carries Anthropic's `cache_control` (R-TR-8)
    run: str | None = None  # Anthropic `tool_use` / `tool_result`: a run of these is one lookback position


class Prompt(Sequence[Item]):
    """A request's prompt items in reading order (`items`, a tuple), and where each one sits:
    `message(n)`, its payload message, and `source(n)`, its working message (see the module
    docstring). The places are read from the payload messages when asked, so a request's items
    can be slices of the last request's even where the window moved."""

    __slots__ = ("_columns", "_lead", "_messages", "_plain", "_single", "carried", "items", "placed")

    def __init__(
        self,
        items: tuple[Item, ...],
        lead: int,
        messages: Sequence[Sent],
        placed: int,
        single: bool | None = None,
        plain: bool | None = None,
    ) -> None:
        self.items = items
        self.placed = placed  # the first `placed` wire messages are the assembled list's, in its order
        self._lead, self._messages = lead, messages  # `lead` items (the definitions) come before any message
        self._columns: tuple[list[int | None], list[int]] | None = None
        self._single = single  # one item per payload message (None: not known yet)
        self._plain = plain  # see `plain` (None: not known yet)
        # the last request's items and the runs of them these items are (start here, start there,
        # length), when the item memo took them so (`ItemMemo.carried`): `prefix.Numbers.columns`
        # takes their columns without comparing the items
        self.carried: tuple[tuple[Item, ...], list[tuple[int, int, int]]] | None = None

    def __len__(self) -> int:
        return len(self.items)

    @overload
    def __getitem__(self, index: int) -> Item: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Item, ...]: ...

    def __getitem__(self, index: int | slice) -> Item | tuple[Item, ...]:
        return self.items[index]

    def __iter__(self) -> Iterator[Item]:
        return iter(self.items)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Prompt):
            return NotImplemented
        return self.items == other.items and self.messages() == other.messages() and self.sources() == other.sources()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Prompt({self.items!r}, messages={self.messages()!r}, sources={self.sources()!r})"

    def replaced(self, items: tuple[Item, ...]) -> Prompt:
        """Other items in the same places (a logged body's keys salted by its settings)."""
        return Prompt(items, self._lead, self._messages, self.placed, self._single, self._plain)

    def message(self, n: int) -> int | None:
        """The payload message of item `n` (None: the definitions item)."""
        if n < self._lead:
            return None
        return n - self._lead if self._one_each() else self._places()[0][n]

    def source(self, n: int) -> int | None:
        """The working message (index in the assembled list) item `n` was translated from; None
        for the definitions and for content translation added."""
        if n < self._lead:
            return None
        if self._one_each():
            origins = self._messages[n - self._lead].at(n - self._lead)
            origin = origins[0] if origins else -1
        else:
            origin = self._places()[1][n]
        return origin if 0 <= origin < self.placed else None

    def messages(self) -> list[int | None]:
        """`message(n)` of every item."""
        return list(self._places()[0])

    def origins(self) -> list[int]:
        """Each item's wire message (-1: none); `source` is the ones under `placed`."""
        return list(self._places()[1])

    def sources(self) -> list[int | None]:
        """`source(n)` of every item."""
        placed = self.placed
        return [o if 0 <= o < placed else None for o in self._places()[1]]

    @property
    def lead(self) -> int:
        """How many items (the definitions) come before any message's."""
        return self._lead

    def plain(self) -> bool:
        """Item n past the definitions is payload message n - lead's only item, made from the
        wire message at its own index (OpenAI, Ollama): `source(n)` is n - lead while that is
        under `placed`, so its places need no column."""
        if self._plain is None:
            self._plain = self._one_each() and all(map(_NONE, map(_ORIGINS, self._messages)))
        return self._plain

    def _one_each(self) -> bool:
        """Every payload message holds one item (OpenAI, Ollama): item n is message n - lead's."""
        if self._single is None:
            sizes = set(map(len, map(_PARTS, self._messages)))
            self._single = sizes <= {1} and len(self.items) == self._lead + len(self._messages)
        return self._single

    def _places(self) -> tuple[list[int | None], list[int]]:
        if self._columns is None:
            messages: list[int | None] = [None] * self._lead
            origins = [-1] * self._lead
            given = list(map(_ORIGINS, self._messages))
            if self._one_each() and given.count(None) == len(given):  # each from its own wire message (`Sent.at`)
                messages += range(len(given))
                origins += range(len(given))
                self._columns = messages, origins
                return self._columns
            if self._one_each() and all(given):  # one item and one origin each: both columns in C
                messages += range(len(given))
                origins += map(_FIRST, given)
                self._columns = messages, origins
                return self._columns
            for n, sent in enumerate(self._messages):
                size, own = len(sent.parts), sent.at(n)
                messages += repeat(n, size)
                origins += own[:size] if len(own) >= size else (*own, *repeat(-1, size - len(own)))
            self._columns = messages, origins
        return self._columns


_PARTS, _ORIGINS, _FIRST = attrgetter("parts"), attrgetter("origins"), itemgetter(0)
_NONE = partial(is_, None)
