"""A run's result and history as lines, each family's as it writes them (``core.family.Family``)."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from ..core.family import family
from ..core.result import Result, Status
from ..core.text import clock, duration, format_rate, format_share, printable

HISTORY_SAMPLES = 100  # at most, evenly spaced, in ``info``'s history
HISTORY_COLUMNS = (
    "t",
    "nodes",
    "incumbent",
    "lower_bound",
    "remaining_fraction",
    "pieces",
    "estimate_nodes",
    "estimate_low",
    "estimate_high",
)
HISTORY_LINES = 6  # text output: this many samples, first and last included


def print_json(result: Result, **more: Any) -> None:
    """Print a result as one JSON object, with ``more`` keys after its own."""
    print(json.dumps({**result.to_dict(), **more}))


def print_result(result: Result) -> None:
    """Print a run's result: its family's lines, its run, and what is left where it stopped early."""
    lines = [*family(result.kind).result_lines(result), f"run          {result.run}"]
    if result.status == Status.LIMIT:
        share = format_share(result.remaining_fraction, result.remaining_log10)
        log10 = result.remaining_log10
        lines.append(f"remaining    {share} of the search space" + ("" if log10 is None else f" (log10 {log10:.2f})"))
        estimate = result.estimate or {}
        if estimate.get("estimated_nodes_left") is not None:
            lines.append(f"estimate     {estimate_text(estimate)}")
    print("\n".join(map(printable, lines)))  # names and paths from files


def estimate_text(estimate: dict) -> str:
    """``~1.2e+09 nodes left (3e+08-5.1e+09), ETA 3m10s (1m02s-12m) at 5.00 M nodes/s`` (the ETA
    where the rate is known)."""
    text = (
        f"~{estimate['estimated_nodes_left']:.2g} nodes left "
        f"({estimate['estimated_nodes_low']:.2g}-{estimate['estimated_nodes_high']:.2g})"
    )
    if estimate["eta_s"] is None or estimate["nodes_per_s"] is None:
        return text
    return (
        f"{text}, ETA {duration(estimate['eta_s'])} ({duration(estimate['eta_low_s'])}-"
        f"{duration(estimate['eta_high_s'])}) at {format_rate(estimate['nodes_per_s'])}"
    )


def history_summary(series: dict[str, np.ndarray]) -> dict[str, list]:
    """A run's time series at no more than ``HISTORY_SAMPLES`` samples, first and last included,
    as JSON (NaN and infinities as null; columns the run did not record are left out)."""
    length = len(series.get("t", ()))
    rows = np.unique(np.linspace(0, length - 1, min(length, HISTORY_SAMPLES)).round().astype(int)) if length else []
    summary = {}
    for column in HISTORY_COLUMNS:
        if column in series:
            values = np.asarray(series[column])[rows].tolist()
            summary[column] = [v if not isinstance(v, float) or math.isfinite(v) else None for v in values]
    return summary


def print_history(history: dict[str, list], kind: str) -> None:
    """A few rows of the history of a run of family ``kind``, each as the family writes it."""
    t = history.get("t", [])
    if not t:
        return
    text = family(kind).history_text
    rows = sorted({round(i * (len(t) - 1) / (HISTORY_LINES - 1)) for i in range(HISTORY_LINES)})
    for label, i in (("history", rows[0]), *(("", i) for i in rows[1:])):
        print(f"{label:<12} {clock(t[i])}  {text(history, i)}  {history['nodes'][i]:,} nodes")
