"""Layering: imports follow the documented direction; the core never imports click; heavy
modules load only when needed."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "ctxkit"

# docs/architecture.md "One direction": a module may import from its own layer and the layers
# before it, never after. The package root and the four helper modules below every stage form
# layer 0.
LAYERS = (
    ("ctxkit", "ctxkit.errors", "ctxkit.output", "ctxkit.writing", "ctxkit.collector"),
    ("ctxkit.providers",),
    ("ctxkit.loading",),
    ("ctxkit.history",),
    ("ctxkit.counting",),
    ("ctxkit.assembly",),
    ("ctxkit.translate",),
    ("ctxkit.pipeline",),
    ("ctxkit.compression",),
    ("ctxkit.replay",),
    ("ctxkit.reports",),
    ("ctxkit.snapshots",),
    ("ctxkit.cli", "ctxkit.__main__"),
)
# (importing module, imported module) → why the edge runs against the direction. Empty: every
# module follows it. An entry is for a deliberate lazy import only and must say why.
AGAINST_THE_DIRECTION: dict[tuple[str, str], str] = {}


def layer(module: str) -> int:
    """The layer of a ctxkit module: its longest listed prefix decides."""
    best = (-1, -1)
    for index, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > best[0]:
                best = (len(name), index)
    assert best[1] >= 0, f"{module} has no layer: add it to LAYERS and docs/architecture.md"
    return best[1]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(module: str, source: str, *, package: bool) -> list[tuple[int, str]]:
    """Every module `source` imports, at any depth (inside functions too), resolved: `from
    ctxkit import pipeline` is `ctxkit.pipeline`, a relative import is made absolute."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")[: None if package else -1]
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                is_module = (PACKAGE.parent / Path(*sub.split("."))).with_suffix(".py").exists() or (
                    PACKAGE.parent / Path(*sub.split(".")) / "__init__.py"
                ).exists()
                found.append((node.lineno, sub if is_module else base))
    return found


def wrong_way(module: str, source: str, *, package: bool = False) -> list[str]:
    own = layer(module)
    found = []
    for line, target in sorted(imported(module, source, package=package)):
        top = target.split(".")[0]
        if top == "click" and own < layer("ctxkit.cli"):
            found.append(f"{module}:{line} imports click")
        if top == "ctxkit" and layer(target) > own and (module, target) not in AGAINST_THE_DIRECTION:
            found.append(f"{module}:{line} imports {target}")
    return found


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=[module_name(p) for p in MODULES])
def test_every_import_follows_the_documented_direction(path):
    """Issue 22 item 4: every ctxkit module, every import (also inside functions)."""
    module = module_name(path)
    assert wrong_way(module, path.read_text(encoding="utf-8"), package=path.name == "__init__.py") == []


def test_the_direction_check_sees_imports_inside_functions_and_from_the_package():
    source = "def f():\n    from ctxkit import pipeline\n    import click\nfrom ctxkit.cli import options\n"
    assert wrong_way("ctxkit.assembly.assemble", source) == [
        "ctxkit.assembly.assemble:2 imports ctxkit.pipeline",
        "ctxkit.assembly.assemble:3 imports click",
        "ctxkit.assembly.assemble:4 imports ctxkit.cli.options",
    ]
    assert wrong_way("ctxkit.counting.measure", "from ..history.working import Working\n") == []
    assert wrong_way("ctxkit.loading.read", "from .. import collector\n") == []


def test_the_architecture_page_lists_the_layers_in_this_order():
    page = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    line = page.split("* Data flows one way, in layers: ", 1)[1].split(". A module", 1)[0]
    documented = [[name.strip(" `\n") for name in group.split(",")] for group in line.split("→")]
    assert documented == [[name.split(".")[-1] for name in names if name != "ctxkit"] for names in LAYERS]
    assert all(AGAINST_THE_DIRECTION.values())  # every exception says why


CORE = [
    "ctxkit.pipeline",
    "ctxkit.loading.read",
    "ctxkit.compression.compress",
    "ctxkit.loading.importer",
    "ctxkit.snapshots.store",
    "ctxkit.reports.diff",
    "ctxkit.reports.transcript",
]


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(out.split())


@pytest.mark.parametrize("module", CORE)
def test_core_never_imports_click(module):
    assert "click" not in _modules_after(f"import {module}")


def test_cli_start_does_not_load_tokenizer_schema_or_yaml():
    loaded = _modules_after("import ctxkit.cli")
    for heavy in ("tiktoken", "jsonschema", "yaml", "tabulate"):
        assert heavy not in loaded, heavy


def test_stored_counts_never_load_the_tokenizer(tmp_path):
    fixture = tmp_path / "f.json"
    fixture.write_text(
        '{"ctxkit": 1, "now": "2026-03-14T09:30:00Z", "model": {"provider": '
        '"openai", "name": "gpt-4o"}, "prompts": {"system": ""}, '
        '"messages": [{"id": 1, "role": "user", "text": "hi", "tokens": 1}]}'
    )
    loaded = _modules_after(
        "from ctxkit.loading.read import load_fixture\nfrom ctxkit.pipeline import run\n"
        f"r = run(load_fixture({str(fixture)!r}))\nr.payload"
    )
    assert "tiktoken" not in loaded


PRICE_DATA = ("genai_prices", "pydantic", "httpx")  # what importing the price data brings along (httpx: or httpx2)
FIXTURE = "fixtures/plain_chat.yaml"
PRICED_BY_FIXTURE = "fixtures/replay/append.yaml"  # no settings.prices: priced from the package's data


def _cli_modules(*args: str) -> set[str]:
    """The modules loaded after `ctxkit ARGS` ran to its end in a fresh interpreter."""
    from .conftest import ROOT

    code = (
        "import sys\nfrom ctxkit.cli import main\n"
        f"try:\n    main({list(args)!r})\nexcept SystemExit:\n    pass\n"
        "sys.stderr.write('\\n'.join(sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    return {line for line in proc.stderr.split("\n") if not line.startswith(("error:", "warning:"))}


def _price_data(loaded: set[str]) -> list[str]:
    """Which of PRICE_DATA's packages are among the loaded modules."""
    tops = {m.split(".")[0] for m in loaded}
    return [name for name in PRICE_DATA if any(top.startswith(name) for top in tops)]


@pytest.mark.parametrize(
    "args",
    [
        ("assemble", FIXTURE),
        ("assemble", FIXTURE, "--format", "text"),
        ("budget", FIXTURE),
        ("explain", FIXTURE),
        ("validate", FIXTURE),
        ("compress", FIXTURE),
        ("diff", FIXTURE, FIXTURE, "--provider", "openai", "--provider", "anthropic"),
        ("replay", PRICED_BY_FIXTURE, "--provider", "ollama"),  # a local model: cost 0, no price data
    ],
    ids=lambda a: " ".join(a[:1] + a[2:]),
)
def test_commands_that_do_not_price_never_import_the_price_data(args):
    """Issue 22 item 8: genai-prices brings pydantic and httpx (about a second); only pricing loads it."""
    loaded = _cli_modules(*args)
    assert "ctxkit.reports" in loaded or "ctxkit.loading.read" in loaded  # the command did run
    assert _price_data(loaded) == []


def test_replay_priced_from_the_data_imports_it():
    """The other side of the test above (so it can fail): pricing from the data loads the package."""
    loaded = _cli_modules("replay", PRICED_BY_FIXTURE)
    assert _price_data(loaded) == list(PRICE_DATA)


def test_the_price_data_is_imported_in_one_place():
    """`ctxkit/loading/prices.py::prices` is the one import of genai-prices; users call it where they price."""
    import re

    from .conftest import ROOT

    importing = sorted(
        str(p.relative_to(ROOT))
        for p in (ROOT / "ctxkit").rglob("*.py")
        if re.search(r"^\s*(import|from) genai_prices\b", p.read_text(encoding="utf-8"), flags=re.MULTILINE)
    )
    assert importing == ["ctxkit/loading/prices.py"]


@pytest.mark.parametrize(
    "fixture", ["fixtures/edited_branch.yaml", "fixtures/summary.yaml", "fixtures/custom_agent.yaml"]
)
def test_assembling_a_model_of_ctxkits_table_never_imports_the_price_data(fixture):
    """Issue 21 item 2 with issue 22 item 8: the table's windows come from genai-prices' data, kept
    in ctxkit/data/genai_prices.json so that a model ctxkit's table knows never loads the package."""
    from .conftest import ROOT

    assert (ROOT / fixture).is_file()
    loaded = _cli_modules("assemble", fixture)
    assert "ctxkit.loading.read" in loaded
    assert _price_data(loaded) == []


def test_a_model_only_genai_prices_knows_imports_it(tmp_path):
    """The other side (so the test above can fail): a Bedrock name without a window asks the package."""
    path = tmp_path / "bedrock.yaml"
    path.write_text(
        "ctxkit: 1\nmodel: {provider: anthropic, name: 'anthropic.claude-3-haiku-20240307-v1:0'}\n"
        "messages: [{id: 1, role: user, text: q}]\n",
        encoding="utf-8",
    )
    loaded = _cli_modules("assemble", str(path))
    assert "ctxkit.loading.read" in loaded
    assert _price_data(loaded) == list(PRICE_DATA)


def test_a_command_imports_only_its_own_command_module():
    """Start-up is mostly imports: `assemble` loads the core commands' module, never replay's,
    the log readers or the HTML report (the cold-start target in `make bench`)."""
    loaded = _cli_modules("assemble", FIXTURE)
    assert "ctxkit.loading.read" in loaded  # the command did run
    assert sorted(m for m in loaded if m.startswith("ctxkit.cli.")) == [
        "ctxkit.cli.core",
        "ctxkit.cli.options",
        "ctxkit.cli.stdout",
    ]
    assert not [m for m in loaded if m.startswith(("ctxkit.replay", "ctxkit.reports.html", "ctxkit.loading.traffic"))]


def test_every_command_is_found_in_the_module_that_defines_it():
    """`cli.COMMANDS` names each command's module: a command missing there, or named with the wrong
    module, would not be found by a run that imports only that module."""
    from ctxkit import cli

    commands = cli.all_commands()
    assert sorted(commands) == sorted(cli.COMMANDS)
    for name, command in commands.items():
        assert command.callback is not None
        assert command.callback.__module__ == f"ctxkit.cli.{cli.COMMANDS[name]}", name


def test_help_lists_every_command_though_none_was_imported():
    """`ctxkit --help` in a fresh interpreter, where no command module was imported before."""
    from ctxkit import cli

    from .conftest import ROOT

    code = "from ctxkit.cli import main\nmain(['--help'])"
    listed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT).stdout
    for name in cli.COMMANDS:
        assert f"\n  {name} " in listed, name


def test_a_json_fixture_never_imports_yaml(tmp_path):
    """PyYAML is imported to parse YAML only: `ctxkit assemble` of a JSON fixture does without it."""
    path = tmp_path / "f.json"
    path.write_text(
        '{"ctxkit": 1, "model": {"provider": "openai", "name": "gpt-4o"}, '
        '"messages": [{"id": 1, "role": "user", "text": "hi", "tokens": 1}]}'
    )
    loaded = _cli_modules("assemble", str(path))
    assert "ctxkit.loading.read" in loaded  # the command did run
    assert not [m for m in loaded if m.split(".")[0] == "yaml"]
    assert "yaml" in _cli_modules("assemble", FIXTURE)  # the other side: a YAML fixture loads it
