"""Benchmark: estimators of the nodes left that learn from the explored part of a proof, as JSON.

A run is simulated at ``--shares`` of its nodes: ``flowshop.explorer.explore`` on one thread with
``max_nodes`` = share x TOTAL leaves a remaining work unit (``NAME:UB:TOTAL``; a spec ending in
``:cut`` walks the fixed-UB tree depth first instead, for a UB above the optimum where the explorer
would improve the UB and prune another tree).  The truth is TOTAL minus the nodes explored.  The
remaining work and the explored part (its complement) are cut into their maximal subtrees
(``flowshop.calibrate``): the open frontier and the finished subtrees.  Estimators, each timed in
CPU seconds:

* ``probes``: the ETA's probes of the remaining work (``Prober.estimate``, ``--seconds``);
* ``stratified``: ``--probes`` probes of each frontier root, summed (no calibration);
* ``A_global``: stratified x (explored nodes / the same probes' sum over the finished subtrees):
  one correction factor, from the node counter alone (no exact count);
* ``A_depth``: stratified with a factor per root depth, sum(true)/sum(probes) over finished
  subtrees of that depth (depths pooled to at least ``--min-samples`` subtrees); finished subtrees
  are counted exactly deepest first within ``--budget`` nodes, those left over share the known
  rest of the explored nodes in proportion to their probes;
* ``B_model``: log(size) ~ a + b depth + c gap (gap = UB - LB of the root) fitted by least squares
  on the same finished subtrees, exp with the smearing factor mean(exp(residual)), summed over the
  frontier roots;
* ``C_probe_model``: the same with log(the root's probe mean) as a third feature.

CPU seconds exclude numba compilation (``warm_up`` first).

    python benchmarks/eta_calibration.py ta043:2839:849037 ta042:2867:3065651 \\
        ta050:3065:2107780 ta041:2995:1781101:cut ta017:1484:38400745 --seeds 3
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np


def _factors_by_depth(depths: np.ndarray, true: np.ndarray, probe: np.ndarray, n: int, min_samples: int) -> np.ndarray:
    """Per depth 0..n: sum(true) / sum(probe) over the finished subtrees whose depth is within the
    smallest window around it that holds ``min_samples`` of them (all of them at worst)."""
    factors = np.ones(n + 1)
    if depths.size == 0:
        return factors
    for d in range(n + 1):
        width = 0
        while True:
            near = np.abs(depths - d) <= width
            if near.sum() >= min(min_samples, depths.size):
                break
            width += 1
        factors[d] = true[near].sum() / max(probe[near].sum(), 1e-300)
    return factors


def _fit_model(features: list[np.ndarray], sizes: np.ndarray):
    """Least squares of log(size) on (1, *features) and the smearing factor mean(exp(residual));
    returns the predictor of the mean size from the same features."""
    x = np.column_stack([np.ones(sizes.size), *features]).astype(float)
    y = np.log(np.maximum(sizes, 1.0))
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    smear = float(np.mean(np.exp(y - x @ coef)))
    return lambda fs: np.exp(np.column_stack([np.ones(fs[0].size), *fs]).astype(float) @ coef) * smear


def estimate_once(cal, prober, remaining, explored_nodes: int, ub: int, n: int, seed: int, args) -> dict:
    """Every estimator of the nodes left in ``remaining`` (one seed), with its CPU seconds."""
    from pbbflow.flowshop.intervals import WorkUnit

    out = {}
    t = time.process_time()
    e = prober.estimate(remaining, ub, seconds=args.seconds, seed=seed)
    out["probes"] = {"nodes": e.nodes, "cpu_s": time.process_time() - t}

    t = time.process_time()
    frontier = cal.roots(remaining, ub)
    finished = cal.roots(WorkUnit.full(n).difference(remaining), ub)
    t_roots = time.process_time() - t

    t = time.process_time()
    f_probe = np.array(
        [
            cal.probes(frontier.prefixes[i], frontier.depths[i], ub, args.probes, seed=seed * 1_000_003 + i)[0].mean()
            for i in range(len(frontier))
        ]
    )
    partial_left = float(frontier.partial.sum())
    t_front = time.process_time() - t
    out["stratified"] = {"nodes": partial_left + f_probe.sum(), "cpu_s": t_roots + t_front}

    t = time.process_time()
    d_probe = np.array(
        [
            cal.probes(finished.prefixes[i], finished.depths[i], ub, args.probes, seed=seed * 1_000_003 + 500_000 + i)[
                0
            ].mean()
            for i in range(len(finished))
        ]
    )
    finished_nodes = explored_nodes - float(finished.partial.sum())  # the node counter, less the path
    factor = finished_nodes / max(d_probe.sum(), 1e-300)
    t_fin = time.process_time() - t
    out["A_global"] = {
        "nodes": partial_left + factor * f_probe.sum(),
        "cpu_s": t_roots + t_front + t_fin,
        "factor": factor,
    }

    # exact counts of finished subtrees, deepest first, within the budget
    t = time.process_time()
    order = np.argsort(-finished.depths, kind="stable")
    sizes = np.full(len(finished), -1.0)
    budget = args.budget
    for i in order:
        if budget <= 0:
            break
        c = cal.count(finished.prefixes[i], finished.depths[i], ub, cap=budget)
        if c >= 0:
            sizes[i] = c
            budget -= c
        else:
            budget = 0  # the walk spent what was left
    counted = sizes >= 0
    rest = max(finished_nodes - sizes[counted].sum(), 0.0)
    imputed = sizes.copy()
    if (~counted).any():  # the uncounted share the known rest in proportion to their probes
        share = d_probe[~counted] / max(d_probe[~counted].sum(), 1e-300)
        imputed[~counted] = np.maximum(rest * share, 1.0)
    t_count = time.process_time() - t
    common = t_roots + t_front + t_fin + t_count

    t = time.process_time()
    factors = _factors_by_depth(finished.depths, imputed, d_probe, n, args.min_samples)
    a_depth = partial_left + float((factors[frontier.depths] * f_probe).sum())
    out["A_depth"] = {"nodes": a_depth, "cpu_s": common + time.process_time() - t}

    t = time.process_time()
    gaps_f = (ub - finished.lbs).astype(float)
    gaps_r = (ub - frontier.lbs).astype(float)
    predict = _fit_model([finished.depths, gaps_f], imputed)
    b = partial_left + float(predict([frontier.depths, gaps_r]).sum())
    out["B_model"] = {"nodes": b, "cpu_s": common + time.process_time() - t}

    t = time.process_time()
    predict = _fit_model([finished.depths, gaps_f, np.log(np.maximum(d_probe, 1.0))], imputed)
    c = partial_left + float(predict([frontier.depths, gaps_r, np.log(np.maximum(f_probe, 1.0))]).sum())
    out["C_probe_model"] = {"nodes": c, "cpu_s": common + time.process_time() - t}

    out["_info"] = {
        "frontier_roots": len(frontier),
        "finished_roots": len(finished),
        "finished_counted": int(counted.sum()),
        "nodes_counted": int(sizes[counted].sum()),
    }
    return out


def warm_up() -> None:
    """Compile (or load) the probes, walks and the explorer on a small Taillard instance."""
    from pbbflow.flowshop.calibrate import Calibrator
    from pbbflow.flowshop.estimate import Prober
    from pbbflow.flowshop.explorer import explore
    from pbbflow.flowshop.intervals import WorkUnit
    from pbbflow.flowshop.load import load_instance

    p = load_instance("ta001").p
    n = int(p.shape[0])
    cal = Calibrator(p)
    ub = 1278  # the optimum
    left = explore(p, WorkUnit.full(n), ub, max_nodes=100).remaining
    cal.roots(left, ub)
    cal.count(np.zeros(n, np.int32), 0, ub, cap=100)
    cal.probes(np.zeros(n, np.int32), 0, ub, 2)
    cal.cut(10, ub)
    Prober(p).estimate(WorkUnit.full(n), ub, seconds=0.0)
    Prober(p).exact(WorkUnit.full(n).difference(left), ub)


def run_tree(spec: str, shares: list[float], seeds: int, args) -> dict:
    """All estimators at each share of one tree, against the truth."""
    from pbbflow.flowshop.calibrate import Calibrator
    from pbbflow.flowshop.estimate import Prober
    from pbbflow.flowshop.explorer import explore
    from pbbflow.flowshop.intervals import WorkUnit
    from pbbflow.flowshop.load import load_instance

    parts = spec.split(":")
    name, ub, total = parts[0], int(parts[1]), int(parts[2])
    use_cut = len(parts) > 3 and parts[3] == "cut"
    p = load_instance(name).p
    n = int(p.shape[0])
    cal, prober = Calibrator(p, alpha=args.alpha), Prober(p, alpha=args.alpha)
    tree = {
        "instance": name,
        "n": n,
        "m": int(p.shape[1]),
        "ub": ub,
        "total_nodes": total,
        "cut": "Calibrator.cut (fixed UB)" if use_cut else "explore(threads=1, max_nodes)",
        "shares": [],
    }
    for share in shares:
        started = time.perf_counter()
        if use_cut:
            remaining = cal.cut(int(share * total), ub)
            explored = prober.exact(WorkUnit.full(n).difference(remaining), ub)
        else:
            result = explore(p, WorkUnit.full(n), ub, threads=1, max_nodes=int(share * total))
            remaining, explored = result.remaining, result.nodes
        actual = total - explored
        row = {
            "share": share,
            "nodes_done": int(explored),
            "actual_nodes_left": int(actual),
            "cut_s": round(time.perf_counter() - started, 2),
            "seeds": [],
        }
        for seed in range(seeds):
            est = estimate_once(cal, prober, remaining, explored, ub, n, seed, args)
            info = est.pop("_info")
            row["seeds"].append(
                {
                    **{
                        k: {"predicted_over_actual": round(v["nodes"] / actual, 5), "cpu_s": round(v["cpu_s"], 3)}
                        for k, v in est.items()
                    },
                    **info,
                }
            )
        tree["shares"].append(row)
        # progress on stderr: stdout holds the one JSON document
        print(
            json.dumps(
                {
                    "tree": name,
                    "share": share,
                    "ratios": {k: [s[k]["predicted_over_actual"] for s in row["seeds"]] for k in est},
                }
            ),
            file=sys.stderr,
            flush=True,
        )
    return tree


def summary(trees: list[dict]) -> dict:
    """Per estimator: the share of estimates within a factor 2 and 3 of the truth, on n = 50 and all."""
    out = {}
    names = list(trees[0]["shares"][0]["seeds"][0].keys())
    for key in [k for k in names if isinstance(trees[0]["shares"][0]["seeds"][0][k], dict)]:
        for label, pick in (("n50", lambda t: t["n"] == 50), ("all", lambda t: True)):
            r = np.array(
                [s[key]["predicted_over_actual"] for t in trees if pick(t) for sh in t["shares"] for s in sh["seeds"]]
            )
            if r.size == 0:
                continue
            r = np.maximum(r, 1e-12)
            out.setdefault(key, {})[label] = {
                "estimates": int(r.size),
                "within_2x": round(float(np.mean(np.abs(np.log(r)) <= np.log(2))), 3),
                "within_3x": round(float(np.mean(np.abs(np.log(r)) <= np.log(3))), 3),
                "median_ratio": round(float(np.median(r)), 4),
                "geo_mean_abs_log10": round(float(np.mean(np.abs(np.log10(r)))), 3),
            }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", metavar="NAME:UB:TOTAL[:cut]")
    parser.add_argument("--shares", type=float, nargs="+", default=[0.1, 0.5])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=1.0, help="probing time of the ETA's probes")
    parser.add_argument("--probes", type=int, default=64, help="probes per subtree root")
    parser.add_argument("--budget", type=int, default=1_000_000, help="nodes counted exactly per estimate")
    parser.add_argument("--min-samples", type=int, default=5, help="finished subtrees per depth factor")
    parser.add_argument("--alpha", type=float, default=1.0)
    args = parser.parse_args()
    warm_up()
    trees = [run_tree(spec, args.shares, args.seeds, args) for spec in args.trees]
    print(
        json.dumps(
            {"benchmark": "eta_calibration", "args": vars(args), "summary": summary(trees), "trees": trees}, indent=1
        )
    )


if __name__ == "__main__":
    main()
