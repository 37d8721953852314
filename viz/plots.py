"""PNG plots of a run store (matplotlib, no display needed): the Gantt chart of the best
schedule and the search history of the time series the run records."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..storage.runstore import RunStore  # noqa: E402
from ..workflow.history import ACTIVITY_PREFIX, node_rate  # noqa: E402


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
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def history(series: dict[str, np.ndarray], path: Path, title: str) -> Path:
    """Remaining share of the search space (log), nodes/s, incumbent and the activity of each
    worker over time (or the number of active explorers, for runs that did not record it)."""
    t = np.asarray(series.get("t", []), dtype=float)
    fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharex=True)
    panels = [
        ("remaining_fraction", "remaining share of [0, n!)", True),
        ("nodes_per_s", "nodes / s", False),
        ("incumbent", "incumbent (makespan)", False),
        ("active_explorers", "active explorers", False),
    ]
    rate_t, rate = node_rate(t, np.asarray(series.get("nodes", []), dtype=float))
    activity = sorted(k for k in series if k.startswith(ACTIVITY_PREFIX))
    if activity:
        panels.pop()
        _activity(axes[1, 1], t, [np.asarray(series[k], dtype=float) for k in activity],
                  [k[len(ACTIVITY_PREFIX):] for k in activity])  # fmt: skip
    for ax, (key, label, log) in zip(axes.ravel(), panels, strict=False):
        x, y = (rate_t, rate) if key == "nodes_per_s" else (t, np.asarray(series.get(key, []), dtype=float))
        if y.size:
            ax.plot(x, y, drawstyle="steps-post", marker="o", markersize=3)
            if log and np.any(y > 0):
                ax.set_yscale("log")  # the final 0 drops out of a log axis
        else:
            ax.text(0.5, 0.5, "no samples yet", ha="center", va="center", transform=ax.transAxes)
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel("elapsed (s)")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _activity(ax, t: np.ndarray, shares: list[np.ndarray], workers: list[str]) -> None:
    """One row per worker: the share of its threads or IVMs holding work (blank: no explorer)."""
    grid = np.vstack(shares)
    edges = np.append(t, t[-1] + (t[-1] - t[-2] if t.size > 1 else 1.0)) if t.size else np.zeros(1)
    mesh = ax.pcolormesh(edges, np.arange(len(workers) + 1), np.ma.masked_invalid(grid), cmap="viridis",
                         vmin=0.0, vmax=1.0, shading="flat")  # fmt: skip
    if len(workers) <= 16:
        ax.set_yticks(np.arange(len(workers)) + 0.5, workers, fontsize=7)
    ax.set_ylabel("worker")
    ax.figure.colorbar(mesh, ax=ax, label="busy share", pad=0.01)


def plot_run(store: RunStore, out: Path) -> list[Path]:
    """Write ``gantt.png`` (when the run holds a schedule) and ``history.png`` into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    latest = store.latest()
    instance = store.instance
    written = []
    if instance.kind == "flowshop" and latest.solution is not None:
        written.append(gantt(instance.p, list(latest.solution), out / "gantt.png", instance.name))
    share = instance.space().remaining_fraction([instance.space().decode(latest.remaining.to_bytes())])
    state = "finished" if not latest.remaining else f"{share:.3%} left"
    written.append(history(latest.series, out / "history.png", f"{instance.name} ({state})"))
    return written
