"""Benchmark: where the nodes of a fixed tree lie, by depth, as JSON (for the ETA's estimators).

The exact walk of ``flowshop.estimate`` (UB fixed, so the tree is the explorers') counts the nodes
at each depth.  Random probes estimate a tree well when its nodes are spread near the top and
badly when they sit in a few deep, bushy subtrees under a narrow top; the profile shows which.

    python benchmarks/tree_shape.py ta043:2839 ta042:2867 ta017:1484
"""

from __future__ import annotations

import argparse
import json
import time


def profile(name: str, ub: int, branch: str) -> dict:
    from pbbflow.flowshop.estimate import Prober
    from pbbflow.flowshop.intervals import WorkUnit
    from pbbflow.flowshop.load import load_instance

    p = load_instance(name).p
    n = int(p.shape[0])
    started = time.perf_counter()
    by_depth = Prober(p, branch=branch).exact_by_depth(WorkUnit.full(n), ub)
    total = int(by_depth.sum())
    widest = int(by_depth.argmax())
    return {
        "instance": name,
        "n": n,
        "m": int(p.shape[1]),
        "ub": ub,
        "branch": branch,
        "nodes": total,
        "seconds": round(time.perf_counter() - started, 2),
        "widest_depth": widest,
        "nodes_at_widest_depth": int(by_depth[widest]),
        "share_in_the_top_third": round(float(by_depth[: n // 3].sum()) / total, 6),
        "nodes_by_depth": [int(x) for x in by_depth],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", metavar="NAME:UB", help="an instance and a fixed UB (its optimum)")
    parser.add_argument("--branch", default="minmin")
    args = parser.parse_args()
    trees = [spec.split(":") for spec in args.trees]
    print(
        json.dumps(
            {"benchmark": "tree_shape", "trees": [profile(name, int(ub), args.branch) for name, ub in trees]}, indent=1
        )
    )


if __name__ == "__main__":
    main()
