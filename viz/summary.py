"""One-line texts of a run's state, shared by the pictures and the dashboard page."""

from __future__ import annotations

import math


def bounds_text(lower: float, upper: float | None) -> str:
    """``LB …, UB …, gap …`` of a spatial run; UB and gap are "none" while there is no incumbent
    (``upper`` None or +inf), LB is -inf while a box is not bounded yet."""
    if upper is None or not math.isfinite(upper):
        return f"LB {lower:.7g}, UB none, gap none"
    return f"LB {lower:.7g}, UB {upper:.7g}, gap {upper - lower:.7g}"
