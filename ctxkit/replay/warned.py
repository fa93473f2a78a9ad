"""The warnings of a replay: one per kind, with a count, however many calls raise it.

Input: each call's warnings as `add(index, label, text, over)` (`over`: tokens over the
window, given for R-ASM-9's warning alone, which the pipeline types as
`WarningKind.OVER_WINDOW`). Output: `texts()`, in order of first appearance. A warning about
the fixture reads the same on every call and is said once. One about the call itself (R-ASM-9's
over-the-window, or a text whose numbers change from call to call) names the first call that
raised it and counts the others, so a 20,000-message replay gives one line, not one per call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ctxkit.output import plural

_NUMBER = re.compile(r"\d[\d,.]*")


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
        self._kinds: dict[str, _Kind | None] = {w: None for w in fixture_warnings}  # None: said as written

    def add(self, index: int, label: str, text: str, over: int = 0) -> None:
        call = f"call {index} ({label})"
        kind = _NUMBER.sub("N", text)
        found = self._kinds.get(kind)
        if kind not in self._kinds:
            self._kinds[kind] = _Kind(text, call, over=over, worst=call, varied=over > 0)
            return
        if found is None:
            return
        if found.call != call:
            found.calls += 1
        found.varied = found.varied or text != found.first
        if over > found.over:
            found.over, found.worst = over, call

    def note(self, text: str) -> None:
        """A warning about the whole replay (said once, as written)."""
        self._kinds.setdefault(text, None)

    def texts(self) -> tuple[str, ...]:
        return tuple(kind if found is None else _text(found) for kind, found in self._kinds.items())


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
