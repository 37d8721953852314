"""Benchmark: the weighted backtrack estimator (Kilby, Slaney, Thiebaux, Walsh 2006) on fixed trees; prints JSON.

Issue 17 suggested it for the ETA of long proofs.  A depth-first walk of an instance's tree under a
fixed UB (the explorer's child order, bound, branching and pruning, through ``flowshop``'s njit code)
records at each dead end (a leaf, or a node whose children are all pruned) the probability ``P``
that a random probe reaches it (children drawn with weight (UB - LB)**alpha, as the ETA's probes)
and the probe's estimate ``S`` there (Knuth's sum of 1/P along the path).  The estimator of the tree
size after any part of the walk is sum(P * S) / sum(P) over the dead ends met so far; after the
whole walk it is exact (sum(P) = 1).  ``strata 0`` walks the tree in one depth-first order (one
explorer), ``strata 1`` the root's subtrees side by side, the same number of nodes each in turn (many
explorers).  At shares of the known node count it prints (estimate - done) / (total - done).

    python benchmarks/eta_wbe.py ta011:1582:158084 ta043:2839:849037 ta042:2867:3065651
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numba
import numpy as np

from pbbflow.flowshop.calibrate import row_weights
from pbbflow.flowshop.choices import BOUND_NAMES, BRANCH_NAMES
from pbbflow.flowshop.estimate import _enter
from pbbflow.flowshop.ivm import IVM, Problem, set_root
from pbbflow.flowshop.load import load_instance

_jit = numba.njit(cache=True, nogil=True)
SHARES = (0.02, 0.05, 0.1, 0.2, 0.5)


@_jit
def start(p, bd, mode, branch, ub, ivm, prefix, depth, alpha, P, S, W, mass, state, acc):
    """Go to the subtree root ``prefix[:depth]`` with P and S along its path; count it, and record it
    where it is a dead end.  ``acc``: sum(P), sum(P * S), nodes counted."""
    V = ivm[1]
    n = p.shape[0]
    set_root(p, bd, mode, branch, ub, ivm)
    P[0] = 1.0
    S[0] = 1.0
    mass[0] = row_weights(ivm, 0, ub, alpha, W[0])
    for l in range(depth):
        V[l] = prefix[l]
        P[l + 1] = P[l] * W[l, prefix[l]] / mass[l]
        S[l + 1] = S[l] + 1.0 / P[l + 1]
        if l + 1 < n - 1:
            _enter(p, bd, mode, branch, ub, ivm, l)
            mass[l + 1] = row_weights(ivm, l + 1, ub, alpha, W[l + 1])
    state[0] = depth
    state[1] = depth
    V[depth] = 0
    acc[2] += 1.0
    if depth == n - 1 or mass[depth] == 0.0:
        acc[0] += P[depth]
        acc[1] += P[depth] * S[depth]


@_jit
def steps(p, bd, mode, branch, ub, ivm, alpha, P, S, W, mass, state, acc, budget):
    """Walk the subtree on, depth first, for at most ``budget`` nodes (``state``: level, root depth);
    1 once the subtree is done."""
    M, V = ivm[0], ivm[1]
    n = p.shape[0]
    level, depth = state[0], state[1]
    if depth >= n - 1:
        return 1
    done = 0
    while True:
        if V[level] >= n - level:
            if level == depth:
                state[0] = level
                return 1
            V[level] = 0
            level -= 1
            V[level] += 1
            continue
        c = V[level]
        if M[level, c] < 0:
            V[level] += 1
            continue
        if done >= budget:
            state[0] = level
            return 0
        done += 1
        P[level + 1] = P[level] * W[level, c] / mass[level]
        S[level + 1] = S[level] + 1.0 / P[level + 1]
        acc[2] += 1.0
        if level + 1 == n - 1:
            acc[0] += P[level + 1]
            acc[1] += P[level + 1] * S[level + 1]
            V[level] += 1
            continue
        _enter(p, bd, mode, branch, ub, ivm, level)
        level += 1
        V[level] = 0
        mass[level] = row_weights(ivm, level, ub, alpha, W[level])
        if mass[level] == 0.0:
            acc[0] += P[level]
            acc[1] += P[level] * S[level]


class Walker:
    """One depth-first walk of a subtree, resumable, adding to the shared ``acc``."""

    def __init__(self, pr: Problem, ub: int, alpha: float, prefix: list[int], depth: int, acc: np.ndarray) -> None:
        n = pr.n
        self.pr, self.ub, self.alpha, self.acc = pr, ub, alpha, acc
        self.ivm = IVM(pr)
        self.P, self.S = np.zeros(n + 1), np.zeros(n + 1)
        self.W, self.mass = np.zeros((n, n)), np.zeros(n)
        self.state = np.zeros(2, np.int64)
        pre = np.zeros(n, np.int32)
        pre[:depth] = prefix
        start(
            pr.p,
            pr.bound_data,
            pr.mode,
            pr.branch,
            ub,
            self.ivm.arrays,
            pre,
            depth,
            alpha,
            self.P,
            self.S,
            self.W,
            self.mass,
            self.state,
            acc,
        )
        self.finished = False

    def run(self, budget: int) -> bool:
        """Walk on for at most ``budget`` nodes; whether the subtree is done."""
        if not self.finished:
            self.finished = bool(
                steps(
                    self.pr.p,
                    self.pr.bound_data,
                    self.pr.mode,
                    self.pr.branch,
                    self.ub,
                    self.ivm.arrays,
                    self.alpha,
                    self.P,
                    self.S,
                    self.W,
                    self.mass,
                    self.state,
                    self.acc,
                    budget,
                )
            )
        return self.finished


def study(p: np.ndarray, ub: int, total: int, alpha: float, strata: int, quantum: int = 2000) -> dict:
    """The estimator at ``SHARES`` of ``total`` along a walk of the tree of ``p`` under ``ub``."""
    pr = Problem(p, BOUND_NAMES["lb1"], BRANCH_NAMES["minmin"])
    acc = np.zeros(3)
    if strata == 0:
        walkers = [Walker(pr, ub, alpha, [], 0, acc)]
    else:  # the surviving children of the root, side by side
        probe = IVM(pr)
        set_root(pr.p, pr.bound_data, pr.mode, pr.branch, ub, probe.arrays)
        acc[2] += 1.0  # the root
        walkers = [Walker(pr, ub, alpha, [c], 1, acc) for c in range(pr.n) if probe.M[0, c] >= 0]
    out = []
    pending = list(SHARES)
    active = list(walkers)
    while active:
        for w in active:
            w.run(quantum)
            if pending and acc[2] >= pending[0] * total:
                done = acc[2]
                estimate = acc[1] / acc[0] if acc[0] > 0 else float("nan")
                left = total - done
                out.append(
                    {
                        "share": pending.pop(0),
                        "done": int(done),
                        "probability_done": round(float(acc[0]), 6),
                        "predicted_over_actual_left": round(float((estimate - done) / left), 4) if left else None,
                    }
                )
        active = [w for w in active if not w.finished]
    return {
        "ub": ub,
        "total": total,
        "alpha": alpha,
        "strata": strata,
        "counted": int(acc[2]),
        "final_estimate": round(float(acc[1] / acc[0]), 1),
        "final_probability": round(float(acc[0]), 9),
        "points": out,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", help="NAME:UB:NODES, NODES the tree's exact node count under UB")
    parser.add_argument("--alphas", type=float, nargs="+", default=[1.0, 0.0])
    args = parser.parse_args()
    runs = []
    for spec in args.trees:
        name, ub, total = spec.split(":")
        for strata in (0, 1):
            for alpha in args.alphas:
                began = time.perf_counter()
                runs.append(
                    {
                        "instance": name,
                        **study(load_instance(name).p, int(ub), int(total), alpha, strata),
                        "seconds": round(time.perf_counter() - began, 1),
                    }
                )
                print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    print(json.dumps({"benchmark": "eta_wbe", "shares": SHARES, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
