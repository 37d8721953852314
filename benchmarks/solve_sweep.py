"""Benchmark: ``pbbflow solve`` on many Taillard instances, optionally on a loaded machine; prints JSON.

Each instance runs as a user would run it (``python -m pbbflow.cli.main solve taNNN --json``, a
fresh process, default cluster) with ``--time-limit``, while ``--load`` processes spin on the CPU
beside it.  A run fails when it exits other than 0 (done) or 3 (stopped at the limit), prints no
result, or contradicts the known bounds (``--bounds``, the shared Taillard CSV): an ``optimal``
makespan other than a proved optimum, or a lower bound above the best known makespan.

    python benchmarks/solve_sweep.py --load 2                      # ta001-ta020, ta031-ta040
    python benchmarks/solve_sweep.py --instances ta021 --time-limit 60 -- --gpus 1
"""

from __future__ import annotations

import argparse
import csv
import json
import multiprocessing
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

DEFAULT = [f"ta{k:03d}" for k in (*range(1, 21), *range(31, 41))]
BOUNDS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "taillard" / "bounds.csv"


def spin() -> None:
    """Keep one core busy until killed."""
    while True:
        pass


def known_bounds(path: Path) -> dict[str, tuple[int, int, bool]]:
    """``instance -> (lower bound, best known makespan, proved optimal)`` from the shared CSV."""
    with open(path, newline="") as f:
        return {
            r["instance"]: (int(r["lower_bound"]), int(r["upper_bound"]), r["optimal"] == "yes")
            for r in csv.DictReader(f)
        }


def solve(instance: str, time_limit: str, extra: list[str]) -> dict:
    """One ``pbbflow solve`` in a fresh process: its exit code, wall seconds and result."""
    command = [
        sys.executable,
        "-m",
        "pbbflow.cli.main",
        "solve",
        instance,
        "--json",
        "--time-limit",
        time_limit,
        *extra,
    ]
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    run = {"instance": instance, "exit": proc.returncode, "wall_s": round(time.perf_counter() - started, 2)}
    try:
        result = json.loads(proc.stdout)
        run.update({k: result.get(k) for k in ("status", "makespan", "lower_bound", "nodes", "elapsed_s")})
    except json.JSONDecodeError:
        run["stderr_tail"] = proc.stderr.strip().splitlines()[-3:]
    return run


def failure(run: dict, bounds: dict[str, tuple[int, int, bool]]) -> str | None:
    """Why ``run`` failed, or None."""
    if run["exit"] not in (0, 3):
        return f"exit {run['exit']}"
    if run.get("status") is None:
        return "no result"
    if run["instance"] not in bounds:
        return None
    _, best, proved = bounds[run["instance"]]
    if run["status"] == "optimal" and proved and run["makespan"] != best:
        return f"optimal {run['makespan']} but the optimum is {best}"
    if run["lower_bound"] is not None and run["lower_bound"] > best:
        return f"lower bound {run['lower_bound']} above the best known {best}"
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", nargs="+", default=DEFAULT)
    parser.add_argument("--load", type=int, default=0, help="processes spinning on the CPU meanwhile")
    parser.add_argument("--time-limit", default="120")
    parser.add_argument("--bounds", type=Path, default=BOUNDS)
    parser.add_argument("extra", nargs="*", help="more options for pbbflow solve (after --)")
    args = parser.parse_args()
    bounds = known_bounds(args.bounds) if args.bounds.exists() else {}
    spinners = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.load)]
    for s in spinners:
        s.start()
    try:
        runs = []
        for instance in args.instances:
            run = solve(instance, args.time_limit, args.extra)
            run["failure"] = failure(run, bounds)
            runs.append(run)
            print(json.dumps(run), file=sys.stderr)
    finally:
        for s in spinners:
            s.terminate()
    print(
        json.dumps(
            {
                "benchmark": "solve sweep",
                "command": f"pbbflow solve INSTANCE --json --time-limit {args.time_limit} {' '.join(args.extra)}".strip(),
                "load_processes": args.load,
                "bounds": str(args.bounds) if bounds else None,
                "machine": {
                    "cpus": len(os.sched_getaffinity(0)),
                    "processor": platform.processor() or platform.machine(),
                    "python": platform.python_version(),
                },
                "failures": sum(r["failure"] is not None for r in runs),
                "runs": runs,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
