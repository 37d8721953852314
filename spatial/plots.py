"""PNG plots of a spatial run store (matplotlib, no display needed): the search history (the
certified lower bound and the incumbent, open boxes, boxes/s, the workers' activity) and, for a
problem of two variables, its domain with the open boxes of the last checkpoint."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402
from matplotlib.colors import Normalize  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch, Rectangle  # noqa: E402

from ..storage.runstore import RunStore  # noqa: E402
from ..viz import panels  # noqa: E402
from ..workflow.history import node_rate  # noqa: E402
from .boxes import BoxSet  # noqa: E402
from .problem import Problem  # noqa: E402
from .summary import bounds_text, finite  # noqa: E402

SETTLED = "0.82"  # the colour of the domain outside the open boxes: pruned or settled
ZOOM = 0.25  # a second panel zooms on the open boxes when they span less than this share of a side
CMAP = plt.get_cmap("viridis").with_extremes(under="black")  # under: boxes not bounded yet (-inf)
INCUMBENT = {
    "marker": "*",
    "markerfacecolor": "none",
    "markeredgecolor": "red",
    "markeredgewidth": 1.5,
    "linestyle": "none",
}


def plot_run(store: RunStore, out: Path) -> list[Path]:
    """Write ``boxes.png`` (a problem of two variables) and ``history.png`` into ``out``."""
    latest, run = store.latest(), store.instance
    lower = run.lower_bound(latest.remaining, latest.settled)
    state = "finished" if not latest.remaining else f"{len(latest.remaining):,} open boxes"
    title = f"{run.name} ({state}): {bounds_text(lower, latest.incumbent)}"
    written = []
    if run.problem.dimension == 2:
        written.append(boxes(run.problem, latest.remaining, latest.solution, out / "boxes.png", title))
    written.append(history(latest.series, out / "history.png", title))
    return written


def history(series: dict[str, np.ndarray], path: Path, title: str) -> Path:
    """The certified lower bound and the incumbent, open boxes (log), boxes/s and the activity of
    each worker over time."""
    t = panels.column(series, "t")
    fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharex=True, layout="constrained")
    _bounds(axes[0, 0], t, finite(panels.column(series, "lower_bound")), finite(panels.column(series, "incumbent")))
    panels.line(axes[0, 1], t, panels.column(series, "pieces"), "open boxes", log=True)
    panels.line(axes[1, 0], *node_rate(t, panels.column(series, "nodes")), "boxes / s")
    panels.workers(axes[1, 1], t, series)
    for ax in axes[1]:
        ax.set_xlabel("elapsed (s)")
    return panels.save(fig, path, title)


def _bounds(ax, t: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> None:
    """LB and UB on one axis with the gap between them shaded, and the gap itself on a log scale
    (right axis), readable where LB and UB are too close to tell apart."""
    panels.line(ax, t, upper, "objective", color="firebrick", label="incumbent (UB)")
    if not t.size:
        return
    ax.plot(
        t, lower, drawstyle="steps-post", marker="o", markersize=3, color="tab:blue", label="certified lower bound (LB)"
    )
    ax.fill_between(t, lower, upper, step="post", color="tab:purple", alpha=0.15)
    handles = ax.get_legend_handles_labels()[0]
    gap = upper - lower
    shown = gap > 0  # False where either is NaN
    if shown.any():
        right = ax.twinx()
        handles += right.plot(
            t[shown],
            gap[shown],
            drawstyle="steps-post",
            linestyle="--",
            linewidth=1,
            color="0.3",
            label="gap UB - LB (right, log)",
        )
        right.set_yscale("log")
        right.set_ylabel("gap")
    ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0, 1), ncols=len(handles), fontsize=8, frameon=False)


def boxes(problem: Problem, open_boxes: BoxSet, x: list[float] | None, path: Path, title: str) -> Path:
    """The domain of a problem of two variables: the open boxes coloured by their lower bound, the
    rest pruned or settled, the incumbent ``x`` marked; a second panel zooms on the open boxes
    when they are small beside the domain.  Boxes too small to see are drawn a hair wide."""
    views = [(problem.lower, problem.upper)]
    if len(open_boxes):
        lo, hi = open_boxes.lo.min(axis=0), open_boxes.hi.max(axis=0)
        if np.any(hi - lo < ZOOM * (problem.upper - problem.lower)):
            pad = 0.05 * (hi - lo)
            views.append((lo - pad, hi + pad))
    fig, axes = plt.subplots(1, len(views), figsize=(6.5 * len(views) + 1.5, 6.5), squeeze=False, layout="constrained")
    finite = open_boxes.lb[np.isfinite(open_boxes.lb)]
    norm = Normalize(finite.min(), finite.max()) if finite.size else Normalize(0.0, 1.0)
    for ax, (lo, hi) in zip(axes[0], views, strict=True):
        ax.add_patch(Rectangle(problem.lower, *(problem.upper - problem.lower), facecolor=SETTLED, edgecolor="none"))
        ax.add_collection(
            PolyCollection(
                _corners(open_boxes), array=open_boxes.lb, cmap=CMAP, norm=norm, edgecolors="face", linewidths=0.4
            )
        )
        if x is not None:
            ax.plot(*x, markersize=16, **INCUMBENT)
        ax.set_xlim(lo[0], hi[0])
        ax.set_ylim(lo[1], hi[1])
        ax.set_xlabel(problem.names[0])
        ax.set_ylabel(problem.names[1])
    if len(views) > 1:
        (lo, hi) = views[1]
        axes[0, 0].add_patch(Rectangle(lo, *(hi - lo), fill=False, edgecolor="red", linestyle="--"))
        axes[0, 1].set_title("zoom on the open boxes (dashed on the left)")
    handles = [Patch(facecolor=SETTLED, label="pruned or settled")]
    if len(open_boxes):
        unbounded = finite.size < len(open_boxes)  # boxes of bound -inf: CMAP's under colour
        bar = fig.colorbar(
            plt.cm.ScalarMappable(norm=norm, cmap=CMAP),
            ax=axes[0].tolist(),
            pad=0.02,
            label="lower bound of an open box",
            extend="min" if unbounded else "neither",
        )
        bar.formatter.set_useOffset(False)  # the bounds themselves, however close together
        handles.append(Patch(facecolor=CMAP(0.5), label=f"open ({len(open_boxes):,} boxes)"))
    if x is not None:
        handles.append(Line2D([], [], markersize=12, label="incumbent", **INCUMBENT))
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles))
    return panels.save(fig, path, title)


def _corners(b: BoxSet) -> np.ndarray:
    """The boxes' corners, k x 4 x 2, for a PolyCollection (one collection draws 100,000 boxes)."""
    return np.stack(
        [b.lo, np.column_stack([b.hi[:, 0], b.lo[:, 1]]), b.hi, np.column_stack([b.lo[:, 0], b.hi[:, 1]])], axis=1
    )
