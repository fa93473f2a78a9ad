"""What translation made of each working message, kept for the next call of a replay (R-RPL-9).

Input: the working messages of one request, one request after another. Output: an `MemoEntry` per
working message: its wire parts (`common.prepare`) and what its provider's translator made of it
(the payload dicts with their prompt items' keys and counts), reused as long as the same working
message comes back. Only messages without images are kept (an image's parts depend on the
window: the cap, R-TR-6); the rules that read the whole window (the image cap, cache marks,
Anthropic's merges and tool ids, Gemini's call names, declared tools, a model's system-message
rules) run on every request.

A replay's driver owns one `TranslationMemo` and hands it to every call; without one, every
request is translated afresh (and gives the same payload and items).
"""

from __future__ import annotations

from typing import Any

from ctxkit.history.working import Working


class MemoEntry:
    """One working message's translation. `parts`: its wire parts; `fragment`: its translator's."""

    __slots__ = ("fragment", "parts", "working")

    def __init__(self, working: Working) -> None:
        self.working = working
        self.parts: list[Any] | None = None  # list[common.Part], never changed once made
        self.fragment: Any = None


class TranslationMemo:
    """Entries by working-message key, for one provider, model and tokenizer at a time.

    An entry is reused only for the working message it was made from (the same object, or one
    equal to it in every field: a message rebuilt for each request, such as an in-flight one);
    a key whose message changed gets a new entry. Entries not used by the last request are
    forgotten, so the memo holds about one window."""

    def __init__(self) -> None:
        self._context: tuple[str, str, str] | None = None
        self._current: dict[str, MemoEntry] = {}
        self._previous: dict[str, MemoEntry] = {}

    def begin(self, provider: str, model: str, tokenizer: str) -> None:
        """A new request: keep what the last one used (all of it, unless the context changed)."""
        context = (provider, model, tokenizer)
        if context != self._context:
            self._context = context
            self._current = {}
        self._previous, self._current = self._current, {}

    def entries(self, messages: list[Working]) -> list[MemoEntry | None]:
        """The entry of each message without images (None for the others), for one request."""
        current, previous = self._current, self._previous
        out: list[MemoEntry | None] = []
        for w in messages:
            if w.images:
                out.append(None)
                continue
            key = w.key
            found = current.get(key) or previous.get(key)
            if found is None or (found.working is not w and found.working != w):
                found = MemoEntry(w)
            current[key] = found
            out.append(found)
        return out

    def held(self) -> int:
        """How many working messages the memo holds."""
        return len(self._current)
