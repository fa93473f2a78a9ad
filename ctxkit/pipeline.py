"""The pure core driver: a loaded fixture and options → assembly, payload, wire tokens.

Input: `domain.Fixture`, `config.Options`. Output: `Result`. No printing, no
exits, no click: callable from tests, the pytest plugin and other programs.
Reports take a `Result` (`reports.budget.report`, `reports.explain.rows`); the
pipeline never imports them.
"""

from __future__ import annotations

import enum
import gc
from dataclasses import dataclass, field
from typing import Protocol

from ctxkit import collector
from ctxkit.assembly.assemble import Assembly, Incremental, assemble
from ctxkit.history.working import Copier, Image
from ctxkit.loading import models
from ctxkit.loading.config import Effective, Options, resolve
from ctxkit.loading.domain import Fixture
from ctxkit.loading.templates import text_warnings
from ctxkit.translate import Payload, items, translate
from ctxkit.translate.common import TranslationInput
from ctxkit.translate.memo import TranslationMemo


@dataclass(slots=True, unsafe_hash=True)  # hashed as a frozen one is, never changed once made (one per call)
class Result:
    assembly: Assembly
    payload: Payload
    _wire: list[int] = field(default_factory=list, compare=False, repr=False)  # counted once, on first use

    @property
    def max_input_tokens(self) -> int:
        return self.assembly.eff.max_input_tokens

    def wire_tokens(self) -> int:
        """The request as sent, re-counted (R-RPL-4): what `budget` reports as `wire_tokens`."""
        if not self._wire:
            with collector.paused():
                self._wire.append(items.wire_tokens(self.payload, meter=self.assembly.meter))
        return self._wire[0]

    def counted(self, wire_tokens: int) -> None:
        """Give the wire tokens counted elsewhere (replay sums its prompt items, the same number)."""
        if not self._wire:
            self._wire.append(wire_tokens)

    def over_window_tokens(self) -> int:
        """R-ASM-9: how far the request as sent exceeds the window; 0 when it fits.

        A token is at least one byte of text, so when even the UTF-8 size of the
        texts fits, the request fits: small requests are never tokenized for this
        (a fixture with stored counts does not load its tokenizer). Once the assembly has
        counted texts the tokenizer is loaded, and counting costs about what the bound does.
        """
        bound = not self.assembly.meter.counted_texts
        if (
            not self._wire
            and bound
            and items.wire_tokens(self.payload, meter=_ByteBound(self.assembly)) <= self.max_input_tokens
        ):
            return 0
        return items.over_window_tokens(self.wire_tokens(), self.max_input_tokens)

    @property
    def warnings(self) -> list[str]:
        return [w.text for w in self.typed_warnings()]

    def typed_warnings(self, settings: list[RunWarning] | None = None) -> list[RunWarning]:
        """The warnings with their kind, so no one classifies a warning by its wording.

        `settings`: `settings_warnings(eff)` when the caller has them (a replay: once per settings)."""
        found = list(settings_warnings(self.assembly.eff) if settings is None else settings)
        found += [RunWarning(WarningKind.ASSEMBLY, w) for w in self.assembly.record.warnings]
        found += [RunWarning(WarningKind.TRANSLATION, w) for w in self.payload.prepared.warnings]
        if self.over_window_tokens():
            text = items.over_window_warning(self.wire_tokens(), self.max_input_tokens) or ""
            found.append(RunWarning(WarningKind.OVER_WINDOW, text))
        return found


def settings_warnings(eff: Effective) -> list[RunWarning]:
    """The warnings about the settings alone: a model of another provider, braces the templates and
    the fixture's prompts do not fill (from `eff.provider`, `eff.model`, `eff.templates` and the
    fixture's prompts)."""
    mismatch = models.provider_mismatch(str(eff.provider), eff.model)
    found = [RunWarning(WarningKind.PROVIDER_MISMATCH, mismatch)] if mismatch else []
    return found + [RunWarning(WarningKind.TEMPLATES, w) for w in text_warnings(eff.templates, eff.fixture.prompts)]


class WarningKind(enum.Enum):
    PROVIDER_MISMATCH = "provider_mismatch"  # the model is another provider's
    TEMPLATES = "templates"  # braces the templates and the fixture's prompts do not fill
    ASSEMBLY = "assembly"
    TRANSLATION = "translation"
    OVER_WINDOW = "over_window"  # R-ASM-9: the request as sent exceeds the window


@dataclass(frozen=True, slots=True)
class RunWarning:
    """One warning of a run: its kind (what it is about) and its text (what the user reads)."""

    kind: WarningKind
    text: str


class _ByteBound:
    """An upper bound of every tokenizer's count: a text's UTF-8 size; images at their cost."""

    def __init__(self, assembly: Assembly) -> None:
        self._meter = assembly.meter
        self.tokenizer = assembly.meter.tokenizer  # the same provider rules apply to the bound

    def text(self, text: str) -> int:
        return len(text.encode("utf-8", "surrogatepass"))

    def image(self, image: Image) -> int:
        return self._meter.image(image)


class Carried(Incremental, Protocol):
    """A replay's state as the pipeline reads it: assembly's `Incremental` and what translation
    made of each working message (`replay.state.State`)."""

    translation: TranslationMemo

    def effective(self, fixture: Fixture, options: Options | None) -> Effective:
        """`resolve(fixture, options)`."""
        ...


def run(fixture: Fixture, options: Options | None = None, *, state: Carried | None = None) -> Result:
    """`state`: what a replay carries from call to call (`replay.state.State`); same result without it."""
    if not gc.isenabled():  # paused already (a replay pauses it once for all its calls): nothing to restore
        return _run(fixture, options, state)
    with collector.paused():  # linear allocation, no cycles: see `collector`
        return _run(fixture, options, state)


def _run(fixture: Fixture, options: Options | None, state: Carried | None) -> Result:
    eff = state.effective(fixture, options) if state is not None else resolve(fixture, options)
    assembly = assemble(eff, state=state)
    memo = state.translation if state is not None else None
    return Result(assembly, translate(translation_input(assembly, memo)))


def translation_input(a: Assembly, memo: TranslationMemo | None = None) -> TranslationInput:
    """What translation reads of an assembly: its messages by segment and the request's settings."""
    eff = a.eff
    return _new_input(  # TranslationInput's fields in order
        str(eff.provider),
        eff.model,
        eff.max_input_tokens,
        eff.max_output_tokens,
        a.segments,
        eff.fixture.tools,
        eff.settings,
        eff.templates,
        eff.supports_images,
        a.meter,
        memo,
        (a.messages, a.segments),  # the segments' messages in order: `prepare` does not join them again
    )


_new_input = Copier(TranslationInput).new  # one per call: each field set in C
