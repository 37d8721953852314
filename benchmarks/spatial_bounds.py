"""Benchmark: subdomain lower bounding of the peaks ANN root box on the CPU, as JSON.

bound_boxes on [-3, 3]^2 with n_per_dim = 32 (1,024 subdomains), modes NIE / MVF / both, serial
and parallel: median of several calls after compilation, and the cost per subdomain. Also the
numba compile time, cold (no cache) and warm (cache=True, in a fresh process).

    python benchmarks/spatial_bounds.py                  # about a minute on 2 cores
    python benchmarks/spatial_bounds.py --repeats 5 --out results.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from spatial_problems import peaks_ann_tape  # noqa: E402

from pbbflow.spatial.bounds import LANES, bound_boxes  # noqa: E402

FIRST_CALL = """
import sys, time
sys.path.insert(0, {tests!r})
from spatial_problems import peaks_ann_tape
import numpy as np
from pbbflow.spatial.bounds import bound_boxes
tape, _ = peaks_ann_tape()
start = time.perf_counter()
for parallel in (False, True):
    for mode in (1, 2, 3):
        bound_boxes(tape, np.array([[-3.0, -3.0]]), np.array([[3.0, 3.0]]), 2, mode, parallel=parallel)
print(time.perf_counter() - start)
"""


def first_call_seconds(cache_dir: str) -> float:
    """Seconds of the first calls (all modes, serial and parallel) in a fresh process."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    code = FIRST_CALL.format(tests=str(HERE.parent / "tests"))
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True)
    return float(out.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--n-per-dim", type=int, default=32)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    tape, _ = peaks_ann_tape()
    box_lo = np.array([[-3.0, -3.0]])
    box_hi = np.array([[3.0, 3.0]])
    n_sub = args.n_per_dim**2
    timings = {}
    for parallel in (False, True):
        for mode, name in ((1, "nie"), (2, "mvf"), (3, "both")):
            result = bound_boxes(tape, box_lo, box_hi, args.n_per_dim, mode, parallel=parallel)
            seconds = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                bound_boxes(tape, box_lo, box_hi, args.n_per_dim, mode, parallel=parallel)
                seconds.append(time.perf_counter() - start)
            key = f"{name}_{'parallel' if parallel else 'serial'}"
            median = statistics.median(seconds)
            timings[key] = {"median_ms": 1e3 * median, "best_ms": 1e3 * min(seconds),
                            "us_per_subdomain": 1e6 * median / n_sub, "lb": float(result.lb[0])}
            print(f"{key:14s} {1e3 * median:8.2f} ms  {1e6 * median / n_sub:6.2f} us/subdomain  lb {result.lb[0]:.4f}")
    with tempfile.TemporaryDirectory() as cache_dir:
        cold = first_call_seconds(cache_dir)
        warm = first_call_seconds(cache_dir)
    print(f"first calls: cold {cold:.1f} s (compiling), warm {warm:.2f} s (numba cache)")
    report = {
        "benchmark": "spatial_bounds", "problem": "peaks-ann-2-10-8-1 on [-3, 3]^2",
        "tape_size": int(tape.size), "n_per_dim": args.n_per_dim, "subdomains": n_sub, "lanes": LANES,
        "repeats": args.repeats, "threads": numba.get_num_threads(), "cpu": platform.processor() or platform.machine(),
        "timings": timings, "first_call_cold_s": cold, "first_call_warm_s": warm,
    }
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
