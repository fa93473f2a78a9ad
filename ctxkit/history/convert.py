"""Branch → working messages (R-CONV-1…4, the summary message of R-TREE-3).

Input: the `Branch`, the fixture, templates and settings. Output: `Converted` —
the older history (summary first, pinned files before their message), the last
user message, this turn's in-flight messages, and the files the summary took away.
Token counts are left as None where they must be counted (see `measure`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from ctxkit.errors import InputError, Problem
from ctxkit.history.tree import Branch
from ctxkit.history.working import Call, Image, Kind, Origin, Working, message_key
from ctxkit.loading.domain import FileKind, FileRecord, Fixture, InFlightMessage, Role, StoredMessage
from ctxkit.loading.templates import Templates

IMAGE_GENERATION_TOOL = "generate_image"
# The explain note of a placeholder result: wording only; the decision is `Working.placeholder`.
PLACEHOLDER_NOTE = "result replaced by the placeholder (R-CONV-3)"


@dataclass(frozen=True, slots=True)
class Converted:
    history: tuple[Working, ...]  # older history, oldest first (pinned files included)
    last_user: Working | None
    in_turn: tuple[Working, ...]
    summarized_files: tuple[str, ...]  # text/metadata files of summarized messages
    files_in_order: tuple[str, ...]  # every file id in order of first appearance


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

    def start(self, fixture: Fixture, templates: Templates) -> dict[str, FileRecord]:
        files = {f.id: f for f in fixture.files}
        basis = (fixture.files, fixture.settings.tool_result_placeholder_tokens, dict(templates.texts))
        if basis != self._basis:
            self._basis, self._done, self._live, self._history = basis, {}, (), []
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


def convert(branch: Branch, fixture: Fixture, templates: Templates, *, memo: Conversions | None = None) -> Converted:
    history: list[Working] = []
    if branch.summary is not None:
        s = branch.summary
        history.append(
            Working(message_key(s.id), Kind.ASSISTANT, s.text, s.tokens, source_id=s.id, origin=Origin.SUMMARY)
        )
    last_user = None
    if memo is not None:
        files = memo.start(fixture, templates)
        live = branch.live
        ends_at_user = bool(live) and live[-1] is branch.last_user
        history.extend(memo.history(live[:-1] if ends_at_user else live, files, fixture, templates))
        if ends_at_user:
            *pinned, last_user = memo.of(live[-1], files, fixture, templates)
            history.extend(pinned)
    else:
        files = {f.id: f for f in fixture.files}
        for message in branch.live:
            produced = list(_message(message, files, fixture, templates))
            if message is branch.last_user:
                *pinned, last_user = produced
                history.extend(pinned)
            else:
                history.extend(produced)
    in_turn = tuple(_in_flight(m) for m in fixture.in_flight)
    summarized_files = tuple(fid for m in branch.summarized for fid in m.files if files[fid].kind is not FileKind.IMAGE)
    seen: dict[str, None] = {}
    for m in branch.summarized + branch.live:
        for fid in m.files:
            seen.setdefault(fid, None)
    return Converted(tuple(history), last_user, in_turn, _unique(summarized_files), tuple(seen))


def require_image_cost(fixture: Fixture, f: FileRecord) -> None:
    """R-FIX-3: an image needs bytes to estimate from, or a stored count."""
    if f.data is None and f.tokens is None:
        raise InputError(
            Problem(
                fixture.source, f.pointer or "/files", f"image {f.id!r} has neither bytes nor a stored `tokens` count"
            )
        )


def _unique(ids: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(ids))


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
        calls = tuple(Call(c.id, c.name, c.args, c.tokens) for _, c in group)
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
    calls = tuple(Call(c.id, c.name, c.args, c.tokens) for c in m.tool_calls)
    return Working(key, Kind.ASSISTANT, m.text, m.tokens, tool_calls=calls, origin=Origin.IN_FLIGHT)
