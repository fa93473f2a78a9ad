"""The stored tree: the branch, the summary that applies to it, the call being rebuilt.

Input: `domain.Fixture` and the leaf to use (or None). Output: `Branch` — the
path root → leaf (R-TREE-1/2), the applicable summary and what it removes
(R-TREE-3), and the split at the last user message (R-TURN-1); `Ancestry`, whether one stored
message is above another (replay's branch cause, R-RPL-6).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import overload

from ctxkit.loading.domain import Fixture, Role, StoredMessage

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
    per message tuple, and the last path with its positions, which the next call's path usually
    extends (walking up from the new leaf stops where it meets it). Each path is given as a
    `Stretch` of one list that is only appended to: a path that leaves the last one below its
    end starts a new list, so the stretches given before never change."""

    def __init__(self) -> None:
        self._messages: tuple[StoredMessage, ...] | None = None
        self._by_id: dict[str, StoredMessage] = {}
        self._summaries: list[StoredMessage] = []
        self._path: list[StoredMessage] = []  # the last path is `_path[:_end]`
        self._end = 0
        self._position: dict[str, int] = {}  # the last path's messages by id

    def _index(self, fixture: Fixture) -> None:
        if fixture.messages is self._messages:
            return
        self._by_id = by_id = {m.id: m for m in fixture.messages}
        if not all(by_id.get(m.id) is m for m in self._path[: self._end]):  # replay only hides or adds summaries
            self._path, self._end, self._position = [], 0, {}
        self._messages = fixture.messages
        self._summaries = [m for m in fixture.messages if m.role is Role.SUMMARY]

    def index(self, message_id: str) -> int | None:
        """The message's index on the last path given, if it is on it."""
        return self._position.get(message_id)

    def extends(self, path: Sequence[StoredMessage]) -> bool:
        """Whether the last path given starts with the root path `path` (then `index` gives the
        positions on `path` too: root paths that share a message share everything above it)."""
        n = len(path)
        return n <= self._end and (n == 0 or self._path[n - 1] is path[n - 1])

    def select(self, fixture: Fixture, leaf: str | None) -> tuple[Stretch, dict[str, int], list[StoredMessage]]:
        """The path to `leaf`, each id's position on it, and the fixture's summary nodes."""
        if fixture.messages is not self._messages:
            self._index(fixture)
        if leaf is None:
            return Stretch(()), {}, self._summaries
        by_id, path, position = self._by_id, self._path, self._position
        climbed: list[StoredMessage] = []
        node: StoredMessage | None = by_id[leaf]
        while node is not None:
            at = position.get(node.id)
            if at is not None and path[at] is node:
                break
            climbed.append(node)
            node = by_id[node.parent] if node.parent is not None else None
        keep = position[node.id] + 1 if node is not None else 0
        if keep < self._end:  # the last path went further: an edit (a new question only climbs)
            for m in path[keep : self._end]:
                del position[m.id]
        if climbed and keep < len(path):  # the list past `keep` may be seen by earlier stretches
            path = self._path = path[:keep]
        for m in reversed(climbed):
            position[m.id] = len(path)
            path.append(m)
        self._end = keep + len(climbed)
        return Stretch(path, 0, self._end), position, self._summaries


def select(fixture: Fixture, leaf: str | None, *, paths: Paths | None = None) -> Branch:
    if paths is not None:
        path, on_branch, candidates = paths.select(fixture, leaf if leaf is not None else default_leaf(fixture))
    else:
        path = Stretch(default_path(fixture) if leaf is None else path_to(fixture, leaf))
        candidates = [m for m in fixture.messages if m.role is _SUMMARY]
        on_branch = {m.id: i for i, m in enumerate(path)} if candidates else {}  # only summaries ask
    summary = None
    for m in candidates:
        if m.parent in on_branch:
            summary = m  # the latest in file order applies
    cut = 0
    if summary is not None and summary.summarizes_through in on_branch:
        cut = on_branch[summary.summarizes_through] + 1
    of, start, _ = path.under
    last = None
    for i in range(len(path) - 1, cut - 1, -1):  # the leaf, most calls
        if of[start + i].role is _USER:
            last = i
            break
    return Branch(path, summary, cut, last)


class Ancestry:
    """Ancestor tests on the stored tree in O(1), from one depth-first walk: each message's number
    in the walk's entry order, and for each number the last number within its subtree (one id
    index and one array of 8 bytes a message)."""

    def __init__(self, fixture: Fixture) -> None:
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
        self._number: dict[str, int] = dict(zip(order, range(len(order)), strict=True))  # id → entry number
        number = self._number
        # entry number → the last entry number of its subtree: a subtree's entries follow its root's,
        # so walking back, each entry's last is final before it is handed to its parent
        self._last = last = array("q", range(len(order)))
        ups = [number.get(p, -1) if p is not None else -1 for p in map(parent.__getitem__, order)]
        for n in range(len(order) - 1, 0, -1):
            up = ups[n]
            if up >= 0 and last[n] > last[up]:
                last[up] = last[n]

    def above(self, ancestor: str, node: str) -> bool:
        """`ancestor` is `node` or on its path from the root."""
        a, n = self._number.get(ancestor), self._number.get(node)
        if a is None or n is None:
            return False
        return a <= n <= self._last[a]
