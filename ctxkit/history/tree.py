"""The stored tree: the branch, the summary that applies to it, the call being rebuilt.

Input: `domain.Fixture` and the leaf to use (or None). Output: `Branch` — the
path root → leaf (R-TREE-1/2), the applicable summary and what it removes
(R-TREE-3), and the split at the last user message (R-TURN-1); `Ancestry`, whether one stored
message is above another (replay's branch cause, R-RPL-6).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter
from typing import overload

from ctxkit.loading.domain import Fixture, Role, StoredMessage

_id_of, _index_of = attrgetter("id"), attrgetter("index")
_SUMMARY, _USER = Role.SUMMARY, Role.USER  # module names: an enum class attribute costs more than a loop step (3.11)


class Stretch(Sequence[StoredMessage]):
    """`messages[start:stop]` without the copy: a branch's parts are stretches of one root path,
    and a replay's calls (thousands, each on a path as long as the history) slice them every call.

    The list under it is never changed where a stretch can see it: `Paths` only appends to it, and
    starts a new list where a path leaves the last one."""

    __slots__ = ("_of", "_start", "_stop")

    def __init__(self, of: Sequence[StoredMessage], start: int = 0, stop: int | None = None) -> None:
        self._of, self._start = of, start
        self._stop = len(of) if stop is None else stop

    def __len__(self) -> int:
        return self._stop - self._start

    def part(self, start: int, stop: int) -> Stretch:
        """`self[start:stop]` for `0 <= start` and `stop <= len(self)` (the slice without its
        general bounds arithmetic: a replay's calls take a few parts each)."""
        return Stretch(self._of, self._start + start, self._start + max(start, stop))

    @property
    def under(self) -> tuple[Sequence[StoredMessage], int, int]:
        """The list under the stretch and where the stretch runs on it: `(of, start, stop)`."""
        return self._of, self._start, self._stop

    @overload
    def __getitem__(self, i: int) -> StoredMessage: ...
    @overload
    def __getitem__(self, i: slice) -> Stretch: ...
    def __getitem__(self, i: int | slice) -> StoredMessage | Stretch:
        if isinstance(i, slice):
            start, stop, step = i.indices(self._stop - self._start)
            if step != 1:
                raise ValueError("a stretch is sliced with step 1 only")
            return Stretch(self._of, self._start + start, self._start + max(start, stop))
        n = i + self._stop if i < 0 else i + self._start
        if not self._start <= n < self._stop:
            raise IndexError(i)
        return self._of[n]

    def __iter__(self) -> Iterator[StoredMessage]:
        return map(self._of.__getitem__, range(self._start, self._stop))

    def __reversed__(self) -> Iterator[StoredMessage]:
        return map(self._of.__getitem__, range(self._stop - 1, self._start - 1, -1))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a is b or a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Stretch({list(self)!r})"


@dataclass(slots=True, unsafe_hash=True)  # hashed as a frozen one is, never changed once made (one per question)
class Branch:
    """The path root → leaf and its parts, each a `Stretch` of it (no copies)."""

    path: Stretch  # root → leaf, non-summary messages only
    summary: StoredMessage | None  # the applicable summary node (R-TREE-3)
    cut: int  # path[:cut] is what the summary removes
    last: int | None  # the last user message's index on `path` (R-TURN-1); None: there is none after the cut

    @property
    def summarized(self) -> Stretch:
        """Branch messages the summary removes."""
        return self.path.part(0, self.cut)

    @property
    def live(self) -> Stretch:
        """After the cutoff, up to the last user message."""
        return self.path.part(self.cut, len(self.path) if self.last is None else self.last + 1)

    @property
    def after_last_user(self) -> Stretch:
        """R-TURN-1: the branch messages after the last user message."""
        return self.path[len(self.path) if self.last is None else self.last + 1 :]

    @property
    def last_user(self) -> StoredMessage | None:
        path = self.path  # read off the list under it (`last` is within the path)
        return None if self.last is None else path._of[path._start + self.last]

    @property
    def after_cutoff(self) -> Stretch:
        """Every branch message after the summary's cutoff, the leaf included."""
        return self.path[self.cut :]


def default_leaf(fixture: Fixture) -> str | None:
    """R-TREE-2: from the root, always take the latest non-summary child."""
    path = default_path(fixture)
    return path[-1].id if path else None


def default_path(fixture: Fixture) -> tuple[StoredMessage, ...]:
    """R-TREE-2's walk itself: the messages from the root to the default leaf.

    Linear in the stored messages (100,000 in the scale benchmark).
    """
    children = {m.parent: m for m in fixture.messages if m.role is not _SUMMARY}  # later in file order wins
    child = children.get
    node = child(None)
    path: list[StoredMessage] = []
    append = path.append
    for _ in range(len(children)):  # ids are unique and parents acyclic (R-FIX-1): a longer walk would be a cycle
        if node is None:
            break
        append(node)
        node = child(node.id)
    return tuple(path)


def path_to(fixture: Fixture, leaf: str | None) -> tuple[StoredMessage, ...]:
    """R-TREE-1: the messages from the root to `leaf`."""
    if leaf is None:
        return ()
    by_id = {m.id: m for m in fixture.messages}
    path: list[StoredMessage] = []
    node: StoredMessage | None = by_id[leaf]
    while node is not None:
        path.append(node)
        node = by_id[node.parent] if node.parent is not None else None
    path.reverse()
    return tuple(path)


class Paths:
    """Branch lookups shared by the calls of one replay (R-RPL-9): one id index and summary list
    per message tuple, and the last path with each message's position on it, which the next
    call's path usually extends (walking up from the new leaf stops where it meets it). Each path
    is given as a `Stretch` of one list that is only appended to: a path that leaves the last one
    below its end starts a new list, so the stretches given before never change.

    A message's position on a root path is its depth in the tree, the same on every path that
    holds it: it is kept by the message's `index` in an array (4 bytes a stored message, not a
    dict entry and an int), written when the message joins a path and never removed; a position
    read back counts only while the last path holds that very message there."""

    def __init__(self) -> None:
        self._messages: tuple[StoredMessage, ...] | None = None
        self._by_id: dict[str | None, StoredMessage] = {}  # (no message has the id None)
        self._summaries: list[StoredMessage] = []
        self._path: list[StoredMessage] = []  # the last path is `_path[:_end]`
        self._end = 0
        self._depth = array("i")  # by `StoredMessage.index`: its position on the paths given (-1: none yet)

    def _index(self, fixture: Fixture) -> None:
        if fixture.messages is self._messages:
            return
        by_id: dict[str | None, StoredMessage] = {m.id: m for m in fixture.messages}
        self._by_id = by_id
        # distinct indexes (replay's planner checks them: `indexes`), the synthetic summaries' past the fixture's
        size = max(map(_index_of, fixture.messages), default=-1) + 1
        if len(self._depth) < size:
            self._depth.extend(repeat(-1, size - len(self._depth)))
        if not all(by_id.get(m.id) is m for m in self._path[: self._end]):  # replay only hides or adds summaries
            self._path, self._end = [], 0
        self._messages = fixture.messages
        self._summaries = [m for m in fixture.messages if m.role is Role.SUMMARY]

    def index(self, message_id: str | None) -> int | None:
        """The message's index on the last path given, if it is on it."""
        m = self._by_id.get(message_id)
        if m is None:
            return None
        at = self._depth[m.index]
        return at if 0 <= at < self._end and self._path[at] is m else None

    def extends(self, path: Sequence[StoredMessage]) -> bool:
        """Whether the last path given starts with the root path `path` (then `index` gives the
        positions on `path` too: root paths that share a message share everything above it)."""
        n = len(path)
        return n <= self._end and (n == 0 or self._path[n - 1] is path[n - 1])

    def select(
        self, fixture: Fixture, leaf: str | None
    ) -> tuple[Stretch, Callable[[str | None], int | None], list[StoredMessage]]:
        """The path to `leaf`, each id's position on it (`index`), and the fixture's summary nodes."""
        if fixture.messages is not self._messages:
            self._index(fixture)
        if leaf is None:
            return Stretch(()), _nowhere, self._summaries
        by_id, path, depth, end = self._by_id, self._path, self._depth, self._end
        climbed: list[StoredMessage] = []
        node: StoredMessage | None = by_id[leaf]
        while node is not None:
            at = depth[node.index]
            if 0 <= at < end and path[at] is node:
                break
            climbed.append(node)
            node = by_id[node.parent] if node.parent is not None else None
        keep = depth[node.index] + 1 if node is not None else 0
        if climbed and keep < len(path):  # the list past `keep` may be seen by earlier stretches
            path = self._path = path[:keep]
        for m in reversed(climbed):
            depth[m.index] = len(path)
            path.append(m)
        self._end = keep + len(climbed)
        return Stretch(path, 0, self._end), self.index, self._summaries


def select(fixture: Fixture, leaf: str | None, *, paths: Paths | None = None) -> Branch:
    at: Callable[[str | None], int | None]  # a message's position on the path
    if paths is not None:
        path, at, candidates = paths.select(fixture, leaf if leaf is not None else default_leaf(fixture))
    else:
        path = Stretch(default_path(fixture) if leaf is None else path_to(fixture, leaf))
        candidates = [m for m in fixture.messages if m.role is _SUMMARY]
        positions: dict[str | None, int] = {m.id: i for i, m in enumerate(path)} if candidates else {}
        at = positions.get  # only summaries ask
    summary = None
    for m in candidates:
        if at(m.parent) is not None:
            summary = m  # the latest in file order applies
    cut = 0
    if summary is not None and (through := at(summary.summarizes_through)) is not None:
        cut = through + 1
    of, start, _ = path.under
    last = None
    for i in range(len(path) - 1, cut - 1, -1):  # the leaf, most calls
        if of[start + i].role is _USER:
            last = i
            break
    return Branch(path, summary, cut, last)


def _nowhere(message_id: str | None) -> None:
    """No message is on the empty path."""
    return None


def indexes(fixture: Fixture) -> dict[str, int]:
    """Each stored message's `index` by its id: the one id index a replay's planner and its
    ancestry tests share (its values are the messages' own ints); positions and numbers are then
    kept in arrays by index (`OnPath`, `Ancestry`)."""
    found = dict(zip(map(_id_of, fixture.messages), map(_index_of, fixture.messages), strict=True))
    if len(set(found.values())) != len(found) or min(found.values(), default=0) < 0:
        raise ValueError("stored messages need distinct `index` values (their position in the fixture)")
    return found


class OnPath:
    """Each message's position on one root path, read by id (`position[id]`, `id in position`,
    `get`): an array by message index beside the shared id index (`indexes`), 4 bytes a stored
    message instead of a dict entry and an int."""

    __slots__ = ("_at", "_ids")

    def __init__(self, path: Sequence[StoredMessage], ids: dict[str, int]) -> None:
        self._ids = ids
        self._at = at = array("i", [-1]) * (max(ids.values(), default=-1) + 1)
        for i, m in enumerate(path):
            at[m.index] = i  # `ids[m.id]`

    def get(self, message_id: str | None) -> int | None:
        n = self._ids.get(message_id) if message_id is not None else None
        if n is None:
            return None
        at = self._at[n]
        return at if at >= 0 else None

    def __contains__(self, message_id: object) -> bool:
        n = self._ids.get(message_id) if isinstance(message_id, str) else None
        return n is not None and self._at[n] >= 0

    def __getitem__(self, message_id: str | None) -> int:
        at = self._at[self._ids[message_id]] if message_id is not None else -1  # KeyError: not a message
        if at < 0:
            raise KeyError(message_id)
        return at


class Ancestry:
    """Ancestor tests on the stored tree in O(1), from one depth-first walk: each message's number
    in the walk's entry order, and for each number the last number within its subtree (by message
    index, beside the shared id index: two arrays of 4 bytes a message)."""

    def __init__(self, fixture: Fixture, ids: dict[str, int] | None = None) -> None:
        """`ids`: `indexes(fixture)`, when the caller has it."""
        self._ids = ids = indexes(fixture) if ids is None else ids
        children: dict[str | None, list[str]] = {}
        parent: dict[str, str | None] = {}
        for m in fixture.messages:
            if m.role is not _SUMMARY:
                children.setdefault(m.parent, []).append(m.id)
                parent[m.id] = m.parent
        order: list[str] = []  # the walk's entry order
        visit, kids = order.append, children.get
        stack = children.get(None, [])[::-1]
        while stack:
            node: str | None = stack.pop()
            while node is not None:  # down the first children (a linear history: one run), the others stacked
                visit(node)
                below = kids(node)
                if below is None:
                    node = None
                else:
                    if len(below) > 1:
                        stack += below[:0:-1]
                    node = below[0]
        number: dict[str, int] = dict(zip(order, range(len(order)), strict=True))  # id → entry number (while built)
        self._entry = entry = array("i", [-1]) * (max(ids.values(), default=-1) + 1)  # message index → entry number
        for node, n in number.items():
            entry[ids[node]] = n
        # entry number → the last entry number of its subtree: a subtree's entries follow its root's,
        # so walking back, each entry's last is final before it is handed to its parent
        self._last = last = array("i", range(len(order)))
        ups = [number.get(p, -1) if p is not None else -1 for p in map(parent.__getitem__, order)]
        for n in range(len(order) - 1, 0, -1):
            up = ups[n]
            if up >= 0 and last[n] > last[up]:
                last[up] = last[n]

    def above(self, ancestor: str, node: str) -> bool:
        """`ancestor` is `node` or on its path from the root."""
        i, j = self._ids.get(ancestor), self._ids.get(node)
        if i is None or j is None:
            return False
        a, n = self._entry[i], self._entry[j]
        return 0 <= a <= n <= self._last[a]
