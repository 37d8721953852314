"""The spatial view of the dashboard page (``viz.dashboard``): the certified lower bound and the
incumbent on one figure, the open boxes and boxes/s, beside the workers' activity."""

from __future__ import annotations

import numpy as np
from bokeh.layouts import gridplot
from bokeh.models import ColumnDataSource, NumeralTickFormatter
from bokeh.plotting import figure

from ..viz.dashboard import ActivityFigure, figure_options, positive
from ..workflow.history import RunHistory, node_rate
from .summary import bounds_text, finite


class SpatialView:
    """A spatial run: the certified lower bound and the incumbent (the gap between them shaded),
    open boxes on a log scale, boxes/s, the activity."""

    def __init__(self) -> None:
        self.bounds = ColumnDataSource({"t": [], "lower": [], "upper": []}, name="pbbflow-bounds")
        self.boxes = ColumnDataSource({"t": [], "boxes": []}, name="pbbflow-boxes")
        self.rates = ColumnDataSource({"t": [], "rate": []}, name="pbbflow-box-rates")
        self.activity = ActivityFigure("pbbflow-box-activity")
        bounds = figure(title="certified lower bound (LB) and incumbent (UB)", **figure_options())
        bounds.varea_step("t", "lower", "upper", source=self.bounds, step_mode="after", color="purple", alpha=0.15)
        bounds.step("t", "upper", source=self.bounds, mode="after", line_width=2, color="firebrick", legend_label="UB")
        bounds.step("t", "lower", source=self.bounds, mode="after", line_width=2, legend_label="LB")
        bounds.legend.location = "bottom_right"
        boxes = figure(title="open boxes", y_axis_type="log", **figure_options())
        boxes.step("t", "boxes", source=self.boxes, mode="after", line_width=2)
        rate = figure(title="boxes / s", **figure_options())
        rate.step("t", "rate", source=self.rates, mode="before", line_width=2, color="darkorange")
        rate.yaxis.formatter = NumeralTickFormatter(format="0.0a")
        self.layout = gridplot([[bounds, boxes], [rate, self.activity.figure]], sizing_mode="stretch_width")

    def draw(self, history: RunHistory) -> str:
        """Draw ``history``; returns the header's HTML."""
        t = np.asarray(history.t, dtype=float)
        self.bounds.data = {"t": t, "lower": finite(history.lower_bound), "upper": finite(history.incumbent)}
        self.boxes.data = {"t": t, "boxes": positive(history.pieces)}
        rate_t, rate = node_rate(t, np.asarray(history.nodes, dtype=float))
        self.rates.data = {"t": rate_t, "rate": rate}
        self.activity.draw(history, t)
        state = "closed" if history.closed else "live"
        speed = f"{rate[-1]:,.0f} boxes/s" if rate.size else "no rate yet"
        return (
            f"<h3>pbbflow: {history.label} ({state})</h3><p>{history.t[-1]:.0f} s, "
            f"{bounds_text(history.lower_bound[-1], history.incumbent[-1])}, "
            f"{history.pieces[-1]:,} open boxes, {speed}, {history.nodes[-1]:,} boxes bounded</p>"
        )
