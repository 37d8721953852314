"""A run's time series as the coordinator sees it, sampled on the scheduler (for the dashboard page).

The client keeps its own series for the run store; this one lives beside the ledger, so the
dashboard shows a run whatever client drives it.  It holds at most ``max_samples`` samples:
when full, every second sample is dropped (the whole run stays visible at half the
resolution) and ``generation`` changes, so that readers see a change even where the
number of samples is one they have drawn before.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from .eta import left_after
from .ledger import Ledger

ACTIVITY_PREFIX = "activity:"  # run-store series columns of per-worker activity


def activity_column(worker: str) -> str:
    """The run-store series column of a worker's activity (no '/' in column names)."""
    return ACTIVITY_PREFIX + worker.split("://")[-1].replace("/", "_")


def node_rate(t: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nodes/s between the samples where the count changed (the ledger's counters move at
    explorer checkpoints, every ~2 s, while samples come every second)."""
    changed = np.flatnonzero(np.diff(nodes, prepend=-1.0) != 0) if nodes.size else np.zeros(0, int)
    return t[changed][1:], np.diff(nodes[changed]) / np.maximum(np.diff(t[changed]), 1e-9)


@dataclass
class RunHistory:
    """Samples of one run of family ``kind`` (``core.family.register``): time since opened, nodes,
    remaining share, incumbent, lower bound, open pieces, activity per worker, the estimate of the nodes left."""

    label: str
    kind: str
    max_samples: int = 4096
    opened: float = field(default_factory=time.monotonic)
    generation: int = 0
    closed: bool = False
    t: list[float] = field(default_factory=list)
    nodes: list[int] = field(default_factory=list)
    remaining_fraction: list[float] = field(default_factory=list)
    incumbent: list[float] = field(default_factory=list)
    lower_bound: list[float] = field(default_factory=list)  # NaN for a family whose work holds no bounds
    pieces: list[int] = field(default_factory=list)  # open intervals or boxes
    activity: list[dict[str, float]] = field(default_factory=list)  # worker address -> busy share
    # the driver's estimate of the nodes left, its low and high ends (``workflow.eta``; NaN: none yet)
    estimate_nodes: list[float] = field(default_factory=list)
    estimate_low: list[float] = field(default_factory=list)
    estimate_high: list[float] = field(default_factory=list)
    estimate: tuple[int, tuple[float, ...]] | None = None  # the latest: (nodes done when made, (nodes, low, high))

    def __len__(self) -> int:
        return len(self.t)

    def record(self, ledger: Ledger, now: float | None = None) -> None:
        """Append the ledger's state now."""
        now = time.monotonic() if now is None else now
        self.t.append(now - self.opened)
        self.nodes.append(ledger.nodes)
        self.remaining_fraction.append(ledger.remaining_fraction())
        self.incumbent.append(ledger.ub)
        lower = ledger.lower_bound()
        self.lower_bound.append(math.nan if lower is None else lower)
        self.pieces.append(ledger.pieces())
        self.activity.append(ledger.activity())
        left = None
        if self.estimate is not None:  # less the nodes done since it was made
            left = left_after(self.estimate[1], max(0, ledger.nodes - self.estimate[0]))
        for column, value in zip(
            (self.estimate_nodes, self.estimate_low, self.estimate_high), left or (math.nan,) * 3, strict=True
        ):
            column.append(value)
        if len(self.t) > self.max_samples:
            for column in (
                self.t,
                self.nodes,
                self.remaining_fraction,
                self.incumbent,
                self.lower_bound,
                self.pieces,
                self.activity,
                self.estimate_nodes,
                self.estimate_low,
                self.estimate_high,
            ):
                del column[1::2]
            self.generation += 1

    def workers(self) -> list[str]:
        """Every worker that ever held an explorer of the run, in order of first appearance."""
        seen: dict[str, None] = {}
        for sample in self.activity:
            seen.update(dict.fromkeys(sample))
        return list(seen)
