"""A run's result as lines, for each family (``--json`` prints the dict as it is)."""

from __future__ import annotations

import math

import numpy as np

from ..core.status import LIMIT
from ..core.text import printable
from ..workflow.eta import duration
from .progress import clock, format_rate, format_share

HISTORY_SAMPLES = 100  # at most, evenly spaced, in ``info``'s history
HISTORY_COLUMNS = ("t", "nodes", "incumbent", "lower_bound", "remaining_fraction", "pieces", "estimate_nodes",
                   "estimate_low", "estimate_high")  # fmt: skip
HISTORY_LINES = 6  # text output: this many samples, first and last included


def print_result(result: dict, kind: str) -> None:
    """Print the result of a run of family ``kind``."""
    lines = (_flowshop_lines if kind == "flowshop" else _spatial_lines)(result)
    if result["status"] == LIMIT:
        share = format_share(result["remaining_fraction"], result["remaining_log10"])
        log10 = result["remaining_log10"]
        lines.append(f"remaining    {share} of the search space"
                     + ("" if log10 is None else f" (log10 {log10:.2f})"))  # fmt: skip
        estimate = result.get("estimate") or {}
        if estimate.get("estimated_nodes_left") is not None:
            lines.append(f"estimate     {estimate_text(estimate)}")
    print("\n".join(map(printable, lines)))  # names and paths from files


def estimate_text(estimate: dict) -> str:
    """``~1.2e+09 nodes left (3e+08-5.1e+09), ETA 3m10s (1m02s-12m) at 5.00 M nodes/s`` (the ETA
    where the rate is known)."""
    text = (f"~{estimate['estimated_nodes_left']:.2g} nodes left "
            f"({estimate['estimated_nodes_low']:.2g}-{estimate['estimated_nodes_high']:.2g})")  # fmt: skip
    if estimate["eta_s"] is None or estimate["nodes_per_s"] is None:
        return text
    return (f"{text}, ETA {duration(estimate['eta_s'])} ({duration(estimate['eta_low_s'])}-"
            f"{duration(estimate['eta_high_s'])}) at {format_rate(estimate['nodes_per_s'])}")


def _rate(result: dict) -> float:
    return result["nodes"] / result["elapsed_s"] if result["elapsed_s"] > 0 else 0.0


def _flowshop_lines(result: dict) -> list[str]:
    permutation = result["permutation"]
    return [
        f"instance     {result['instance']} ({result['n']} jobs x {result['m']} machines)",
        f"status       {result['status']}",
        f"makespan     {result['makespan'] if result['makespan'] is not None else '-'}",
        f"permutation  {' '.join(map(str, permutation)) if permutation else '-'}",
        f"lower bound  {result['lower_bound']}",
        f"nodes        {result['nodes']:,} decomposed, {result['leaves']:,} leaves, "
        f"{result['elapsed_s']:.2f} s ({format_rate(_rate(result))})",
        f"run          {result['run']}",
    ]


def _spatial_lines(result: dict) -> list[str]:
    def number(value) -> str:
        return "-" if value is None else repr(value)

    x = result["x"]
    return [
        f"problem      {result['problem']} ({result['dimension']} variables)",
        f"status       {result['status']}",
        f"objective    {number(result['objective'])}",
        f"x            {'-' if x is None else ' '.join(repr(v) for v in x)}",
        f"lower bound  {number(result['lower_bound'])}",
        f"gap          {number(result['gap_abs'])} (relative {number(result['gap_rel'])})",
        f"nodes        {result['nodes']:,} boxes bounded, {result['open_boxes']:,} open, {result['elapsed_s']:.2f} s "
        f"({_rate(result):,.0f} boxes/s)",
        f"run          {result['run']}",
    ]


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
    """A few rows of the history: the certified LB and the incumbent over time for a spatial run,
    the incumbent and the share left for a flow-shop run."""
    t = history.get("t", [])
    if not t:
        return
    rows = sorted({round(i * (len(t) - 1) / (HISTORY_LINES - 1)) for i in range(HISTORY_LINES)})
    for label, i in (("history", rows[0]), *(("", i) for i in rows[1:])):
        incumbent = history["incumbent"][i]
        if kind == "flowshop":
            left = history["remaining_fraction"][i]
            text = f"UB {incumbent}  {'-' if left is None else f'{left:.4%}'} left"
        else:
            lower = history.get("lower_bound", [None] * len(t))[i]
            text = f"LB {'-' if lower is None else f'{lower:.10g}'}  UB {'-' if incumbent is None else f'{incumbent:.10g}'}"
        print(f"{label:<12} {clock(t[i])}  {text}  {history['nodes'][i]:,} nodes")
