"""The pbbflow page of the Dask dashboard (Bokeh), served by the scheduler at ``/pbbflow``.

It shows the run opened last on the cluster, from the coordinator's history (sampled on the
scheduler every second), as its family's view: for a flow-shop run the remaining share of
[0, n!) on a log scale, nodes/s and the incumbent; for a spatial run the certified lower bound
and the incumbent on one figure, the open boxes and boxes/s; for both the busy share of each
worker's explorers (threads or IVMs) over time.

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
from ..workflow.eta import Eta, eta_curve, recent_rate
from ..workflow.history import RunHistory, node_rate
from .summary import bounds_text

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
    """The header and the figures of one browser session, drawn by the view of the shown run's
    family (a new view when the cluster's latest run is of another family)."""

    def __init__(self, scheduler) -> None:
        self.scheduler = scheduler
        self.shown: tuple | None = None  # (history, generation, samples, closed) last drawn
        self.header = Div(text="", name="pbbflow-header", sizing_mode="stretch_width")
        self.view: FlowShopView | SpatialView = FlowShopView()
        self.layout = column(self.header, self.view.layout, sizing_mode="stretch_width")

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
        view = VIEWS.get(history.kind, FlowShopView)
        if not isinstance(self.view, view):
            self.view = view()
            self.layout.children = [self.header, self.view.layout]
        self.header.text = self.view.draw(history)


def _common() -> dict:
    """The options of every figure of the page."""
    return {"height": 260, "sizing_mode": "stretch_width", "tools": "pan,wheel_zoom,box_zoom,reset,save",
            "x_axis_label": "elapsed (s)"}  # fmt: skip


def _finite(values: list[float]) -> np.ndarray:
    """NaN where a value is infinite (no incumbent yet, nothing left to bound): not drawn."""
    a = np.asarray(values, dtype=float)
    return np.where(np.isfinite(a), a, np.nan)


def _nan_none(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def _positive(values: list[float]) -> np.ndarray:
    """NaN where a value is not positive: a log axis draws no 0."""
    a = np.asarray(values, dtype=float)
    return np.where(a > 0, a, np.nan)


class ActivityFigure:
    """The busy share of each worker's explorers (threads or IVMs) over time, as an image."""

    def __init__(self, name: str) -> None:
        self.source = ColumnDataSource({"image": [], "dw": [], "dh": []}, name=name)
        self.figure = figure(title="busy share of each worker's explorers", y_axis_label="worker", **_common())
        mapper = LinearColorMapper(palette=Viridis256, low=0.0, high=1.0, nan_color=(0, 0, 0, 0))
        self.figure.image(image="image", x=0, y=0, dw="dw", dh="dh", source=self.source, color_mapper=mapper)
        self.figure.add_layout(ColorBar(color_mapper=mapper, width=10), "right")

    def draw(self, history: RunHistory, t: np.ndarray) -> None:
        """A row per worker, a column per sample (at most ``IMAGE_COLUMNS``)."""
        workers = history.workers()
        if not workers or t.size == 0:
            return
        stride = -(-len(history.activity) // IMAGE_COLUMNS)  # every stride-th sample
        samples = history.activity[::stride]
        grid = np.array([[sample.get(w, math.nan) for sample in samples] for w in workers], dtype=np.float32)
        width = float(t[-1] + (t[-1] - t[-2] if t.size > 1 else 1.0))
        self.source.data = {"image": [grid], "dw": [width], "dh": [len(workers)]}
        if len(workers) <= 16:
            self.figure.yaxis.ticker = FixedTicker(ticks=[i + 0.5 for i in range(len(workers))])
            self.figure.yaxis.major_label_overrides = {i + 0.5: w for i, w in enumerate(workers)}


class FlowShopView:
    """A flow-shop run: the remaining share of [0, n!) on a log scale, nodes/s, the incumbent, the
    activity, and the ETA with its range (the driver's estimate of the nodes left at the recent
    node rate, ``workflow.eta``)."""

    def __init__(self) -> None:
        self.series = ColumnDataSource({"t": [], "remaining": [], "incumbent": []}, name="pbbflow-series")
        self.rates = ColumnDataSource({"t": [], "rate": []}, name="pbbflow-rates")
        self.activity = ActivityFigure("pbbflow-activity")
        self.etas = ColumnDataSource({"t": [], "eta": [], "low": [], "high": []}, name="pbbflow-eta")
        eta = figure(title="estimated time left (s), with its range", y_axis_type="log", **_common())
        eta.varea("t", "low", "high", source=self.etas, color="seagreen", alpha=0.2)
        eta.line("t", "eta", source=self.etas, line_width=2, color="seagreen")
        remaining = figure(title="remaining share of [0, n!)", y_axis_type="log", **_common())
        remaining.step("t", "remaining", source=self.series, mode="after", line_width=2)
        rate = figure(title="nodes / s", **_common())
        rate.step("t", "rate", source=self.rates, mode="before", line_width=2, color="darkorange")
        rate.yaxis.formatter = NumeralTickFormatter(format="0.0a")
        incumbent = figure(title="incumbent (makespan)", **_common())
        incumbent.step("t", "incumbent", source=self.series, mode="after", line_width=2, color="firebrick")
        self.layout = gridplot([[remaining, rate], [incumbent, self.activity.figure], [eta, None]],
                               sizing_mode="stretch_width")  # fmt: skip

    def draw(self, history: RunHistory) -> str:
        """Draw ``history``; returns the header's HTML."""
        t = np.asarray(history.t, dtype=float)
        nodes = np.asarray(history.nodes, dtype=float)
        left = (history.estimate_nodes, history.estimate_low, history.estimate_high)
        eta, low, high = eta_curve(t, nodes, *left)
        self.etas.data = {"t": t, "eta": _positive(eta), "low": _positive(low), "high": _positive(high)}
        eta_text = Eta(*(_nan_none(v[-1]) for v in left), recent_rate(t, nodes)).text()
        self.series.data = {"t": t, "remaining": _positive(history.remaining_fraction),
                            "incumbent": np.asarray(history.incumbent, dtype=float)}  # fmt: skip
        rate_t, rate = node_rate(t, nodes)
        self.rates.data = {"t": rate_t, "rate": rate}
        self.activity.draw(history, t)
        state = "closed" if history.closed else "live"
        speed = f"{rate[-1] / 1e6:.2f} M nodes/s" if rate.size else "no rate yet"
        if not eta_text:
            outgrown = history.estimate is not None and math.isnan(history.estimate_nodes[-1])
            eta_text = "ETA unknown (the run outgrew its last estimate)" if outgrown else "no ETA yet"
        return (f"<h3>pbbflow: {history.label} ({state})</h3><p>{history.t[-1]:.0f} s, "
                f"{history.nodes[-1]:,} nodes, {speed}, {history.remaining_fraction[-1]:.6%} of the space left, "
                f"{eta_text}, incumbent {history.incumbent[-1]}</p>")  # fmt: skip


class SpatialView:
    """A spatial run: the certified lower bound and the incumbent (the gap between them shaded),
    open boxes on a log scale, boxes/s, the activity."""

    def __init__(self) -> None:
        self.bounds = ColumnDataSource({"t": [], "lower": [], "upper": []}, name="pbbflow-bounds")
        self.boxes = ColumnDataSource({"t": [], "boxes": []}, name="pbbflow-boxes")
        self.rates = ColumnDataSource({"t": [], "rate": []}, name="pbbflow-box-rates")
        self.activity = ActivityFigure("pbbflow-box-activity")
        bounds = figure(title="certified lower bound (LB) and incumbent (UB)", **_common())
        bounds.varea_step("t", "lower", "upper", source=self.bounds, step_mode="after", color="purple", alpha=0.15)
        bounds.step("t", "upper", source=self.bounds, mode="after", line_width=2, color="firebrick", legend_label="UB")
        bounds.step("t", "lower", source=self.bounds, mode="after", line_width=2, legend_label="LB")
        bounds.legend.location = "bottom_right"
        boxes = figure(title="open boxes", y_axis_type="log", **_common())
        boxes.step("t", "boxes", source=self.boxes, mode="after", line_width=2)
        rate = figure(title="boxes / s", **_common())
        rate.step("t", "rate", source=self.rates, mode="before", line_width=2, color="darkorange")
        rate.yaxis.formatter = NumeralTickFormatter(format="0.0a")
        self.layout = gridplot([[bounds, boxes], [rate, self.activity.figure]], sizing_mode="stretch_width")

    def draw(self, history: RunHistory) -> str:
        """Draw ``history``; returns the header's HTML."""
        t = np.asarray(history.t, dtype=float)
        self.bounds.data = {"t": t, "lower": _finite(history.lower_bound), "upper": _finite(history.incumbent)}
        self.boxes.data = {"t": t, "boxes": _positive(history.pieces)}
        rate_t, rate = node_rate(t, np.asarray(history.nodes, dtype=float))
        self.rates.data = {"t": rate_t, "rate": rate}
        self.activity.draw(history, t)
        state = "closed" if history.closed else "live"
        speed = f"{rate[-1]:,.0f} boxes/s" if rate.size else "no rate yet"
        return (f"<h3>pbbflow: {history.label} ({state})</h3><p>{history.t[-1]:.0f} s, "
                f"{bounds_text(history.lower_bound[-1], history.incumbent[-1])}, "
                f"{history.pieces[-1]:,} open boxes, {speed}, {history.nodes[-1]:,} boxes bounded</p>")  # fmt: skip


VIEWS = {"flowshop": FlowShopView, "spatial": SpatialView}  # run kind -> its view; others: flow shop's
