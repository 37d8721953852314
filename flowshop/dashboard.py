"""The flow-shop view of the dashboard page (``viz.dashboard``): the common history view, its
panels named for intervals of [0, n!) and makespans."""

from __future__ import annotations

from ..viz.dashboard import HistoryView


class FlowShopView(HistoryView):
    """A flow-shop run: the remaining share of [0, n!) on a log scale, nodes/s, the incumbent, the
    activity, and the ETA with its range (the driver's estimate of the nodes left at the recent
    node rate, ``workflow.eta``)."""

    remaining_title = "remaining share of [0, n!)"
    incumbent_title = "incumbent (makespan)"
