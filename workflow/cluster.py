"""Cluster factory: a Dask ``Client`` on a local cluster, an existing scheduler or Slurm jobs.

Nothing here knows about flow shops; every solver family gets its workers through
:func:`open_cluster`.  All schedulers bind to loopback unless told otherwise, so tests and
laptops never expose a port.  Dask loads in the functions that start or reach a cluster, not with
this module: the command line's parser reads its settings (``CONNECT_SECONDS``), and
``pbbflow --help`` needs no Dask.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.compiling import usable_cores
from ..core.devices import gpu_count
from ..core.errors import ClusterError

if TYPE_CHECKING:
    from distributed import Client, LocalCluster

KINDS = ("local", "address", "slurm")
LOOPBACK = "127.0.0.1"
CONNECT_SECONDS = 10.0  # how long a connection to a running scheduler may take
WORKER_PROFILE = "distributed.worker.profile.enabled"
# Dask's settings for the clusters pbbflow starts, while they are open (Slurm jobs get them through
# their environment).  Their explorers are fork-join numba loops over every core, and every wake-up
# of another thread of the process delays a loop's slowest thread.  By default the worker samples
# every thread's stack every 10 ms for its profile page (a spatial explorer's stack is deep Python);
# the scheduler's and each worker's event loop "tick" 50 times a second to see whether they are
# blocked (one second still tells a loop blocked for seconds, Dask's warning threshold), and the
# worker reads its process's memory 10 times a second (pbbflow's tasks hold their own data).
QUIET_DASK = {
    WORKER_PROFILE: False,
    "distributed.admin.tick.interval": "1s",
    "distributed.worker.memory.monitor-interval": "1s",
}
HTTP_PREFIX = "/"  # the http_prefix of the schedulers started here (Dask's default)
# where a verification suite's driver publishes its table on the scheduler (``Client.set_metadata``),
# which the dashboard page shows
SUITE_METADATA = ("pbbflow", "suite")
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DashboardPage:
    """A page that the dashboards of the schedulers started here serve (``viz.page``: pbbflow's)."""

    register: Callable[[], None]  # adds it to the dashboards started from now on in this process
    url: Callable[[str], str]  # its URL on the dashboard whose status page is the argument


_page: DashboardPage | None = None  # set_dashboard_page's


def set_dashboard_page(page: DashboardPage) -> None:
    """Serve ``page`` on the dashboards of the clusters opened from now on (registered before their
    schedulers start) and link to it (:func:`dashboard_link`)."""
    global _page
    _page = page


def _register_page() -> None:
    if _page is not None:
        _page.register()


def dask_environment(config: dict) -> list[str]:
    """``config`` as shell lines exporting Dask's environment variables (``DASK_A__B__C=value``)."""
    return [f"export DASK_{key.upper().replace('.', '__').replace('-', '_')}={value}" for key, value in config.items()]


@dataclass
class SlurmOptions:
    """What one Slurm job of Dask workers asks for, and how many jobs to run.

    ``gpus_per_job > 0`` makes GPU jobs: ``--gres=gpu:N`` and one ``dask_cuda`` worker per
    GPU, each with two threads (the GPU explorer and iterated greedy beside it), the
    resource ``GPU=1`` and an equal share of ``memory``.
    ``interface`` (e.g. ``"ib0"``) is for real multi-node clusters; without it (and without a
    ``jobqueue.slurm`` interface/host in the Dask config) the scheduler listens on 127.0.0.1,
    which only workers on the same host can reach.  With ``tls`` the workers' temporary
    certificates go (mode 0600, deleted at close) to ``log_directory``, else the current
    directory: either must be on a filesystem the compute nodes share.
    """

    partition: str | None = None
    account: str | None = None
    jobs: int = 1
    cores: int = 1
    memory: str = "4GB"
    walltime: str = "01:00:00"
    gpus_per_job: int = 0
    extra_directives: list[str] = field(default_factory=list)
    prologue: list[str] = field(default_factory=list)
    log_directory: str | os.PathLike[str] | None = None
    python: str = sys.executable
    tls: bool = False
    interface: str | None = None
    start_timeout: float = 600.0


def import_jobqueue() -> None:
    """Import ``dask_jobqueue`` without letting it touch the process's SIGINT handler: its runner
    module installs one (``sys.exit``) when imported, which would end a run on Ctrl-C without its
    final checkpoint, and which raises ValueError in any thread but the main one (where the
    clusters open).  Call it from the main thread first: the import then overlaps nothing."""
    if "dask_jobqueue" in sys.modules:
        return
    install = signal.signal
    signal.signal = lambda signalnum, handler: signal.getsignal(signalnum)
    try:
        import dask_jobqueue  # noqa: F401
    finally:
        signal.signal = install


def _slurm_cluster(slurm: SlurmOptions, dashboard_address: str):
    """A ``SLURMCluster`` for ``slurm`` (starts its scheduler, submits no job)."""
    import_jobqueue()
    import dask.config
    from dask.utils import parse_bytes
    from dask_jobqueue import SLURMCluster
    from distributed.security import Security

    if slurm.jobs < 1 or slurm.cores < 1 or slurm.gpus_per_job < 0:
        raise ClusterError("Slurm options need jobs >= 1, cores >= 1 and gpus_per_job >= 0")
    try:
        memory = parse_bytes(slurm.memory)
    except ValueError:
        raise ClusterError(f"invalid Slurm memory {slurm.memory!r} (examples: 4GB, 500MB)") from None
    directives = list(slurm.extra_directives)
    worker_args: list[str] = []
    worker_command = "distributed.cli.dask_worker"
    if slurm.gpus_per_job:
        directives.insert(0, f"--gres=gpu:{slurm.gpus_per_job}")
        worker_command = "dask_cuda.cli"
        # jobqueue passes --nthreads/--memory-limit for the whole job; dask-cuda applies them per GPU
        # worker, and click keeps the last value, so override them here.
        worker_args += ["--resources", "GPU=1", "--nthreads", "2", "--memory-limit", str(memory // slurm.gpus_per_job)]
    interface = slurm.interface or dask.config.get("jobqueue.slurm.interface", None)
    scheduler_options = dict(dask.config.get("jobqueue.slurm.scheduler-options", None) or {})
    scheduler_options["dashboard_address"] = dashboard_address
    if interface is None and "interface" not in scheduler_options:
        scheduler_options.setdefault("host", LOOPBACK)
    if scheduler_options.get("host") == LOOPBACK:
        worker_args += ["--host", LOOPBACK]  # TLS workers would otherwise listen on an external address
    log_directory = None
    if slurm.log_directory is not None:  # jobqueue creates it too, but only after writing TLS files
        log_directory = str(Path(slurm.log_directory))
        os.makedirs(log_directory, exist_ok=True)
    shared = dask.config.get("jobqueue.slurm.shared-temp-directory", None) or log_directory or os.getcwd()
    return SLURMCluster(
        queue=slurm.partition,
        account=slurm.account,
        cores=slurm.cores,
        memory=slurm.memory,
        # CPU jobs: one single-threaded worker per core, like the local default (measured faster
        # than one worker with a thread per core: benchmarks/workflow_overhead.py)
        processes=1 if slurm.gpus_per_job else slurm.cores,
        walltime=slurm.walltime,
        job_extra_directives=directives,
        job_script_prologue=[*dask_environment(QUIET_DASK), *slurm.prologue],
        log_directory=log_directory,
        shared_temp_directory=shared,
        python=slurm.python,
        interface=interface,
        security=Security.temporary() if slurm.tls else None,
        scheduler_options=scheduler_options,
        worker_command=worker_command,
        worker_extra_args=worker_args,
    )


def slurm_job_script(slurm: SlurmOptions) -> str:
    """The batch script one Slurm job would run; submits nothing (the scheduler it names is closed again)."""
    cluster = _slurm_cluster(slurm, dashboard_address="127.0.0.1:0")
    try:
        return cluster.job_script()
    finally:
        cluster.close()


def _check_job_script(script: str) -> None:
    """Raise ClusterError when Slurm would reject ``script`` (``sbatch --test-only`` submits nothing)."""
    with tempfile.NamedTemporaryFile("w", suffix=".sh") as f:
        f.write(script)
        f.flush()
        try:
            test = subprocess.run(
                ["sbatch", "--test-only", f.name], capture_output=True, text=True, timeout=60, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ClusterError(f"sbatch --test-only failed: {exc}") from None
    if test.returncode != 0:
        lines = [line.strip() for line in test.stderr.splitlines() if line.strip()]
        why = "; ".join(lines) or f"exit {test.returncode}"
        raise ClusterError(f"Slurm rejects the worker job: {why}")


def _close_cluster(cluster) -> None:
    """Close ``cluster``; a failure is logged, so it cannot hide the error that led here."""
    try:
        cluster.close()
    except Exception:  # e.g. jobqueue asserts on jobs whose submission failed
        logger.warning("closing the Dask cluster failed", exc_info=True)


def _local_scheduler(client: Client):
    """The scheduler of ``client``'s cluster when it runs in this process, else None."""
    return getattr(getattr(client, "cluster", None), "scheduler", None)


def dashboard_pending(client: Client) -> bool:
    """Whether ``client``'s scheduler runs in this process without its dashboard (the local
    clusters start so: see :func:`attach_dashboard`)."""
    scheduler = _local_scheduler(client)
    if scheduler is None:
        return False
    bokeh = sys.modules.get("bokeh.server.tornado")  # not imported: no dashboard anywhere in this process
    applications = scheduler.http_application.applications
    return bokeh is None or not any(isinstance(app, bokeh.BokehTornado) for app in applications)


def attach_dashboard(client: Client) -> None:
    """Serve the Dask dashboard, with the page (:func:`set_dashboard_page`), from the HTTP server of
    ``client``'s scheduler where it runs in this process without one; other schedulers are left alone.
    Bokeh loads in the calling thread; the scheduler's event loop only connects the pages."""
    if not dashboard_pending(client):
        return
    import distributed.dashboard.scheduler as dashboard
    from distributed.utils import sync

    scheduler = _local_scheduler(client)

    async def connect() -> None:
        if dashboard_pending(client):  # checked again on the loop: attached once, whoever calls
            _register_page()
            dashboard.connect(scheduler.http_application, scheduler.http_server, scheduler, prefix=HTTP_PREFIX)

    sync(scheduler.loop, connect)


def connected_workers(client: Client) -> dict[str, dict]:
    """The workers connected to ``client``'s scheduler now, by address, with what the scheduler
    knows of each (its resources, threads, memory).

    Asks the scheduler: ``Client.scheduler_info()`` returns the client's cache, which the client's
    own refresh every 2 s (one that fetches no workers) can overwrite between that call's fetch and
    its return, so it may name no worker at all.
    """
    return client.sync(client.scheduler.identity, n_workers=-1)["workers"]


def threads_here(workers: dict[str, dict]) -> int:
    """The threads of the workers (``connected_workers``) that run on this host: in this process,
    on the loopback, or at one of this host's addresses."""
    here = {LOOPBACK, "::1", "localhost", socket.gethostname()}
    with contextlib.suppress(OSError):
        here |= {a[4][0] for a in socket.getaddrinfo(socket.gethostname(), None)}
    threads = 0
    for address, info in workers.items():
        parts = urllib.parse.urlsplit(address)
        if parts.scheme == "inproc" or parts.hostname in here:
            threads += int(info.get("nthreads", 1))
    return threads


def dashboard_link(client: Client) -> str | None:
    """The URL of the page (:func:`set_dashboard_page`) on ``client``'s scheduler's dashboard, or of
    the Dask dashboard when there is none or the scheduler does not serve it (one started elsewhere
    without the preload ``pbbflow.viz.preload``); None when it has no dashboard (yet:
    :func:`dashboard_pending`)."""
    if dashboard_pending(client):
        return None
    try:
        link = client.dashboard_link or None
        if link and client.scheduler.address.startswith("inproc://"):  # Dask names the host, not the loopback
            port = client.scheduler_info()["services"]["dashboard"]
            link = f"http://{LOOPBACK}:{port}/status"
    except (AttributeError, KeyError):
        return None
    if link is None or _page is None:
        return link
    import urllib.request  # here: with http.client and ssl, 30 ms a command that opens no cluster never pays

    page = _page.url(link)
    try:  # the page answers only where it was registered before the dashboard started
        with urllib.request.urlopen(page, timeout=10) as response:
            return page if response.status == 200 else link
    except OSError:
        return link


def resolve_gpus(gpus: int | str | None) -> int:
    """GPUs for a local cluster: ``None`` = every visible GPU (0 without one), ``"all"`` = every
    visible GPU (at least one), ``N`` = exactly N visible GPUs."""
    if gpus is None:
        return gpu_count()
    visible = gpu_count()
    if gpus == "all":
        if visible == 0:
            raise ClusterError("--gpus all: no GPU is visible (check the driver and CUDA_VISIBLE_DEVICES)")
        return visible
    if not isinstance(gpus, int) or gpus < 0:
        raise ClusterError(f"gpus must be a number >= 0 or 'all', not {gpus!r}")
    if gpus > visible:
        raise ClusterError(f"{gpus} GPU(s) asked for, but {visible} visible (check CUDA_VISIBLE_DEVICES)")
    return gpus


def _in_process_cluster(dashboard_address: str, **options) -> LocalCluster:
    """A LocalCluster of worker threads in this process whose HTTP servers listen on the loopback
    and start no Bokeh (0.35 s of the start-up: :func:`attach_dashboard` adds it later)."""
    from distributed import LocalCluster, Worker

    class PlainWorker(Worker):
        """A worker whose HTTP server (on its ``dashboard_address``) serves no Bokeh pages: LocalCluster
        turns them on for any worker dashboard address, and without one the server listens on the
        host's address, not the loopback."""

        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **{**kwargs, "dashboard": False})

    return LocalCluster(
        processes=False,
        dashboard_address=dashboard_address,
        scheduler_kwargs={"dashboard": False},
        worker_class=PlainWorker,
        worker_dashboard_address=f"{LOOPBACK}:0",
        **options,
    )


def _local_gpu_cluster(gpus: int, dashboard_address: str):
    """One GPU: a LocalCluster whose one worker (the resource GPU=1, two threads: the GPU
    explorer's and one for iterated greedy beside it) runs in this process on the first visible
    GPU, like the CPU cluster: no worker process to start (3.3 s of the 7.4 s a warm ta021 took
    on an H200 with one) and no port.  More GPUs: a LocalCUDACluster of one worker process per
    GPU, same resources, speaking TLS with credentials made for this cluster alone, so that no
    other local user can connect to it and run code."""
    if gpus == 1:
        return _in_process_cluster(dashboard_address, n_workers=1, threads_per_worker=2, resources={"GPU": 1})
    from dask_cuda import LocalCUDACluster
    from distributed.security import Security

    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    devices = [d.strip() for d in visible.split(",")][:gpus] if visible else list(range(gpus))
    return LocalCUDACluster(
        host=LOOPBACK,
        CUDA_VISIBLE_DEVICES=devices,
        n_workers=gpus,
        threads_per_worker=2,
        resources={"GPU": 1},
        dashboard_address=dashboard_address,
        security=Security.temporary(),
        protocol="tls",
    )


def _local_cpu_cluster(
    workers: int | None, threads_per_worker: int | None, dashboard_address: str, processes: bool = False
):
    """A LocalCluster of worker threads in this process (default: one single-threaded worker per
    core; the numba code releases the GIL): it starts in a fraction of a second, and it talks over
    an in-memory transport, so it listens on no port that another local user could reach. With
    ``processes``, one worker process each instead, on 127.0.0.1 over TLS with credentials made for
    this cluster alone (as :func:`_local_gpu_cluster`'s for several GPUs)."""
    n = workers or max(1, usable_cores() // (threads_per_worker or 1))
    threads = threads_per_worker or max(1, usable_cores() // n)
    if not processes:
        return _in_process_cluster(dashboard_address, n_workers=n, threads_per_worker=threads)
    from distributed import LocalCluster
    from distributed.security import Security

    return LocalCluster(  # its scheduler runs here without Bokeh, as the in-process one: attach_dashboard
        host=LOOPBACK,
        n_workers=n,
        threads_per_worker=threads,
        dashboard_address=dashboard_address,
        scheduler_kwargs={"dashboard": False},
        worker_dashboard_address=None,
        security=Security.temporary(),
        protocol="tls",
    )


async def _identity(address: str, timeout: float) -> dict:
    """What the server at ``address`` says it is (Dask's ``identity`` call), all within ``timeout``."""
    import asyncio  # here: the command line imports this module, and minimize needs no event loop

    from distributed.comm import connect
    from distributed.security import Security

    async def ask() -> dict:
        comm = await connect(address, timeout=timeout, **Security().get_connection_args("client"))
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    return await asyncio.wait_for(ask(), timeout)


def _connect(scheduler: str, timeout: float) -> Client:
    """A Client of the Dask scheduler at ``scheduler``; ClusterError (one line) when nothing answers
    there as a Dask scheduler within ``timeout`` seconds (a dead port, a silent listener such as a
    dashboard port, another service)."""
    import asyncio

    from distributed import Client

    if "://" not in scheduler and not re.fullmatch(r"[\w.\-]+:\d+", scheduler):
        raise ClusterError(f"invalid scheduler address {scheduler!r} (example: tcp://head:8786)")
    what = f"no Dask scheduler answered at {scheduler} within {timeout:g} s"
    try:  # Client alone waits for ever on a listener that never answers, and may read a banner as a frame size
        identity = asyncio.run(_identity(scheduler, timeout))
    except TimeoutError:
        raise ClusterError(what) from None
    except OSError as exc:  # refused, unknown host (distributed retries those until the timeout)
        raise ClusterError(f"{what} ({exc})") from None
    except Exception:  # noqa: BLE001 (garbage read as Dask's frames: MemoryError, ValueError, ...)
        raise ClusterError(f"{scheduler} does not speak Dask's protocol (is it the scheduler's port?)") from None
    if not isinstance(identity, dict) or identity.get("type") != "Scheduler":
        kind = identity.get("type") if isinstance(identity, dict) else type(identity).__name__
        raise ClusterError(f"{scheduler} is not a Dask scheduler (it says it is a {kind})")
    try:
        return Client(scheduler, timeout=timeout)
    except Exception as exc:  # noqa: BLE001 (it went away between the two connections)
        raise ClusterError(f"{what} ({type(exc).__name__}: {exc})") from None


def _check(kind: str, workers, threads_per_worker, scheduler, slurm) -> None:
    """Raise ClusterError for argument combinations that make no sense."""
    if kind not in KINDS:
        raise ClusterError(f"unknown cluster kind {kind!r} (choose from {', '.join(KINDS)})")
    if (kind == "address") != (scheduler is not None):
        raise ClusterError("a scheduler address goes with kind 'address', and kind 'address' needs one")
    if kind != "local" and (workers is not None or threads_per_worker is not None):
        raise ClusterError(f"workers/threads_per_worker apply to a local cluster, not to kind {kind!r}")
    if kind != "slurm" and slurm is not None:
        raise ClusterError(f"Slurm options given for kind {kind!r}")
    if (workers is not None and workers < 1) or (threads_per_worker is not None and threads_per_worker < 1):
        raise ClusterError("workers and threads_per_worker must be at least 1")
    if kind == "slurm" and shutil.which("sbatch") is None:
        raise ClusterError("sbatch not found: is Slurm installed?")


@contextlib.contextmanager
def open_cluster(
    kind: str = "local",
    *,
    workers: int | None = None,
    threads_per_worker: int | None = None,
    scheduler: str | None = None,
    slurm: SlurmOptions | None = None,
    gpus: int | str | None = 0,
    dashboard_address: str = "127.0.0.1:0",
    connect_timeout: float = CONNECT_SECONDS,
    processes: bool = False,
) -> Iterator[Client]:
    """Yield a Client on a cluster of ``kind``; close what was opened here on exit, also on errors.

    - ``"local"``: with ``gpus`` (see :func:`resolve_gpus`; 0: none) a GPU worker in this process
      for one GPU, a LocalCUDACluster of one worker process per GPU on 127.0.0.1 over TLS for
      more; else a LocalCluster in this process of
      ``workers`` workers (default: one per core, or the cores divided by ``threads_per_worker``)
      with ``threads_per_worker`` threads (default: the usable cores shared out between them);
      with ``processes``, those workers are processes on 127.0.0.1 over TLS (for tasks that hold
      the GIL: a verification suite's).
    - ``"address"``: connect to the running scheduler at ``scheduler`` (within
      ``connect_timeout`` seconds); only the client is closed.
    - ``"slurm"``: submit ``slurm.jobs`` Slurm jobs of workers and wait for the first worker.
    ``dashboard_address`` is where a scheduler started here serves its dashboard (port 0: any
    free port; see :func:`dashboard_link`); the local clusters of one process serve it only once
    :func:`attach_dashboard` has added it.
    """
    import dask.config
    from distributed import Client

    _check(kind, workers, threads_per_worker, scheduler, slurm)
    slurm = slurm or SlurmOptions()
    with contextlib.ExitStack() as stack:
        if kind == "address":
            client = _connect(scheduler, connect_timeout)
        else:
            # An in-process cluster's batched comms log their closing at INFO, with a traceback, after
            # LocalCluster has put back the log level it lowered: seen at the end of successful runs.
            logging.getLogger("distributed.batched").setLevel(logging.WARNING)
            devices = resolve_gpus(gpus) if kind == "local" else 0
            # Local workers and schedulers read this config; LocalCUDACluster's workers get it from
            # their nanny, Slurm's from the job's environment (README, Performance).
            stack.enter_context(dask.config.set(QUIET_DASK))
            if kind == "slurm" or devices > 1:  # their schedulers start here with the dashboard: add the page
                _register_page()
            if devices:
                cluster = _local_gpu_cluster(devices, dashboard_address)
            elif kind == "local":
                cluster = _local_cpu_cluster(workers, threads_per_worker, dashboard_address, processes)
            else:
                cluster = _slurm_cluster(slurm, dashboard_address)
            stack.callback(_close_cluster, cluster)
            if kind == "slurm":
                _check_job_script(cluster.job_script())
            client = Client(cluster)
        stack.callback(client.close)
        if kind == "slurm":
            cluster.scale(jobs=slurm.jobs)
            try:
                client.wait_for_workers(1, timeout=slurm.start_timeout)
            except TimeoutError:
                logs = f"; job logs in {slurm.log_directory}" if slurm.log_directory else ""
                raise ClusterError(
                    f"no Slurm worker connected within {slurm.start_timeout:g} s: "
                    f"check the jobs with `squeue --me`{logs}"
                ) from None
        yield client
