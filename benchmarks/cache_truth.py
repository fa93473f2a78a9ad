"""`make bench` "cache vs providers": the whole recorded traffic replayed as a log (R-LOG-2, R-LOG-3).

Input: the recorded traffic (`../shared/data/traffic/cassettes.jsonl.gz`). It is replayed
as `ctxkit replay LOG` does (one cache per provider and model, in time order). Output,
per provider: the calls, the verdicts, the cached tokens predicted and reported, and of
the calls where the provider reported a cache read or write, how many ctxkit predicted
exactly; and the time the whole replay takes (median of a few runs, in process).

    python benchmarks/cache_truth.py [--data FILE] [--json FILE]

`run.py` calls `measure()`; `report.py` renders `section()` in BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from ctxkit.loading.traffic import read_log
from ctxkit.replay.logs import LogReplay, replay_log
from ctxkit.replay.verdicts import VERDICTS

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data" / "traffic" / "cassettes.jsonl.gz"
PROSE = (
    "Every recorded call of `../shared/data/traffic/cassettes.jsonl.gz` replayed as a log "
    "(`ctxkit replay LOG`, R-LOG): ctxkit's predicted cache beside what each provider "
    "reported. *Cached by the provider*: calls whose usage reports a cache read or write; "
    "*exact* among them: ctxkit predicted the same read (and, for Anthropic, write). Test "
    "traffic warms caches across runs and sibling tests, so `warm_elsewhere` is expected "
    "here; `provider_miss` is a prefix the rules allowed but the provider did not serve."
)


def replayed(path: Path = DATA) -> LogReplay:
    data = path.read_bytes()
    text = (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).decode("utf-8")
    return replay_log(read_log(path.name, text))


def measure(path: Path = DATA, repeat: int = 3) -> dict[str, Any]:
    seconds = []
    done = None
    for _ in range(repeat):
        started = time.perf_counter()
        done = replayed(path)
        seconds.append(time.perf_counter() - started)
    assert done is not None
    per: dict[str, dict[str, Any]] = {}
    for c in done.calls:
        e = per.setdefault(
            c.provider, {"calls": 0, "verdicts": Counter(), "predicted": 0, "reported": 0, "cached": 0, "exact": 0}
        )
        e["calls"] += 1
        e["verdicts"][c.verdict or "no usage"] += 1
        e["predicted"] += c.cached_tokens
        if c.reported is not None:
            e["reported"] += c.reported.cached_tokens
            if c.reported.cached_tokens or c.reported.cache_write_tokens:
                e["cached"] += 1
                e["exact"] += c.verdict == "agree"
    return {
        "calls": len(done.calls),
        "seconds": statistics.median(seconds),
        "providers": {p: {**e, "verdicts": dict(e["verdicts"])} for p, e in sorted(per.items())},
    }


def render(m: dict[str, Any]) -> list[str]:
    head = ["provider", "calls", *VERDICTS, "cached by the provider", "exact", "cached tokens predicted", "reported"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for provider, e in m["providers"].items():
        cells = [provider, f"{e['calls']:,}", *(f"{e['verdicts'].get(v, 0):,}" for v in VERDICTS)]
        cells += [f"{e['cached']:,}", f"{e['exact']:,}", f"{e['predicted']:,}", f"{e['reported']:,}"]
        lines.append("| " + " | ".join(cells) + " |")
    per_call = m["seconds"] / m["calls"] * 1000 if m["calls"] else 0.0
    lines += ["", f"The whole log, {m['calls']:,} calls: {m['seconds']:.1f} s ({per_call:.1f} ms per call)."]
    return lines


def section(r: dict[str, Any]) -> list[str]:
    """The "cache vs providers" part of BENCHMARKS.md."""
    m = r.get("cache vs providers")
    if not m:
        return []
    return ["## Cache vs providers", "", PROSE, "", *render(m), ""]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--json", type=Path, help="also write the measurement as JSON")
    args = parser.parse_args(argv)
    if not args.data.exists():
        sys.exit(f"no recorded traffic at {args.data}")
    m = measure(args.data, repeat=1)
    print("\n".join(render(m)))
    if args.json:
        args.json.write_text(json.dumps(m, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
