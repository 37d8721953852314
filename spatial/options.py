"""What the spatial B&B proves and how, and the rules and parts that its explorers (the CPU's
:mod:`.explorer`, the GPU's ``gpu.spatial.bnb``) share: the options, the statuses, the prune
level, the subdomain schedule and the incumbent."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

import numpy as np

from .bounds import Mode, evaluate_point, feasible_values, is_feasible
from .defaults import CPU_SUBDOMAINS, EPS_ABS, EPS_REL, FEAS_TOL
from .problem import Problem

BOUNDS = {"nie": Mode.NIE, "mvf": Mode.MVF, "both": Mode.BOTH}
STATUSES = ("optimal", "infeasible", "limit")
BATCH_SUBDOMAINS = 4096  # subdomains bounded per call at least (several boxes when N^d is small)


@dataclass(frozen=True)
class MinimizeOptions:
    """What ``minimize`` proves and how (defaults as ``pbbflow minimize``)."""

    eps_abs: float = EPS_ABS
    eps_rel: float = EPS_REL
    feas_tol: float = FEAS_TOL
    subdomains: int = CPU_SUBDOMAINS  # per box: N = the largest integer with N^d <= this (defaults.py says why)
    bound: str = "both"
    time_limit: float | None = None
    node_limit: int | None = None
    parallel: bool = True
    max_open: int = 1_000_000
    local_solves: bool = True
    contract: bool = True  # narrow each box by constraint propagation (FBBT) before bounding it
    first_incumbents: bool = True  # try the centre and a grid before the first split (spatial/first.py)

    def __post_init__(self) -> None:
        if self.bound not in BOUNDS:
            raise ValueError(f"bound must be one of {', '.join(BOUNDS)}, not {self.bound!r}")
        for name in ("eps_abs", "eps_rel", "feas_tol"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, not {value!r}")
        if self.subdomains < 1 or self.max_open < 1:
            raise ValueError("subdomains and max_open must be at least 1")
        if self.time_limit is not None and not self.time_limit > 0:
            raise ValueError("time_limit must be > 0 seconds")
        if self.node_limit is not None and self.node_limit < 1:
            raise ValueError("node_limit must be at least 1")

    def limit_reached(self, elapsed_s: float, nodes: int) -> bool:
        """Whether a search that ran ``elapsed_s`` seconds and bounded ``nodes`` boxes must stop."""
        return (self.time_limit is not None and elapsed_s >= self.time_limit) or (
            self.node_limit is not None and nodes >= self.node_limit
        )


def prune_level(ub: float, options: MinimizeOptions) -> float:
    """Boxes whose bound reaches UB - max(eps_abs, eps_rel |UB|) are pruned (+inf without an
    incumbent; never -inf)."""
    if not math.isfinite(ub):
        return math.inf
    return max(ub - max(options.eps_abs, options.eps_rel * abs(ub)), -sys.float_info.max)


def subdomains_per_dim(budget: int, d: int) -> int:
    """The largest N with N^d <= budget (at least 1)."""
    n = max(1, int(round(budget ** (1.0 / d))))
    while n > 1 and n**d > budget:
        n -= 1
    while (n + 1) ** d <= budget:
        n += 1
    return n


class _Incumbent:
    """The best verified point so far."""

    def __init__(self, problem: Problem, feas_tol: float):
        self.problem, self.feas_tol = problem, feas_tol
        self.value = math.inf
        self.x: np.ndarray | None = None

    def offer(self, x: np.ndarray) -> bool:
        """Take ``x`` when it verifies and improves the upper bound."""
        x = np.clip(np.asarray(x, dtype=np.float64), self.problem.lower, self.problem.upper)
        if not np.all(np.isfinite(x)):
            return False
        value = evaluate_point(self.problem.tape, x)
        if not is_feasible(value, self.feas_tol) or not value.f_hi < self.value:
            return False
        self.value, self.x = float(value.f_hi), x.copy()
        return True

    def offer_many(self, points: np.ndarray) -> np.ndarray:
        """Offer each of the points (k x d) in turn, as :meth:`offer` would, in one evaluation: the
        first of the feasible ones with the least value, if it improves the upper bound. The
        verified value of each point (NaN where it is not finite or not feasible)."""
        points = np.asarray(points, dtype=np.float64)
        values = np.full(len(points), np.nan)
        finite = np.all(np.isfinite(points), axis=1)
        points = np.clip(points[finite], self.problem.lower, self.problem.upper)
        if not len(points):
            return values
        values[finite] = found = feasible_values(self.problem.tape, points, self.feas_tol)
        if np.all(np.isnan(found)):
            return values
        best = int(np.nanargmin(found))
        if found[best] < self.value:
            self.value, self.x = float(found[best]), points[best].copy()
        return values
