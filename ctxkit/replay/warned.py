"""The warnings of a replay: one per kind, with a count, however many calls raise it.

Input: each call's typed warnings as `add(index, label, warning, over)` (`pipeline.RunWarning`:
its kind and its text; `over`: the tokens over the window, for R-ASM-9's warning). Output:
`texts()`, in order of first appearance. A warning is grouped by its kind: R-ASM-9's
(`WarningKind.OVER_WINDOW`) is one group whatever it says; a kind that gathers several
warnings (assembly's, translation's) is told apart within by its text with the numbers masked.
A warning about the fixture reads the same on every call and is said once. One about the call
itself (R-ASM-9's, or a text whose numbers change from call to call) names the first call that
raised it and counts the others, so a 20,000-message replay gives one line, not one per call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ctxkit.output import plural
from ctxkit.pipeline import RunWarning, WarningKind

_NUMBER = re.compile(r"\d[\d,.]*")
# A group: a call warning's kind and what tells it apart within its kind; None and the text for a
# warning about the fixture or the whole replay.
_Group = tuple[WarningKind | None, str]


@dataclass(slots=True)
class _Kind:
    first: str  # the text as the first call raised it
    call: str  # `call 5 (m7)`
    calls: int = 1
    varied: bool = False  # the text differs between calls
    over: int = 0  # R-ASM-9: the most tokens over the window
    worst: str = ""  # and the call that sent it


class Warned:
    def __init__(self, fixture_warnings: list[str]) -> None:
        self._kinds: dict[_Group, _Kind | None] = {(None, w): None for w in fixture_warnings}  # None: as written

    def add(self, index: int, label: str, warning: RunWarning, over: int = 0) -> None:
        call, text = f"call {index} ({label})", warning.text
        group = _group(warning)
        if group not in self._kinds:
            self._kinds[group] = _Kind(text, call, over=over, worst=call, varied=over > 0)
            return
        found = self._kinds[group]
        if found is None:
            return
        if found.call != call:
            found.calls += 1
        found.varied = found.varied or text != found.first
        if over > found.over:
            found.over, found.worst = over, call

    def note(self, text: str) -> None:
        """A warning about the whole replay (said once, as written)."""
        self._kinds.setdefault((None, text), None)

    def texts(self) -> tuple[str, ...]:
        return tuple(group[1] if found is None else _text(found) for group, found in self._kinds.items())


def _group(warning: RunWarning) -> _Group:
    """The warning's kind; within a kind that holds several warnings, its text without numbers."""
    if warning.kind is WarningKind.OVER_WINDOW:
        return warning.kind, ""
    return warning.kind, _NUMBER.sub("N", warning.text)


def _text(k: _Kind) -> str:
    if not k.varied:
        return k.first
    text = f"{k.call}: {k.first}"
    if k.calls == 1:
        return text
    more = plural(k.calls - 1, "more call", grouped=True)
    if k.over:
        return f"{text}; {more} too, the most {plural(k.over, 'token', grouped=True)} over the window at {k.worst}"
    return f"{text}; and {more} like it"
