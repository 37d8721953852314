"""Benchmark: the fixed cost of a small spatial solve, two source trees side by side, as JSON.

A solve that ends in its first box (Bukin N.6, Rastrigin, Griewank, Ackley) costs about a
millisecond, nearly all of it outside the search: the root's bound, the first candidates, making
the result. This script times ``minimize`` (one thread, ``MinimizeOptions(parallel=False)``,
pbbflow's defaults otherwise) on each problem in a fresh process per tree (``PYTHONPATH=TREE``,
TREE holding a ``pbbflow`` package), after ``--warmup`` untimed solves, ``--solves`` timed ones; the
trees alternate, ``--rounds`` times, and per tree and problem the median over rounds of each
round's median is reported, with the nodes and the value (which must not differ between trees
that change no search).

    mkdir -p build/old/pbbflow && git archive HEAD~1 | tar -x -C build/old/pbbflow
    mkdir -p build/new && ln -sfn "$PWD" build/new/pbbflow
    python benchmarks/spatial_fixed_cost.py --trees build/old build/new \\
        > benchmarks/results/spatial_fixed_cost_2core.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

PROBLEMS = Path(__file__).resolve().parent / "problems"
DEFAULT = ("bukin-6", "rastrigin-5", "griewank-5", "ackley-2", "hs046", "trid-6")

_ONE_TREE = r"""
import json, sys, time
from pbbflow.spatial.bnb import minimize
from pbbflow.spatial.load import load_problem
from pbbflow.spatial.options import MinimizeOptions
warmup, solves, specs = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
out = {}
for spec in specs:
    problem, options = load_problem(spec), MinimizeOptions(parallel=False)
    for _ in range(warmup):
        result = minimize(problem, options)
    seconds = []
    for _ in range(solves):
        began = time.perf_counter()
        result = minimize(problem, options)
        seconds.append(time.perf_counter() - began)
    seconds.sort()
    out[spec] = {"median_s": seconds[len(seconds) // 2], "nodes": result.nodes, "value": result.value,
                 "status": str(result.status)}
print(json.dumps(out))
"""


def _spec(name: str) -> str:
    path = Path(name)
    return str(path if path.suffix == ".json" else PROBLEMS / f"{name}.json")


def run_tree(tree: Path, specs: list[str], warmup: int, solves: int) -> dict:
    """One round on ``tree``: a fresh process that imports its ``pbbflow``."""
    env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
    done = subprocess.run(
        [sys.executable, "-c", _ONE_TREE, str(warmup), str(solves), *specs],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"{tree}: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}")
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=Path, nargs="+", required=True, help="folders each holding a pbbflow package")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--solves", type=int, default=200)
    parser.add_argument("problems", nargs="*", default=list(DEFAULT), help="names under benchmarks/problems, or files")
    args = parser.parse_args()
    specs = [_spec(name) for name in args.problems]
    rounds: dict[str, list[dict]] = {str(tree): [] for tree in args.trees}
    for _ in range(args.rounds):
        for tree in args.trees:
            rounds[str(tree)].append(run_tree(tree, specs, args.warmup, args.solves))
    rows = []
    for spec in specs:
        row = {"problem": Path(spec).stem}
        for tree, results in rounds.items():
            last = results[-1][spec]
            row[tree] = {
                "median_s": statistics.median(r[spec]["median_s"] for r in results),
                "nodes": last["nodes"],
                "value": last["value"],
                "status": last["status"],
            }
        rows.append(row)
    report = {
        "benchmark": "spatial_fixed_cost",
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load_average": os.getloadavg()},
        "settings": {"rounds": args.rounds, "warmup": args.warmup, "solves": args.solves, "parallel": False},
        "problems": rows,
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
