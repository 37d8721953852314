"""The pbbflow page of the Dask dashboard (Bokeh), served by the scheduler at ``/pbbflow``.

It shows the run opened last on the cluster, from the coordinator's history (sampled on the
scheduler every second), as its family's :class:`View` (``Family.dashboard_view``: flow shop's in
``flowshop.dashboard``, spatial's in ``spatial.dashboard``, built of the figures here); a family
without one gets :class:`HistoryView`: the remaining share of the space on a log scale, nodes/s,
the incumbent, the ETA and the busy share of each worker's explorers (threads or IVMs) over time.
A cluster without a run that decides a verification suite (``pbbflow verify --instances``) shows
it as :class:`SuiteView`: a table of its instances, from what its driver publishes on the
scheduler (``workflow.cluster.SUITE_METADATA``: plain JSON, set after each result).

Where it is served, and how a scheduler gets it: ``viz.page``.
"""

from __future__ import annotations

import html
import math
from typing import Any, Protocol

import numpy as np
from bokeh.layouts import column, gridplot
from bokeh.models import (
    ColorBar,
    ColumnDataSource,
    DataTable,
    Div,
    FixedTicker,
    LinearColorMapper,
    NumeralTickFormatter,
    TableColumn,
)
from bokeh.palettes import Viridis256
from bokeh.plotting import figure

from ..core.family import family
from ..core.progress import Eta
from ..workflow.cluster import SUITE_METADATA
from ..workflow.coordinator import PLUGIN_NAME
from ..workflow.eta import eta_curve, recent_rate
from ..workflow.history import RunHistory, node_rate

UPDATE_MS = 1000
IMAGE_COLUMNS = 512  # time columns of the activity image at most (1,000 workers: 2 MB per redraw)


def pbbflow_doc(scheduler, extra: dict, doc) -> None:
    """Bokeh document factory, called by the dashboard's server for every browser session."""
    page = RunPage(scheduler)
    page.update()
    doc.title = "pbbflow"
    doc.add_root(page.layout)
    doc.add_periodic_callback(page.update, UPDATE_MS)


class View(Protocol):
    """The figures of one family's runs on the page."""

    layout: Any  # its Bokeh layout, below the page's header

    def draw(self, history: RunHistory) -> str:
        """Draw ``history``; returns the header's HTML."""


def view_class(kind: str) -> type[View]:
    """The view of run kind ``kind``: its family's, else (none, or a kind not known in this
    process) :class:`HistoryView`."""
    try:
        own = getattr(family(kind), "dashboard_view", None)
    except ValueError:
        return HistoryView
    return HistoryView if own is None else own()


class RunPage:
    """The header and the figures of one browser session, drawn by the view of the shown run's
    family (a new view when the cluster's latest run is of another family)."""

    def __init__(self, scheduler) -> None:
        self.scheduler = scheduler
        self.shown: tuple | None = None  # (history, generation, samples, closed) last drawn
        self.header = Div(text="", name="pbbflow-header", sizing_mode="stretch_width")
        self.view: View = HistoryView()
        self.layout = column(self.header, self.view.layout, sizing_mode="stretch_width")

    def history(self) -> RunHistory | None:
        coordinator = self.scheduler.plugins.get(PLUGIN_NAME)
        return None if coordinator is None else coordinator.latest_history()

    def suite(self) -> dict | None:
        """The table a suite's driver published on this cluster, if any."""
        found = getattr(self.scheduler, "task_metadata", {})
        for key in SUITE_METADATA:
            found = found.get(key) if isinstance(found, dict) else None
        return found

    def update(self) -> None:
        """Redraw when the history has new samples (periodic callback of the session)."""
        history = self.history()
        if history is None:
            suite = self.suite()
            if suite is not None:
                self._show_suite(suite)
                return
            self.header.text = "<h3>pbbflow</h3><p>No pbbflow run on this cluster yet.</p>"
            return
        key = (id(history), history.generation, len(history), history.closed)
        if key == self.shown:
            return
        self.shown = key
        view = view_class(history.kind)
        if type(self.view) is not view:
            self.view = view()
            self.layout.children = [self.header, self.view.layout]
        self.header.text = self.view.draw(history)

    def _show_suite(self, suite: dict) -> None:
        key = ("suite", suite.get("store"), suite.get("version"), suite.get("state"))
        if key == self.shown:
            return
        self.shown = key
        if not isinstance(self.view, SuiteView):
            self.view = SuiteView()
            self.layout.children = [self.header, self.view.layout]
        self.header.text = self.view.draw(suite)


class SuiteView:
    """A verification suite: one row per instance (index, network, property, answer, seconds)."""

    columns = ("index", "network", "property", "answer", "seconds")

    def __init__(self) -> None:
        self.source = ColumnDataSource({c: [] for c in self.columns}, name="pbbflow-suite")
        columns = [TableColumn(field=c, title=c) for c in self.columns]
        self.layout = DataTable(
            source=self.source, columns=columns, index_position=None, height=600, sizing_mode="stretch_width"
        )

    def draw(self, suite: dict) -> str:
        """Draw the published ``suite``; returns the header's HTML."""
        rows = suite["rows"]
        self.source.data = {c: [row[k] for row in rows] for k, c in enumerate(self.columns)}
        counts = ", ".join(f"{n} {answer}" for answer, n in suite["counts"].items() if n)
        return (
            f"<h3>pbbflow: suite {html.escape(str(suite['store']))} ({html.escape(str(suite['state']))})</h3>"
            f"<p>{len(rows)} instances: {html.escape(counts)}</p>"
        )


def figure_options() -> dict:
    """The options of every figure of the page."""
    return {
        "height": 260,
        "sizing_mode": "stretch_width",
        "tools": "pan,wheel_zoom,box_zoom,reset,save",
        "x_axis_label": "elapsed (s)",
    }


def _nan_none(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def positive(values: list[float]) -> np.ndarray:
    """NaN where a value is not positive: a log axis draws no 0."""
    a = np.asarray(values, dtype=float)
    return np.where(a > 0, a, np.nan)


class ActivityFigure:
    """The busy share of each worker's explorers (threads or IVMs) over time, as an image."""

    def __init__(self, name: str) -> None:
        self.source = ColumnDataSource({"image": [], "dw": [], "dh": []}, name=name)
        self.figure = figure(title="busy share of each worker's explorers", y_axis_label="worker", **figure_options())
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


class HistoryView:
    """A run of a family without a view of its own, and the base of flow shop's: the remaining
    share of its space on a log scale, nodes/s, the incumbent, the activity, and the ETA with its
    range (the driver's estimate of the nodes left at the recent node rate, ``workflow.eta``)."""

    remaining_title = "remaining share of the space"
    incumbent_title = "incumbent"

    def __init__(self) -> None:
        self.series = ColumnDataSource({"t": [], "remaining": [], "incumbent": []}, name="pbbflow-series")
        self.rates = ColumnDataSource({"t": [], "rate": []}, name="pbbflow-rates")
        self.activity = ActivityFigure("pbbflow-activity")
        self.etas = ColumnDataSource({"t": [], "eta": [], "low": [], "high": []}, name="pbbflow-eta")
        eta = figure(title="estimated time left (s), with its range", y_axis_type="log", **figure_options())
        eta.varea("t", "low", "high", source=self.etas, color="seagreen", alpha=0.2)
        eta.line("t", "eta", source=self.etas, line_width=2, color="seagreen")
        remaining = figure(title=self.remaining_title, y_axis_type="log", **figure_options())
        remaining.step("t", "remaining", source=self.series, mode="after", line_width=2)
        rate = figure(title="nodes / s", **figure_options())
        rate.step("t", "rate", source=self.rates, mode="before", line_width=2, color="darkorange")
        rate.yaxis.formatter = NumeralTickFormatter(format="0.0a")
        incumbent = figure(title=self.incumbent_title, **figure_options())
        incumbent.step("t", "incumbent", source=self.series, mode="after", line_width=2, color="firebrick")
        self.layout = gridplot(
            [[remaining, rate], [incumbent, self.activity.figure], [eta, None]], sizing_mode="stretch_width"
        )

    def draw(self, history: RunHistory) -> str:
        """Draw ``history``; returns the header's HTML."""
        t = np.asarray(history.t, dtype=float)
        nodes = np.asarray(history.nodes, dtype=float)
        left = (history.estimate_nodes, history.estimate_low, history.estimate_high)
        eta, low, high = eta_curve(t, nodes, *left)
        self.etas.data = {"t": t, "eta": positive(eta), "low": positive(low), "high": positive(high)}
        eta_text = Eta(*(_nan_none(v[-1]) for v in left), recent_rate(t, nodes)).text()
        self.series.data = {
            "t": t,
            "remaining": positive(history.remaining_fraction),
            "incumbent": np.asarray(history.incumbent, dtype=float),
        }
        rate_t, rate = node_rate(t, nodes)
        self.rates.data = {"t": rate_t, "rate": rate}
        self.activity.draw(history, t)
        state = "closed" if history.closed else "live"
        speed = f"{rate[-1] / 1e6:.2f} M nodes/s" if rate.size else "no rate yet"
        if not eta_text:
            outgrown = history.estimate is not None and math.isnan(history.estimate_nodes[-1])
            eta_text = "ETA unknown (the run outgrew its last estimate)" if outgrown else "no ETA yet"
        return (
            f"<h3>pbbflow: {history.label} ({state})</h3><p>{history.t[-1]:.0f} s, "
            f"{history.nodes[-1]:,} nodes, {speed}, {history.remaining_fraction[-1]:.6%} of the space left, "
            f"{eta_text}, incumbent {history.incumbent[-1]}</p>"
        )
