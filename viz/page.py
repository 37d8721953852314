"""Where the pbbflow page (``viz.dashboard``) is served: ``/pbbflow`` on the Dask dashboard.

The page must be registered before the scheduler's dashboard starts, in the scheduler's
process.  Importing this module (light: Bokeh loads only when a dashboard starts) makes it the
page of the clusters that ``workflow.cluster`` opens (their schedulers run in the client's
process): registered before a Slurm or local CUDA cluster starts, and on the scheduler's loop
when a local cluster of one process gets its dashboard later (``attach_dashboard``), and the
target of ``dashboard_link``.  An external scheduler gets it with ``dask scheduler --preload
pbbflow.viz.preload``.
"""

from __future__ import annotations

from ..workflow.cluster import DashboardPage, set_dashboard_page

ROUTE = "/pbbflow"


def register_page() -> None:
    """Add the page to the scheduler dashboards started from now on in this process."""
    from distributed.dashboard import scheduler as dashboard

    from .dashboard import pbbflow_doc

    dashboard.applications.setdefault(ROUTE, pbbflow_doc)


def page_url(dashboard_link: str | None) -> str | None:
    """The page's URL on the dashboard whose status page is ``dashboard_link``."""
    if not dashboard_link:
        return None
    return dashboard_link.rsplit("/", 1)[0] + ROUTE


set_dashboard_page(DashboardPage(register_page, page_url))
