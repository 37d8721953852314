"""Benchmark: threshold questions (``--prove-above C``) against the full proof of the minimum, as JSON.

For each problem (a few of ``../shared/data/spatial``, of ``../shared/data/ann`` and of
``benchmarks/networks``) the minimum is proved first (``MinimizeOptions`` defaults, ``--time-limit``),
then the question "f >= C everywhere?" is asked at C = opt - delta (it holds) and C = opt + delta (it
is violated) for each relative delta (delta = rel * max(1, |opt|); opt: the file's optimum, else the
proof's value). Per question: the answer, the boxes bounded and the seconds, beside the proof's. On
the CPU with the default parallel bounds; a warm-up solve of each problem loads its numba code first,
and each solve's seconds are the least of ``--repeats`` (the machine is shared).

    python benchmarks/spatial_threshold.py > benchmarks/results/spatial_threshold_2core_2026-12-05.json
    (in a worktree: --data /work/shared/data)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from dataclasses import replace
from pathlib import Path

from pbbflow.spatial.bnb import load_code, minimize
from pbbflow.spatial.load import load_problem
from pbbflow.spatial.options import MinimizeOptions

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared" / "data"  # ../shared/data beside the repository (--data elsewhere)
SHARED_FILES = (
    "spatial/B2-six-hump-camel.json",
    "spatial/B14-peaks-matlab.json",
    "spatial/B15-hartmann-3.json",
    "spatial/C9-st-e01-globallib.json",
    "spatial/C17-hs071-hock-schittkowski-71.json",
    "ann/ann01-peaks-2-8-8-1-tanh-error-max.json",
    "ann/ann02-branin-2-16-1-tanh.json",
    "ann/ann04-camel-2-16-1-sigmoid.json",
    "ann/ann05-branin-2-16-16-1-relu.json",
    "ann/ann08-gauss3-3-8-8-8-1-tanh.json",
)
NETWORKS = tuple(
    HERE / "networks" / f"{name}.json"
    for name in ("peaks-2-32-32-1-tanh", "camel-2-32-32-1-sigmoid", "gauss3-3-16-16-16-1-tanh")
)


def _solve(problem, options: MinimizeOptions, repeats: int) -> dict:
    """A solve's answer, boxes and seconds (the least of ``repeats``: the machine is shared)."""
    seconds = []
    for _ in range(repeats):
        began = time.perf_counter()
        result = minimize(problem, options)
        seconds.append(time.perf_counter() - began)
    return {
        "status": str(result.status),
        "holds": None if result.threshold is None else result.threshold["holds"],
        "nodes": result.nodes,
        "seconds": round(min(seconds), 3),
        "lower_bound": result.lower_bound,
        "objective": result.value,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--time-limit", type=float, default=10.0, help="seconds per solve (default 10)")
    parser.add_argument("--deltas", type=float, nargs="+", default=[1e-1, 1e-2, 1e-4], help="relative deltas")
    parser.add_argument("--repeats", type=int, default=2, help="solves of each, the fastest kept (default 2)")
    parser.add_argument("--data", type=Path, default=SHARED, help="the shared data folder (default: ../shared/data)")
    args = parser.parse_args()
    options = MinimizeOptions(time_limit=args.time_limit)
    rows = []
    for path in [*(args.data / name for name in SHARED_FILES), *NETWORKS]:
        if not path.is_file():
            print(f"skipped (missing): {path}", file=sys.stderr)
            continue
        problem = load_problem(str(path))
        load_code(problem, options)
        proof = _solve(problem, options, args.repeats)
        optimum = problem.optimum if problem.optimum is not None else proof["objective"]
        row = {
            "problem": path.stem,
            "dimension": problem.dimension,
            "optimum": optimum,
            "proof": proof,
            "questions": [],
        }
        if proof["status"] == "optimal" or problem.optimum is not None:
            for rel in args.deltas:
                delta = rel * max(1.0, abs(optimum))
                for side, level in (("below", optimum - delta), ("above", optimum + delta)):
                    answer = _solve(problem, replace(options, prove_above=level), args.repeats)
                    expected = side == "below"
                    answer.update(
                        rel_delta=rel, side=side, prove_above=level, correct=answer["holds"] in (None, expected)
                    )
                    row["questions"].append(answer)
        rows.append(row)
        print(f"{path.stem}: proof {proof['nodes']} boxes {proof['seconds']} s", file=sys.stderr)
    questions = [q for row in rows for q in row["questions"]]
    print(
        json.dumps(
            {
                "benchmark": "spatial_threshold",
                "command": "python benchmarks/spatial_threshold.py " + " ".join(sys.argv[1:]),
                "machine": {
                    "cpus": os.cpu_count(),
                    "processor": platform.processor(),
                    "python": platform.python_version(),
                    "load_average": os.getloadavg(),
                },
                "settings": {
                    "time_limit_s": args.time_limit,
                    "deltas": args.deltas,
                    "repeats": args.repeats,
                    "backend": "cpu, parallel",
                },
                "summary": {
                    "questions": len(questions),
                    "decided": sum(q["status"] == "decided" for q in questions),
                    "all_correct": all(q["correct"] for q in questions),
                    "question_boxes": sum(q["nodes"] for q in questions),
                    "question_seconds": round(sum(q["seconds"] for q in questions), 3),
                    "fewer_boxes_than_the_proof": sum(
                        q["nodes"] < row["proof"]["nodes"] for row in rows for q in row["questions"]
                    ),
                },
                "problems": rows,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
