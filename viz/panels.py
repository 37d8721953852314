"""Panels that the history pictures of every family share (matplotlib, no display needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..core.files import create_file  # noqa: E402
from ..workflow.history import ACTIVITY_PREFIX  # noqa: E402


def column(series: dict[str, np.ndarray], key: str) -> np.ndarray:
    """A series column as floats (empty when the run did not record it)."""
    return np.asarray(series.get(key, []), dtype=float)


def line(ax, x: np.ndarray, y: np.ndarray, ylabel: str, *, log: bool = False, **style) -> None:
    """A step curve of ``y`` over ``x`` (log axis: the final 0 drops out), or "no samples yet"."""
    if y.size:
        ax.plot(x, y, drawstyle="steps-post", marker="o", markersize=3, **style)
        if log and np.any(y > 0):
            ax.set_yscale("log")
    else:
        ax.text(0.5, 0.5, "no samples yet", ha="center", va="center", transform=ax.transAxes)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)


def workers(ax, t: np.ndarray, series: dict[str, np.ndarray]) -> None:
    """The activity of each worker over time, or the number of active explorers for runs that did
    not record it."""
    columns = sorted(k for k in series if k.startswith(ACTIVITY_PREFIX))
    if columns:
        _activity(ax, t, series, columns)
    else:
        line(ax, t, column(series, "active_explorers"), "active explorers")


def _activity(ax, t: np.ndarray, series: dict[str, np.ndarray], columns: list[str]) -> None:
    """One row per worker: the share of its threads or IVMs holding work (blank: no explorer)."""
    grid = np.vstack([column(series, k) for k in columns])
    workers = [k[len(ACTIVITY_PREFIX) :] for k in columns]
    edges = np.append(t, t[-1] + (t[-1] - t[-2] if t.size > 1 else 1.0)) if t.size else np.zeros(1)
    mesh = ax.pcolormesh(
        edges,
        np.arange(len(workers) + 1),
        np.ma.masked_invalid(grid),
        cmap="viridis",
        vmin=0.0,
        vmax=1.0,
        shading="flat",
    )
    if len(workers) <= 16:
        ax.set_yticks(np.arange(len(workers)) + 0.5, workers, fontsize=7)
    ax.set_ylabel("worker")
    ax.figure.colorbar(mesh, ax=ax, label="busy share", pad=0.01)


def save(fig, path: Path, title: str) -> Path:
    """Title, write ``path`` and free the figure."""
    fig.suptitle(title)
    return write(fig, path)


def write(fig, path: Path) -> Path:
    """Write ``fig`` as a PNG at ``path``, never through a symbolic link (OSError), and free it."""
    try:
        with create_file(path) as file:
            fig.savefig(file, format="png", dpi=120)
    finally:
        plt.close(fig)
    return path
