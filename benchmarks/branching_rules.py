"""Benchmark: tree sizes of the branching rules on fixed trees (UB = optimum), as JSON.

With UB = optimum the tree of a rule is fixed, so its node count is the same on every machine
and explorer (the GPU's equal the CPU's): a rule that cuts nodes here cuts them on the GPU.
Each instance with a proven optimum in ``../shared/data/taillard/bounds.csv`` runs once per rule
on the CPU explorer, capped at ``--max-seconds``; a capped run counts as unfinished and its
instance is left out of the totals.

    python benchmarks/branching_rules.py --groups 1 2 4 5 --rules minmin minbranch --max-seconds 90
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
import time
from pathlib import Path

BOUNDS = Path(__file__).resolve().parents[2] / "shared" / "data" / "taillard" / "bounds.csv"


def optima(path: Path) -> dict[str, int]:
    """Instance name -> proven optimal makespan."""
    with open(path, newline="") as handle:
        return {row["instance"]: int(row["upper_bound"]) for row in csv.DictReader(handle) if row["optimal"] == "yes"}


def run_one(name: str, ub: int, rule: str, threads: int, max_seconds: float) -> dict:
    from pbbflow.flowshop.explorer import explore
    from pbbflow.flowshop.intervals import WorkUnit
    from pbbflow.flowshop.load import load_instance

    p = load_instance(name).p
    started = time.perf_counter()
    result = explore(p, WorkUnit.full(p.shape[0]), ub, branch=rule, threads=threads, max_seconds=max_seconds)
    return {
        "instance": name,
        "n": int(p.shape[0]),
        "m": int(p.shape[1]),
        "rule": rule,
        "nodes": result.nodes,
        "seconds": round(time.perf_counter() - started, 3),
        "finished": not result.remaining,
    }


def summarize(runs: list[dict], rules: list[str]) -> dict:
    """Per size class: instances finished by every rule, node totals and the geometric mean of
    each rule's nodes over the first rule's."""
    by_instance: dict[str, dict[str, dict]] = {}
    for run in runs:
        by_instance.setdefault(run["instance"], {})[run["rule"]] = run
    classes: dict[str, dict] = {}
    for name, per_rule in sorted(by_instance.items()):
        if not all(per_rule.get(rule, {}).get("finished") for rule in rules):
            continue
        first = per_rule[rules[0]]
        size = classes.setdefault(
            f"{first['n']}x{first['m']}",
            {"instances": [], "nodes": dict.fromkeys(rules, 0), "log_ratio": dict.fromkeys(rules, 0.0)},
        )
        size["instances"].append(name)
        for rule in rules:
            size["nodes"][rule] += per_rule[rule]["nodes"]
            size["log_ratio"][rule] += math.log(max(per_rule[rule]["nodes"], 1) / max(first["nodes"], 1))
    for size in classes.values():
        count = len(size["instances"])
        size["geomean_over_" + rules[0]] = {
            rule: round(math.exp(size["log_ratio"].pop(rule) / count), 4) for rule in rules
        }
        del size["log_ratio"]
    return classes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--groups",
        nargs="+",
        type=int,
        default=[1, 2, 4, 5],
        help="Taillard groups of ten: 1 = ta001-ta010 (20 x 5), 2 = 20 x 10, 3 = 20 x 20, 4 = 50 x 5, ...",
    )
    parser.add_argument("--instances", nargs="*", default=[], help="instead of --groups")
    parser.add_argument("--rules", nargs="+", default=["minmin", "minbranch"])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--max-seconds", type=float, default=90.0, help="per run")
    parser.add_argument("--bounds", type=Path, default=BOUNDS)
    args = parser.parse_args()
    known = optima(args.bounds)
    names = args.instances or [f"ta{10 * (g - 1) + i:03d}" for g in args.groups for i in range(1, 11)]
    names = [name for name in names if name in known]
    runs = []
    for name in names:
        for rule in args.rules:
            runs.append(run_one(name, known[name], rule, args.threads, args.max_seconds))
            print(json.dumps(runs[-1]), flush=True, file=sys.stderr)
    print(
        json.dumps(
            {
                "benchmark": "branching_rules",
                "ub": "optimum",
                "bound": "lb1",
                "threads": args.threads,
                "max_seconds": args.max_seconds,
                "cpus": len(os.sched_getaffinity(0)),
                "rules": args.rules,
                "classes": summarize(runs, args.rules),
                "runs": runs,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
