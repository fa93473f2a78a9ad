"""Shared command-line options and the glue every command uses (defined once).

Input: click keyword arguments. Output: loaded fixtures, `config.Options`,
pipeline results; warnings echoed to stderr as `warning:` lines.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import click

from ctxkit import providers
from ctxkit.errors import InputError
from ctxkit.loading.domain import TOKENIZERS
from ctxkit.loading.files import DEFAULT_MAX_SIZE_TEXT

F = TypeVar("F", bound=Callable[..., Any])


def checked_text(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Callback of string options: never empty (`--model ''` would silently mean "unset"), and
    UTF-8 text (argv bytes that are not UTF-8 would fail later, when printed)."""
    for item in value if isinstance(value, tuple) else (value,):
        if isinstance(item, str):
            if not item.strip():
                raise click.BadParameter("must not be empty", ctx, param)
            if param.name != "templates_file" and not _is_utf8(item):
                raise click.BadParameter(f"{item.encode('utf-8', 'surrogateescape')!r} is not UTF-8 text", ctx, param)
    return value


def _is_utf8(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def format_option(*choices: str) -> Callable[[F], F]:
    """`--format`, per command; the first choice is the default (never terminal-dependent)."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(list(choices)),
        default=choices[0],
        show_default=True,
        help="Output format.",
    )


def load_options(fn: F) -> F:
    """Options of every command that reads fixtures."""
    fn = click.option("--allow-outside-paths", is_flag=True, help="Let file paths leave the fixture's folder.")(fn)
    fn = click.option(
        "--max-size",
        callback=checked_text,
        default=DEFAULT_MAX_SIZE_TEXT,
        show_default=True,
        help="Largest fixture accepted (bytes, K/M/G suffixes).",
    )(fn)
    return fn


# The option types of the commands; the pytest plugin checks the same values without click
# (`config.python_options`), and tests/test_pytest_plugin.py holds both to the same messages.
class ProviderChoice(click.Choice[str]):
    """The registered providers (ctxkit/providers/), read when a value is checked: a provider
    registered after this module was imported is a choice too."""

    def __init__(self) -> None:
        super().__init__(providers.names())

    @property
    def choices(self) -> tuple[str, ...]:
        return providers.names()

    @choices.setter
    def choices(self, value: object) -> None:
        """click's own __init__ sets the choices: the registry keeps them."""


PROVIDER_TYPE = ProviderChoice()
WINDOW_TYPE = click.IntRange(min=1)
TOKENIZER_TYPE = click.Choice(list(TOKENIZERS))

HELP = {  # the shared options' help, also for `diff`'s repeatable variants
    "provider": "Provider to build for.",
    "model": "Model name (changes the model-table defaults; another provider's model chooses that provider).",
    "max_input_tokens": "The model's input window.",
    "leaf": "Message id to answer from (the branch's end).",
    "tokenizer": "Token counter.",
    "now": "The clock, ISO 8601 (e.g. 2026-03-14T09:30:00Z).",
    "templates_file": "YAML map of template overrides.",
}

OVERRIDES: dict[str, Callable[[F], F]] = {
    "provider": click.option("--provider", type=PROVIDER_TYPE, help=HELP["provider"]),
    "model": click.option(
        "--model",
        callback=checked_text,
        shell_complete=lambda ctx, param, incomplete: complete_model(ctx, incomplete),
        help=HELP["model"],
    ),
    "max_input_tokens": click.option("--max-input-tokens", type=WINDOW_TYPE, help=HELP["max_input_tokens"]),
    "leaf": click.option("--leaf", callback=checked_text, help=HELP["leaf"]),
    "tokenizer": click.option("--tokenizer", type=TOKENIZER_TYPE, help=HELP["tokenizer"]),
    "now": click.option("--now", callback=checked_text, help=HELP["now"]),
    "templates_file": click.option(
        "--templates",
        "templates_file",
        type=click.Path(dir_okay=False),
        callback=checked_text,
        help=HELP["templates_file"],
    ),
}


def complete_model(ctx: click.Context, incomplete: str) -> list[click.shell_completion.CompletionItem]:
    """Model names from the model table: the chosen provider's when one is given, else all."""
    from ctxkit.loading.models import known_models

    chosen = ctx.params.get("provider") or ctx.params.get("providers")
    wanted = [chosen] if isinstance(chosen, str) else list(chosen or providers.names())
    names = dict.fromkeys(name for p in wanted for name in known_models(p))
    return [click.shell_completion.CompletionItem(name) for name in names if name.startswith(incomplete)]


def model_per_provider(providers: Sequence[str | None], models: Sequence[str]) -> list[str | None]:
    """The `--model` for each provider of a run with several (`diff`, `snapshot`); None
    keeps the fixture's model. Each model goes to the providers that serve it (the model
    table, else the name's shape: `models.owner_elsewhere`). One model that fits none or
    all of them goes to all, as any option given once does; several models need one
    provider each."""
    from ctxkit.loading.models import owner_elsewhere

    if not models:
        return [None] * len(providers)
    fits = {p: [m for m in models if p is not None and owner_elsewhere(p, m) is None] for p in providers}
    if len(models) == 1:
        takers = [p for p in providers if fits[p]]
        every = not takers or len(takers) == len(providers)
        return [models[0] if every or p in takers else None for p in providers]
    if None in providers:
        raise InputError("--model given more than once needs --provider: one model per provider")
    for p in providers:
        if len(fits[p]) > 1:
            first, second = fits[p][:2]
            raise InputError(f"--model {first!r} and {second!r} both fit --provider {p}: one model per provider")
    chosen = [fits[p][0] if fits[p] else None for p in providers]
    unused = [m for m in models if m not in chosen]
    if unused:
        raise InputError(f"--model {unused[0]!r} fits none of the providers given ({', '.join(map(str, providers))})")
    return chosen


def overrides(*names: str) -> Callable[[F], F]:
    """The named shared overrides (docs/rules.md#commands), in their usual order; each wins over the fixture."""

    def apply(fn: F) -> F:
        for name in reversed([n for n in OVERRIDES if n in names]):
            fn = OVERRIDES[name](fn)
        return fn

    return apply


def assembly_options(fn: F) -> F:
    """Every shared override, and the options of every command that reads fixtures."""
    return load_options(overrides(*OVERRIDES)(fn))


def parse_now(value: str | None) -> datetime | None:
    if value is None:
        return None
    from ctxkit.loading.values import beyond_utc, parse_datetime

    parsed = parse_datetime(value)
    if parsed is None:
        raise InputError(f"--now: {value!r} is not an ISO 8601 date-time{beyond_utc(value)}")
    return parsed


def build_options(kw: dict[str, Any]) -> Any:
    from ctxkit.loading.config import Options

    templates: tuple[tuple[str, str], ...] = ()
    source = ""
    if kw.get("templates_file"):
        from ctxkit.loading.read import load_templates_file

        source = kw["templates_file"]
        templates = load_templates_file(source)
    return Options(
        provider=kw.get("provider"),
        model=kw.get("model"),
        max_input_tokens=kw.get("max_input_tokens"),
        leaf=kw.get("leaf"),
        tokenizer=kw.get("tokenizer"),
        now=parse_now(kw.get("now")),
        templates=templates,
        templates_source=source,
    )


def load(path: str, kw: dict[str, Any], *, data: bytes | None = None) -> Any:
    """The fixture at `path`; `data`: its bytes when already read (stdin can be read only once)."""
    import io

    from ctxkit.loading.read import load_fixture, parse_size

    max_size = parse_size(kw.get("max_size") or DEFAULT_MAX_SIZE_TEXT)
    stdin = io.BytesIO(data) if data is not None and path == "-" else None
    return load_fixture(path, allow_outside_paths=kw.get("allow_outside_paths", False), max_size=max_size, stdin=stdin)


def run_pipeline(path: str, kw: dict[str, Any]) -> Any:
    from ctxkit.pipeline import run

    result = run(load(path, kw), build_options(kw))
    for w in result.warnings:
        warn(w)
    return result


def warn(text: str) -> None:
    from ctxkit.output import printable

    click.echo(f"warning: {printable(text)}", err=True)


def echo(text: str) -> None:
    click.echo(text, nl=False)


def echo_text(text: str) -> None:
    """A human-format report: fixture text in it cannot drive the terminal (`output.printable`)."""
    from ctxkit.output import printable

    echo(printable(text))


def check_options(fn: F) -> F:
    """The replay gate (R-LOG-5): `--check` and its thresholds, for every kind of replay."""
    fn = click.option(
        "--max-lost-tokens", metavar="N", help="With --check: fail when more tokens are lost to cache breaks."
    )(fn)
    fn = click.option(
        "--fail-on", metavar="CAUSE[,CAUSE...]", help="With --check: fail when a call breaks the cache by one of these."
    )(fn)
    fn = click.option("--min-hit-rate", metavar="R", help="With --check: fail below this hit rate (0.6 or 60%).")(fn)
    fn = click.option("--check", is_flag=True, help="Exit 1 after the report when a threshold is missed.")(fn)
    return fn


def gate(kw: dict[str, Any]) -> Any:
    """The thresholds of `check_options` (None without --check); bad values are exit 2, before any work."""
    from ctxkit.replay.gate import thresholds

    return thresholds(kw.pop("check"), kw.pop("min_hit_rate"), kw.pop("fail_on"), kw.pop("max_lost_tokens"))


def apply_gate(report: dict[str, Any], thresholds: Any) -> None:
    """After the report was printed: exit 1 naming each threshold its totals missed (a `GateError`)."""
    from ctxkit.replay.gate import enforce

    sys.stdout.flush()  # the report comes before the lines naming what the gate found (stderr)
    enforce(report["totals"], thresholds)
