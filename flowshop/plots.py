"""PNG plots of a flow-shop run store (matplotlib, no display needed): the Gantt chart of the best
schedule and the search history of the time series the run records (``viz.plots.history``)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..storage.runstore import RunStore  # noqa: E402
from ..viz import panels  # noqa: E402
from ..viz.plots import history, state  # noqa: E402


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


def plot_run(store: RunStore, out: Path) -> list[Path]:
    """Write ``gantt.png`` (a run that holds a schedule) and ``history.png`` into ``out``."""
    latest, instance = store.latest(), store.instance
    written = []
    if latest.solution is not None:
        written.append(gantt(instance.p, list(latest.solution), out / "gantt.png", instance.name))
    written.append(
        history(
            latest.series,
            out / "history.png",
            f"{instance.name} ({state(store)})",
            remaining="remaining share of [0, n!)",
            incumbent="incumbent (makespan)",
        )
    )
    return written
