"""Build fixtures from YAML text in tests, and read results back."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from ctxkit.errors import RuleError
from ctxkit.loading.config import Options
from ctxkit.loading.read import load_fixture
from ctxkit.output import dumps
from ctxkit.pipeline import Result, run
from ctxkit.replay import driver
from ctxkit.reports.explain import rows as explain_rows
from ctxkit.translate.items import prompt_items, read_items

HEAD = """\
ctxkit: 1
now: "2026-03-14T09:30:00Z"
"""


def write(tmp_path: Path, body: str, name: str = "f.yaml", head: str = HEAD) -> Path:
    path = tmp_path / name
    path.write_text(head + textwrap.dedent(body), encoding="utf-8")
    return path


def assemble(tmp_path: Path, body: str, **options: Any) -> Result:
    return run(load_fixture(str(write(tmp_path, body))), Options(**options))


def assembled_or_skip(path: Path | str, **options: Any) -> Result:
    """A gallery fixture assembled; the test is skipped when the fixture fails by rule
    (exit 1, on purpose: those fixtures show R-ASM-2/3)."""
    import pytest

    try:
        return run(load_fixture(str(path)), Options(**options))
    except RuleError:
        pytest.skip("fails by rule")


def texts(result: Result) -> list[tuple[str, str]]:
    """(role, text) of each payload message as OpenAI sends it."""
    out = []
    for m in result.payload.body["messages"]:
        content = m.get("content")
        if isinstance(content, list):
            content = "\n".join(p.get("text", "<image>") for p in content)
        out.append((m["role"], content or ""))
    return out


def readable(key: str) -> str:
    """`m:2:u1#file0` → `u1#file0` (message keys are length-prefixed, see working.MessageKey)."""
    m = re.match(r"m:(\d+):", key)
    return key[m.end() :] if m else key


def fates(result: Result) -> dict[str, tuple[str, str]]:
    """Explain rows by readable key (or id) → (fate, rule)."""
    return {readable(r.key) if r.key else str(r.id): (str(r.fate), r.rule) for r in explain_rows(result)}


def keys(result: Result) -> list[str]:
    return [readable(w.key) for w in result.assembly.messages]


@st.composite
def tool_calls(
    draw: Any, first: int, names: Sequence[str], response: st.SearchStrategy[str], tokens: bool = False
) -> list[dict[str, Any]]:
    """1–3 stored tool calls numbered after `first` (`c{n}`), over up to three turns (R-CONV-2),
    each answered by `response`; with `tokens`, each carries a stored count. For property tests."""
    calls = []
    for n in range(first + 1, first + 1 + draw(st.integers(1, 3))):
        call: dict[str, Any] = {"id": f"c{n}", "name": draw(st.sampled_from(names)), "args": {"q": n}}
        call["turn"] = draw(st.integers(0, 2))
        if tokens:
            call["tokens"] = draw(st.integers(10, 120))
        call["response"] = draw(response)
        calls.append(call)
    return calls


def replay_against_fresh(
    fixture: Any, options: Options, monkeypatch: Any, also: Callable[[Result], object] | None = None
) -> int:
    """Replay, checking every call against the call assembled afresh (R-RPL-9's oracle): the same
    body, rows, warnings and cache prefix, and the items the replay counted equal the items read
    back from the fresh body; `also(result)` adds a check of its own. The number of calls."""
    counted: list[Any] = []

    def recording(payload: Any, **kw: Any) -> Any:
        counted.append(prompt_items(payload, **kw))
        return counted[-1]

    monkeypatch.setattr("ctxkit.replay.driver.prompt_items", recording)
    seen = 0

    def check(index: int, call: Any, result: Result) -> None:
        nonlocal seen
        fresh = run(call.fixture, call.options)
        # as bytes: a dict's == ignores key order and takes 1, 1.0 and True as equal
        assert dumps(result.payload.body) == dumps(fresh.payload.body), index
        assert result.payload.prepared.rows == fresh.payload.prepared.rows, index
        assert result.payload.prepared.warnings == fresh.payload.prepared.warnings, index
        assert result.payload.prepared.cache_prefix_messages == fresh.payload.prepared.cache_prefix_messages
        assert counted[-1] == read_items(fresh.payload, meter=fresh.assembly.meter), index
        if also is not None:
            also(result)
        seen += 1

    driver.replay(fixture, options, on_call=check)
    return seen


def bench_history(n: int) -> dict[str, Any]:
    """The benchmark generator's `history(n)` (benchmarks/generate.py) at its seed: n messages of
    a long chat with tool loops, as the replay and report benchmarks use."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "bench_generate", Path(__file__).resolve().parent.parent / "benchmarks" / "generate.py"
    )
    assert spec is not None and spec.loader is not None
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    history: dict[str, Any] = generate.history(n, generate.SEED)
    return history


def recorded(monkeypatch: Any, owner: object, name: str) -> list[Any]:
    """Replace `owner.name`, a function of one argument, by one that records each argument in
    the list returned and then calls the original."""
    seen: list[Any] = []
    real = getattr(owner, name)

    def spy(arg: Any) -> Any:
        seen.append(arg)
        return real(arg)

    monkeypatch.setattr(owner, name, spy)
    return seen
