"""`ctxkit replay LOG` on real traffic, its report page and its benchmark (R-LOG-3, R-LOG-4).

The shared recorded traffic replayed whole; the real excerpt in fixtures/logs/; `report LOG
--replay`; `benchmarks/cache_truth.py`. The hand-written logs' stories are in test_logreplay.py.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from ctxkit.loading.traffic import read_log
from ctxkit.replay.logs import replay_log
from ctxkit.reports.logreplay import report

from .conftest import ROOT, ctxkit
from .test_logreplay import LOGS, _in_root, calls

__all__ = ["_in_root"]  # the autouse fixture: reports name logs by their relative paths

# --- the shared data: every recorded call --------------------------------------------------

SHARED = ROOT.parent / "shared" / "data" / "traffic" / "cassettes.jsonl.gz"


@pytest.mark.skipif(not SHARED.exists(), reason=f"shared traffic not present at {SHARED}")
def test_r_log_every_call_of_the_shared_traffic_is_replayed() -> None:
    """All 3,340 recorded calls replay with no error; every call has reported numbers, and a verdict
    wherever its usage reports the cache."""
    text = gzip.decompress(SHARED.read_bytes()).decode("utf-8")
    done = replay_log(read_log(str(SHARED.name), text))
    assert len(done.calls) == 3340
    assert all(c.reported is not None for c in done.calls)
    assert all((c.verdict is not None) == c.cache_reported for c in done.calls)
    assert all(c.cached_tokens <= c.prefix_tokens <= c.prompt_tokens for c in done.calls)
    totals = report(done)["totals"]
    assert sum(totals["verdicts"].values()) == sum(c.cache_reported for c in done.calls) > 2500
    assert set(totals["count_error"]) == {"anthropic", "azure", "gemini", "ollama", "openai"}


def test_r_log_3_real_traffic_excerpt() -> None:
    """crewai_cached_prompt_tokens.jsonl: the providers' own numbers (see fixtures/logs/README.md)."""
    rows = calls("crewai_cached_prompt_tokens.jsonl")
    assert [(c["model"], c["cached_tokens"], c["reported_cached_tokens"], c["verdict"]) for c in rows] == [
        ("gpt-4.1", 0, 1024, "warm_elsewhere"),
        ("gpt-4.1", 1024, 0, "provider_miss"),
        ("claude-sonnet-4-5-20250929", 0, 1217, "warm_elsewhere"),
        # The first Claude call shares the system prefix (counted ~1,230 since issue 20's Anthropic
        # rules), though without a breakpoint there: the log "could have" warmed it, so not
        # warm_elsewhere (ever_prefix ignores breakpoints).
        ("claude-sonnet-4-5-20250929", 0, 1217, "disagree"),
    ]


# --- R-LOG-4 the report page ------------------------------------------------------------


def test_r_log_4_report_replay_accepts_a_log(tmp_path: Path) -> None:
    out = tmp_path / "verdicts.html"
    r = ctxkit("report", "fixtures/logs/verdicts.jsonl", "--replay", "-o", str(out))
    assert r.err.endswith(f"wrote {out} ({out.stat().st_size:,} bytes)\n")
    page = out.read_text(encoding="utf-8")
    assert page.startswith('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta http-equiv="Content-Security-Policy"')
    assert '<meta name="generator" content="ctxkit ' in page
    assert (
        page.count('<g class="call"') == 7 and page.count('<line class="reported"') == 6 + 1
    )  # each call with usage, and the legend
    for verdict in ("provider_miss", "count_off", "warm_elsewhere", "disagree"):
        assert f"<td>{verdict}<td>" in page
    assert '<svg class="seatmap"' not in page and 'id="calls-data"' not in page  # no assembly: no seat map


def test_r_log_4_report_of_a_log_needs_replay(tmp_path: Path) -> None:
    r = ctxkit("report", "fixtures/logs/verdicts.jsonl", "-o", str(tmp_path / "x.html"), expect=2)
    assert "pass --replay" in r.err and r.err.count("\n") == 1
    assert not (tmp_path / "x.html").exists()
    r = ctxkit(
        "report", "fixtures/logs/verdicts.jsonl", "--replay", "--leaf", "m1", "-o", str(tmp_path / "x.html"), expect=2
    )
    assert "--leaf does not apply to a log" in r.err


def test_r_log_3_cache_vs_providers_benchmark_computes_its_table() -> None:
    """benchmarks/cache_truth.py (make bench): per provider, the verdicts and the cache numbers
    of a replayed log are computed (the targets live in the benchmark, not here)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("cache_truth", ROOT / "benchmarks" / "cache_truth.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    m = bench.measure(LOGS / "verdicts.jsonl", repeat=1)
    assert m["calls"] == 7 and m["seconds"] > 0
    openai = m["providers"]["openai"]
    assert openai["verdicts"] == {
        "agree": 2,
        "provider_miss": 1,
        "count_off": 1,
        "disagree": 1,
        "warm_elsewhere": 1,
        "no usage": 1,
    }
    assert (openai["cached"], openai["exact"]) == (4, 1)  # calls 1, 3, 4, 5 report a cache read; call 1 agrees
    assert openai["reported"] == 1280 + 1536 + 1280 + 1152
    lines = bench.section({"cache vs providers": m})
    assert lines[0] == "## Cache vs providers" and any(line.startswith("| openai | 7 |") for line in lines)
