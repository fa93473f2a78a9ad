"""Which provider and model a run builds for when `--model` names another provider's
model (issue 19 item 11; R-FIX-0 and docs/rules.md#commands)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxkit.cli.options import model_per_provider
from ctxkit.errors import InputError
from ctxkit.loading.config import Options, resolve
from ctxkit.loading.read import load_fixture

from .conftest import ctxkit

OPENAI = """\
ctxkit: 1
now: "2026-03-14T09:30:00Z"
model: {provider: openai, name: gpt-4o}
messages:
  - {id: u1, role: user, text: hi}
"""


@pytest.fixture
def fixture(tmp_path: Path) -> Path:
    path = tmp_path / "chat.yaml"
    path.write_text(OPENAI, encoding="utf-8")
    return path


def test_r_fix_0_model_of_another_provider_chooses_that_provider(fixture: Path) -> None:
    """`--model claude-sonnet-4-5` on an OpenAI fixture once failed ("not in the built-in
    model table"); now it builds Anthropic's request with Claude's 200,000-token window."""
    eff = resolve(load_fixture(str(fixture)), Options(model="claude-sonnet-4-5"))
    assert (str(eff.provider), eff.model, eff.max_input_tokens) == ("anthropic", "claude-sonnet-4-5", 200_000)
    body = json.loads(ctxkit("assemble", str(fixture), "--model", "claude-sonnet-4-5").out)
    assert body["model"] == "claude-sonnet-4-5" and "max_tokens" in body and body["messages"][0]["role"] == "user"


@pytest.mark.parametrize(
    ("options", "provider"),
    [
        (Options(model="gpt-4.1"), "openai"),  # the fixture's provider serves it
        (Options(model="llama3.1", max_input_tokens=1000), "openai"),  # open-weight: served by many, no switch
        (Options(model="my-finetune", max_input_tokens=1000), "openai"),  # no owner
        (Options(provider="gemini", model="claude-sonnet-4-5", max_input_tokens=1000), "gemini"),  # --provider wins
    ],
)
def test_r_fix_0_model_keeps_the_provider_when_it_does_not_belong_elsewhere(
    fixture: Path, options: Options, provider: str
) -> None:
    assert str(resolve(load_fixture(str(fixture)), options).provider) == provider


def test_diff_two_providers_and_one_model_gives_the_model_to_its_provider(fixture: Path) -> None:
    """`diff --provider openai --provider anthropic --model claude-sonnet-4-5` needs the model
    once: the OpenAI side keeps the fixture's gpt-4o."""
    run = ctxkit(
        "diff", str(fixture), "--provider", "openai", "--provider", "anthropic", "--model", "claude-sonnet-4-5"
    )
    assert run.out.splitlines()[:2] == [
        f"a: {fixture} provider=openai",
        f"b: {fixture} provider=anthropic model=claude-sonnet-4-5",
    ]
    assert '-  "model": "gpt-4o",' in run.out and '+  "model": "claude-sonnet-4-5",' in run.out
    assert "warning" not in run.err


def test_snapshot_takes_a_model_per_provider(fixture: Path, tmp_path: Path) -> None:
    snaps = tmp_path / "snaps"
    ctxkit(
        "snapshot", str(fixture), "--snapshots", str(snaps), "--update",
        "--provider", "openai", "--provider", "anthropic", "--model", "claude-sonnet-4-5", "--model", "gpt-4.1",
    )  # fmt: skip
    written = {path.name: path.read_text(encoding="utf-8") for path in snaps.iterdir()}
    assert sorted(written) == ["chat.anthropic.json", "chat.openai.json"]
    assert '"model": "claude-sonnet-4-5"' in written["chat.anthropic.json"]
    assert '"model": "gpt-4.1"' in written["chat.openai.json"]


@pytest.mark.parametrize(
    ("providers", "models", "expected"),
    [
        (["openai", "anthropic"], [], [None, None]),
        (["openai", "anthropic"], ["claude-sonnet-4-5"], [None, "claude-sonnet-4-5"]),
        (["openai", "azure"], ["gpt-4.1"], ["gpt-4.1", "gpt-4.1"]),  # fits both
        (["openai", "anthropic"], ["my-finetune"], ["my-finetune", "my-finetune"]),  # fits none
        (["openai", "anthropic", "gemini"], ["gemini-2.5-pro", "gpt-4.1"], ["gpt-4.1", None, "gemini-2.5-pro"]),
        ([None], ["claude-sonnet-4-5"], ["claude-sonnet-4-5"]),
    ],
)
def test_model_per_provider(providers: list[str | None], models: list[str], expected: list[str | None]) -> None:
    assert model_per_provider(providers, models) == expected


@pytest.mark.parametrize(
    ("providers", "models", "message"),
    [
        ([None], ["gpt-4.1", "claude-sonnet-4-5"], "--model given more than once needs --provider"),
        (["openai", "anthropic"], ["gpt-4.1", "gpt-4o"], "--model 'gpt-4.1' and 'gpt-4o' both fit --provider openai"),
        (["openai", "anthropic"], ["gpt-4.1", "gemini-2.5-pro"], "--model 'gemini-2.5-pro' fits none of the providers"),
    ],
)
def test_model_per_provider_refuses_what_it_cannot_assign(
    providers: list[str | None], models: list[str], message: str
) -> None:
    with pytest.raises(InputError, match=message):
        model_per_provider(providers, models)
