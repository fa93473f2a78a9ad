"""Timing helpers: medians, fresh-process runs, the worker, and the machine's description.

Input: commands or worker parameters. Output: samples as [wall, cpu] seconds (cpu =
user + system time of the process, which a busy machine disturbs less than wall time)
and their medians. Every measurement is repeated; the table shows medians.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable
Samples = list[list[float]]


class Failed(RuntimeError):
    pass


def median(samples: Samples, which: int = 0) -> float:
    return statistics.median(s[which] for s in samples)


def run_process(cmd: list[str], *, timeout: float = 300) -> list[float]:
    """One fresh process, stdout discarded: [wall, cpu] seconds; a failure raises."""
    env = {**os.environ, "NO_COLOR": "1"}
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, stdin=subprocess.DEVNULL)
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    try:
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
    wall = time.perf_counter() - start
    proc.returncode = code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise Failed(f"{' '.join(cmd)} exited {code}: {err.strip()[-300:]}")
    return [wall, usage.ru_utime + usage.ru_stime]


def interleaved(commands: dict[str, list[str]], repeat: int) -> dict[str, Samples]:
    """Each command `repeat` times, taking turns, so drifting load hits them alike."""
    out: dict[str, Samples] = {name: [] for name in commands}
    for cmd in commands.values():  # one untimed run each: warm the page cache
        run_process(cmd)
    for _ in range(repeat):
        for name, cmd in commands.items():
            out[name].append(run_process(cmd))
    return out


def worker(params: dict[str, Any], *, timeout: float = 300) -> dict[str, Any]:
    """Run one job of `worker.py` in a fresh interpreter and return its JSON result."""
    cmd = [PYTHON, str(HERE / "worker.py"), json.dumps(params)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *filter(None, [os.environ.get("PYTHONPATH")])])}
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, check=False)
    except subprocess.TimeoutExpired:
        raise Failed(f"{params['job']} timed out after {timeout:.0f} s") from None
    if done.returncode != 0:
        raise Failed(f"{params['job']} failed: {done.stderr.strip()[-500:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def machine() -> dict[str, str]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        mem = next(
            line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal")
        )
        memory = f"{int(mem) / 1024**2:.1f} GiB"
    except (OSError, StopIteration, ValueError):
        memory = "unknown"
    return {
        "cpu": f"{cpu}, {os.cpu_count()} logical cores",
        "memory": memory,
        "os": platform.platform(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
    }


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"
