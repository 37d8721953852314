"""A sampling oracle for resumable spatial explorations (CPU and GPU): at a stop, no sampled
feasible point below the prune level was discarded."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from pbbflow.spatial.boxes import BoxSet
from pbbflow.spatial.floateval import evaluate_float
from pbbflow.spatial.problem import Problem


def covering_bound(boxes: BoxSet, points: np.ndarray) -> np.ndarray:
    """Per point: the highest bound of a box holding it (NaN where none does)."""
    inside = np.all((points[:, None, :] >= boxes.lo[None]) & (points[:, None, :] <= boxes.hi[None]), axis=2)
    bounds = np.where(inside, boxes.lb[None, :], -np.inf)
    return np.where(inside.any(axis=1), bounds.max(axis=1, initial=-np.inf), np.nan)


class Oracle:
    """Sample points of a problem's domain (uniform, and close to its global ``minimizers`` at
    several scales) with their float objective and inequalities, evaluated once."""

    def __init__(self, problem: Problem, minimizers: Sequence[Sequence[float]], seed: int, count: int = 3000):
        rng = np.random.default_rng(seed)
        width = problem.upper - problem.lower
        uniform = problem.lower + rng.random((count, problem.dimension)) * width
        near = [
            np.asarray(x) + rng.normal(size=(count // 6, problem.dimension)) * width * scale
            for x in minimizers
            for scale in (1e-4, 1e-3, 1e-2)
        ]
        self.points = np.clip(np.vstack([uniform, *near]), problem.lower, problem.upper)
        values = [evaluate_float(problem.tape, point) for point in self.points]
        self.f = np.array([v[0] for v in values])
        self.g_max = np.array([max(v[1], default=-math.inf) for v in values])

    def check(self, open_boxes: BoxSet, level: float, settled: float) -> int:
        """Every sampled feasible point below ``level`` lies in an open box; every one in open boxes
        is at or above their best bound there, every other one at or above ``settled`` (the min
        bound of all that was discarded). The number of points below the level (what the check saw)."""
        margin = 1e-9 * (1.0 + np.abs(self.f))
        feasible = np.isfinite(self.f) & (self.g_max <= -1e-9)
        below = feasible & (self.f < level - margin)
        bound = covering_bound(open_boxes, self.points)
        inside = ~np.isnan(bound)
        assert np.all(inside[below]), self.points[below & ~inside][:5]
        assert np.all(self.f[feasible & inside] >= bound[feasible & inside] - margin[feasible & inside])
        outside = feasible & ~inside
        assert np.all(self.f[outside] >= settled - margin[outside]), self.points[outside][:5]
        return int(below.sum())
