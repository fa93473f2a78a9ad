"""Layer 1, the stored tree: frozen values built once by the loader, then trusted.

Input: nothing (these are types). Output: the vocabulary every later stage reads.
Ids are kept in their string form (R-FIX-1: `1` and `"1"` are the same id).
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any


class Role(enum.StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    SUMMARY = "summary"


class FileKind(enum.StrEnum):
    TEXT = "text"
    IMAGE = "image"
    METADATA_ONLY = "metadata_only"


TOKENIZERS = ("cl100k_base", "o200k_base", "approx")


@dataclass(frozen=True, slots=True)
class FileRecord:
    """A file of the fixture's `files:` list, its text or bytes read (R-FIX-4)."""

    id: str
    name: str
    kind: FileKind
    text: str | None = None  # text files: the content (read from `path` by the loader)
    data: bytes | None = None  # images: the bytes, or None for a budget-only image
    tokens: int | None = None  # stored count (R-FIX-3)
    chars: int | None = None  # stored size; defaults to len(text)
    pointer: str = ""  # JSON pointer of the file in the fixture, for messages

    @property
    def size_chars(self) -> int:
        if self.chars is not None:
            return self.chars
        return len(self.text or "")


@dataclass(frozen=True, slots=True)
class GeneratedImage:
    """An image a stored tool call generated, by its file id."""

    file_id: str
    revised_prompt: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A stored tool call: its arguments, turn and response as the fixture gives them."""

    id: str
    name: str
    args: Any  # JSON value, as written in the fixture
    turn: int = 0
    response: str | None = None
    tokens: int | None = None  # stored count of the arguments
    generated_images: tuple[GeneratedImage, ...] = ()
    args_text: str | None = None  # R-FIX-7: the arguments as the model wrote them


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A stored message of the tree, its parent set by R-FIX-2."""

    id: str
    role: Role
    parent: str | None  # None: a child of the implicit root (after R-FIX-2 is applied)
    index: int  # position in the fixture's `messages` list (file order)
    text: str = ""
    files: tuple[str, ...] = ()
    tokens: int | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    summarizes_through: str | None = None  # summary nodes only
    at: datetime | None = None  # when it was stored (R-RPL-3)


@dataclass(frozen=True, slots=True)
class InFlightCall:
    """A tool call of the in-flight loop, waiting for its result."""

    id: str
    name: str
    args: Any
    tokens: int | None = None
    args_text: str | None = None  # R-FIX-7: the arguments as the model wrote them


@dataclass(frozen=True, slots=True)
class InFlightMessage:
    """A message of the in-flight loop (R-FIX-1): an assistant's calls or a tool's result."""

    role: str  # "assistant" | "tool"
    index: int
    text: str = ""
    tool_calls: tuple[InFlightCall, ...] = ()
    tool_call_id: str | None = None
    tokens: int | None = None
    at: datetime | None = None  # when it was stored (R-RPL-3)


@dataclass(frozen=True, slots=True)
class ModelFields:
    """The `model:` block as written; None where the fixture leaves it to the table."""

    provider: str  # a registered provider (ctxkit/providers/)
    name: str
    max_input_tokens: int | None = None
    supports_images: bool | None = None
    max_output_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class CacheRules:
    """`settings.cache`: overrides of the provider's prompt-cache rules (R-RPL-5); None = the table's."""

    min_tokens: int | None = None
    increment: int | None = None
    lookback: int | None = None
    ttl_seconds: int | None = None
    ttl: str | None = None  # Anthropic `5m` | `1h`; OpenAI GPT-5.6 `30m` (the request's cache TTL)
    retention: str | None = None  # OpenAI before GPT-5.6: `in_memory` | `24h` (prompt_cache_retention)
    key: str | None = None  # OpenAI prompt_cache_key


@dataclass(frozen=True, slots=True)
class Prices:
    """`settings.prices`: USD per million tokens, used for every replayed call (R-RPL-7)."""

    input: Decimal
    output: Decimal
    cached_input: Decimal
    cache_write: Decimal


@dataclass(frozen=True, slots=True)
class Settings:
    """`settings:` with the defaults filled in; ratios are exact decimals."""

    safety_margin: Decimal = Decimal("0.05")
    compression_trigger_ratio: Decimal = Decimal("0.75")
    recent_messages_ratio: Decimal = Decimal("0.2")
    project_files_max_ratio: Decimal = Decimal("0.6")
    tool_result_placeholder_tokens: int = 20
    last_n_user_messages: int | None = None
    vector_db: bool = True
    image_cap: int | None = None
    azure_image_cap: bool = False
    prompt_cache: bool = True
    cache: CacheRules = field(default_factory=CacheRules)
    prices: Prices | None = None
    # R-FIX-6: a recorded request (what `import` writes): none of the application's own additions.
    as_logged: bool = False
    # R-FIX-7: further request-body fields, sent as written: (name, canonical JSON of the value).
    request_fields: tuple[tuple[str, str], ...] = ()

    def request_field_values(self) -> dict[str, Any]:
        return {name: json.loads(value) for name, value in self.request_fields}


@dataclass(frozen=True, slots=True)
class Prompts:
    """`prompts:`: the system prompt's parts the fixture overrides."""

    system: str | None = None
    custom_agent: str | None = None
    replace_base_system_prompt: bool = False
    task: str | None = None
    datetime_aware: bool = True


@dataclass(frozen=True, slots=True)
class UserInfo:
    """`user_info:`: who the user is, for the system prompt."""

    name: str | None = None
    email: str | None = None
    role: str | None = None
    organization: tuple[tuple[str, str], ...] = ()
    team: str | None = None
    preferences: str | None = None
    memories: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolDef:
    """A declared tool: a name, or a full definition."""

    name: str
    description: str | None = None
    parameters: Any = None  # JSON Schema object, when given
    full: bool = False  # True when given as a definition, not just a name
    request_fields: tuple[tuple[str, str], ...] = ()  # R-FIX-7: (name, JSON text), sent as written

    def request_field_values(self) -> dict[str, Any]:
        return {name: json.loads(value) for name, value in self.request_fields}


@dataclass(frozen=True, slots=True)
class TurnOverrides:
    """`turn:`: the turn state the fixture sets instead of deriving it."""

    cycle: int | None = None
    max_cycles: int | None = None
    just_ran_web_search: bool | None = None
    ran_image_generation: bool | None = None
    searched: bool | None = None
    generated_files: bool | None = None


@dataclass(frozen=True, slots=True)
class Fixture:
    """A loaded fixture: the stored tree and everything else the file says, checked."""

    source: str  # the name the user gave ("-" for stdin)
    base_dir: Path  # where relative paths resolve
    model: ModelFields
    name: str | None = None
    now: datetime | None = None
    tokenizer: str | None = None
    settings: Settings = field(default_factory=Settings)
    prompts: Prompts = field(default_factory=Prompts)
    templates: tuple[tuple[str, str], ...] = ()
    user_info: UserInfo | None = None
    tools: tuple[ToolDef, ...] = ()
    turn: TurnOverrides = field(default_factory=TurnOverrides)
    files: tuple[FileRecord, ...] = ()
    project_files: tuple[str, ...] = ()
    messages: tuple[StoredMessage, ...] = ()
    leaf: str | None = None
    in_flight: tuple[InFlightMessage, ...] = ()
    raw: Any = None  # the parsed document, for write-back (compress --write)
    raw_floats: Any = None  # id(float) -> (float, text as written) for `raw`'s numbers

    def file(self, file_id: str) -> FileRecord:
        for f in self.files:
            if f.id == file_id:
                return f
        raise KeyError(file_id)

    def message(self, message_id: str) -> StoredMessage:
        for m in self.messages:
            if m.id == message_id:
                return m
        raise KeyError(message_id)
