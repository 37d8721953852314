"""Benchmark: subdomain lower bounds of the peaks ANN's root box on the CPU, as JSON.

``bound_boxes`` on [-3, 3]^2 for N^2 subdomains (N = 1, 2, 4, ... 128: 1 to 16,384 subdomains),
modes NIE, MVF and both (their intersection), serial and parallel: the root lower bound (the
shape of the interval seed paper's Figure 6(a); ``../shared/data/spatial/README.md`` lists
independent reference values) and the median seconds of several calls after compilation, per
call and per subdomain.  Also the first calls' seconds in a fresh process: cold (numba compiles)
and warm (from numba's cache).

    python benchmarks/spatial_bounds.py --out benchmarks/results/spatial_bounds.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba

from pbbflow.spatial.bounds import LANES, bound_boxes
from pbbflow.spatial.load import load_problem

N_PER_DIM = (1, 2, 4, 8, 16, 32, 64, 128)
MODES = ((1, "nie"), (2, "mvf"), (3, "both"))
REFERENCE = {  # ../shared/data/spatial/README.md: independent root bounds by number of subdomains
    "nie": {1: -44.17, 64: -33.94, 1024: -12.08, 4096: -9.65, 16384: -8.18},
    "mvf": {64: -35.40, 1024: -8.66, 4096: -7.05, 16384: -6.65},
}
FIRST_CALLS = """
import time
start = time.perf_counter()
from pbbflow.spatial.bounds import bound_boxes
from pbbflow.spatial.load import load_problem
p = load_problem("peaks-ann")
for parallel in (False, True):
    for mode in (1, 2, 3):
        bound_boxes(p.tape, p.lower[None], p.upper[None], 2, mode, parallel=parallel)
print(time.perf_counter() - start)
"""


def first_calls_seconds(cache_dir: str) -> float:
    """Seconds to import and make the first calls (every mode, serial and parallel) in a fresh process."""
    env = {**__import__("os").environ, "NUMBA_CACHE_DIR": cache_dir}
    out = subprocess.run([sys.executable, "-c", FIRST_CALLS], env=env, check=True, capture_output=True, text=True)
    return float(out.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    problem = load_problem("peaks-ann")
    box_lo, box_hi = problem.lower[None].copy(), problem.upper[None].copy()
    rows = []
    for n in N_PER_DIM:
        subdomains = n * n
        for mode, name in MODES:
            row = {"subdomains": subdomains, "n_per_dim": n, "mode": name}
            for parallel in (False, True):
                lb = float(bound_boxes(problem.tape, box_lo, box_hi, n, mode, parallel=parallel).lb[0])
                seconds = []
                for _ in range(args.repeats):
                    start = time.perf_counter()
                    bound_boxes(problem.tape, box_lo, box_hi, n, mode, parallel=parallel)
                    seconds.append(time.perf_counter() - start)
                median = statistics.median(seconds)
                which = "parallel" if parallel else "serial"
                row[f"{which}_ms"] = round(1e3 * median, 4)
                row[f"{which}_us_per_subdomain"] = round(1e6 * median / subdomains, 3)
                row["root_lb"] = lb
            reference = REFERENCE.get(name, {}).get(subdomains)
            if reference is not None:
                row["reference_lb"] = reference
                row["within_0.05_of_reference"] = abs(row["root_lb"] - reference) <= 0.05
            row["valid"] = row["root_lb"] <= problem.optimum
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
    with tempfile.TemporaryDirectory() as cache_dir:
        cold = first_calls_seconds(cache_dir)
        warm = first_calls_seconds(cache_dir)
    report = {
        "benchmark": "spatial_bounds",
        "command": "python benchmarks/spatial_bounds.py " + " ".join(sys.argv[1:]),
        "problem": "peaks-ann on [-3, 3]^2",
        "optimum": problem.optimum,
        "tape_size": int(problem.tape.size),
        "lanes": LANES,
        "repeats": args.repeats,
        "threads": numba.get_num_threads(),
        "cpu": platform.processor() or platform.machine(),
        "root_bounds": rows,
        "first_calls_cold_s": round(cold, 2),
        "first_calls_warm_s": round(warm, 2),
    }
    text = json.dumps(report, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
