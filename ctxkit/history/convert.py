"""Branch → working messages (R-CONV-1…4, the summary message of R-TREE-3).

Input: the `Branch`, the fixture, templates and settings. Output: `Converted` —
the older history (summary first, pinned files before their message), converted on
demand, the last user message, this turn's in-flight messages, and the files the
summary took away.
Token counts are left as None where they must be counted (see `measure`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import chain

from ctxkit.errors import InputError, Problem
from ctxkit.history.tree import Branch
from ctxkit.history.working import Call, Image, Kind, MessageKey, Origin, Working
from ctxkit.loading.domain import FileKind, FileRecord, Fixture, InFlightMessage, Role, StoredMessage
from ctxkit.loading.templates import Templates

IMAGE_GENERATION_TOOL = "generate_image"
# The explain note of a placeholder result: wording only; the decision is `Working.placeholder`.
PLACEHOLDER_NOTE = "result replaced by the placeholder (R-CONV-3)"


class Converted:
    """The branch as working messages, converted on demand, newest first when assembling.

    The older history is a row of *units*, oldest first: the summary (when one applies,
    R-TREE-3), each stored message before the last user message, then the files pinned
    to the last user message. `unit(u)` converts one unit (once); assembly walks the units
    newest first and stops where truncation does, so the part of a long history it never
    reaches is never converted. `history` converts them all (reports that list every message).
    """

    __slots__ = (  # one per assembled call (a replay's thousands): no instance dict
        "_branch",
        "_done",
        "_files",
        "_files_in_order",
        "_fixture",
        "_head",
        "_history",
        "_index",
        "_summarized_files",
        "_templates",
        "in_turn",
        "last_user",
        "pinned",
        "stored",
        "units",
    )

    def __init__(self, branch: Branch, fixture: Fixture, templates: Templates) -> None:
        self._branch, self._fixture, self._templates = branch, fixture, templates
        self._files = self._file_index(fixture)
        s = branch.summary
        self._head: tuple[Working, ...] = ()
        if s is not None:
            self._head = (
                Working(MessageKey(s.id), Kind.ASSISTANT, s.text, s.tokens, source_id=s.id, origin=Origin.SUMMARY),
            )
        user, last = branch.last_user, branch.last
        # before the last user message (`branch.live` but its last message: the last user message
        # is at or after the cut, R-TURN-1)
        self.stored = branch.path.part(branch.cut, last) if last is not None else branch.live
        self.last_user: Working | None = None
        self.pinned: tuple[Working, ...] = ()  # the files pinned to the last user message (R-CONV-1)
        if user is not None:
            *pinned, self.last_user = self._of(user)
            self.pinned = tuple(pinned)
        self.in_turn = tuple(map(self._in_flight, fixture.in_flight))
        self.units = len(self._head) + len(self.stored) + 1
        self._done: dict[int, tuple[Working, ...]] = {}
        self._index: dict[str, int] | None = None
        self._history: tuple[Working, ...] | None = None
        self._summarized_files: tuple[str, ...] | None = None
        self._files_in_order: tuple[str, ...] | None = None

    def _file_index(self, fixture: Fixture) -> dict[str, FileRecord]:
        """Each file by id (read only)."""
        return {f.id: f for f in fixture.files}

    def _of(self, m: StoredMessage) -> tuple[Working, ...]:
        return message(m, self._files, self._fixture, self._templates)

    def _in_flight(self, m: InFlightMessage) -> Working:
        return in_flight(m)

    def unit(self, u: int) -> tuple[Working, ...]:
        """The working messages of unit `u` (0 = the oldest), converted on first use."""
        i = u - len(self._head)
        if i < 0:
            return self._head
        if i == len(self.stored):
            return self.pinned
        found = self._done.get(i)
        if found is None:
            found = self._done[i] = self._of(self.stored[i])
        return found

    def unit_of(self, message_id: str) -> int | None:
        """The unit of a stored message of the older history (or the summary), if it is one."""
        s = self._branch.summary
        if s is not None and message_id == s.id:
            return 0
        if self._index is None:
            self._index = {m.id: n for n, m in enumerate(self.stored, start=len(self._head))}
        return self._index.get(message_id)

    def located(self, key: MessageKey, end: int) -> tuple[int, Working] | None:
        """The unit before `end` that holds the working message `key` of the older history (or the
        summary), and that message; its stored message alone is converted."""
        unit = self.unit_of(key.message_id)
        if unit is None or unit >= end:
            return None
        return next(((unit, w) for w in self.unit(unit) if w.key == key), None)

    def user_units(self) -> Iterator[int]:
        """The units of the stored user messages of the older history, newest first (no conversion)."""
        head = len(self._head)
        for i in range(len(self.stored) - 1, -1, -1):
            if self.stored[i].role is Role.USER:
                yield head + i

    def file_ids(self, end: int) -> set[str]:
        """The files carried by file messages (R-CONV-1) in units [0, end), read off the stored
        messages without converting them: every non-image file of a user message becomes one."""
        files, head = self._files, len(self._head)
        found = {
            fid
            for m in self.stored[: max(0, end - head)]
            if m.role is Role.USER
            for fid in m.files
            if files[fid].kind is not FileKind.IMAGE
        }
        if end >= self.units:
            found.update(w.file_id for w in self.pinned if w.file_id)
        return found

    def count(self, start: int, end: int) -> int:
        """How many working messages units [start, end) make."""
        if start >= end:
            return 0
        head = len(self._head)
        total = len(self._head) if start < head else 0
        first, last = max(start, head) - head, min(end - head, len(self.stored))
        if first < last:
            total += self._count_stored(first, last)
        if end >= self.units:
            total += len(self.pinned)
        return total

    def _count_stored(self, first: int, last: int) -> int:
        """How many working messages stored[first:last] make."""
        head = len(self._head)
        return sum(len(self.unit(u)) for u in range(first + head, last + head))

    @property
    def history(self) -> tuple[Working, ...]:
        """The whole older history, oldest first (summary first, pinned files before their message)."""
        if self._history is None:
            older = [w for u in range(len(self._head), self.units - 1) for w in self.unit(u)]
            self._history = (*self._head, *older, *self.pinned)
        return self._history

    @property
    def summarized_files(self) -> tuple[str, ...]:
        """Text and metadata files of the messages the summary removed (R-FILE-1)."""
        if self._summarized_files is None:
            files = self._files
            ids = (fid for m in self._branch.summarized for fid in m.files if files[fid].kind is not FileKind.IMAGE)
            self._summarized_files = tuple(dict.fromkeys(ids))
        return self._summarized_files

    @property
    def files_in_order(self) -> tuple[str, ...]:
        """Every file id of the branch in order of first appearance."""
        if self._files_in_order is None:
            branch = self._branch
            self._files_in_order = tuple(
                dict.fromkeys(fid for m in chain(branch.summarized, branch.live) for fid in m.files)
            )
        return self._files_in_order


def convert(branch: Branch, fixture: Fixture, templates: Templates) -> Converted:
    """The branch's working messages; the older history is converted when first read."""
    return Converted(branch, fixture, templates)


def message(
    m: StoredMessage, files: dict[str, FileRecord], fixture: Fixture, templates: Templates
) -> tuple[Working, ...]:
    """One stored message's working messages (R-CONV-1…3): they depend on the message, the
    fixture's files and placeholder setting and the templates, never on the branch around it."""
    return tuple(_message(m, files, fixture, templates))


def require_image_cost(fixture: Fixture, f: FileRecord) -> None:
    """R-FIX-3: an image needs bytes to estimate from, or a stored count."""
    if f.data is None and f.tokens is None:
        raise InputError(
            Problem(
                fixture.source, f.pointer or "/files", f"image {f.id!r} has neither bytes nor a stored `tokens` count"
            )
        )


def _message(
    m: StoredMessage, files: dict[str, FileRecord], fixture: Fixture, templates: Templates
) -> Iterator[Working]:
    if m.role is Role.USER:
        yield from _user(m, files, fixture, templates)
    else:
        yield from _assistant(m, fixture, templates)


def _user(m: StoredMessage, files: dict[str, FileRecord], fixture: Fixture, templates: Templates) -> Iterator[Working]:
    """R-CONV-1: pinned file messages first, then the message with its images."""
    images: list[Image] = []
    for k, fid in enumerate(m.files):
        f = files[fid]
        key = MessageKey(m.id, f"#file{k}")
        if f.kind is FileKind.IMAGE:
            require_image_cost(fixture, f)
            images.append(Image(f.id, f.data, f.tokens))
        elif f.kind is FileKind.METADATA_ONLY:
            text = templates.fill("file.metadata_only", name=f.name, id=f.id)
            yield Working(key, Kind.USER, text, None, source_id=m.id, file_id=f.id, origin=Origin.FILE)
        elif not (f.text or "").strip():
            text = templates.fill("file.unavailable", name=f.name)
            yield Working(key, Kind.USER, text, None, source_id=m.id, file_id=f.id, origin=Origin.FILE)
        else:
            text = templates.fill("file.text", name=f.name, content=f.text)
            yield Working(
                key,
                Kind.USER,
                text,
                f.tokens,
                source_id=m.id,
                file_id=f.id,
                origin=Origin.FILE,
                count_text=f.text,
            )
    yield Working(MessageKey(m.id), Kind.USER, m.text, m.tokens, source_id=m.id, images=tuple(images))


def _assistant(m: StoredMessage, fixture: Fixture, templates: Templates) -> Iterator[Working]:
    """R-CONV-2/3: one assistant message per call turn, its results, then the answer."""
    if not m.tool_calls:
        if m.text:
            yield Working(MessageKey(m.id), Kind.ASSISTANT, m.text, m.tokens, source_id=m.id)
        return
    placeholder = templates.raw("tool_result_placeholder")
    placeholder_tokens = fixture.settings.tool_result_placeholder_tokens
    for turn in sorted({c.turn for c in m.tool_calls}):
        group = [(j, c) for j, c in enumerate(m.tool_calls) if c.turn == turn]
        calls = tuple(Call(c.id, c.name, c.args, c.tokens, c.args_text) for _, c in group)
        yield Working(
            MessageKey(m.id, f"#calls{turn}"),
            Kind.ASSISTANT,
            "",
            0,
            source_id=m.id,
            tool_calls=calls,
            origin=Origin.TOOL_CALLS,
        )
        for j, c in group:
            key = MessageKey(m.id, f"#result{j}")
            if c.name == IMAGE_GENERATION_TOOL and c.generated_images:
                replay = json.dumps(
                    [{"file_id": g.file_id, "revised_prompt": g.revised_prompt} for g in c.generated_images],
                    ensure_ascii=False,
                )
                yield _result(key, m.id, c.id, replay, None, "image-generation replay (R-CONV-3)")
            elif c.name == IMAGE_GENERATION_TOOL and c.response:
                yield _result(key, m.id, c.id, c.response, None, "image-generation response replayed (R-CONV-3)")
            elif fixture.settings.as_logged and c.response is not None:
                yield _result(key, m.id, c.id, c.response, None, "result as recorded (R-FIX-6)")
            else:
                yield _result(key, m.id, c.id, placeholder, placeholder_tokens, PLACEHOLDER_NOTE, placeholder=True)
    if m.text:
        origin = Origin.ANSWER if m.tool_calls else Origin.MESSAGE
        yield Working(MessageKey(m.id), Kind.ASSISTANT, m.text, m.tokens, source_id=m.id, origin=origin)


def _result(
    key: str, source_id: str, call_id: str, text: str, tokens: int | None, note: str, *, placeholder: bool = False
) -> Working:
    """A stored call's result as the history replays it (R-CONV-3), with the note `explain` shows."""
    return Working(
        key,
        Kind.TOOL,
        text,
        tokens,
        source_id=source_id,
        tool_call_id=call_id,
        origin=Origin.TOOL_RESULT,
        notes=(note,),
        placeholder=placeholder,
    )


def in_flight(m: InFlightMessage) -> Working:
    """R-CONV-4: this turn's own tool loop, in full."""
    key = f"in_flight#{m.index}"
    if m.role == "tool":
        return Working(key, Kind.TOOL, m.text, m.tokens, tool_call_id=m.tool_call_id, origin=Origin.IN_FLIGHT)
    calls = tuple(Call(c.id, c.name, c.args, c.tokens, c.args_text) for c in m.tool_calls)
    return Working(key, Kind.ASSISTANT, m.text, m.tokens, tool_calls=calls, origin=Origin.IN_FLIGHT)
