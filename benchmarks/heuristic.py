"""Benchmark: iterated greedy against the best-known makespans, as JSON.

Average relative percentage deviation (ARPD, 100 (C - best known) / best known) on Taillard's
ta051-ta060 (50 x 20) and ta081-ta090 (100 x 20) at the literature's stopping rule: n m / 2 x
30 ms of CPU time per run (Ruiz and Stuetzle 2007), for several seeds.  Runs are spread over
the cores, one process each, and budgeted in process CPU time.  Best-known values come from
``../shared/data/taillard/bounds.csv`` (upper_bound column).

    python benchmarks/heuristic.py                     # 3 seeds, about 12 minutes on 2 cores
    python benchmarks/heuristic.py --seeds 0 --groups 51
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from pbbflow.flowshop.iterated_greedy import iterated_greedy
from pbbflow.flowshop.taillard import taillard_instance

BOUNDS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "taillard" / "bounds.csv"
MS_PER_UNIT = 30.0


def warm_up() -> None:
    """Load the numba code before any budget starts."""
    iterated_greedy(taillard_instance(1).p, iterations=2)


def one_run(number: int, seed: int) -> dict:
    p = taillard_instance(number).p
    n, m = p.shape
    budget = n * m / 2 * MS_PER_UNIT / 1000
    result = iterated_greedy(p, seconds=budget, seed=seed, clock=time.process_time)
    return {
        "instance": f"ta{number:03d}",
        "seed": seed,
        "makespan": result.makespan,
        "iterations": result.iterations,
        "cpu_budget_s": budget,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--groups", nargs="+", type=int, default=[51, 81], help="first instance of each group of 10")
    parser.add_argument("--bounds", type=Path, default=BOUNDS)
    parser.add_argument("--processes", type=int, default=len(os.sched_getaffinity(0)))
    args = parser.parse_args()
    with open(args.bounds, newline="") as f:
        best_known = {row["instance"]: int(row["upper_bound"]) for row in csv.DictReader(f)}
    jobs = [(first + i, seed) for first in args.groups for i in range(10) for seed in args.seeds]
    with ProcessPoolExecutor(max_workers=args.processes, initializer=warm_up) as pool:
        runs = list(pool.map(one_run, *zip(*jobs)))
    for r in runs:
        r["best_known"] = best_known[r["instance"]]
        r["rpd"] = round(100 * (r["makespan"] - r["best_known"]) / r["best_known"], 4)
    groups = []
    for first in args.groups:
        names = {f"ta{first + i:03d}" for i in range(10)}
        rows = [r for r in runs if r["instance"] in names]
        groups.append(
            {
                "instances": f"ta{first:03d}-ta{first + 9:03d}",
                "arpd": round(statistics.mean(r["rpd"] for r in rows), 4),
                "runs": len(rows),
            }
        )
    algorithm = "iterated greedy, d=4, tau=0.4, idle-time tie-break, referenced insertion local search"
    print(
        json.dumps(
            {
                "benchmark": "heuristic",
                "algorithm": algorithm,
                "stopping_rule": f"n*m/2 x {MS_PER_UNIT:g} ms CPU",
                "seeds": args.seeds,
                "groups": groups,
                "goal_arpd_each_group": 1.0,
                "runs": runs,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
