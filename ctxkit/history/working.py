"""Layer 2, working messages, and the decision record every stage appends to.

Input: nothing (these are types). Output: the representation all policies run
on, and `Row`, one line of the record that `explain`, `budget` and `diff` render.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from itertools import repeat
from operator import attrgetter
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Kind(enum.StrEnum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    REMINDER = "reminder"


class Fate(enum.StrEnum):
    """The closed list of fates (docs/rules.md#report-keys)."""

    KEPT = "kept"
    TRUNCATED = "truncated"
    SUMMARIZED = "summarized"
    LAST_N_CUT = "last_n_cut"
    AFTER_LAST_USER = "after_last_user"
    PLACEHOLDER = "placeholder"
    ORPHAN = "orphan"
    FORGOTTEN = "forgotten"
    IMAGE_CAPPED = "image_capped"
    IMAGE_MARKER = "image_marker"
    SEARCH_FILTER = "search_filter"
    GENERATED = "generated"
    FIXUP = "fixup"


class Segment(enum.StrEnum):
    SYSTEM = "system"
    HISTORY = "history"
    CUSTOM_AGENT = "custom_agent"
    PROJECT_FILES = "project_files"
    FORGOTTEN_FILES = "forgotten_files"
    LAST_USER = "last_user"
    IN_TURN = "in_turn"
    REMINDER = "reminder"


class Origin(enum.StrEnum):
    """What a working message was made from (its value shows in replay reports)."""

    MESSAGE = "message"
    FILE = "file"
    TOOL_CALLS = "tool_calls"
    TOOL_RESULT = "tool_result"
    ANSWER = "answer"
    SUMMARY = "summary"
    CUSTOM_AGENT = "custom_agent"
    DOCUMENTS = "documents"
    PROJECT_READ_FILE = "project_read_file"
    FORGOTTEN_FILES = "forgotten_files"
    IN_FLIGHT = "in_flight"
    REMINDER = "reminder"
    SYSTEM = "system"


class MessageKey(str):
    """The key of a working message made from a stored message, or from one of its parts
    (`part`: `#file0`, `#calls1`, `#result0`, `:fileid` for a summarized message's file).

    Its text, `m:{len(id)}:{id}{part}`, is the key's identity in the record and in `diff`; it is
    length-prefixed, so no stored id can forge another message's key or a generated message's
    ("system", "reminder", ...). Whoever needs the stored message asks `message_id`; whether a key
    is a stored message's is `isinstance(key, MessageKey)`."""

    __slots__ = ()

    def __new__(cls, message_id: str, part: str = "") -> MessageKey:
        return super().__new__(cls, f"m:{len(message_id)}:{message_id}{part}")

    def __reduce__(self) -> tuple[type[MessageKey], tuple[str, str]]:  # copy and pickle: from its parts
        return MessageKey, (self.message_id, self.part)

    @property
    def message_id(self) -> str:
        """The stored message's id."""
        size, _, rest = self[2:].partition(":")
        return rest[: int(size)]

    @property
    def part(self) -> str:
        size, _, rest = self[2:].partition(":")
        return rest[int(size) :]


def project_file_key(file_id: str) -> str:
    """The decision-record key of a project file (the `project` row, R-PROJ)."""
    return f"project:{file_id}"


def image_key(key: str, n: int) -> str:
    """The decision-record key of image `n` (attachment order) of the working message `key`.

    Only a row's identity (`diff` aligns rows by it): whoever needs the message reads
    `Row.attached_to`, never this text."""
    return f"{key}#img{n}"


@dataclass(frozen=True, slots=True)
class Image:
    file_id: str
    data: bytes | None  # None: budget-only image
    tokens: int | None  # stored count; None = estimate (a marker's cost on a non-vision model)
    project: bool = False  # appended from the project (R-PROJ-2)


@dataclass(slots=True, eq=False)  # never changed once made: not frozen, so made without object.__setattr__
class Call:
    """A tool call. Two calls are equal when every request would send them alike: `args` are
    compared as the JSON they are sent as, so key order and `1`, `1.0`, `true` differ (a dict's
    `==` ignores both, and replay shares a translation between equal messages, R-RPL-9)."""

    id: str
    name: str
    args: Any
    tokens: int | None  # stored count of the arguments; None = count them
    args_text: str | None = None  # R-FIX-7: the arguments as the model wrote them

    def _compared(self) -> tuple[Any, ...]:
        return (
            self.id,
            self.name,
            self.tokens,
            self.args_text,
            json.dumps(self.args, ensure_ascii=False, default=repr),
        )

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Call):
            return NotImplemented
        return self._compared() == other._compared()

    def __hash__(self) -> int:
        return hash(self._compared())


@dataclass(slots=True, unsafe_hash=True)  # hashed as a frozen one is, never changed once made (see `Copier`)
class Working:
    """One working message. `key` is unique within an assembly and stable across runs."""

    key: str
    kind: Kind
    text: str
    tokens: int | None  # of the text alone; None = count it (see measure.Meter)
    source_id: str | None = None  # the stored message or file id behind it
    images: tuple[Image, ...] = ()
    tool_calls: tuple[Call, ...] = ()
    tool_call_id: str | None = None
    cacheable: bool = False
    file_id: str | None = None
    origin: Origin = Origin.MESSAGE
    notes: tuple[str, ...] = ()  # human-readable only: no decision may depend on their wording
    count_text: str | None = None  # counted instead of `text` (a file message: its content)
    placeholder: bool = False  # a tool result whose content was replaced by the placeholder (R-CONV-3)

    def with_(self, **changes: Any) -> Working:
        """A copy with `changes`, as `dataclasses.replace` makes it (through `Copier`: a replay
        copies every window message)."""
        return _copy_working(self, **changes)


class Copier(Generic[T]):
    """`dataclasses.replace` for one slotted dataclass without `__post_init__` or `init=False`
    fields, without walking the fields' definitions per copy (replay copies every window message,
    and its planner a fixture per call).

    `changing` and `new` make their object with code written for the class (as `dataclasses`
    writes `__init__`): one plain attribute store per field. A frozen class refuses those stores
    (its `__init__` calls `object.__setattr__` per field, about 1,150 instructions each against
    about 140), so for one the code fills a twin class with the very same slots and then gives
    the object its class (`__class__`: the same layout, so the object is exactly one of the class,
    equal to and hashed as the one its `__init__` makes). A class whose layout the twin cannot
    match (not slotted) is filled with `object.__setattr__` per field, in C."""

    __slots__ = ("_cls", "_known", "_made", "_names", "_set", "_twin", "_values")

    def __init__(self, cls: type[T]) -> None:
        made = fields(cls)  # type: ignore[arg-type]
        if hasattr(cls, "__post_init__") or not all(f.init for f in made):
            raise TypeError(f"{cls.__name__} needs dataclasses.replace: it has __post_init__ or init=False fields")
        self._cls = cls
        self._names = tuple(f.name for f in made)
        self._known = frozenset(self._names)
        self._values = attrgetter(*self._names)
        self._set: Callable[[Any, str, Any], None] = setattr if cls.__setattr__ is _set else _set
        self._twin: type | None = cls if self._set is setattr else _twin(cls, self._names)  # what the code fills
        self._made: Callable[[tuple[Any, ...]], T] | None = None  # `new`'s code, written on first use

    def __call__(self, obj: T, /, **changes: Any) -> T:
        if not changes.keys() <= self._known:
            raise TypeError(f"{self._cls.__name__} has no field {sorted(changes.keys() - self._known)[0]!r}")
        copy, put = _new(self._cls), self._set
        any(map(put, repeat(copy), self._names, self._values(obj)))  # every field set, in C (`put` gives None)
        for name, value in changes.items():
            put(copy, name, value)
        return copy

    def changing(self, *names: str) -> Callable[..., T]:
        """`lambda obj, *values: self(obj, **dict(zip(names, values)))`, for a copy made again and
        again with the same fields changed (a replay's call, its settings, a window message's
        cacheable copy): each field is stored once, by code written for these names."""
        unknown = [name for name in names if name not in self._known]
        if unknown:
            raise TypeError(f"{self._cls.__name__} has no field {unknown[0]!r}")
        cls, count = self._cls, len(names)
        kept = tuple(name for name in self._names if name not in names)
        if self._twin is None:  # no twin: each field set in C through `object.__setattr__`
            put = self._set
            values: Callable[[T], Any] = (
                attrgetter(*kept) if len(kept) > 1 else lambda obj: tuple(getattr(obj, name) for name in kept)
            )

            def copy(obj: T, /, *changed: Any) -> T:
                if len(changed) != count:
                    raise TypeError(f"{cls.__name__} copies change {count} field(s), not {len(changed)}")
                made = _new(cls)
                any(map(put, repeat(made), kept, values(obj)))
                any(map(put, repeat(made), names, changed))
                return made

            return copy
        body = [
            "def copy(obj, /, *changed):",
            f"    if len(changed) != {count}:",
            f"        raise TypeError(f'{cls.__name__} copies change {count} field(s), not {{len(changed)}}')",
            "    made = _new(_twin)",
            *(f"    made.{name} = obj.{name}" for name in kept),
            *(f"    made.{name} = changed[{i}]" for i, name in enumerate(names)),
        ]
        return self._written(body, "copy")

    def new(self, *values: Any) -> T:
        """A new object from every field's value, in the fields' order: what the class's own
        `__init__` makes from them, each field stored once (a replay makes a row per call)."""
        if len(values) != len(self._names):
            raise TypeError(f"{self._cls.__name__} takes {len(self._names)} field values, not {len(values)}")
        if self._twin is None:
            made = _new(self._cls)
            any(map(self._set, repeat(made), self._names, values))
            return made
        if self._made is None:
            body = ["def new(values):", "    made = _new(_twin)"]
            body += [f"    made.{name} = values[{i}]" for i, name in enumerate(self._names)]
            self._made = self._written(body, "new")
        return self._made(values)

    def _written(self, body: list[str], name: str) -> Callable[..., T]:
        """The function `body` writes (it fills `made`), ending by giving a twin's object its class."""
        if self._twin is not self._cls:
            body.append("    _set(made, '__class__', _cls)")
        body.append("    return made")
        scope: dict[str, Any] = {"_new": _new, "_twin": self._twin, "_set": _set, "_cls": self._cls}
        exec("\n".join(body), scope)  # noqa: S102  (the class's own field names, as `dataclasses` writes them)
        made: Callable[..., T] = scope[name]
        return made


def _twin(cls: type, names: tuple[str, ...]) -> type | None:
    """A class with `cls`'s very slots, whose objects can be given `cls` as their class (None: `cls`
    has another layout, such as a `__dict__`)."""
    if getattr(cls, "__slots__", None) != names or cls.__bases__ != (object,):
        return None
    twin = type(f"_{cls.__name__}Twin", (), {"__slots__": names})
    try:
        _set(_new(twin), "__class__", cls)
    except TypeError:
        return None
    return twin


_new, _set = object.__new__, object.__setattr__
_copy_working = Copier(Working)


@dataclass(frozen=True, slots=True)
class Row:
    """One entry of the decision record (`explain`, docs/rules.md#report-keys)."""

    id: str | None
    kind: str
    segment: Segment | None
    tokens: int
    fate: Fate
    rule: str
    notes: tuple[str, ...] = ()
    key: str | None = None  # the working message's key, when the row is about one
    text: str = ""  # a short preview, for the text transcript and diff alignment
    attached_to: str | None = None  # an image's row: the key of the working message it is attached to

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "segment": self.segment,
            "tokens": self.tokens,
            "fate": str(self.fate),
            "rule": self.rule,
            "notes": list(self.notes),
        }


@dataclass(slots=True)
class Record:
    """The warnings stages add in pipeline order (the fates and rules are decided in
    `assembly.fates` and `assembly.decisions`)."""

    warnings: list[str] = field(default_factory=list)

    def warn(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)
