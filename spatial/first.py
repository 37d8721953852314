"""First incumbents: points tried after the root is bounded and before its first split.

A local minimum found first makes a search whose root bound already equals the optimum
(Rastrigin, Griewank, Ackley: symmetric about the domain's centre) split hundreds of boxes before
it meets the global one. So the explorers (:class:`.explorer.ExplorationBase`) offer, in one
rigorous evaluation (:meth:`.options._Incumbent.offer_many`), the domain's centre and the
midpoints of a uniform grid over the domain (the root's subdomain grid, coarser beyond
:data:`FIRST_GRID` points), then solve locally from the root's best point (as always) and from the
best few of them, stopping as soon as the incumbent reaches the root's bound.
"""

from __future__ import annotations

import numpy as np

from .options import subdomains_per_dim

FIRST_GRID = 1024  # grid midpoints offered at most (with the centre)
FIRST_LOCAL_SOLVES = 3  # local solves from the best candidates at most (beyond the root's)


def first_candidates(lower: np.ndarray, upper: np.ndarray, n_per_dim: int, cap: int = FIRST_GRID) -> np.ndarray:
    """The centre of ``[lower, upper]`` then the midpoints of its ``n^d`` grid, row by row
    (``n`` is ``n_per_dim``, or the largest ``n`` with ``n^d <= cap``, whichever is smaller)."""
    lower, upper = np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
    d = len(lower)
    n = min(n_per_dim, subdomains_per_dim(cap, d))
    fractions = (np.arange(n) + 0.5) / n
    axes = [lo + fractions * (hi - lo) for lo, hi in zip(lower.tolist(), upper.tolist(), strict=True)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, d)
    centre = 0.5 * (lower + upper)
    return np.vstack([centre[None, :], grid])


def local_starts(
    points: np.ndarray, values: np.ndarray, count: int = FIRST_LOCAL_SOLVES, skip: np.ndarray | None = None
) -> np.ndarray:
    """Up to ``count`` distinct points of lowest value (NaN values: not feasible, never chosen),
    lowest first, leaving out ``skip`` (a start already used)."""
    order = np.argsort(np.where(np.isnan(values), np.inf, values), kind="stable")
    chosen: list[np.ndarray] = []
    for i in order[~np.isnan(values[order])]:
        if len(chosen) >= count:
            break
        point = points[i]
        if skip is not None and np.array_equal(point, skip):
            continue
        if any(np.array_equal(point, other) for other in chosen):
            continue
        chosen.append(point)
    return np.array(chosen).reshape(len(chosen), points.shape[1])
