"""Benchmark: network objectives on the GPU, their boxes bounded whole against split into N^d
subdomains, as JSON.

The problems are ``spatial_splits.py``'s network set (the ANN files of ``../shared/data/ann`` and
``benchmarks/networks``, minimized and maximized, and the error problems). Variants, each run with
``minimize_gpu`` at the GPU's default budget of subdomains:

- ``subdomains``: every box split into N^d subdomains on f's tape, raised through the layers
  (the rule before whole boxes: ``bounds_whole_boxes`` answered False for the GPU);
- ``whole-P``: where ``bounds_whole_boxes`` holds, one subdomain a box and no contraction, with a
  phase budget of P subdomains (a whole box counts as ``NETWORK_BOX_SUBDOMAINS``); P is
  ``--phase-budgets``. Problems the rule leaves on subdomains run only as ``subdomains``.

Per run: status, nodes, phases, seconds, the certified lower bound and the verified value. ``valid``
checks each bound against the best verified value of its problem over all runs. The kernels are
loaded before the clock (``load_code``).

    python benchmarks/spatial_gpu_whole_boxes.py --time-limit 20 --out whole_boxes.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path

from spatial_splits import problems, summarize, validate

from pbbflow.gpu.spatial import bnb as gpu_bnb
from pbbflow.spatial.defaults import GPU_SUBDOMAINS
from pbbflow.spatial.explorer import bounds_whole_boxes
from pbbflow.spatial.options import MinimizeOptions


def _run(problem, options: MinimizeOptions, phase_subdomains: int, whole: bool) -> dict:
    """One GPU run; ``whole`` False keeps the subdomains whatever the rule says."""
    rule = gpu_bnb.bounds_whole_boxes
    gpu_bnb.bounds_whole_boxes = rule if whole else (lambda problem: False)
    try:
        gpu_bnb.load_code(problem, options)
        result = gpu_bnb.minimize_gpu(problem, options, phase_subdomains=phase_subdomains)
    finally:
        gpu_bnb.bounds_whole_boxes = rule
    return {
        "status": result.status.value,
        "nodes": result.nodes,
        "phases": result.extras.get("phases"),
        "subdomains": result.extras.get("subdomains"),
        "seconds": round(result.elapsed_s, 4),
        "lower_bound": result.lower_bound,
        "value": result.value,
    }


def report(args: argparse.Namespace, rows: list[dict]) -> dict:
    """The JSON: settings, a summary per variant (over the problems every variant ran), every run."""
    validate(rows)
    whole_problems = {r["problem"] for r in rows if r["variant"] != "subdomains"}
    summary = {
        variant: summarize([r for r in rows if r["variant"] == variant and r["problem"] in whole_problems])
        for variant in sorted({r["variant"] for r in rows})
    }
    return {
        "benchmark": "spatial_gpu_whole_boxes",
        "command": "python benchmarks/spatial_gpu_whole_boxes.py " + " ".join(sys.argv[1:]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load_average": os.getloadavg()},
        "settings": {
            "eps": 1e-6,
            "subdomains": GPU_SUBDOMAINS,
            "network_box_subdomains": gpu_bnb.NETWORK_BOX_SUBDOMAINS,
            "time_limit_s": args.time_limit,
        },
        "summary_on_whole_box_problems": summary,
        "runs": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--phase-budgets", type=int, nargs="+", default=[1 << 19, 1 << 21, 1 << 23])
    parser.add_argument("--time-limit", type=float, default=20.0)
    parser.add_argument("--only", nargs="+", help="only problems whose name holds one of these")
    parser.add_argument("--out", type=Path, help="also write the JSON here after every problem")
    args = parser.parse_args()
    options = MinimizeOptions(subdomains=GPU_SUBDOMAINS, time_limit=args.time_limit)
    rows = []
    for problem in problems("networks"):
        if args.only and not any(part in problem.name for part in args.only):
            continue
        variants = [("subdomains", gpu_bnb.PHASE_SUBDOMAINS, False)]
        if bounds_whole_boxes(problem):
            variants += [(f"whole-{budget}", budget, True) for budget in args.phase_budgets]
        for variant, budget, whole in variants:
            row = {"problem": problem.name, "d": problem.dimension, "variant": variant}
            row |= _run(problem, options, budget, whole)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
            if args.out:
                args.out.write_text(json.dumps(report(args, rows), indent=1) + "\n")
    print(json.dumps(report(args, rows), indent=1))


if __name__ == "__main__":
    main()
