"""The stored tree: the branch, the summary that applies to it, the call being rebuilt.

Input: `domain.Fixture` and the leaf to use (or None). Output: `Branch` — the
path root → leaf (R-TREE-1/2), the applicable summary and what it removes
(R-TREE-3), and the split at the last user message (R-TURN-1).
"""

from __future__ import annotations

from dataclasses import dataclass

from ctxkit.loading.domain import Fixture, Role, StoredMessage


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
    children: dict[str | None, StoredMessage] = {}
    for m in fixture.messages:
        if m.role is not Role.SUMMARY:
            children[m.parent] = m  # later in file order wins
    node = children.get(None)
    leaf = None
    seen: set[str] = set()
    while node is not None and node.id not in seen:
        seen.add(node.id)
        leaf = node.id
        node = children.get(node.id)
    return leaf


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


def select(fixture: Fixture, leaf: str | None) -> Branch:
    path = path_to(fixture, leaf if leaf is not None else default_leaf(fixture))
    on_branch = {m.id: i for i, m in enumerate(path)}
    summary = None
    for m in fixture.messages:
        if m.role is Role.SUMMARY and m.parent in on_branch:
            summary = m  # the latest in file order applies
    cut = 0
    if summary is not None and summary.summarizes_through in on_branch:
        cut = on_branch[summary.summarizes_through] + 1
    summarized, rest = path[:cut], path[cut:]
    last = max((i for i, m in enumerate(rest) if m.role is Role.USER), default=None)
    if last is None:
        return Branch(path, summary, summarized, rest, (), None)
    return Branch(path, summary, summarized, rest[: last + 1], rest[last + 1 :], rest[last])
