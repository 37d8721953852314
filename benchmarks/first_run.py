"""Benchmark: a machine's first run of each family, as a user types it, cold and then warm, as JSON.

Runs ``pbbflow solve ta011`` and ``pbbflow minimize peaks`` (the console script of this Python)
in fresh processes, first with an empty numba cache (``NUMBA_CACHE_DIR`` pointed at a new folder:
everything compiles, as after an install) and then ``--warm-runs`` times with that cache filled.
Each run reports its wall seconds measured here, the seconds after start at which stderr gave the
first-run notice and the compiled figure (read as the lines arrive), the figure itself, and the
machine's load average before it started (a loaded machine makes the figures meaningless: run it
on a quiet one).

    python benchmarks/first_run.py                 # ~2 minutes on 2 cores
    python benchmarks/first_run.py --warm-runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pbbflow.core.compiling import compiled_line

COMMANDS = {"solve": ["solve", "ta011", "--run", "run.zarr", "--overwrite"], "minimize": ["minimize", "peaks"]}
NOTICE = "pbbflow: compiling "
FIGURE = re.compile(re.escape(compiled_line(0.0)).replace(re.escape("0.0"), r"([\d.]+)"))


def run_once(arguments: list[str], folder: Path, cache: Path) -> dict:
    """One command in a fresh process with numba's cache at ``cache``; stderr timed line by line."""
    script = Path(sys.executable).with_name("pbbflow")
    launcher = [str(script)] if script.exists() else [sys.executable, "-m", "pbbflow.cli.main"]  # (a --target install)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    load = os.getloadavg()[0]
    started = time.perf_counter()
    proc = subprocess.Popen(
        [*launcher, *arguments], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=folder
    )
    notice_at = figure_at = figure = None
    lines = []
    for line in proc.stderr:
        now = round(time.perf_counter() - started, 2)
        lines.append(line.rstrip())
        if line.startswith(NOTICE) and notice_at is None:
            notice_at = now
        match = FIGURE.search(line)
        if match:
            figure_at, figure = now, float(match.group(1))
    proc.stdout.read()
    code = proc.wait()
    wall = time.perf_counter() - started
    if code != 0:
        raise RuntimeError(f"pbbflow {' '.join(arguments)} exited {code}: {lines}")
    return {
        "wall_s": round(wall, 2),
        "notice_at_s": notice_at,
        "figure_at_s": figure_at,
        "compiled_s": figure,
        "load_average_before": round(load, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm-runs", type=int, default=2)
    args = parser.parse_args()
    results = {}
    for name, arguments in COMMANDS.items():
        with tempfile.TemporaryDirectory() as folder:
            cache = Path(folder) / "numba-cache"
            runs = []
            for index in range(1 + args.warm_runs):
                runs.append({"cache": "cold" if index == 0 else "warm", **run_once(arguments, Path(folder), cache)})
                print(json.dumps({name: runs[-1]}), file=sys.stderr)
        warm = [r["wall_s"] for r in runs[1:]]
        results[name] = {
            "command": "pbbflow " + " ".join(arguments),
            "runs": runs,
            "cold_wall_s": runs[0]["wall_s"],
            "warm_median_wall_s": statistics.median(warm) if warm else None,
        }
    print(
        json.dumps(
            {
                "benchmark": "first_run",
                "machine": {
                    "cpus": len(os.sched_getaffinity(0)),
                    "processor": platform.processor() or platform.machine(),
                    "python": platform.python_version(),
                },
                "results": results,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
