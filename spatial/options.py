"""What the spatial B&B proves and how, and the rules and parts that its explorers (the CPU's
:mod:`.explorer`, the GPU's ``gpu.spatial.bnb``) share: the options, the prune level (with a
threshold question's, :func:`prune_level`), the subdomain schedule and the incumbent."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .bounds import Mode, feasible_values
from .defaults import CPU_SUBDOMAINS, EPS_ABS, EPS_REL, FEAS_TOL
from .problem import Problem

BOUNDS = {"nie": Mode.NIE, "mvf": Mode.MVF, "both": Mode.BOTH}
BATCH_SUBDOMAINS = 4096  # subdomains bounded per call at least (several boxes when N^d is small)


@dataclass(frozen=True)
class MinimizeOptions:
    """What ``minimize`` proves and how (defaults as ``pbbflow minimize``)."""

    eps_abs: float = EPS_ABS
    eps_rel: float = EPS_REL
    feas_tol: float = FEAS_TOL
    subdomains: int = CPU_SUBDOMAINS  # per box: N = the largest integer with N^d <= this (defaults.py says why)
    # 0: every side of a box cut into N (N^d subdomains); k >= 1, on the CPU only: the k sides of each
    # box widest relative to the domain, into N each with N^k <= subdomains (split_shape)
    split_axes: int = 0
    bound: str = "both"
    time_limit: float | None = None
    node_limit: int | None = None
    parallel: bool = True
    max_open: int = 1_000_000
    local_solves: bool = True
    contract: bool = True  # narrow each box by constraint propagation (FBBT) before bounding it
    first_incumbents: bool = True  # try the centre and a grid before the first split (spatial/first.py)
    # on the CPU, bound each whole box also by f's second-order form (spatial/second_order.py); the GPU has no such bound
    second_order: bool = True
    # a threshold question instead of the optimum: is f >= prove_above at every feasible point? (prune_level)
    prove_above: float | None = None

    def __post_init__(self) -> None:
        if self.bound not in BOUNDS:
            raise ValueError(f"bound must be one of {', '.join(BOUNDS)}, not {self.bound!r}")
        for name in ("eps_abs", "eps_rel", "feas_tol"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, not {value!r}")
        if self.subdomains < 1 or self.max_open < 1:
            raise ValueError("subdomains and max_open must be at least 1")
        if isinstance(self.split_axes, bool) or not isinstance(self.split_axes, int) or self.split_axes < 0:
            raise ValueError(f"split_axes must be an integer >= 0 (0: every side), not {self.split_axes!r}")
        if self.time_limit is not None and not self.time_limit > 0:
            raise ValueError("time_limit must be > 0 seconds")
        if self.node_limit is not None and self.node_limit < 1:
            raise ValueError("node_limit must be at least 1")
        if self.prove_above is not None and not (
            isinstance(self.prove_above, (int, float))
            and not isinstance(self.prove_above, bool)
            and math.isfinite(self.prove_above)
        ):
            raise ValueError(f"prove_above must be a finite number or None, not {self.prove_above!r}")

    def limit_reached(self, elapsed_s: float, nodes: int) -> bool:
        """Whether a search that ran ``elapsed_s`` seconds and bounded ``nodes`` boxes must stop."""
        return (self.time_limit is not None and elapsed_s >= self.time_limit) or (
            self.node_limit is not None and nodes >= self.node_limit
        )


def violated(ub: float, options: MinimizeOptions) -> bool:
    """Whether a verified point of value ``ub`` answers the threshold question "no": its value (the
    upper end of its enclosure) is below ``options.prove_above`` (False without a threshold)."""
    return options.prove_above is not None and ub < options.prove_above


def prune_terms(ub: float, options: MinimizeOptions) -> tuple[float, float, float]:
    """``(value, eps_abs, eps_rel)``: the value boxes are pruned and contracted against (points with
    f above it are cut away) and the tolerances below it; :func:`prune_level` is
    ``value - max(eps_abs, eps_rel |value|)`` of these (the GPU's kernels compute it from them on
    the device). Without a threshold: ``ub`` and the options' tolerances; with one, C: ``min(ub, C)``
    and no tolerance (see :func:`prune_level` for why)."""
    if options.prove_above is None:
        return ub, options.eps_abs, options.eps_rel
    return min(ub, float(options.prove_above)), 0.0, 0.0


def prune_level(ub: float, options: MinimizeOptions) -> float:
    """Boxes whose bound reaches this level are pruned.

    Without a threshold: UB - max(eps_abs, eps_rel |UB|) (+inf without an incumbent; never -inf).

    With a threshold C (``options.prove_above``), the question is "f >= C at every feasible x?":

    - Undecided (UB >= C: no verified point below C yet): the level is C. A box whose certified
      bound is >= C holds no point below C, so pruning it loses nothing the question needs, and a
      search that ends with nothing open below C has a certified bound >= C: the answer "holds".
      The usual level UB - eps would be unsound here: when UB - eps < C <= UB it discards boxes
      whose bound lies in [UB - eps, C), which may hold points below C, and the certified bound
      (the min over what was discarded) then stays below C, undecided for good. min(C, UB - eps)
      is therefore sound only when UB - eps >= C, where it is C: so the level is C, whatever UB
      is, and no tolerance applies (a threshold needs no gap). Contraction likewise cuts at
      min(UB, C) (:func:`prune_terms`): the points it removes have f > C.
    - Violated (UB < C: a verified point below C): the answer is "no"; the level is -inf, so that
      every open box is settled at once (its bound joins the settled bound, which stays certified)
      and the search, or a run's every explorer, ends.
    """
    if violated(ub, options):
        return -math.inf
    value, eps_abs, eps_rel = prune_terms(ub, options)
    if not math.isfinite(value):
        return math.inf
    return max(value - max(eps_abs, eps_rel * abs(value)), -sys.float_info.max)


def threshold_answer(options: MinimizeOptions, value: float | None, lower_bound: float) -> dict | None:
    """A result's ``threshold`` extras: None without a threshold, else ``{"prove_above": C, "holds":
    h}``: h False when a verified point's value is below C, True when the certified lower bound is
    at or above C (inf: the problem is infeasible, so it holds vacuously), None otherwise (a limit
    stopped the search first)."""
    if options.prove_above is None:
        return None
    bound = float(options.prove_above)
    if value is not None and violated(value, options):
        holds = False
    elif lower_bound >= bound:
        holds = True
    else:
        holds = None
    return {"prove_above": bound, "holds": holds}


def subdomains_per_dim(budget: int, d: int) -> int:
    """The largest N with N^d <= budget (at least 1)."""
    n = max(1, int(round(budget ** (1.0 / d))))
    while n > 1 and n**d > budget:
        n -= 1
    while (n + 1) ** d <= budget:
        n += 1
    return n


def split_shape(options: MinimizeOptions, d: int) -> tuple[int, int]:
    """``(n, k)``: each box of a d-dimensional problem is cut into n pieces along k of its sides, so
    into n^k subdomains (k = d: all sides, the uniform split; else ``options.split_axes``)."""
    k = d if options.split_axes == 0 else min(options.split_axes, d)
    return subdomains_per_dim(options.subdomains, k), k


def check_uniform_split(options: MinimizeOptions) -> None:
    """ValueError unless ``options`` split every side (what the GPU's kernels do): ``split_axes`` is a
    rule of the CPU's explorer only."""
    if options.split_axes != 0:
        raise ValueError(
            f"split_axes = {options.split_axes}: the GPU splits every side of a box; split_axes is for the CPU only"
        )


def network_point_values(problem: Problem) -> Callable[[np.ndarray], np.ndarray] | None:
    """For a problem whose objective is a network objective and which has no constraints, the
    function giving f's verified values at points from the network's layers
    (:meth:`.network_bounds.NetworkBounds.objective_point_values`): an enclosure as tight as f's
    tape gives, in a few matrix products rather than a pass of a tape with a slot per weight. One
    core, the first candidates' 1,025 points: 1.5 ms against the tape's 13 ms on a 2-16-1 network,
    68 against 1,010 ms on a 2-64-64-1; one point 36-125 us against 28-981. None for any other problem."""
    from .network import NetworkObjective
    from .network_bounds import NetworkBounds

    objective = NetworkObjective.of_unconstrained(problem)
    if objective is None:
        return None
    bounds = NetworkBounds(objective.network)
    return lambda points: bounds.objective_point_values(objective, points)


class _Incumbent:
    """The best verified point so far."""

    def __init__(self, problem: Problem, feas_tol: float):
        self.problem, self.feas_tol = problem, feas_tol
        self.value = math.inf
        self.x: np.ndarray | None = None
        self._network = network_point_values(problem)

    def verified_values(self, points: np.ndarray) -> np.ndarray:
        """The upper end of f's rigorous enclosure at each point (k x d, in the domain), NaN where
        a point is not feasible: one pass of f's tape, or for an unconstrained network objective
        one of its layers (:func:`network_point_values`)."""
        if self._network is not None:
            return self._network(points)
        return feasible_values(self.problem.tape, points, self.feas_tol)

    def offer(self, x: np.ndarray) -> bool:
        """Take ``x`` when it verifies and improves the upper bound."""
        x = np.clip(np.asarray(x, dtype=np.float64), self.problem.lower, self.problem.upper)
        if not np.all(np.isfinite(x)):
            return False
        value = self.verified_values(x[None, :])[0]
        if not value < self.value:  # NaN: not feasible
            return False
        self.value, self.x = float(value), x.copy()
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
        values[finite] = found = self.verified_values(points)
        if np.all(np.isnan(found)):
            return values
        best = int(np.nanargmin(found))
        if found[best] < self.value:
            self.value, self.x = float(found[best]), points[best].copy()
        return values
