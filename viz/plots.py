"""PNG plots of a run store (matplotlib, no display needed): for a flow-shop run the Gantt chart of
the best schedule and the search history of the time series the run records; a spatial run's
pictures are in ``spatial_plots``."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..storage.runstore import RunStore  # noqa: E402
from ..workflow.history import node_rate  # noqa: E402
from . import panels, spatial_plots  # noqa: E402


def gantt(p: np.ndarray, permutation, path: Path, title: str) -> Path:
    """Machines x time, one coloured bar per operation, jobs in schedule order."""
    n, m = p.shape
    finish = np.zeros(m, dtype=np.int64)
    colours = plt.get_cmap("tab20" if n <= 20 else "turbo")
    fig, ax = plt.subplots(figsize=(min(16, 6 + n * 0.15), 1.2 + 0.45 * m))
    for job in permutation:
        start_prev = 0
        for k in range(m):
            start = max(finish[k], start_prev)
            finish[k] = start + p[job, k]
            start_prev = finish[k]
            colour = colours(job % 20) if n <= 20 else colours(job / max(1, n - 1))
            ax.barh(k, p[job, k], left=start, color=colour, edgecolor="white", linewidth=0.4)
            if n <= 30 and p[job, k] > finish[-1] * 0.015:
                ax.text(start + p[job, k] / 2, k, str(job), ha="center", va="center", fontsize=7)
    ax.set_yticks(range(m), [f"M{k}" for k in range(m)])
    ax.invert_yaxis()
    ax.set_xlabel("time")
    ax.set_title(f"{title}: makespan {int(finish[-1])}")
    fig.tight_layout()
    return panels.write(fig, path)


def history(series: dict[str, np.ndarray], path: Path, title: str) -> Path:
    """Remaining share of the search space (log), nodes/s, incumbent and the activity of each
    worker over time (or the number of active explorers, for runs that did not record it)."""
    t = panels.column(series, "t")
    fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharex=True, layout="constrained")
    rate_t, rate = node_rate(t, panels.column(series, "nodes"))
    panels.line(axes[0, 0], t, panels.column(series, "remaining_fraction"), "remaining share of [0, n!)", log=True)
    panels.line(axes[0, 1], rate_t, rate, "nodes / s")
    panels.line(axes[1, 0], t, panels.column(series, "incumbent"), "incumbent (makespan)")
    panels.workers(axes[1, 1], t, series)
    for ax in axes[1]:
        ax.set_xlabel("elapsed (s)")
    return panels.save(fig, path, title)


def plot_run(store: RunStore, out: Path) -> list[Path]:
    """Write the run's pictures into ``out``: ``gantt.png`` (a flow-shop run that holds a schedule)
    or ``boxes.png`` (a spatial run of two variables), and ``history.png``."""
    out.mkdir(parents=True, exist_ok=True)
    if store.kind == "spatial":
        return spatial_plots.plot_spatial_run(store, out)
    latest = store.latest()
    instance = store.instance
    written = []
    if instance.kind == "flowshop" and latest.solution is not None:
        written.append(gantt(instance.p, list(latest.solution), out / "gantt.png", instance.name))
    share = instance.space().remaining_fraction([instance.space().decode(latest.remaining.to_bytes())])
    state = "finished" if not latest.remaining else f"{share:.3%} left"
    written.append(history(latest.series, out / "history.png", f"{instance.name} ({state})"))
    return written
