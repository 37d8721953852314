"""Benchmark: the ETA's estimates against trees whose size is known from a finished proof, as JSON.

Two checks that need no full run of their own (for trees too large to prove again in a benchmark):

* ``history INFO_JSON --total N``: a run's ``pbbflow info --json`` (its history keeps every
  estimate of the nodes left) against the node count N of the finished proof of the same tree: at
  each share of N done, the estimate shown then, the truth N - nodes done, their ratio and whether
  the range held the truth.
* ``whole NAME:UB:TOTAL ...``: estimates (``flowshop.estimate``) of the whole tree of an instance
  under a fixed UB for ``--seconds`` each on ``--threads`` threads, ``--seeds`` times per ``--kept``
  value (default: fitted to the time, as the driver does), against its known size.

    pbbflow solve ta056 --ub 3680 --heuristic-workers 0 --run r.zarr --time-limit 440 --json
    pbbflow info r.zarr --json > info.json
    python benchmarks/eta_check.py history info.json --total 314373034677 --shares 0.1 0.2 0.25
    python benchmarks/eta_check.py whole ta021:2297:447987895 ta056:3680:314373034677
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np


def history(info: dict, total: int, shares: list[float]) -> list[dict]:
    """Per share of ``total`` done: the first sample at or past it, its estimate against the truth."""
    from pbbflow.workflow.eta import eta_curve

    h = {k: np.asarray(v, dtype=float) for k, v in info["history"].items()}
    eta, _, _ = eta_curve(h["t"], h["nodes"], h["estimate_nodes"], h["estimate_low"], h["estimate_high"])
    rows = []
    for share in shares:
        index = int(np.searchsorted(h["nodes"], share * total))
        if index >= h["nodes"].size:
            rows.append({"share_done": share, "reached": False})
            continue
        left = total - h["nodes"][index]
        estimate, low, high = (float(h[c][index]) for c in ("estimate_nodes", "estimate_low", "estimate_high"))
        rows.append(
            {
                "share_done": share,
                "reached": True,
                "t_s": round(float(h["t"][index]), 1),
                "nodes_done": int(h["nodes"][index]),
                "actual_nodes_left": int(left),
                "estimated_nodes_left": estimate,
                "estimated_low": low,
                "estimated_high": high,
                "predicted_over_actual": round(estimate / left, 6),
                "range_covers": bool(low <= left <= high),
                "eta_shown_s": None if math.isnan(eta[index]) else round(float(eta[index]), 1),
            }
        )
    return rows


def whole(spec: str, seconds: float, kept_counts: list[int | None], seeds: int, threads: int) -> dict:
    """Enumerations of the whole tree of ``NAME:UB:TOTAL`` against ``TOTAL``: estimates of ``seconds``
    on ``threads`` threads, their nodes kept per depth fitted to the time (None) or fixed."""
    from pbbflow.flowshop.estimate import Prober
    from pbbflow.flowshop.intervals import WorkUnit
    from pbbflow.flowshop.load import load_instance

    name, ub, total = spec.split(":")
    p = load_instance(name).p
    work = WorkUnit.full(p.shape[0])
    out = {"instance": name, "ub": int(ub), "total_nodes": int(total), "seconds_per_estimate": seconds}
    for kept in kept_counts:
        prober = Prober(p, kept=kept, threads=threads)
        prober.samples(WorkUnit.full(p.shape[0]), int(ub), 1)  # load the code
        runs = [prober.estimate(work, int(ub), seconds=seconds, seed=s) for s in range(seeds)]
        out["kept=fitted" if kept is None else f"kept={kept}"] = {
            "predicted_over_actual": [round(e.nodes / int(total), 6) for e in runs],
            "range_covers": [e.low <= int(total) <= e.high for e in runs],
            "samples": [e.samples for e in runs],
            "seconds": [round(e.seconds, 3) for e in runs],
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    h = commands.add_parser("history", help="a run's estimates against the finished proof's node count")
    h.add_argument("info", help="the run's `pbbflow info --json` output")
    h.add_argument("--total", type=int, required=True, help="nodes of the finished proof of the same tree")
    h.add_argument("--shares", type=float, nargs="+", default=[0.1, 0.5])
    w = commands.add_parser("whole", help="enumerations of whole trees against their known size")
    w.add_argument("trees", nargs="+", metavar="NAME:UB:TOTAL")
    w.add_argument("--seconds", type=float, default=1.0)
    w.add_argument("--kept", type=int, nargs="+", default=[None], help="nodes kept per depth (default: fitted)")
    w.add_argument("--threads", type=int, default=1)
    w.add_argument("--seeds", type=int, default=4)
    args = parser.parse_args()
    if args.command == "history":
        with open(args.info) as f:
            info = json.load(f)
        report = {
            "benchmark": "eta_check history",
            "instance": info["instance"],
            "total_nodes": args.total,
            "nodes_done_at_end": info["nodes"],
            "points": history(info, args.total, args.shares),
        }
    else:
        report = {
            "benchmark": "eta_check whole",
            "trees": [whole(t, args.seconds, args.kept, args.seeds, args.threads) for t in args.trees],
        }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
