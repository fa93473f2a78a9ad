"""Translator fragments shared by the working messages of equal content (R-RPL-9).

Input: the working messages a replay's `TranslationMemo` makes wire messages for. Output: per
message, a `Fragment` holder, the one a recent message of the same content got (its kind, text,
tool call id and calls, their arguments compared as sent: `same_calls`), so that a translator
makes each payload once: an in-flight message and its stored copy, a rebuilt system text or
reminder, the history's cacheable copy of a question share one.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from ctxkit.history.working import Call, Working


class Fragment:
    """What a provider's translator made of one working message (`fragment`, the translator's
    own type), reached from the message's wire message (`WireMessage.entry`), shared by the wire
    messages of equal content.

    It holds nothing that holds a wire message: replay runs with the cyclic collector paused
    (`ctxkit.collector`), so a reference cycle would keep every wire message the memo forgot in
    memory to the end."""

    __slots__ = ("fragment",)

    def __init__(self) -> None:
        self.fragment: Any = None


class Fragments:
    """Fragment holders by the content of the message they were made for (kind, text, tool
    call id and calls: all a wire message of a message without images is made from, its
    cacheable flag aside), so that messages of equal content share one translator fragment.
    It forgets what was not asked for during the last two generations, each about a window's
    worth of additions (so the memo holds a few windows, never the history)."""

    __slots__ = ("_new", "_old", "limit")

    def __init__(self) -> None:
        self._new: dict[tuple[Any, ...], tuple[tuple[Call, ...], Fragment]] = {}
        self._old: dict[tuple[Any, ...], tuple[tuple[Call, ...], Fragment]] = {}
        self.limit = 256

    def get(self, w: Working) -> Fragment:
        calls = w.tool_calls
        key = (w.kind, w.text, w.tool_call_id, *map(_ID, calls)) if calls else (w.kind, w.text, w.tool_call_id)
        found = self._new.get(key)
        if found is not None and same_calls(found[0], calls):  # equal arguments too
            return found[1]
        if found is None:
            found = self._old.pop(key, None)  # asked for again: kept another generation
        if found is None or not same_calls(found[0], calls):
            found = (calls, Fragment())
        if len(self._new) >= self.limit:
            self._old, self._new = self._new, {}
        self._new[key] = found
        return found[1]


def same_calls(a: tuple[Call, ...], b: tuple[Call, ...]) -> bool:
    """Whether two messages' calls are sent alike (`Call.__eq__`: the arguments compared as the
    JSON they are sent as); calls whose arguments are the very same object are, without writing
    that JSON (one stored message converted twice shares its arguments)."""
    if a is b:
        return True
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x is y:
            continue
        if x.args is not y.args or x.id != y.id or x.name != y.name:
            if not x == y:
                return False
        elif x.tokens != y.tokens or x.args_text != y.args_text:
            return False
    return True


_ID = attrgetter("id")
