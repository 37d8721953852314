"""Driving a run from the command line, for every family: its cluster, its progress, its result
and its failures (``solve``, ``resume`` and ``minimize --run``)."""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import shlex
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.compiling import FirstRunNotice
from ..core.errors import ClusterError
from ..core.files import open_append
from ..core.progress import Progress
from ..core.result import Result, Status
from ..core.text import printable
from ..storage.runstore import RunStore
from ..workflow.cluster import SlurmOptions, import_jobqueue, open_cluster, resolve_gpus
from .progress import ProgressBar
from .results import print_json, print_result
from .signals import StopSignals
from .startup import Startup

if TYPE_CHECKING:
    from ..workflow.run import RunFailed

EXIT_DONE, EXIT_INTERNAL, EXIT_USAGE, EXIT_LIMIT = 0, 1, 2, 3


def slurm_options(args: argparse.Namespace) -> SlurmOptions:
    return SlurmOptions(
        partition=args.partition,
        account=args.account,
        jobs=args.jobs,
        cores=args.cores,
        memory=args.memory,
        walltime=args.walltime,
        gpus_per_job=args.gpus_per_job,
        extra_directives=args.directive,
        prologue=args.prologue,
        log_directory=args.log_directory,
        tls=args.tls,
        interface=args.interface,
    )


def local_gpus(args: argparse.Namespace, no_gpu: str | None = None) -> int:
    """GPUs of the local cluster; ClusterError for a request that cannot be served (``no_gpu``: why
    this run cannot use GPUs, if it cannot)."""
    if no_gpu is not None:
        if args.gpus not in (None, 0):
            raise ClusterError(f"{no_gpu}; use --gpus 0")
        return 0
    return resolve_gpus(args.gpus)


def explorers_here(args: argparse.Namespace, no_gpu: str | None = None) -> str | None:
    """Where a run's explorers are, for its first-run check: "gpu" or "cpu" for a local cluster (its
    GPUs, else this process's threads), None for workers elsewhere (Slurm, ``--scheduler``)."""
    if args.cluster != "local" or args.scheduler:
        return None
    return "gpu" if local_gpus(args, no_gpu) else "cpu"


def prepare_cluster(args: argparse.Namespace) -> None:
    """What opening the cluster needs from the main thread, before start-up's thread opens it."""
    if args.cluster == "slurm" and not args.scheduler:
        import_jobqueue()


def run_cluster(args: argparse.Namespace, no_gpu: str | None = None, processes: bool = False):
    """The cluster the options name (``no_gpu`` as :func:`local_gpus`; ``processes``: local CPU
    workers as processes), as a context manager (opened on start-up's thread: :func:`prepare_cluster`
    first)."""
    if args.scheduler:
        return open_cluster("address", scheduler=args.scheduler, connect_timeout=args.connect_timeout)
    if args.cluster == "slurm":
        return open_cluster("slurm", slurm=slurm_options(args))
    gpus = local_gpus(args, no_gpu)
    return open_cluster("local", workers=args.workers, threads_per_worker=args.threads, gpus=gpus, processes=processes)


def print_search_json(result: Result, startup: dict | None = None) -> None:
    """Print a search's ``--json``, with the same keys in every mode: its fields, the ``estimate`` of
    the work left and the ``startup`` breakdown (null: none, as for a search in this process)."""
    print_json(result, estimate=result.estimate, startup=startup)


def report(result: Result, as_json: bool, startup: dict | None = None) -> int:
    """Print a run's result (:func:`print_search_json`, or its family's lines); the exit code of its status."""
    if as_json:
        print_search_json(result, startup)
    else:
        print_result(result)
    if result.status == Status.LIMIT:
        print(f"pbbflow: stopped; continue with: {resume_command(result.run)}", file=sys.stderr)
        return EXIT_LIMIT
    return EXIT_DONE


def resume_command(run: str | Path) -> str:
    """The command that continues ``run``, quoted for a POSIX shell (and printable)."""
    return printable(f"pbbflow resume {shlex.quote(str(run))}")


def error_log_path(run: Path) -> Path:
    """Where the tracebacks of a run's internal errors go: beside its store."""
    return run.with_name(run.name + ".error.log")


def internal_log_path() -> Path:
    """Where the tracebacks of internal errors outside a run store go: the user's cache folder."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "pbbflow" / "error.log"


def report_internal_error(error: BaseException, run: Path | None) -> int:
    """One line for an error of pbbflow's own code outside an explorer (the traceback appended to the
    log beside ``run``'s store, if one was written, else to :func:`internal_log_path`); a missing
    package is named with the command that installs it.  Returns the exit code (1)."""
    if isinstance(error, ModuleNotFoundError) and error.name:
        package = error.name.split(".")[0]
        print(
            f"pbbflow: error: the package {package!r} is missing from this Python ({sys.executable}); "
            f"install it with: {shlex.quote(sys.executable)} -m pip install {package}",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
    log = error_log_path(run) if run is not None else internal_log_path()
    where = log_traceback(log, "".join(traceback.format_exception(error)))
    print(printable(f"pbbflow: internal error: {type(error).__name__}: {error}; {where}"), file=sys.stderr)
    return EXIT_INTERNAL


def log_traceback(log: Path, details: str) -> str:
    """Append ``details`` under a stamped header to ``log`` (its folder made if missing, never
    through a link someone put there); where the traceback went, in words for the one-line report."""
    stamp = datetime.datetime.now().isoformat(timespec="seconds")
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open_append(log) as f:
            f.write(f"--- {stamp} pbbflow {' '.join(sys.argv[1:])}\n{details}\n")
        return f"traceback in {log}"
    except OSError as error:
        return f"no traceback log ({error.strerror}: {log})"


def report_failure(store: RunStore, failure: RunFailed) -> int:
    """One line for an internal error of a run (its traceback appended to the log file)."""
    where = log_traceback(error_log_path(store.path), failure.details)
    state = "checkpointed" if failure.checkpointed else "the last checkpoint stands"
    message = f"pbbflow: internal error in {failure}; {where}; {state}: {resume_command(store.path)}"
    print(printable(message), file=sys.stderr)
    return EXIT_INTERNAL


class _Watch:
    """Prints the dashboard's link once it is known, before or during the search (``startup``
    finds it), and draws the progress bar, if any: the run's ``on_progress``."""

    def __init__(self, startup: Startup, bar: ProgressBar | None) -> None:
        self.startup, self.bar, self.link = startup, bar, None

    def announce(self) -> None:
        """Print the link, once, if it is known by now; the bar shows it from then on."""
        if self.link is not None or self.startup.link is None:
            return
        self.link = self.startup.link
        line = f"pbbflow: watch the run at {self.link}"
        if self.bar is None:
            print(line, file=sys.stderr)
        else:
            self.bar.print(line)
            self.bar.dashboard = self.link

    def __call__(self, progress: Progress) -> None:
        self.announce()
        if self.bar is not None:
            self.bar(progress)


def first_run_notice(args: argparse.Namespace, first_run: tuple[str, str] | None) -> FirstRunNotice | None:
    """The notice of a first run's compile, started, for ``first_run`` (what it compiles and about
    how long that takes, or None where numba's cache holds the code); None when quiet."""
    if first_run is None or args.quiet:
        return None
    return FirstRunNotice(sys.stderr, *first_run).start()


def drive_run(store: RunStore, args: argparse.Namespace, startup: Startup, signals: StopSignals) -> int:
    """Run ``store`` on the cluster ``startup`` opens; ``signals`` stop it gracefully."""
    from ..workflow.run import RunFailed, drive  # Dask: here, where a run is driven, not with the parser

    client = startup.ready()
    if not args.quiet:
        startup.tell_compile(sys.stderr)
    bar = ProgressBar(sys.stderr) if not args.quiet and sys.stderr.isatty() else None
    watch = None if args.quiet else _Watch(startup, bar)
    if watch is not None:
        watch.announce()
    try:
        result = drive(
            store,
            client,
            time_limit=args.time_limit,
            node_limit=args.node_limit,
            checkpoint_every=args.checkpoint_every,
            stop=signals.stop,
            hurry=signals.hurry,
            on_progress=watch,
            settings={name: getattr(args, name) for name in args.run_settings},
            heuristics=args.heuristic_workers,
            timings=startup.times,
        )
    except RunFailed as failure:  # reported once the cluster is closed
        result = failure
    finally:
        if bar is not None:
            bar.close()
    startup.close()
    if isinstance(result, RunFailed):
        return report_failure(store, result)
    return report(result, args.json, startup=startup.breakdown())


@contextlib.contextmanager
def reserved(path: Path, *, overwrite: bool) -> Iterator[None]:
    """Hold ``path`` for a new run store (refused here, before the cluster starts); the directory
    goes again if the run ends before writing anything into it."""
    with RunStore.reserve(path, overwrite=overwrite):
        try:
            yield
        finally:
            with contextlib.suppress(OSError):  # not empty: the store was written
                path.rmdir()
