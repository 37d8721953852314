"""The start of ``pbbflow solve`` and ``resume``, overlapped and timed.

The cluster opens on a thread, whose workers then load (or compile) their numba code, while
the client loads its own and prepares the run; the seconds of every phase go into the JSON
output as ``startup``.  The thread's phases (``cluster_s``, then ``workers_code_s``, which
includes checking the dashboard link of a scheduler that serves its dashboard already, then
``store_code_s``: importing the run store's library) overlap
the client's (``client_code_s``, ``initial_heuristic_s``); ``wait_s`` is how long the client then
waited for the thread.  The local clusters of one process start without their dashboard (Bokeh:
0.35 s of Python holding the GIL); a run still going ``dashboard_after`` seconds (default
``DASHBOARD_DELAY_S``) after the cluster is ready gets it then, on the thread, beside the search:
``dashboard_s`` (absent for shorter runs) times adding it and checking its link.  The thread blocks the signals that stop a run
(``signals.SIGNALS``), and so do the cluster's threads and the worker processes it starts: those
signals are for the driver.
``compile_s`` is the longest code load that compiled (0 when numba's cache held everything);
the search's ``elapsed_s`` and nodes/s never include it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from ..core.compiling import CodeLoad, FirstRunNotice, compiled_line
from ..storage.runstore import zarr_module
from ..viz import page  # noqa: F401 (the pbbflow page: served by the clusters opened here, linked to)
from ..workflow.cluster import attach_dashboard, dashboard_link, dashboard_pending
from ..workflow.worker_code import loaded_code, submit_warm_workers
from .signals import block_in_this_thread

if TYPE_CHECKING:
    from distributed import Client

# runs shorter than this after start-up start no dashboard.  Measured on an H200: adding it takes
# 1.2-1.6 s of Python that holds the GIL, which the in-process GPU worker's launches need (ta021's
# 1.3 s search took 2.1-2.8 s with it at 1 s), so short runs must not pay it.
DASHBOARD_DELAY_S = 5.0
logger = logging.getLogger(__name__)


def process_age() -> float | None:
    """Seconds since this process started (from ``/proc``, to 10 ms); None where unknown."""
    try:
        with open("/proc/self/stat") as stat, open("/proc/uptime") as uptime:
            started = int(stat.read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
            return max(0.0, float(uptime.read().split()[0]) - started)
    except (OSError, ValueError, IndexError):
        return None


class Startup:
    """A cluster opening on a thread, then loading its workers' code, then adding its dashboard
    where the run lasts; a context manager that closes it.  ``link`` is the dashboard's, once known."""

    def __init__(
        self,
        cluster: Callable[[], AbstractContextManager[Client]],
        worker_code: tuple[Callable[..., CodeLoad], tuple],
        dashboard_after: float | None = None,
        notice: FirstRunNotice | None = None,
    ) -> None:
        """``worker_code``: ``(function, arguments)`` of the task that loads a worker's code (a run
        instance's ``worker_code``); ``dashboard_after``: seconds after start-up before a local
        cluster gets its dashboard (default ``DASHBOARD_DELAY_S``); ``notice``: a first run's,
        started, which :meth:`tell_compile` ends."""
        self.notice = notice
        self.times: dict[str, float | None] = {"imports_s": process_age()}
        self.dashboard_after = DASHBOARD_DELAY_S if dashboard_after is None else dashboard_after
        self.client: Client | None = None
        self.link: str | None = None
        self.loads: list[CodeLoad] = []
        self._context: AbstractContextManager[Client] | None = None
        self._error: BaseException | None = None
        self._opened = threading.Event()
        self._ready = threading.Event()
        self._closing = threading.Event()
        self._thread = threading.Thread(
            target=self._open, args=(cluster, worker_code), name="pbbflow-startup", daemon=True
        )
        self._thread.start()

    def _open(
        self, cluster: Callable[[], AbstractContextManager[Client]], worker_code: tuple[Callable[..., CodeLoad], tuple]
    ) -> None:
        block_in_this_thread()  # the cluster's threads and worker processes inherit it: signals are the driver's
        try:
            with self.phase("cluster_s"):
                context = cluster()
                self.client = context.__enter__()
                self._context = context
            self._opened.set()
            with self.phase("workers_code_s"):
                loads = submit_warm_workers(self.client, *worker_code)
                deferred = dashboard_pending(self.client)
                if not deferred:
                    self.link = dashboard_link(self.client)
                self.loads += loaded_code(loads).values()
            with self.phase("store_code_s"):  # beside the client's initial heuristic, which frees the GIL
                zarr_module()
        except BaseException as error:  # noqa: BLE001 (raised again by ready(), in the caller's thread)
            self._error = error
            return
        finally:
            self._opened.set()
            self._ready.set()
        if deferred and not self._closing.wait(self.dashboard_after):
            self._add_dashboard()

    def _add_dashboard(self) -> None:
        """Serve the dashboard of the cluster opened here and find its link, timed as ``dashboard_s``;
        the run goes on without it where that fails."""
        try:
            with self.phase("dashboard_s"):
                attach_dashboard(self.client)
                self.link = dashboard_link(self.client)
        except Exception:  # noqa: BLE001 (the dashboard is for watching; the search does not need it)
            logger.warning("the Dask dashboard could not be started", exc_info=True)

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the block as ``name``."""
        began = time.perf_counter()
        yield
        self.times[name] = (self.times.get(name) or 0.0) + time.perf_counter() - began

    def load_client_code(self, code: Callable[[], CodeLoad]) -> None:
        """Load the client's numba code here: ``code()`` (e.g. flow shop's ``warm_client``), timed."""
        load = code()
        self.loads.append(load)
        self.times["client_code_s"] = load.seconds

    def opened(self) -> None:
        """Return once the cluster is open (its workers may still be loading their code); raises what
        failed there.  A new run store is written only after this, so a cluster that cannot open
        leaves none behind."""
        with self.phase("wait_s"):
            self._opened.wait()
        if self._error is not None:
            raise self._error

    def ready(self) -> Client:
        """The client, once the cluster is open and its workers' code loaded; raises what failed there."""
        with self.phase("wait_s"):
            self._ready.wait()
        if self._error is not None:
            raise self._error
        return self.client

    def compile_seconds(self) -> float:
        """How long a first run waited for its code: the notice's clock, else the longest code load
        that compiled; 0.0 when numba's cache held everything."""
        compiled = max((load.seconds for load in self.loads if load.compiled), default=0.0)
        return max(compiled, (self.notice and self.notice.seconds) or 0.0)

    def tell_compile(self, stream) -> None:
        """Once the code is loaded: end the first run's notice with its figure, or, where numba
        compiled though its cache looked warm, give the figure alone."""
        if self.notice is not None:
            self.notice.finish()
        elif self.compile_seconds():
            print(compiled_line(self.compile_seconds()), file=stream)

    def close(self) -> None:
        """Close the cluster once the thread is done (a dashboard not started yet never starts),
        timed as ``close_s``."""
        self._closing.set()
        if self.notice is not None:
            self.notice.finish(report=False)  # a start-up that failed: its ticker stops
        self._thread.join()
        context, self._context = self._context, None
        if context is not None:
            with self.phase("close_s"):
                context.__exit__(None, None, None)

    def breakdown(self) -> dict[str, float | None]:
        """The phases' seconds, ``compile_s``, and ``total_s`` from the process's start until now."""
        age = process_age()
        times = {**self.times, "compile_s": self.compile_seconds(), "total_s": age}
        return {k: None if v is None else round(v, 3) for k, v in times.items()}

    def __enter__(self) -> Startup:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
