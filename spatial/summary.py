"""A spatial run's state as one line of text and its bounds as drawn, shared by its pictures and its
dashboard view."""

from __future__ import annotations

import math

import numpy as np


def bounds_text(lower: float, upper: float | None) -> str:
    """``LB …, UB …, gap …`` of a spatial run; UB and gap are "none" while there is no incumbent
    (``upper`` None or +inf), LB is -inf while a box is not bounded yet."""
    if upper is None or not math.isfinite(upper):
        return f"LB {lower:.7g}, UB none, gap none"
    return f"LB {lower:.7g}, UB {upper:.7g}, gap {upper - lower:.7g}"


def finite(values: np.ndarray | list[float]) -> np.ndarray:
    """NaN where a value is infinite (no incumbent yet, nothing left to bound): not drawn."""
    a = np.asarray(values, dtype=float)
    return np.where(np.isfinite(a), a, np.nan)
