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

from ctxkit.errors import InputError, Problem
from ctxkit.history.tree import Branch
from ctxkit.history.working import Call, Image, Kind, Origin, Working, message_key
from ctxkit.loading.domain import FileKind, FileRecord, Fixture, InFlightMessage, Role, StoredMessage
from ctxkit.loading.templates import Templates

IMAGE_GENERATION_TOOL = "generate_image"
# The explain note of a placeholder result: wording only; the decision is `Working.placeholder`.
PLACEHOLDER_NOTE = "result replaced by the placeholder (R-CONV-3)"


class Conversions:
    """Each stored message's working messages, converted once for all the calls of a replay (R-RPL-9).

    A message's conversion depends on the message, the fixture's files and placeholder setting
    and the templates, never on the branch around it, so it is reused while those stay the same
    (checked once per `convert`; any change starts afresh). The history built for the previous
    call is kept too: when this call's branch extends it (the common case: the next question of
    the same conversation), only the messages after it are added.
    """

    def __init__(self) -> None:
        self._basis: tuple[object, ...] | None = None
        self._done: dict[str, tuple[StoredMessage, tuple[Working, ...]]] = {}
        self._live: tuple[StoredMessage, ...] = ()  # the messages `_history` was built from
        self._history: list[Working] = []
        self._counted: tuple[StoredMessage, ...] = ()  # the messages `_ends` was built from
        self._ends: list[int] = [0]
        self._indexed: tuple[StoredMessage, ...] = ()  # the messages `_positions` was built from
        self._positions: dict[str, int] = {}

    def start(self, fixture: Fixture, templates: Templates) -> dict[str, FileRecord]:
        files = {f.id: f for f in fixture.files}
        settings = fixture.settings
        basis = (fixture.files, settings.tool_result_placeholder_tokens, settings.as_logged, dict(templates.texts))
        if basis != self._basis:
            self._basis, self._done, self._live, self._history = basis, {}, (), []
            self._counted, self._ends = (), [0]
            self._indexed, self._positions = (), {}
        return files

    def of(
        self, m: StoredMessage, files: dict[str, FileRecord], fixture: Fixture, templates: Templates
    ) -> tuple[Working, ...]:
        found = self._done.get(m.id)
        if found is not None and found[0] is m:
            return found[1]
        produced = tuple(_message(m, files, fixture, templates))
        self._done[m.id] = (m, produced)
        return produced

    def history(
        self, before: tuple[StoredMessage, ...], files: dict[str, FileRecord], fixture: Fixture, templates: Templates
    ) -> list[Working]:
        """The working messages of `before` (whole messages, in order), reusing the last call's."""
        done = self._live
        n = len(done)
        if n and n <= len(before) and before[0] is done[0] and before[n - 1] is done[n - 1]:
            history = list(self._history)  # same root and same end: a tree path, so the same prefix
        else:
            n, history = 0, []
        for m in before[n:]:
            history.extend(self.of(m, files, fixture, templates))
        self._live, self._history = before, history
        return list(history)

    def ends(
        self, before: tuple[StoredMessage, ...], files: dict[str, FileRecord], fixture: Fixture, templates: Templates
    ) -> list[int]:
        """`ends[k]`: how many working messages `before[:k]` make, extending the last call's sums."""
        done, n = self._counted, len(self._counted)
        if not (n and n <= len(before) and before[0] is done[0] and before[n - 1] is done[n - 1]):
            n, self._ends = 0, [0]  # not an extension of the last call's messages: start afresh
        ends = self._ends
        del ends[n + 1 :]
        for m in before[n:]:
            ends.append(ends[-1] + len(self.of(m, files, fixture, templates)))
        self._counted = before
        return ends

    def positions(self, before: tuple[StoredMessage, ...]) -> dict[str, int]:
        """Each message id of `before` → its index, extending the last call's index (ids of a
        longer branch may be there too: check the index against `before`)."""
        done, n = self._indexed, len(self._indexed)
        if not (n and n <= len(before) and before[0] is done[0] and before[n - 1] is done[n - 1]):
            n, self._positions = 0, {}  # not an extension of the last call's messages: start afresh
        self._positions.update((m.id, k) for k, m in enumerate(before[n:], start=n))
        self._indexed = before
        return self._positions


class Converted:
    """The branch as working messages, converted on demand, newest first when assembling.

    The older history is a row of *units*, oldest first: the summary (when one applies,
    R-TREE-3), each stored message before the last user message, then the files pinned
    to the last user message. `unit(u)` converts one unit (once); assembly walks the units
    newest first and stops where truncation does, so the part of a long history it never
    reaches is never converted. `history` converts them all (reports that list every message).
    """

    def __init__(self, branch: Branch, fixture: Fixture, templates: Templates, memo: Conversions | None) -> None:
        self._branch, self._fixture, self._templates, self._memo = branch, fixture, templates, memo
        self._files = memo.start(fixture, templates) if memo is not None else {f.id: f for f in fixture.files}
        s = branch.summary
        self._head: tuple[Working, ...] = ()
        if s is not None:
            self._head = (
                Working(message_key(s.id), Kind.ASSISTANT, s.text, s.tokens, source_id=s.id, origin=Origin.SUMMARY),
            )
        self.stored = branch.live[:-1] if branch.last_user is not None else branch.live  # before the last user
        self.last_user: Working | None = None
        self.pinned: tuple[Working, ...] = ()  # the files pinned to the last user message (R-CONV-1)
        if branch.last_user is not None:
            *pinned, self.last_user = self._of(branch.last_user)
            self.pinned = tuple(pinned)
        self.in_turn = tuple(_in_flight(m) for m in fixture.in_flight)
        self.units = len(self._head) + len(self.stored) + 1
        self._done: dict[int, tuple[Working, ...]] = {}
        self._index: dict[str, int] | None = None
        self._history: tuple[Working, ...] | None = None
        self._summarized_files: tuple[str, ...] | None = None
        self._files_in_order: tuple[str, ...] | None = None

    def _of(self, m: StoredMessage) -> tuple[Working, ...]:
        if self._memo is not None:
            return self._memo.of(m, self._files, self._fixture, self._templates)
        return tuple(_message(m, self._files, self._fixture, self._templates))

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
        if self._memo is not None:  # a replay: one index for all its calls (R-RPL-9)
            i = self._memo.positions(self.stored).get(message_id)
            ok = i is not None and i < len(self.stored) and self.stored[i].id == message_id
            return len(self._head) + i if ok and i is not None else None
        if self._index is None:
            self._index = {m.id: n for n, m in enumerate(self.stored, start=len(self._head))}
        return self._index.get(message_id)

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
        """How many working messages units [start, end) make; in a replay from running sums
        shared by its calls, otherwise by converting them."""
        if start >= end:
            return 0
        head = len(self._head)
        total = len(self._head) if start < head else 0
        first, last = max(start, head) - head, min(end - head, len(self.stored))
        if first < last:
            if self._memo is not None:
                ends = self._memo.ends(self.stored, self._files, self._fixture, self._templates)
                total += ends[last] - ends[first]
            else:
                total += sum(len(self.unit(u)) for u in range(first + head, last + head))
        if end >= self.units:
            total += len(self.pinned)
        return total

    @property
    def history(self) -> tuple[Working, ...]:
        """The whole older history, oldest first (summary first, pinned files before their message)."""
        if self._history is None:
            if self._memo is not None:
                older = self._memo.history(self.stored, self._files, self._fixture, self._templates)
            else:
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
            self._files_in_order = tuple(dict.fromkeys(fid for m in branch.summarized + branch.live for fid in m.files))
        return self._files_in_order


def convert(branch: Branch, fixture: Fixture, templates: Templates, *, memo: Conversions | None = None) -> Converted:
    """The branch's working messages; the older history is converted when first read."""
    return Converted(branch, fixture, templates, memo)


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
        key = message_key(m.id, f"#file{k}")
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
    yield Working(message_key(m.id), Kind.USER, m.text, m.tokens, source_id=m.id, images=tuple(images))


def _assistant(m: StoredMessage, fixture: Fixture, templates: Templates) -> Iterator[Working]:
    """R-CONV-2/3: one assistant message per call turn, its results, then the answer."""
    if not m.tool_calls:
        if m.text:
            yield Working(message_key(m.id), Kind.ASSISTANT, m.text, m.tokens, source_id=m.id)
        return
    placeholder = templates.raw("tool_result_placeholder")
    placeholder_tokens = fixture.settings.tool_result_placeholder_tokens
    for turn in sorted({c.turn for c in m.tool_calls}):
        group = [(j, c) for j, c in enumerate(m.tool_calls) if c.turn == turn]
        calls = tuple(Call(c.id, c.name, c.args, c.tokens, c.args_text) for _, c in group)
        yield Working(
            message_key(m.id, f"#calls{turn}"),
            Kind.ASSISTANT,
            "",
            0,
            source_id=m.id,
            tool_calls=calls,
            origin=Origin.TOOL_CALLS,
        )
        for j, c in group:
            key = message_key(m.id, f"#result{j}")
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
        yield Working(message_key(m.id), Kind.ASSISTANT, m.text, m.tokens, source_id=m.id, origin=origin)


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


def _in_flight(m: InFlightMessage) -> Working:
    """R-CONV-4: this turn's own tool loop, in full."""
    key = f"in_flight#{m.index}"
    if m.role == "tool":
        return Working(key, Kind.TOOL, m.text, m.tokens, tool_call_id=m.tool_call_id, origin=Origin.IN_FLIGHT)
    calls = tuple(Call(c.id, c.name, c.args, c.tokens, c.args_text) for c in m.tool_calls)
    return Working(key, Kind.ASSISTANT, m.text, m.tokens, tool_calls=calls, origin=Origin.IN_FLIGHT)
