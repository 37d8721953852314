"""Benchmark: the ETA's estimate of the nodes left against finished proofs, printing JSON.

For each instance (UB = optimum: the tree is fixed, so the nodes left in a remaining work unit are
known exactly once the proof is done) the explorer runs to the end once (N nodes, T seconds), then
again from scratch stopped at 10 % and at 50 % of N (``max_nodes``); the remaining work is
estimated (``flowshop.estimate``) as the driver does on a host without spare cores (one thread,
``workflow.eta.BUSY_SHARE`` of ``REFRESH_SECONDS`` per estimate, several seeds) and the prediction
is set against the truth: N - nodes done, and the time the full run took for the rest.  Estimators
compared, from enumerations of the same duration:

* ``enumeration``: the mean of the enumerations, their nodes kept per depth fitted to the time;
* ``ratio``: nodes done x S(left) / S(done), both sums enumerated (half the time each): the
  enumerations' bias cancels where it is alike on both sides.

    python benchmarks/eta.py --instances ta028 ta029 ta030 --out eta.json
    python benchmarks/eta.py --backend gpu --ivms 16384                      # ta021-ta030, ta023 forward
    python benchmarks/eta.py --instances ta021 --totals benchmarks/results/eta_gpu_h200_2026-12-01.json
    NUMBA_ENABLE_CUDASIM=1 python benchmarks/eta.py --backend gpu --instances ta001 --jobs 8 --ivms 4
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

# Optimal makespans (../shared/data/taillard/bounds.csv)
OPTIMA = {
    "ta001": 1278,
    "ta011": 1582,
    "ta012": 1659,
    "ta013": 1496,
    "ta014": 1377,
    "ta015": 1419,
    "ta016": 1397,
    "ta017": 1484,
    "ta018": 1538,
    "ta019": 1593,
    "ta020": 1591,
    "ta021": 2297,
    "ta022": 2099,
    "ta023": 2326,
    "ta024": 2223,
    "ta025": 2291,
    "ta026": 2226,
    "ta027": 2273,
    "ta028": 2200,
    "ta029": 2237,
    "ta030": 2178,
}
DEFAULT = [f"ta{k:03d}" for k in range(21, 31)] + ["ta023:forward"]
POINTS = (0.1, 0.5)
SEEDS = 3


def explorer(backend: str, threads: int, ivms: int):
    """``explore(p, work, ub, branch=..., max_nodes=...)`` of the backend."""
    if backend == "gpu":
        from pbbflow.gpu.flowshop.explorer import explore_gpu

        return lambda p, work, ub, **kw: explore_gpu(p, work, ub, ivms=ivms, **kw)
    from pbbflow.flowshop.explorer import explore

    return lambda p, work, ub, **kw: explore(p, work, ub, threads=threads, **kw)


def instance(spec: str, jobs: int | None) -> tuple[str, np.ndarray, str, int]:
    """(name, p, branch, UB = optimum) of ``NAME[:BRANCH]``, cut to its first ``jobs`` jobs if given."""
    from pbbflow.flowshop.evaluation import brute_force_optimum
    from pbbflow.flowshop.load import load_instance

    name, _, branch = spec.partition(":")
    p = load_instance(name).p
    if jobs is not None:
        p = np.ascontiguousarray(p[:jobs])
        return f"{name}[:{jobs}]", p, branch or "minmin", int(brute_force_optimum(p)[0])
    return name, p, branch or "minmin", OPTIMA[name]


def estimates(p, branch, ub, left, done, nodes_done: int, seconds: float) -> dict:
    """Every estimator's prediction of the nodes in ``left`` (SEEDS runs each)."""
    from pbbflow.flowshop.estimate import Prober

    prober = Prober(p, branch=branch)
    runs = [prober.estimate(left, ub, seconds=seconds, seed=s) for s in range(SEEDS)]
    out = {"enumeration": [{"nodes": e.nodes, "low": e.low, "high": e.high, "samples": e.samples} for e in runs]}
    ratios = []
    for s in range(SEEDS):
        s_left = prober.estimate(left, ub, seconds=seconds / 2, seed=s)
        s_done = prober.estimate(done, ub, seconds=seconds / 2, seed=s + 1000)
        scale = nodes_done / s_done.nodes if s_done.nodes > 0 else float("nan")
        ratios.append(
            {
                "nodes": s_left.nodes * scale,
                "low": s_left.low * scale,
                "high": s_left.high * scale,
                "samples": s_left.samples + s_done.samples,
            }
        )
    out["ratio"] = ratios
    return out


def run_one(
    spec: str, backend: str, threads: int, ivms: int, jobs: int | None, seconds: float, known_total: int | None = None
) -> dict:
    """``known_total``: the tree's node count from an earlier finished run (the full run is then
    skipped, and the seconds left are not known)."""
    from pbbflow.flowshop.intervals import WorkUnit

    name, p, branch, ub = instance(spec, jobs)
    n = p.shape[0]
    explore = explorer(backend, threads, ivms)
    explore(p, WorkUnit.full(n), ub, branch=branch, max_nodes=1000)  # warm-up: compile or load
    total_s = None
    if known_total is None:
        started = time.perf_counter()
        full = explore(p, WorkUnit.full(n), ub, branch=branch)
        total_s = time.perf_counter() - started
        if full.remaining or full.best_makespan is not None:
            raise RuntimeError(f"{name}: UB {ub} is not the optimum or the search did not finish")
    total = full.nodes if known_total is None else known_total
    points = []
    for share in POINTS:
        started = time.perf_counter()
        part = explore(p, WorkUnit.full(n), ub, branch=branch, max_nodes=max(1, int(share * total)))
        part_s = time.perf_counter() - started
        left = part.remaining
        done = WorkUnit.full(n).difference(left)
        actual_left = total - part.nodes
        rate = part.nodes / part_s if part_s > 0 else float("nan")
        predicted = estimates(p, branch, ub, left, done, part.nodes, seconds)
        summary = {}
        for estimator, runs in predicted.items():
            ratios = [r["nodes"] / actual_left if actual_left else float("nan") for r in runs]
            summary[estimator] = {
                "predicted_over_actual": [round(x, 3) for x in ratios],
                "covered": [r["low"] <= actual_left <= r["high"] for r in runs],
                "predicted_eta_s": [round(r["nodes"] / rate, 2) for r in runs],
            }
        points.append(
            {
                "share_done": share,
                "nodes_done": part.nodes,
                "seconds_done": round(part_s, 3),
                "remaining_fraction": left.fraction_of_space(),
                "actual_nodes_left": actual_left,
                "actual_seconds_left": None if total_s is None else round(total_s - part_s, 2),
                "rate_nodes_per_s": round(rate),
                "estimates": predicted,
                "summary": summary,
            }
        )
    return {
        "instance": name,
        "branch": branch,
        "ub": ub,
        "backend": backend,
        "total_nodes": total,
        "total_known_from": None if known_total is None else "--totals",
        "total_seconds": None if total_s is None else round(total_s, 3),
        "points": points,
    }


def overall(runs: list[dict]) -> dict:
    """Per estimator and point: the geometric mean and the worst factor of predicted/actual, and
    how often the range covered the truth."""
    out = {}
    for share in POINTS:
        for estimator in runs[0]["points"][0]["summary"]:
            ratios = [
                x
                for r in runs
                for pt in r["points"]
                if pt["share_done"] == share
                for x in pt["summary"][estimator]["predicted_over_actual"]
                if x > 0
            ]
            covered = [
                c
                for r in runs
                for pt in r["points"]
                if pt["share_done"] == share
                for c in pt["summary"][estimator]["covered"]
            ]
            logs = np.log(ratios) if ratios else np.zeros(0)
            out[f"{estimator}@{share:g}"] = {
                "geomean_predicted_over_actual": round(float(np.exp(logs.mean())), 3) if logs.size else None,
                "worst_factor": round(float(np.exp(np.abs(logs).max())), 3) if logs.size else None,
                "within_2x": round(float(np.mean(np.abs(logs) <= np.log(2))), 3) if logs.size else None,
                "range_covers": round(float(np.mean(covered)), 3) if covered else None,
            }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument("--instances", nargs="+", default=DEFAULT, metavar="NAME[:BRANCH]")
    parser.add_argument("--jobs", type=int, default=None, help="cut every instance to its first JOBS jobs")
    parser.add_argument("--threads", type=int, default=2, help="CPU explorer threads")
    parser.add_argument("--ivms", type=int, default=16384, help="GPU explorer IVMs")
    parser.add_argument("--seconds", type=float, default=None, help="enumerating per estimate (default: the driver's)")
    parser.add_argument("--out", default=None, help="also write the JSON here")
    parser.add_argument("--commit", default=None, help="the pbbflow commit measured (default: git HEAD)")
    parser.add_argument(
        "--totals",
        default=None,
        metavar="JSON",
        help="an earlier run's JSON: its instances' node counts stand for the full runs",
    )
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--total", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    from pbbflow.workflow.eta import BUSY_SHARE, REFRESH_SECONDS

    seconds = BUSY_SHARE * REFRESH_SECONDS if args.seconds is None else args.seconds
    if args.one:  # a fresh process per instance
        print(json.dumps(run_one(args.one, args.backend, args.threads, args.ivms, args.jobs, seconds, args.total)))
        return
    totals = {}
    if args.totals:
        with open(args.totals) as f:
            totals = {(r["instance"], r["branch"]): r["total_nodes"] for r in json.load(f)["runs"]}
    runs = []
    for spec in args.instances:
        command = [
            sys.executable,
            __file__,
            "--one",
            spec,
            "--backend",
            args.backend,
            "--threads",
            str(args.threads),
            "--ivms",
            str(args.ivms),
            "--seconds",
            str(seconds),
        ]
        command += ["--jobs", str(args.jobs)] if args.jobs else []
        name, _, branch = spec.partition(":")
        if (name, branch or "minmin") in totals:
            command += ["--total", str(totals[name, branch or "minmin"])]
        runs.append(json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout))
        brief = {k: runs[-1][k] for k in ("instance", "branch", "total_nodes", "total_seconds")}
        print(json.dumps(brief), file=sys.stderr)
    commit = (
        args.commit
        or subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=os.path.dirname(os.path.abspath(__file__)),
        ).stdout.strip()
    )

    report = {
        "benchmark": "eta",
        "commit": commit,
        "backend": args.backend,
        "machine": {
            "cpus": os.cpu_count(),
            "processor": platform.processor() or platform.machine(),
            "python": platform.python_version(),
        },
        "seconds_per_estimate": seconds,
        "seeds": SEEDS,
        "overall": overall(runs),
        "runs": runs,
    }
    text = json.dumps(report, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
