"""Benchmark: where the CPU IVM explorer's time goes per node, printing JSON.

One IVM explores a fixed tree (UB = optimum, LB1, MinMin, one thread) in a single
``explore_steps`` call, alternately through the plain build and through its instrumented twin
``explore_steps_timed``, which reads the CPU's cycle counter at every phase boundary
(flowshop/ivm.py, ``PHASES``).  The counter is calibrated against ``time.perf_counter`` over
each run.  The timed runs give cycles and ns per node for each phase; timed against plain
seconds is the instrumentation's own cost.

    python benchmarks/cpu_phases.py                         # ta017 (UB 1484) and ta011 (UB 1582), 3 repeats
    python benchmarks/cpu_phases.py --instances ta011 --repeats 10
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

import numba
import numpy as np

from pbbflow.flowshop import ivm
from pbbflow.flowshop.choices import BOUND_NAMES, BRANCH_NAMES
from pbbflow.flowshop.load import load_instance

OPTIMA = {"ta011": 1582, "ta017": 1484, "ta042": 2867, "ta050": 3065}  # as benchmarks/cpu_explorer.py
# ta017's fixed tree (UB 1484, LB1, MinMin): docs/performance.md, tests/workflow/test_run.py
RECORDED_NODES = {"ta017": 38_400_745, "ta011": 158_084, "ta042": 3_065_651, "ta050": 2_107_780}


@numba.njit(cache=True)
def _cycles() -> int:
    return ivm._cycle_counter()


def steps_for(problem: ivm.Problem, explorer: ivm.IVM, timed: bool):
    """``explore_steps``, or its timed twin compiled as the IVM compiles the plain one (cmov kept)."""
    if not timed:
        return ivm.explore_steps  # the IVM compiled it (an older tree: its first call does)
    ivm.compile_steps(ivm.explore_steps_timed, problem, explorer.arrays)
    return ivm.explore_steps_timed


def run_tree(problem: ivm.Problem, ub: int, timed: bool) -> dict:
    """Explore the whole tree in one call; seconds, counter rate and the IVM's scalars."""
    explorer = ivm.IVM(problem)
    explorer.start(np.zeros(problem.n, np.int32), None, ub)
    steps = steps_for(problem, explorer, timed)
    cycles0 = _cycles() if timed else 0
    started, cpu_started = time.perf_counter(), time.process_time()
    steps(problem.p, problem.bound_data, problem.mode, problem.branch, explorer.arrays, 1 << 62)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    cycles = _cycles() - cycles0 if timed else 0
    if not explorer.done or explorer.scalars[ivm.IMPROVED]:
        raise RuntimeError("UB is not the optimum or the search did not finish")
    return {
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "cycles_per_s": cycles / seconds,
        "cycles": cycles,
        "scalars": explorer.scalars.copy(),
    }


def phase_table(timed_runs: list[dict]) -> dict:
    """Per phase: cycles and ns per node (median over the timed runs) and share of the cycles."""
    nodes = int(timed_runs[0]["scalars"][ivm.NODES])
    table = {}
    for index, name in enumerate(ivm.PHASES):
        per_node = [r["scalars"][ivm.CYCLES + index] / nodes for r in timed_runs]
        ns = [c / r["cycles_per_s"] * 1e9 for c, r in zip(per_node, timed_runs)]
        shares = [r["scalars"][ivm.CYCLES + index] / r["cycles"] for r in timed_runs]
        table[name] = {
            "cycles_per_node": round(statistics.median(per_node), 1),
            "ns_per_node": round(statistics.median(ns), 2),
            "ns_per_node_min_max": [round(min(ns), 2), round(max(ns), 2)],
            "share": round(statistics.median(shares), 4),
        }
    covered = [sum(r["scalars"][ivm.CYCLES : ivm.CYCLES + len(ivm.PHASES)]) / r["cycles"] for r in timed_runs]
    table["_covered_share"] = round(statistics.median(covered), 4)  # the rest: call, start and end
    return table


def measure(instance: str, repeats: int, plain_only: bool) -> dict:
    """Alternate plain and timed runs on ``instance``'s fixed tree; check the node count."""
    ub = OPTIMA[instance]
    problem = ivm.Problem(load_instance(instance).p, BOUND_NAMES["lb1"], BRANCH_NAMES["minmin"])
    plain, timed = [], []
    for _ in range(repeats):
        plain.append(run_tree(problem, ub, timed=False))
        if not plain_only:
            timed.append(run_tree(problem, ub, timed=True))
    sc = plain[0]["scalars"]
    nodes, leaves = int(sc[ivm.NODES]), int(sc[ivm.LEAVES])
    for r in plain + timed:
        if (int(r["scalars"][ivm.NODES]), int(r["scalars"][ivm.LEAVES])) != (nodes, leaves):
            raise RuntimeError(f"{instance}: node counts differ between runs")
    if nodes != RECORDED_NODES[instance]:
        raise RuntimeError(f"{instance}: {nodes} nodes, recorded {RECORDED_NODES[instance]}")
    plain_s = [r["seconds"] for r in plain]
    result = {
        "instance": instance,
        "ub": ub,
        "n": problem.n,
        "m": problem.m,
        "nodes": nodes,
        "leaves": leaves,
        "plain_seconds": [round(s, 4) for s in plain_s],
        "plain_cpu_seconds": [round(r["cpu_seconds"], 4) for r in plain],
        "plain_ns_per_node": round(statistics.median(plain_s) / nodes * 1e9, 2),
    }
    if plain_only:
        return result
    sc = timed[0]["scalars"]
    # Decomposed nodes bound their whole row; the root's row is bounded by IVM.start, outside the loop.
    bounded_nodes = nodes - 1
    timed_s = [r["seconds"] for r in timed]
    return result | {
        "timed_seconds": [round(s, 4) for s in timed_s],
        "timed_cpu_seconds": [round(r["cpu_seconds"], 4) for r in timed],
        "timed_ns_per_node": round(statistics.median(timed_s) / nodes * 1e9, 2),
        "instrumentation_overhead": round(statistics.median(timed_s) / statistics.median(plain_s) - 1, 4),
        "counter_hz": round(statistics.median(r["cycles_per_s"] for r in timed)),
        "children_per_node": round(int(sc[ivm.CHILDREN]) / bounded_nodes, 3),  # = the mean row length
        "lb1_evaluations_per_node": round(2 * int(sc[ivm.CHILDREN]) / bounded_nodes, 3),  # MinMin: both directions
        "pruned_share": round(int(sc[ivm.PRUNED]) / int(sc[ivm.CHILDREN]), 4),
        "phases": phase_table(timed),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", nargs="+", default=["ta017", "ta011"], choices=list(OPTIMA))
    parser.add_argument("--repeats", type=int, default=3, help="plain/timed pairs per instance (alternating)")
    parser.add_argument(
        "--plain-only",
        action="store_true",
        help="plain runs only: also runs against an older tree on PYTHONPATH, for old/new comparisons",
    )
    args = parser.parse_args()
    warm = ivm.Problem(load_instance("ta001").p, BOUND_NAMES["lb1"], BRANCH_NAMES["minmin"])
    for timed in (False,) if args.plain_only else (False, True):  # compile or load before any timing
        explorer = ivm.IVM(warm)
        explorer.start(np.zeros(warm.n, np.int32), None, 1278)
        steps = steps_for(warm, explorer, timed)
        steps(warm.p, warm.bound_data, warm.mode, warm.branch, explorer.arrays, 1000)
    if not args.plain_only:
        _cycles()
    results = []
    for instance in args.instances:
        results.append(measure(instance, args.repeats, args.plain_only))
        print(json.dumps({k: v for k, v in results[-1].items() if k != "phases"}), file=sys.stderr)
    print(
        json.dumps(
            {
                "benchmark": "cpu_phases",
                "command": "python benchmarks/cpu_phases.py " + " ".join(sys.argv[1:]),
                "tree": os.path.dirname(os.path.dirname(os.path.abspath(ivm.__file__))),
                "bound": "lb1",
                "branch": "minmin",
                "threads": 1,
                "machine": {
                    "cpus": os.cpu_count(),
                    "processor": platform.processor() or platform.machine(),
                    "python": platform.python_version(),
                    "numba": numba.__version__,
                    "load_average": os.getloadavg(),
                },
                "results": results,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
