"""R-RPL-6 / R-LOG-2: the causes `model` and `parameters` in fixture replay, and one line of
advice per cause in the table footer, the JSON totals and the report page (issue 21 item 5)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from ctxkit.history.tree import Ancestry
from ctxkit.loading.config import Options
from ctxkit.loading.read import load_fixture
from ctxkit.replay import breaks, logbreaks
from ctxkit.replay.causes import CAUSE_ADVICE, Cause
from ctxkit.replay.driver import replay
from ctxkit.translate.items import prompt_items

from .conftest import FIXTURES, ROOT, ctxkit
from .test_replay import rows

REPLAY = FIXTURES / "replay"


def _views(name: str) -> list[tuple[breaks.MappedCall, breaks.Dropped]]:
    fixture = load_fixture(str(REPLAY / name))
    out: list[tuple[breaks.MappedCall, breaks.Dropped]] = []

    def keep(index: int, call: Any, result: Any) -> None:
        items = prompt_items(result.payload, meter=result.assembly.meter)
        out.append(breaks.view(result, items, tuple(i.key for i in items), call.user.id))

    replay(fixture, Options(), on_call=keep)
    return out


@pytest.mark.parametrize("cause", list(Cause))
def test_r_rpl_6_every_cause_has_one_line_of_advice(cause: Cause) -> None:
    advice = CAUSE_ADVICE[cause]
    assert advice and "\n" not in advice and len(advice) < 120


def test_r_rpl_6_every_cause_is_found_by_a_replay_and_cites_a_documented_rule() -> None:
    """The closed list is the one `Cause`: no cause only one table knows, none that no replay finds."""
    assert set(breaks.CAUSE_RULES) | set(logbreaks.CAUSE_RULES) == set(Cause)
    rules = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    for rule in {*breaks.CAUSE_RULES.values(), *logbreaks.CAUSE_RULES.values()}:
        assert f"### {rule}\n" in rules


def test_r_log_2_model_and_parameters_causes_in_fixture_replay() -> None:
    """A changed model or keyed setting (OpenAI prompt_cache_key) is the cause, named, before any item."""
    (first, _), (second, dropped) = _views("append.yaml")[:2]
    ancestry = Ancestry(load_fixture(str(REPLAY / "append.yaml")))
    common = 2
    same = breaks.find(second, dropped, first, common, expired=False, ancestry=ancestry)
    assert same.cause == "append"
    model = breaks.find(replace(second, model="gpt-4.1"), dropped, first, common, expired=False, ancestry=ancestry)
    assert (model.cause, model.rule, model.this) == (
        "model",
        "R-LOG-2",
        {"kind": "setting", "id": "model", "segment": None},
    )
    keyed = replace(second, settings=(("prompt_cache_key", '"tenant-7"'),))
    changed = breaks.find(keyed, dropped, first, common, expired=False, ancestry=ancestry)
    assert changed.cause == "parameters" and changed.this == {
        "kind": "setting",
        "id": "prompt_cache_key",
        "segment": None,
    }


def test_r_log_2_fixture_cache_key_is_a_keyed_setting_of_every_call(tmp_path: Any) -> None:
    """settings.cache.key is sent with every call, so it is the same on both sides: no break."""
    text = (REPLAY / "append.yaml").read_text(encoding="utf-8")
    path = tmp_path / "keyed.yaml"
    path.write_text(text.replace("settings: {cache: {", "settings: {cache: {key: tenant-7, "), encoding="utf-8")
    assert [c["cause"] for c in rows(path)] == [c["cause"] for c in rows(REPLAY / "append.yaml")]


def test_r_rpl_8_advice_in_the_footer_and_the_json() -> None:
    out = ctxkit("replay", str(REPLAY / "tools.yaml")).out
    assert "what to change:\n  tools: declare every tool up front, in a stable order" in out
    healthy = ctxkit("replay", str(REPLAY / "append.yaml")).out
    assert "what to change" not in healthy  # append and first_call need nothing
    import json

    doc = json.loads(ctxkit("replay", str(REPLAY / "system_date.yaml"), "--format", "json").out)
    advice = {c["cause"]: c["advice"] for c in doc["totals"]["causes"]}
    assert advice["system_date"].startswith("move the date after the cached prefix")
