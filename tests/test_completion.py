"""Shell completion (issue 11 item 18): click's completion through `main`, for bash, zsh and fish."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ctxkit.loading.models import known_models

MAIN = [sys.executable, "-c", "from ctxkit.cli import main; main()"]


def complete(shell: str, words: str, **extra: str) -> list[str]:
    """What ctxkit answers when `shell` asks for completions of the command line `words`."""
    env = {**os.environ, "_CTXKIT_COMPLETE": f"{shell}_complete", "COMP_WORDS": words}
    env["COMP_CWORD"] = str(len(words.split(" ")) - 1)
    env.update(extra)
    proc = subprocess.run(MAIN, env=env, capture_output=True, text=True, check=True)
    return proc.stdout.splitlines()


@pytest.mark.parametrize(
    ("shell", "marker"), [("bash", "complete -o"), ("zsh", "#compdef ctxkit"), ("fish", "complete")]
)
def test_completion_script_is_printed_not_the_help(shell, marker):
    """`_CTXKIT_COMPLETE=bash_source ctxkit` used to print the help: `main` took no arguments for "show help"."""
    env = {**os.environ, "_CTXKIT_COMPLETE": f"{shell}_source"}
    out = subprocess.run(MAIN, env=env, capture_output=True, text=True, check=True).stdout
    assert marker in out and "_CTXKIT_COMPLETE" in out
    assert "Usage:" not in out


def test_completion_of_commands_providers_models_and_files():
    assert complete("bash", "ctxkit sn") == ["plain,snapshot"]
    providers = complete("bash", "ctxkit assemble x --provider ")
    assert providers == ["plain,openai", "plain,azure", "plain,anthropic", "plain,ollama", "plain,gemini"]
    # model names come from the model table, the chosen provider's first
    assert complete("bash", "ctxkit budget x --provider anthropic --model claude-s") == [
        f"plain,{name}" for name in known_models("anthropic") if name.startswith("claude-s")
    ]
    every = complete("bash", "ctxkit snapshot x --model ")
    assert {"plain,gpt-4o", "plain,claude-sonnet-4-5", "plain,gemini-2.5-pro", "plain,llama3.1"} <= set(every)
    assert complete("bash", "ctxkit snapshot x --provider gemini --model ") == [
        f"plain,{name}" for name in known_models("gemini")
    ]
    # fixtures (every positional argument) complete as files; the shell lists them
    assert complete("bash", "ctxkit assemble fixtures/pl") == ["file,fixtures/pl"]
    assert complete("bash", "ctxkit diff a.yaml fix") == ["file,fix"]


def test_zsh_and_fish_get_the_same_answers():
    zsh = complete("zsh", "ctxkit assemble x --tokenizer ")
    assert zsh == ["plain", "cl100k_base", "_", "plain", "o200k_base", "_", "plain", "approx", "_"]
    fish = complete("fish", "ctxkit assemble x --tokenizer ", COMP_CWORD="")
    assert fish == ["plain,cl100k_base", "plain,o200k_base", "plain,approx"]
