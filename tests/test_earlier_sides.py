"""R-RPL-9: what later calls keep of an earlier call (`replay/earlier.py`), numbered whole against
the last view when the view is plain, equals the numbering of the kept items one by one.

A plain view (`Prompt.plain`: one item per payload message, none naming its origins: OpenAI,
Ollama) takes the numbers of the runs it shares with the last plain view as slices, checked by
comparing slices of the two assembled lists; every other view builds its places column. Both
must give every kept item the same side (tokens, role, breakpoint, the working message behind
it and its segment).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxkit.loading.config import Options
from ctxkit.loading.read import load_fixture
from ctxkit.replay import breaks, driver
from ctxkit.translate.prompt import Prompt

from .conftest import FIXTURES
from .helpers import bench_history


def _kept(fixture: Any, options: Options, monkeypatch: pytest.MonkeyPatch, *, plain: bool) -> tuple[list[Any], int]:
    """Every earlier call as kept (each item and its source, from where it is kept on), and how
    many views were numbered on the plain way."""
    kept: list[Any] = []
    whole = breaks.Sides._whole
    counted = [0]

    def trimmed(self: breaks.MappedCall, start: int, sides: breaks.Sides) -> Any:
        out = breaks.MappedCall.trimmed.__wrapped__(self, start, sides)  # type: ignore[attr-defined]
        if out is not None:
            kept.append([(out.item(n), out.source_at(n)) for n in range(out.start, out.length)])
        return out

    def counting(self: breaks.Sides, view: Any) -> Any:
        counted[0] += 1
        return whole(self, view)

    with monkeypatch.context() as m:
        original = breaks.MappedCall.trimmed
        trimmed.__wrapped__ = original  # type: ignore[attr-defined]
        m.setattr(breaks.MappedCall, "trimmed", trimmed)
        m.setattr(breaks.Sides, "_whole", counting)
        if not plain:
            m.setattr(Prompt, "plain", lambda self: False)
        driver.replay(fixture, options)
    return kept, counted[0]


@pytest.mark.parametrize(
    ("name", "window"),
    [("history", 3000), ("history", None), ("tool_loop_in_flight.yaml", 700), ("tool_loop_in_flight.yaml", None)],
)
def test_r_rpl_9_plain_views_numbered_whole_keep_the_sides_of_the_places_column(
    name: str, window: int | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if name == "history":
        path = tmp_path / "h.json"
        path.write_text(json.dumps(bench_history(160)), encoding="utf-8")
    else:
        path = FIXTURES / name
    fixture = load_fixture(str(path))
    for provider in ("openai", "ollama"):
        options = Options(provider=provider, max_input_tokens=window)
        fast, numbered = _kept(fixture, options, monkeypatch, plain=True)
        slow, none = _kept(fixture, options, monkeypatch, plain=False)
        assert numbered > 0 and none == 0  # each way was taken
        assert fast == slow, (name, window, provider)


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "ollama"])
@pytest.mark.parametrize(("name", "window"), [("history", 3000), ("tool_loop_in_flight.yaml", 700)])
def test_r_rpl_9_a_kept_call_reads_as_its_view(
    provider: str, name: str, window: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each kept item's tokens, role, breakpoint and source, read back from the side table (whose
    parts equal values share), equal the call's own view's."""
    if name == "history":
        path = tmp_path / "h.json"
        path.write_text(json.dumps(bench_history(160)), encoding="utf-8")
    else:
        path = FIXTURES / name
    original = breaks.MappedCall.trimmed
    checked = [0]

    def trimmed(self: breaks.MappedCall, start: int, sides: breaks.Sides) -> Any:
        out = original(self, start, sides)
        if out is not None:
            for n in range(out.start, out.length):
                mine, kept = self.item(n), out.item(n)
                assert kept is not None and mine is not None
                assert kept[1:4] == mine[1:4] and out.source_at(n) == self.source_at(n), (provider, n)
                checked[0] += 1
        return out

    monkeypatch.setattr(breaks.MappedCall, "trimmed", trimmed)
    driver.replay(load_fixture(str(path)), Options(provider=provider, max_input_tokens=window))
    assert checked[0] > 0
