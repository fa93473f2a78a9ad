"""The stored tree: the branch, the summary that applies to it, the call being rebuilt.

Input: `domain.Fixture` and the leaf to use (or None). Output: `Branch` — the
path root → leaf (R-TREE-1/2), the applicable summary and what it removes
(R-TREE-3), and the split at the last user message (R-TURN-1); `Ancestry`, whether one stored
message is above another (replay's branch cause, R-RPL-6).
"""

from __future__ import annotations

from dataclasses import dataclass

from ctxkit.loading.domain import Fixture, Role, StoredMessage

_SUMMARY = Role.SUMMARY  # a module name: an enum class attribute costs more than a loop step (3.11)


@dataclass(frozen=True, slots=True)
class Branch:
    path: tuple[StoredMessage, ...]  # root → leaf, non-summary messages only
    summary: StoredMessage | None  # the applicable summary node (R-TREE-3)
    summarized: tuple[StoredMessage, ...]  # branch messages the summary removes
    live: tuple[StoredMessage, ...]  # after the cutoff, up to the last user message
    after_last_user: tuple[StoredMessage, ...]  # R-TURN-1
    last_user: StoredMessage | None

    @property
    def after_cutoff(self) -> tuple[StoredMessage, ...]:
        """Every branch message after the summary's cutoff, the leaf included."""
        return self.live + self.after_last_user


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


Path = tuple[StoredMessage, ...]


class Paths:
    """Branch lookups shared by the calls of one replay (R-RPL-9): one id index and summary list
    per message tuple, and the last path with its positions, which the next call's path usually
    extends (walking up from the new leaf stops where it meets it)."""

    def __init__(self) -> None:
        self._messages: tuple[StoredMessage, ...] | None = None
        self._by_id: dict[str, StoredMessage] = {}
        self._summaries: list[StoredMessage] = []
        self._path: list[StoredMessage] = []
        self._position: dict[str, int] = {}

    def _index(self, fixture: Fixture) -> None:
        if fixture.messages is self._messages:
            return
        self._by_id = by_id = {m.id: m for m in fixture.messages}
        if not all(by_id.get(m.id) is m for m in self._path):  # replay only hides or adds summaries
            self._path, self._position = [], {}
        self._messages = fixture.messages
        self._summaries = [m for m in fixture.messages if m.role is Role.SUMMARY]

    def select(self, fixture: Fixture, leaf: str | None) -> tuple[Path, dict[str, int], list[StoredMessage]]:
        """The path to `leaf`, each id's position on it, and the fixture's summary nodes."""
        self._index(fixture)
        if leaf is None:
            return (), {}, self._summaries
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
        for m in path[keep:]:
            del position[m.id]
        del path[keep:]
        for m in reversed(climbed):
            position[m.id] = len(path)
            path.append(m)
        return tuple(path), position, self._summaries


def select(fixture: Fixture, leaf: str | None, *, paths: Paths | None = None) -> Branch:
    if paths is not None:
        path, on_branch, candidates = paths.select(fixture, leaf if leaf is not None else default_leaf(fixture))
    else:
        path = default_path(fixture) if leaf is None else path_to(fixture, leaf)
        candidates = [m for m in fixture.messages if m.role is _SUMMARY]
        on_branch = {m.id: i for i, m in enumerate(path)} if candidates else {}  # only summaries ask
    summary = None
    for m in candidates:
        if m.parent in on_branch:
            summary = m  # the latest in file order applies
    cut = 0
    if summary is not None and summary.summarizes_through in on_branch:
        cut = on_branch[summary.summarizes_through] + 1
    summarized, rest = path[:cut], path[cut:]
    last = next((i for i in range(len(rest) - 1, -1, -1) if rest[i].role is Role.USER), None)
    if last is None:
        return Branch(path, summary, summarized, rest, (), None)
    return Branch(path, summary, summarized, rest[: last + 1], rest[last + 1 :], rest[last])


class Ancestry:
    """Ancestor tests on the stored tree in O(1): entry/exit times of one depth-first walk."""

    def __init__(self, fixture: Fixture) -> None:
        children: dict[str | None, list[str]] = {}
        for m in fixture.messages:
            if m.role is not Role.SUMMARY:
                children.setdefault(m.parent, []).append(m.id)
        self.enter: dict[str, int] = {}
        self.leave: dict[str, int] = {}
        clock = 0
        stack: list[tuple[str, bool]] = [(c, False) for c in reversed(children.get(None, []))]
        while stack:
            node, done = stack.pop()
            clock += 1
            if done:
                self.leave[node] = clock
                continue
            self.enter[node] = clock
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(children.get(node, [])))

    def above(self, ancestor: str, node: str) -> bool:
        """`ancestor` is `node` or on its path from the root."""
        if ancestor not in self.enter or node not in self.enter:
            return False
        return self.enter[ancestor] <= self.enter[node] and self.leave[node] <= self.leave[ancestor]
