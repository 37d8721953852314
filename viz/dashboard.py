"""The pbbflow page of the Dask dashboard (Bokeh), served by the scheduler at ``/pbbflow``.

It shows the run opened last on the cluster, from the coordinator's history (sampled on the
scheduler every second): the remaining share of [0, n!) on a log scale, nodes/s, the
incumbent, and the busy share of each worker's explorers (threads or IVMs) over time.

The page must be registered before the scheduler's dashboard starts, in the scheduler's
process: :func:`register_page` does it for the clusters pbbflow starts (their schedulers run in
the client's process): before a Slurm or local CUDA cluster starts, and on the scheduler's loop
when a local cluster of one process gets its dashboard later (``workflow.cluster.attach_dashboard``).
An external scheduler gets it with ``dask scheduler --preload pbbflow.viz.preload``.
"""

from __future__ import annotations

import math

import numpy as np
from bokeh.layouts import column, gridplot
from bokeh.models import ColorBar, ColumnDataSource, Div, FixedTicker, LinearColorMapper, NumeralTickFormatter
from bokeh.palettes import Viridis256
from bokeh.plotting import figure

from ..workflow.coordinator import PLUGIN_NAME
from ..workflow.history import RunHistory, node_rate

ROUTE = "/pbbflow"
UPDATE_MS = 1000
IMAGE_COLUMNS = 512  # time columns of the activity image at most (1,000 workers: 2 MB per redraw)


def register_page() -> None:
    """Add the page to the scheduler dashboards started from now on in this process."""
    from distributed.dashboard import scheduler as dashboard

    dashboard.applications.setdefault(ROUTE, pbbflow_doc)


def page_url(dashboard_link: str | None) -> str | None:
    """The page's URL on the dashboard whose status page is ``dashboard_link``."""
    if not dashboard_link:
        return None
    return dashboard_link.rsplit("/", 1)[0] + ROUTE


def pbbflow_doc(scheduler, extra: dict, doc) -> None:
    """Bokeh document factory, called by the dashboard's server for every browser session."""
    page = RunPage(scheduler)
    page.update()
    doc.title = "pbbflow"
    doc.add_root(page.layout)
    doc.add_periodic_callback(page.update, UPDATE_MS)


class RunPage:
    """The figures of one browser session and the data sources they draw."""

    def __init__(self, scheduler) -> None:
        self.scheduler = scheduler
        self.shown: tuple | None = None  # (history, generation, samples, closed) last drawn
        self.header = Div(text="", name="pbbflow-header", sizing_mode="stretch_width")
        self.series = ColumnDataSource({"t": [], "remaining": [], "incumbent": []}, name="pbbflow-series")
        self.rates = ColumnDataSource({"t": [], "rate": []}, name="pbbflow-rates")
        self.activity = ColumnDataSource({"image": [], "dw": [], "dh": []}, name="pbbflow-activity")
        common = {"height": 260, "sizing_mode": "stretch_width", "tools": "pan,wheel_zoom,box_zoom,reset,save",
                  "x_axis_label": "elapsed (s)"}  # fmt: skip
        remaining = figure(title="remaining share of [0, n!)", y_axis_type="log", **common)
        remaining.step("t", "remaining", source=self.series, mode="after", line_width=2)
        rate = figure(title="nodes / s", **common)
        rate.step("t", "rate", source=self.rates, mode="before", line_width=2, color="darkorange")
        rate.yaxis.formatter = NumeralTickFormatter(format="0.0a")
        incumbent = figure(title="incumbent (makespan)", **common)
        incumbent.step("t", "incumbent", source=self.series, mode="after", line_width=2, color="firebrick")
        self.busy = figure(title="busy share of each worker's explorers", y_axis_label="worker", **common)
        mapper = LinearColorMapper(palette=Viridis256, low=0.0, high=1.0, nan_color=(0, 0, 0, 0))
        self.busy.image(image="image", x=0, y=0, dw="dw", dh="dh", source=self.activity, color_mapper=mapper)
        self.busy.add_layout(ColorBar(color_mapper=mapper, width=10), "right")
        grid = gridplot([[remaining, rate], [incumbent, self.busy]], sizing_mode="stretch_width")
        self.layout = column(self.header, grid, sizing_mode="stretch_width")

    def history(self) -> RunHistory | None:
        coordinator = self.scheduler.plugins.get(PLUGIN_NAME)
        return None if coordinator is None else coordinator.latest_history()

    def update(self) -> None:
        """Redraw when the history has new samples (periodic callback of the session)."""
        history = self.history()
        if history is None:
            self.header.text = "<h3>pbbflow</h3><p>No pbbflow run on this cluster yet.</p>"
            return
        key = (id(history), history.generation, len(history), history.closed)
        if key == self.shown:
            return
        self.shown = key
        t = np.asarray(history.t, dtype=float)
        nodes = np.asarray(history.nodes, dtype=float)
        remaining = np.asarray(history.remaining_fraction, dtype=float)
        self.series.data = {"t": t, "remaining": np.where(remaining > 0, remaining, np.nan),
                            "incumbent": np.asarray(history.incumbent, dtype=float)}  # fmt: skip
        rate_t, rate = node_rate(t, nodes)
        self.rates.data = {"t": rate_t, "rate": rate}
        self._draw_activity(history, t)
        self.header.text = self._summary(history, rate)

    def _draw_activity(self, history: RunHistory, t: np.ndarray) -> None:
        workers = history.workers()
        if not workers or t.size == 0:
            return
        stride = -(-len(history.activity) // IMAGE_COLUMNS)  # every stride-th sample
        samples = history.activity[::stride]
        grid = np.array([[sample.get(w, math.nan) for sample in samples] for w in workers], dtype=np.float32)
        width = float(t[-1] + (t[-1] - t[-2] if t.size > 1 else 1.0))
        self.activity.data = {"image": [grid], "dw": [width], "dh": [len(workers)]}
        if len(workers) <= 16:
            self.busy.yaxis.ticker = FixedTicker(ticks=[i + 0.5 for i in range(len(workers))])
            self.busy.yaxis.major_label_overrides = {i + 0.5: w for i, w in enumerate(workers)}

    @staticmethod
    def _summary(history: RunHistory, rate: np.ndarray) -> str:
        state = "closed" if history.closed else "live"
        remaining = history.remaining_fraction[-1]
        speed = f"{rate[-1] / 1e6:.2f} M nodes/s" if rate.size else "no rate yet"
        return (f"<h3>pbbflow: {history.label} ({state})</h3><p>{history.t[-1]:.0f} s, "
                f"{history.nodes[-1]:,} nodes, {speed}, {remaining:.6%} of the space left, "
                f"incumbent {history.incumbent[-1]}</p>")  # fmt: skip
