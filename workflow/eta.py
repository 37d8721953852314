"""A run's ETA: its family's estimate of the nodes left, divided by the recent node rate.

A family whose run instance has ``estimate_left`` (``core.family.EstimatesWork``; flow shop:
sampled enumerations of the explorers' tree, ``flowshop.estimate``) is asked for an estimate of the
nodes left in the remaining work under the incumbent, on background threads of the driver, every
``REFRESH_SECONDS`` for a share of that time: a checkpoint or a poll never waits for it, except the
final checkpoint, which gets one estimate of the final work (``FINAL_SECONDS`` at most).  Between
two estimates the nodes done since are taken off.  The run store keeps the estimates as series
columns (``COLUMNS``, absent from older stores and from families without estimates): ``info`` and
the final result read the ETA from there.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from ..core.family import EstimatesWork
from ..core.progress import Eta

REFRESH_SECONDS = 10.0  # a new estimate of the remaining work this often
# The share of that time an estimate takes (the GIL released): on one thread where the host's cores
# are all explorers', on the threads it can spare beside them (``estimate_threads``)
BUSY_SHARE, SPARE_SHARE = 0.1, 0.4
FINAL_SECONDS = 1.0  # at most for the estimate of a stopped run's final work (its checkpoint waits)
MAX_THREADS = 8
RATE_WINDOW_S = 60.0  # the node rate of the ETA: over this much of the latest samples
COLUMNS = ("estimate_nodes", "estimate_low", "estimate_high")  # run-store series: nodes left, its range


def recent_rates(t: np.ndarray, nodes: np.ndarray, window: float = RATE_WINDOW_S) -> np.ndarray:
    """Nodes/s at each sample over the samples of the ``window`` seconds before it (NaN at the first
    sample, or where no time passed)."""
    t, nodes = np.asarray(t, dtype=float), np.asarray(nodes, dtype=float)
    first = np.searchsorted(t, t - window, side="left")
    span = t - t[first]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(span > 0, (nodes - nodes[first]) / span, np.nan)


def recent_rate(t: np.ndarray, nodes: np.ndarray, window: float = RATE_WINDOW_S) -> float | None:
    """Nodes/s over the last ``window`` seconds of samples; None when unknown or 0."""
    if len(t) < 2:
        return None
    rate = float(recent_rates(t, nodes, window)[-1])
    return rate if math.isfinite(rate) and rate > 0 else None


def left_after(estimate: tuple[float, ...], since: int) -> tuple[float, ...] | None:
    """An estimate ``(nodes, low, high)`` of the nodes left, less the ``since`` nodes done after it
    was made (never below 0); None once those reach the estimate itself: the run has outgrown it,
    so it says nothing of what is left (measured on ta056 with UB 3680: the random probes used
    before the enumerations were 10^2-10^4 times low, and an ETA of 0 s stood for most of the
    proof).  An estimate of 0 with nothing done since (no work left, or none under the UB) stays 0."""
    if since > 0 and since >= estimate[0]:
        return None
    return tuple(max(0.0, v - since) for v in estimate)


def _number(value: Any) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def eta_of(series: Mapping[str, Any]) -> Eta:
    """The ETA as of a run's last sample: its estimate columns and its recent node rate."""
    if not all(c in series for c in COLUMNS) or len(series.get("t", ())) == 0:
        return Eta()
    left, low, high = (_number(np.asarray(series[c])[-1]) for c in COLUMNS)
    if left == 0:  # nothing left: the ETA is 0 whatever the rate
        return Eta(0.0, 0.0, 0.0, math.inf)
    return Eta(left, low, high, recent_rate(series["t"], series["nodes"]))


def eta_curve(t, nodes, left, low, high, window: float = RATE_WINDOW_S) -> tuple[np.ndarray, ...]:
    """The ETA, and its low and high ends, in seconds at each sample (NaN where unknown)."""
    rate = recent_rates(t, nodes, window)
    with np.errstate(divide="ignore", invalid="ignore"):
        return tuple(np.where(rate > 0, np.asarray(v, dtype=float) / rate, np.nan) for v in (left, low, high))


def estimate_threads(busy: int, cores: int) -> int:
    """Threads for the estimates on a host of ``cores`` cores whose explorers (and side heuristics)
    keep ``busy`` of them: half of those left after the driver's own, 1 to ``MAX_THREADS``."""
    return max(1, min(MAX_THREADS, (cores - busy - 1) // 2))


class Estimator:
    """Estimates of a run's nodes left from its instance's ``estimate_left``, made on threads of
    their own; disabled (``enabled`` False) for a family without estimates."""

    def __init__(
        self, instance: Any, threads: int = 1, seconds: float | None = None, every: float = REFRESH_SECONDS
    ) -> None:
        """``seconds`` per estimate: by default ``SPARE_SHARE`` of ``every`` where ``threads`` > 1,
        else ``BUSY_SHARE``."""
        if seconds is None:
            seconds = every * (SPARE_SHARE if threads > 1 else BUSY_SHARE)
        self.instance, self.threads, self.seconds, self.every = instance, threads, seconds, every
        self.enabled = isinstance(instance, EstimatesWork)
        self.thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pbbflow-estimate")
        self.pending: Future | None = None
        self.asked = -math.inf  # when the last estimate was asked for (time.monotonic)
        self.lock = threading.Lock()
        self.latest: tuple[int, tuple[float, float, float]] | None = None  # (nodes done then, estimate)
        self.generation = 0  # estimates asked for before the final one are dropped when they end after it
        self.sent: tuple | None = None  # the last estimate handed out by ``fresh``

    def due(self, now: float) -> bool:
        """Whether to ask for a new estimate now (none under way, the last one old enough)."""
        return self.enabled and now - self.asked >= self.every and (self.pending is None or self.pending.done())

    def refresh(self, now: float, state: dict) -> None:
        """Estimate the work of the coordinator's ``state`` (with its intervals) in the background."""
        self.asked = now
        self.pending = self.thread.submit(
            self._estimate, state["remaining"], state["ub"], state["nodes"], self.generation
        )

    def final(self, state: dict) -> None:
        """Estimate the final work now: at once where none is left (an estimate under way is then
        dropped), else after any estimate under way (the prober's arrays are one thread's at a time)."""
        if not self.enabled:
            return
        with self.lock:
            self.generation += 1
        if self.pending is not None and state["remaining"]:
            self.pending.result()
        self._estimate(state["remaining"], state["ub"], state["nodes"], self.generation, FINAL_SECONDS)

    def _estimate(self, data: bytes, ub: Any, nodes: int, generation: int, most_seconds: float = math.inf) -> None:
        try:
            work = self.instance.decode_work(data=data)
            seconds = min(self.seconds, most_seconds)
            estimate = (0.0, 0.0, 0.0) if not work else self.instance.estimate_left(work, ub, seconds, self.threads)
        except Exception:  # an estimate is advice: the run goes on without it
            logging.getLogger(__name__).warning("pbbflow: no estimate of the work left", exc_info=True)
            return
        if estimate is not None:
            with self.lock:
                if generation == self.generation:
                    self.latest = (nodes, tuple(float(v) for v in estimate))

    def left(self, nodes: int) -> tuple[float, float, float] | None:
        """(nodes left, low, high) now that ``nodes`` are done: the latest estimate less the nodes done
        since (:func:`left_after`); None before the first estimate and once the run has outgrown it."""
        with self.lock:
            latest = self.latest
        if latest is None:
            return None
        return left_after(latest[1], max(0, nodes - latest[0]))

    def fresh(self) -> tuple[int, tuple[float, float, float]] | None:
        """The latest estimate if it was not handed out before (for the coordinator's page)."""
        with self.lock:
            latest = self.latest
        if latest is None or latest is self.sent:
            return None
        self.sent = latest
        return latest

    def close(self) -> None:
        self.thread.shutdown(wait=True, cancel_futures=True)
