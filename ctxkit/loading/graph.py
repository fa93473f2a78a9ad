"""Graph checks of R-FIX-1: unique ids, references that resolve, no parent cycles, summaries in place.

Input: the stored messages (R-FIX-2 already applied) and the document's file ids.
Output: (JSON path, message) problems; nothing when the tree is sound. Each check is
linear in the messages, so long histories and long cycles stay cheap to explain.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ctxkit.loading import domain
from ctxkit.loading.schema import JsonPath, pointer
from ctxkit.output import plural

_SUMMARY = domain.Role.SUMMARY


def check_references(
    doc: dict[str, Any],
    messages: tuple[domain.StoredMessage, ...],
    file_ids: set[str],
    found: list[tuple[JsonPath, str]],
    *,
    implicit_parents: bool = False,
) -> None:
    """R-FIX-1: unique ids, resolvable references, no parent cycles, summaries in place.

    `implicit_parents`: R-FIX-2 gave every message but summaries the one before it as its
    parent. With no summary node either, every parent is an earlier message that is no
    summary, so there is no parent to check and no cycle: only attachments and
    `summarizes_through` are looked at (100,000 messages: ~100 -> ~15 ms).
    """
    by_id, summaries = _ids(messages, found)
    if implicit_parents and not any(m.role is _SUMMARY for m in messages):
        for m in messages:
            if m.files or m.summarizes_through is not None:
                _attachments_and_summary_target(m, by_id, file_ids, found)
        _document_references(doc, by_id, file_ids, found)
        return
    parents, backward = _parents(messages, by_id, summaries, file_ids, found)
    _document_references(doc, by_id, file_ids, found)
    if backward:
        found.extend(_cycles(parents, by_id))
    if any(m.summarizes_through in by_id for m in messages if m.role is _SUMMARY):
        found.extend(_summary_ancestry(messages, parents, by_id))


def _ids(
    messages: tuple[domain.StoredMessage, ...], found: list[tuple[JsonPath, str]]
) -> tuple[dict[str, domain.StoredMessage], set[str]]:
    """Each id's first message (a later one with the same id is an error) and the summaries' ids."""
    by_id: dict[str, domain.StoredMessage] = {}
    summaries: set[str] = set()
    for m in messages:
        first = by_id.setdefault(m.id, m)
        if first is not m:
            at = pointer(("messages", first.index))
            found.append((("messages", m.index, "id"), f"duplicate message id {m.id!r} (first at {at})"))
        elif m.role is _SUMMARY:
            summaries.add(m.id)
    return by_id, summaries


def _parents(
    messages: tuple[domain.StoredMessage, ...],
    by_id: dict[str, domain.StoredMessage],
    summaries: set[str],
    file_ids: set[str],
    found: list[tuple[JsonPath, str]],
) -> tuple[dict[str, str], bool]:
    """Each parent and attachment checked; the tree of non-summary messages, and whether a parent
    comes later in the file (only then can there be a cycle)."""
    parents: dict[str, str] = {}
    backward = False
    for m in messages:
        parent = m.parent
        if parent is not None:
            target = by_id.get(parent)  # implicit (linear) parents always resolve
            if target is None:
                found.append((("messages", m.index, "parent"), f"unknown message id {parent!r}"))
            elif parent in summaries:
                found.append(
                    (("messages", m.index, "parent"), f"{parent!r} is a summary node, which cannot be a parent")
                )
            elif m.role is not _SUMMARY and by_id[m.id] is m:
                parents[m.id] = parent
                if target.index >= m.index:
                    backward = True
        if m.files or m.summarizes_through is not None:
            _attachments_and_summary_target(m, by_id, file_ids, found)
    return parents, backward


def _attachments_and_summary_target(
    m: domain.StoredMessage,
    by_id: dict[str, domain.StoredMessage],
    file_ids: set[str],
    found: list[tuple[JsonPath, str]],
) -> None:
    if m.files:
        found.extend(_attachment_problems(m.files, ("messages", m.index, "files"), file_ids))
    if m.summarizes_through is not None and m.summarizes_through not in by_id:
        found.append((("messages", m.index, "summarizes_through"), f"unknown message id {m.summarizes_through!r}"))


def _document_references(
    doc: dict[str, Any],
    by_id: dict[str, domain.StoredMessage],
    file_ids: set[str],
    found: list[tuple[JsonPath, str]],
) -> None:
    """`project_files` and `leaf` name files and messages that exist (R-FIX-1)."""
    if "project_files" in doc:
        found.extend(_attachment_problems(map(str, doc["project_files"]), ("project_files",), file_ids))
    if "leaf" in doc:
        leaf = by_id.get(str(doc["leaf"]))
        if leaf is None:
            found.append((("leaf",), f"unknown message id {str(doc['leaf'])!r}"))
        elif leaf.role is domain.Role.SUMMARY:
            found.append((("leaf",), f"{leaf.id!r} is a summary node; the leaf must be a user or assistant message"))


def _attachment_problems(ids: Iterable[str], at: JsonPath, file_ids: set[str]) -> Iterator[tuple[JsonPath, str]]:
    """Each listed file id must exist, and be listed once (a repeat would send the file twice)."""
    first: dict[str, int] = {}
    for position, file_id in enumerate(ids):
        if file_id not in file_ids:
            yield (*at, position), f"unknown file id {file_id!r}"
        elif file_id in first:
            yield (*at, position), f"file {file_id!r} is listed twice (first at {pointer((*at, first[file_id]))})"
        first.setdefault(file_id, position)


def _cycles(
    parents: Mapping[str, str | None], by_id: dict[str, domain.StoredMessage]
) -> Iterator[tuple[JsonPath, str]]:
    """Parent cycles, each reported once at its first message in file order (linear time)."""
    state: dict[str, int] = {}  # 1: on the current walk, 2: done
    for start in parents:
        walk: list[str] = []
        node: str | None = start
        while node is not None and node not in state:
            state[node] = 1
            walk.append(node)
            node = parents.get(node)
        if node is not None and state[node] == 1:
            cycle = walk[walk.index(node) :]
            first = min(cycle, key=lambda mid: by_id[mid].index)
            at = cycle.index(first)
            yield ("messages", by_id[first].index, "parent"), _cycle_text([*cycle[at:], *cycle[:at]])
        for visited in walk:
            state[visited] = 2


def _cycle_text(cycle: list[str], shown: int = 4) -> str:
    """`parent cycle: 'a' → 'b' → 'a'`; a long cycle gives its length and its first ids only."""
    if len(cycle) <= shown + 1:
        return "parent cycle: " + " → ".join(map(_short_id, [*cycle, cycle[0]]))
    names = " → ".join(map(_short_id, cycle[:shown]))
    return f"parent cycle of {plural(len(cycle), 'message')}: {names} → … → {_short_id(cycle[0])}"


def _short_id(mid: str) -> str:
    return repr(mid[:40]) + ("…" if len(mid) > 40 else "")


def _summary_ancestry(
    messages: tuple[domain.StoredMessage, ...],
    parents: Mapping[str, str | None],
    by_id: dict[str, domain.StoredMessage],
) -> Iterator[tuple[JsonPath, str]]:
    """A summary covers its parent or an ancestor: checked with DFS entry/exit times, O(n)."""
    children: dict[str | None, list[str]] = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    roots = [m.id for m in by_id.values() if m.role is not domain.Role.SUMMARY and m.id not in parents]
    enter: dict[str, int] = {}
    leave: dict[str, int] = {}
    clock = 0
    stack = [(root, False) for root in roots]
    while stack:
        node, done = stack.pop()
        clock += 1
        if done:
            leave[node] = clock
            continue
        enter[node] = clock
        stack.append((node, True))
        stack.extend((child, False) for child in children.get(node, ()))
    for m in messages:
        through, parent = m.summarizes_through, m.parent
        if m.role is not domain.Role.SUMMARY or through not in by_id or parent not in enter:
            continue
        assert through is not None and parent is not None
        if not (through in enter and enter[through] <= enter[parent] and leave[parent] <= leave[through]):
            message = f"{through!r} is not the summary's parent or one of its ancestors"
            yield ("messages", m.index, "summarizes_through"), message
