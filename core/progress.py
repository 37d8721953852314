"""One progress model for every search: what a progress bar sees of a running search.

Made by the driver of a run on a cluster (``workflow.run``), by spatial ``minimize`` in this process
(the CPU's and the GPU's explorations, ``spatial.explorer``) and by flow shop's ``solve`` in this
process; drawn by ``cli.progress.ProgressBar``.  ``Eta`` is a run's estimate of the time left, also
a finished result's ``estimate``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .text import duration


@dataclass(frozen=True)
class Eta:
    """Nodes left (estimate and range) and the time they take at ``nodes_per_s``; None: unknown."""

    nodes_left: float | None = None
    nodes_low: float | None = None
    nodes_high: float | None = None
    nodes_per_s: float | None = None

    def seconds(self, nodes: float | None) -> float | None:
        if nodes is None or not self.nodes_per_s:
            return None
        return nodes / self.nodes_per_s

    def as_json(self) -> dict:
        """The ``estimate`` of a result: nodes left, its low-high range, the rate, the ETA and its range."""
        return {
            "estimated_nodes_left": _round(self.nodes_left),
            "estimated_nodes_low": _round(self.nodes_low),
            "estimated_nodes_high": _round(self.nodes_high),
            "nodes_per_s": _round(self.nodes_per_s),
            "eta_s": _round(self.seconds(self.nodes_left), 1),
            "eta_low_s": _round(self.seconds(self.nodes_low), 1),
            "eta_high_s": _round(self.seconds(self.nodes_high), 1),
        }

    def text(self) -> str | None:
        """``ETA 3m10s (1m02s-12m)``; None when unknown."""
        eta = self.seconds(self.nodes_left)
        if eta is None:
            return None
        low, high = self.seconds(self.nodes_low), self.seconds(self.nodes_high)
        span = "" if low is None or high is None else f" ({duration(low)}-{duration(high)})"
        return f"ETA {duration(eta)}{span}"


def _round(value: float | None, digits: int = 0) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return round(float(value), digits) if digits else float(round(value))


@dataclass(frozen=True)
class Progress:
    """A look at a running search.  Its work says how far it is in one of two ways: a family whose
    work holds bounds (spatial) reports its certified ``lower_bound`` and its open ``pieces``
    (:attr:`bounded`); another (flow shop) the share of the space left, exact, and an ``eta``
    where it has an estimate.  ``extras``: a family's own counters (flow shop: ``leaves``)."""

    elapsed_s: float
    nodes: int
    nodes_per_s: float
    ub: Any  # the pruning bound: the best value found, or the initial bound (inf: none)
    remaining_fraction: float  # NaN: unknown (a search in this process that does not count it)
    remaining_log10: float | None  # log10 of the share left, None when nothing is
    active_explorers: int
    lower_bound: float | None = None  # the certified lower bound; None: the work holds no bounds
    pieces: int = 0  # open intervals or boxes
    eta: Eta = Eta()  # the estimate of the nodes left and its ETA (``workflow.eta``), where the family has one
    extras: Mapping[str, Any] = field(default_factory=dict)

    @property
    def bounded(self) -> bool:
        """Whether the search reports a certified lower bound and open pieces rather than a share left."""
        return self.lower_bound is not None
