"""PNG plots of a run store (matplotlib, no display needed), drawn by the run's family
(``Family.plot_run``: flow shop's in ``flowshop.plots``, spatial's in ``spatial.plots``); a family
without pictures of its own gets :func:`history` of the series every run records."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..core.family import family  # noqa: E402
from ..storage.runstore import RunStore  # noqa: E402
from ..workflow.history import node_rate  # noqa: E402
from . import panels  # noqa: E402


def plot_run(store: RunStore, out: Path) -> list[Path]:
    """Write the run's pictures into ``out`` (made if missing); returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    draw = getattr(family(store.kind), "plot_run", None)
    if draw is not None:
        return draw(store, out)
    return [history(store.latest().series, out / "history.png", f"{store.instance.name} ({state(store)})")]


def state(store: RunStore) -> str:
    """ "finished", or the share of the space its latest checkpoint leaves."""
    latest, space = store.latest(), store.instance.space()
    if not latest.remaining:
        return "finished"
    return f"{space.remaining_fraction([space.decode(latest.remaining.to_bytes())]):.3%} left"


def history(
    series: dict[str, np.ndarray],
    path: Path,
    title: str,
    *,
    remaining: str = "remaining share",
    incumbent: str = "incumbent",
) -> Path:
    """Remaining share of the search space (log), nodes/s, incumbent and the activity of each
    worker over time (or the number of active explorers, for runs that did not record it);
    ``remaining`` and ``incumbent`` label their panels."""
    t = panels.column(series, "t")
    fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharex=True, layout="constrained")
    rate_t, rate = node_rate(t, panels.column(series, "nodes"))
    panels.line(axes[0, 0], t, panels.column(series, "remaining_fraction"), remaining, log=True)
    panels.line(axes[0, 1], rate_t, rate, "nodes / s")
    panels.line(axes[1, 0], t, panels.column(series, "incumbent"), incumbent)
    panels.workers(axes[1, 1], t, series)
    for ax in axes[1]:
        ax.set_xlabel("elapsed (s)")
    return panels.save(fig, path, title)
