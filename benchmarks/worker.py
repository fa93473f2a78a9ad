"""One in-process measurement, run by `run.py` in a fresh interpreter.

Input: argv[1], a JSON object naming the job and its parameters. Output: one JSON
line on stdout: the samples of every timed step as [wall, cpu] seconds, counts, and
the process's peak RSS (VmHWM, KiB) — the peak of this job alone, loading
included. The tokenizer is warmed before anything is timed (its load is what the
cold-start rows measure); the garbage collector is left as Python sets it.

Jobs: `assemble` (load, then `pipeline.run` with the budget), `stages` (the loader's
steps one by one, and the stock parser on the same text), `report` (budget, explain
or compress on top of a loaded fixture), `peer` (langchain, litellm or counting
everything, on the same chat history), `replay` (every call of a history, and counting
that history once).
"""

from __future__ import annotations

import json
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

Samples = list[list[float]]


MAX_SECONDS = 20.0  # stop repeating a step once its samples add up to this


def timed(fn: Callable[[], Any], repeat: int) -> tuple[Samples, Any]:
    samples: Samples = []
    result = None
    for _ in range(repeat):
        result = None  # the previous result is freed here, outside the timed region
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        samples.append([time.perf_counter() - wall, time.process_time() - cpu])
        if sum(s[0] for s in samples) > MAX_SECONDS:
            break
    return samples, result


def warm() -> None:
    from ctxkit.counting.tokens import get_counter

    get_counter("cl100k_base").count("warm")


def options(budget: int | None) -> Any:
    from ctxkit.loading.config import Options

    return Options(max_input_tokens=budget)


def job_assemble(p: dict[str, Any]) -> dict[str, Any]:
    from ctxkit.loading.read import load_fixture
    from ctxkit.pipeline import run

    warm()
    load, fixture = timed(lambda: load_fixture(p["path"]), p.get("load_repeat", p["repeat"]))
    opts = options(p.get("budget"))
    assembly, result = timed(lambda: run(fixture, opts), p["repeat"])
    a = result.assembly
    return {
        "load": load,
        "assemble": assembly,
        "counted_texts": a.meter.counted_texts,
        "kept": len(a.segments["history"]),
        "dropped": len(a.dropped),
    }


def job_stages(p: dict[str, Any]) -> dict[str, Any]:
    from ctxkit.loading import read as ld

    path, n = p["path"], p["repeat"]
    out: dict[str, Any] = {}
    with _as_in_load_fixture():
        text = _stage_samples(path, n, out)
    out["stock_parse"], _ = timed(stock_parser(path, text), n)  # the collector as Python sets it
    out["load_fixture"], _ = timed(lambda: ld.load_fixture(path), n)
    return out


def _as_in_load_fixture() -> Any:
    """The steps under the same garbage-collector regime as `load_fixture` (paused when
    the tree has `ctxkit.collector`), so their sum matches it."""
    import contextlib

    try:
        from ctxkit import collector
    except ImportError:
        return contextlib.nullcontext()
    return collector.paused()


def _stage_samples(path: str, n: int, out: dict[str, Any]) -> str:
    from ctxkit.loading import read as ld
    from ctxkit.loading.refs import build_fixture
    from ctxkit.loading.schema import validate_document

    out["read"], data = timed(lambda: ld._read(path, ld.DEFAULT_MAX_SIZE, None), n)
    out["decode"], text = timed(lambda: ld._decode(path, data), n)
    floats: dict[int, Any] = {}
    out["parse"], doc = timed(lambda: ld.parse_document(path, text, floats), n)
    validate_document(path, doc)  # the compiled check is built once per process
    out["validate"], _ = timed(lambda: validate_document(path, doc), n)
    base = Path(path).absolute().parent
    out["build"], _ = timed(
        lambda: build_fixture(doc, source=path, base_dir=base, max_size=ld.DEFAULT_MAX_SIZE, floats=floats), n
    )
    return str(text)


def stock_parser(path: str, text: str) -> Callable[[], Any]:
    """The plain library call a user would write: json.loads, or PyYAML's C safe loader."""
    if path.endswith(".json"):
        return lambda: json.loads(text)
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return lambda: yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader


def job_report(p: dict[str, Any]) -> dict[str, Any]:
    from ctxkit.loading.read import load_fixture
    from ctxkit.pipeline import run

    warm()
    fixture = load_fixture(p["path"])
    opts = options(p.get("budget"))
    what = p["what"]
    if what == "compress":
        try:
            from ctxkit.compression.compress import plan
        except ImportError as exc:
            return {"skipped": f"ctxkit.compression.compress is not available ({exc})"}
        from ctxkit.loading.config import resolve

        samples, result = timed(lambda: plan(resolve(fixture, opts)), p["repeat"])
        return {"total": samples, "note": f"should_compress={result.should_compress}"}

    from ctxkit.reports.budget import report as budget_report
    from ctxkit.reports.explain import rows as explain_rows

    def once() -> Any:
        result = run(fixture, opts)
        report = budget_report(result) if what == "budget" else explain_rows(result)
        return result, report

    samples, (result, _) = timed(once, p["repeat"])
    out = {"total": samples, "counted_texts": result.assembly.meter.counted_texts}
    if samples[0][0] < MAX_SECONDS / 2:  # the assembly alone, for the report's own share
        out["assemble"], _ = timed(lambda: run(fixture, opts), p["repeat"])
    return out


def job_peer(p: dict[str, Any]) -> dict[str, Any]:
    import peers

    from ctxkit.loading.read import load_fixture
    from ctxkit.pipeline import run

    doc = json.loads(Path(p["path"]).read_text(encoding="utf-8"))
    system = run(load_fixture(p["path"])).assembly.segments["system"][0].text
    messages = peers.chat_messages(doc, system)
    make = {"langchain": peers.langchain, "litellm": peers.litellm}
    if p["which"] == "count":
        fn = peers.count_everything(messages)
    elif p["which"] == "litellm_count":
        fn = peers.litellm_count(messages)
    else:
        fn = make[p["which"]](messages, p["budget"])
    if p["which"] == "litellm":  # first-call costs (lazy imports, tokenizer) on a short slice
        peers.litellm(messages[:20], p["budget"])()
    else:
        fn()
    samples, result = timed(fn, p["repeat"])
    out = {"total": samples, "result": result, "messages": len(messages)}
    if p["which"] == "langchain":
        out["build"], _ = timed(peers.langchain_build(messages), p["repeat"])
    return out


def job_replay(p: dict[str, Any]) -> dict[str, Any]:
    """`ctxkit replay` of a history at the budget, and its floor: counting that history once."""
    import peers

    from ctxkit.counting.tokens import get_counter
    from ctxkit.loading.read import load_fixture
    from ctxkit.pipeline import run
    from ctxkit.replay.driver import replay

    warm()
    fixture = load_fixture(p["path"])
    opts = options(p.get("budget"))
    from ctxkit.loading.prices import find

    find("openai", "gpt-4o")  # the price data, read once per process: not the replay's to grow
    # tiktoken's encoding (about 24 MiB on its Rust side), built now rather than where counting
    # crosses PLAIN_SECONDS: inside the replay it fell on some histories and not on others (at
    # 8,000 tokens, message 1,924 of history-2000), so it counted in one row's own memory and its
    # time (the floor's counting, below, never pays it either)
    cast(Any, get_counter("cl100k_base")).build()
    loaded = rss_kib("VmRSS")  # the interpreter, tokenizer, price data and the loaded fixture
    restart_peak()
    samples, done = timed(lambda: replay(fixture, opts), p["repeat"])
    replay_peak = rss_kib("VmHWM")  # the replays' own high-water mark (the floor below is not in it)
    doc = json.loads(Path(p["path"]).read_text(encoding="utf-8"))
    system = run(fixture).assembly.segments["system"][0].text
    floor, _ = timed(peers.count_everything(peers.chat_messages(doc, system)), p.get("floor_repeat", p["repeat"]))
    return {
        "total": samples,
        "floor": floor,
        "calls": len(done.calls),
        "loaded_kib": loaded,
        "replay_peak_kib": replay_peak,
    }


def job_validators(p: dict[str, Any]) -> dict[str, Any]:
    """The schema check alone on a parsed fixture: the shipped check (jsonschema-rs), with its
    import and build timed in this fresh process; fastjsonschema's generated code (compiled
    here, where the bench extra installs it); and jsonschema (which explains failures)."""
    from jsonschema import Draft202012Validator

    from ctxkit.loading.read import load_schema

    doc = json.loads(Path(p["path"]).read_text(encoding="utf-8"))
    out: dict[str, Any] = {}
    wall = time.perf_counter()
    from ctxkit.loading.schema import _fast_check

    check = _fast_check()
    out["jsonschema-rs import and build"] = [[time.perf_counter() - wall, 0.0]]
    assert check(doc)
    out["jsonschema-rs"], _ = timed(lambda: check(doc), p["repeat"])
    try:
        import fastjsonschema
    except ImportError:
        pass
    else:
        compiled = fastjsonschema.compile(load_schema(), use_default=False, use_formats=False)
        out["fastjsonschema"], _ = timed(lambda: compiled(doc), p["repeat"])
    validator = Draft202012Validator(load_schema())
    out["jsonschema"], _ = timed(lambda: validator.is_valid(doc), 1)
    return out


def peak_rss_kib() -> int:
    """This process's peak resident set (VmHWM): unlike ru_maxrss it is not inherited
    from the process that started it."""
    return rss_kib("VmHWM")


def rss_kib(field: str) -> int:
    """`VmRSS` (resident now) or `VmHWM` (the peak) from /proc; ru_maxrss where there is none."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def restart_peak() -> None:
    """Start VmHWM again from the resident set now (Linux: `5` to /proc/self/clear_refs), so a later
    peak is the work's after this point, not loading's."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


JOBS = {
    "assemble": job_assemble,
    "stages": job_stages,
    "report": job_report,
    "peer": job_peer,
    "replay": job_replay,
    "validators": job_validators,
}


def main() -> None:
    params = json.loads(sys.argv[1])
    out = JOBS[params["job"]](params)
    out["maxrss_kib"] = peak_rss_kib()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
