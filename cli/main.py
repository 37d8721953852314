"""The ``pbbflow`` command: ``solve``, ``resume``, ``info``, ``heuristic``, ``plot`` and ``minimize``.

Exit codes: 0 the search finished, 3 it stopped at a limit or on a signal (resumable),
2 usage or input error (one line on stderr), 1 internal error.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import re
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

from ..flowshop.bounds import BOUND_NAMES
from ..gpu import DEFAULT_IVMS, GpuError
from ..flowshop.instance import FORMATS, ORIENTATIONS, InstanceError, load_instance
from ..flowshop.iterated_greedy import iterated_greedy
from ..search.ivm import BRANCH_NAMES
from ..search.solve import LIMIT
from ..spatial.problem import ProblemError
from ..storage.runstore import RunStore, RunStoreError
from ..workflow.cluster import (
    CONNECT_SECONDS,
    ClusterError,
    SlurmOptions,
    open_cluster,
    resolve_gpus,
    slurm_job_script,
)
from ..workflow.fastexit import exit_without_final_gc
from ..workflow.run import Progress, RunFailed, create_run, drive, first_schedule, result_of
from . import minimize
from .progress import ProgressBar, format_rate, format_share
from .signals import StopSignals
from .startup import DASHBOARD_DELAY_S, Startup

EXIT_DONE, EXIT_INTERNAL, EXIT_USAGE, EXIT_LIMIT = 0, 1, 2, 3
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """Seconds in '90', '90s', '5m', '1.5h' or '2d'."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([smhd]?)\s*", text.lower(), re.ASCII)
    if not match or float(match.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r} (examples: 90, 90s, 5m, 1.5h)")
    return float(match.group(1)) * _UNITS[match.group(2)]


def _integer(text: str) -> int | None:
    """The integer ``text`` writes in ASCII digits, else None (int() takes any script's digits and '_')."""
    return int(text) if re.fullmatch(r"\s*[+-]?\d+\s*", text, re.ASCII) else None


def _positive_int(text: str) -> int:
    value = _integer(text)
    if value is None or value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _upper_bound(text: str) -> int | str:
    """``neh``, ``ig`` or a positive makespan."""
    return text.lower() if text.lower() in ("neh", "ig") else _positive_int(text)


def _non_negative_int(text: str) -> int:
    value = _integer(text)
    if value is None or value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def _seed(text: str) -> int:
    """A seed in [0, 2**64), the range iterated greedy takes (it refuses others, which would wrap)."""
    value = _integer(text)
    if value is None or not 0 <= value < 2**64:
        raise argparse.ArgumentTypeError(f"expected an integer from 0 to 2**64 - 1, got {text!r}")
    return value


def _gpus(text: str) -> int | str:
    """``all`` or a number >= 0."""
    if text == "all":
        return text
    try:
        return _non_negative_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0 or 'all', got {text!r}") from None


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    """Options shared by solve and resume: limits, cluster, output."""
    parser.add_argument("--time-limit", type=parse_duration, default=None, metavar="DURATION",
                        help="stop after this long (90, 90s, 5m, 1.5h); the run stays resumable")
    parser.add_argument("--node-limit", type=_positive_int, default=None, metavar="INT",
                        help="stop once the run has decomposed this many nodes (checked between checkpoints)")
    parser.add_argument("--checkpoint-every", type=parse_duration, default=60.0, metavar="DURATION",
                        help="write a checkpoint this often (default: 60s)")
    cluster = parser.add_argument_group("cluster")
    cluster.add_argument("--cluster", choices=("local", "slurm"), default="local",
                         help="local: a LocalCluster on this machine (default); slurm: dask-jobqueue workers")
    cluster.add_argument("--scheduler", metavar="ADDRESS", help="use the running Dask scheduler at ADDRESS")
    cluster.add_argument("--connect-timeout", type=parse_duration, default=CONNECT_SECONDS, metavar="DURATION",
                         help=f"how long --scheduler may take to answer (default: {CONNECT_SECONDS:g}s)")
    cluster.add_argument("--workers", type=_positive_int, default=None,
                         help="local workers (threads of this process; default: one per core)")
    cluster.add_argument("--gpus", type=_gpus, default=None, metavar="N|all",
                         help="local GPUs, one explorer of --ivms IVMs each (default: all GPUs present, "
                              "CPU workers otherwise; 0: CPU only)")
    cluster.add_argument("--ivms", type=_positive_int, default=DEFAULT_IVMS, metavar="K",
                         help=f"IVMs per GPU (default: {DEFAULT_IVMS})")
    cluster.add_argument("--heuristic-workers", type=_non_negative_int, default=None, metavar="N",
                         help="iterated greedy tasks beside the search (default: one beside each GPU worker, "
                              "none on CPU-only clusters; on CPU workers they replace explorers; 0: none)")
    cluster.add_argument("--threads", type=_positive_int, default=None,
                         help="explorer threads per local worker (default: the cores shared out, 1 by default)")
    slurm = parser.add_argument_group("slurm (with --cluster slurm)")
    slurm.add_argument("--partition")
    slurm.add_argument("--account")
    slurm.add_argument("--jobs", type=_positive_int, default=1, help="Slurm jobs of workers (default: 1)")
    slurm.add_argument("--cores", type=_positive_int, default=1,
                       help="cores per job, one single-threaded worker each (default: 1)")
    slurm.add_argument("--memory", default="4GB", help="memory per job (default: 4GB)")
    slurm.add_argument("--walltime", default="01:00:00", help="per job (default: 01:00:00)")
    slurm.add_argument("--gpus-per-job", type=_non_negative_int, default=0, help="GPUs per job (default: 0)")
    slurm.add_argument("--directive", action="append", default=[], metavar="TEXT",
                       help="an extra #SBATCH directive, e.g. --directive=--exclusive (repeatable)")
    slurm.add_argument("--prologue", action="append", default=[], metavar="LINE",
                       help="a shell line run before the worker starts (repeatable)")
    slurm.add_argument("--log-directory", default=None)
    slurm.add_argument("--interface", default=None,
                       help="network interface the scheduler and workers use, e.g. ib0 (default: 127.0.0.1 only)")
    slurm.add_argument("--tls", action="store_true", help="encrypt with temporary TLS certificates")
    slurm.add_argument("--dry-run", action="store_true", help="print the Slurm job script and exit")
    out = parser.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print the result as JSON")
    out.add_argument("--quiet", action="store_true", help="no progress bar")
    out.add_argument("--dashboard-after", type=parse_duration, default=DASHBOARD_DELAY_S, metavar="DURATION",
                     help=f"start a local cluster's dashboard once the search has run this long (default: "
                          f"{DASHBOARD_DELAY_S:g}s; 0: at once); shorter runs start none")


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line: the error and where the help is, not the whole usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} ({self.prog} --help for usage)\n")


class _CommandParser(_Parser):
    """A command's parser: it reports unknown arguments itself, under the command's name."""

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="pbbflow", description="Exact parallel branch-and-bound: permutation flow shops "
                                                 "(solve) and continuous global optimization (minimize).")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_CommandParser)
    s = commands.add_parser("solve", help="prove an optimal schedule for an instance")
    s.add_argument("instance", help="a Taillard name (ta001 .. ta120) or an instance file")
    s.add_argument("--run", type=Path, default=None,
                   help="the run store to create (default: pbbflow-runs/<instance>-<time>.zarr)")
    s.add_argument("--overwrite", action="store_true", help="replace an existing run store at --run")
    s.add_argument("--format", choices=FORMATS, default="auto", help="instance file format (default: auto)")
    s.add_argument("--orientation", choices=ORIENTATIONS, default="job-major",
                   help="Taillard-format files: n rows of m times (job-major, default) or m rows of n")
    s.add_argument("--ub", type=_upper_bound, default="ig", metavar="INT|neh|ig",
                   help="search for schedules better than this makespan, NEH's, or iterated greedy's after a "
                        "short size-dependent run (default: ig)")
    s.add_argument("--bound", choices=list(BOUND_NAMES), default="lb1", help="lower bound (default: lb1)")
    s.add_argument("--branch", choices=list(BRANCH_NAMES), default="minmin", help="branching rule (default: minmin)")
    _add_run_options(s)
    h = commands.add_parser("heuristic", help="iterated greedy alone: a good schedule, no proof")
    h.add_argument("instance", help="a Taillard name (ta001 .. ta120) or an instance file")
    h.add_argument("--time-limit", type=parse_duration, required=True, metavar="DURATION",
                   help="how long to search, e.g. 30s or 5m")
    h.add_argument("--seed", type=_seed, default=0, help="random seed, 0 to 2**64 - 1 (default: 0)")
    h.add_argument("--format", choices=FORMATS, default="auto", help="instance file format (default: auto)")
    h.add_argument("--orientation", choices=ORIENTATIONS, default="job-major",
                   help="Taillard-format files: n rows of m times (job-major, default) or m rows of n")
    h.add_argument("--json", action="store_true", help="print the result as JSON")
    g = commands.add_parser("plot", help="PNGs of a run: the best schedule's Gantt chart and the search history")
    g.add_argument("run", type=Path, help="the run store (run.zarr), live or finished")
    g.add_argument("--out", type=Path, required=True, metavar="DIR", help="folder for gantt.png and history.png")
    r = commands.add_parser("resume", help="continue a run from its last checkpoint, on any cluster")
    r.add_argument("run", type=Path, help="the run store (run.zarr)")
    _add_run_options(r)
    i = commands.add_parser("info", help="show a run's state as of its last checkpoint")
    i.add_argument("run", type=Path, help="the run store (run.zarr)")
    i.add_argument("--json", action="store_true", help="print the state as JSON")
    minimize.add_parser(commands, parse_duration, _positive_int, _gpus)
    return parser


def _slurm_options(args: argparse.Namespace) -> SlurmOptions:
    return SlurmOptions(
        partition=args.partition, account=args.account, jobs=args.jobs, cores=args.cores, memory=args.memory,
        walltime=args.walltime, gpus_per_job=args.gpus_per_job, extra_directives=args.directive,
        prologue=args.prologue, log_directory=args.log_directory, tls=args.tls, interface=args.interface,
    )  # fmt: skip


def _local_gpus(args: argparse.Namespace, bound: str) -> int:
    """GPUs of the local cluster; ClusterError for a request that cannot be served."""
    if bound != "lb1":
        if args.gpus not in (None, 0):
            raise ClusterError(f"the GPU explorer bounds with lb1 only (this run uses {bound}); use --gpus 0")
        return 0
    return resolve_gpus(args.gpus)


def _cluster(args: argparse.Namespace, store_bound: str):
    if args.scheduler:
        return open_cluster("address", scheduler=args.scheduler, connect_timeout=args.connect_timeout)
    if args.cluster == "slurm":
        return open_cluster("slurm", slurm=_slurm_options(args))
    return open_cluster("local", workers=args.workers, threads_per_worker=args.threads,
                        gpus=_local_gpus(args, store_bound))


def _print_result(result: dict) -> None:
    rate = result["nodes"] / result["elapsed_s"] if result["elapsed_s"] > 0 else 0.0
    permutation = result["permutation"]
    lines = [
        f"instance     {result['instance']} ({result['n']} jobs x {result['m']} machines)",
        f"status       {result['status']}",
        f"makespan     {result['makespan'] if result['makespan'] is not None else '-'}",
        f"permutation  {' '.join(map(str, permutation)) if permutation else '-'}",
        f"lower bound  {result['lower_bound']}",
        f"nodes        {result['nodes']:,} decomposed, {result['leaves']:,} leaves, "
        f"{result['elapsed_s']:.2f} s ({format_rate(rate)})",
        f"run          {result['run']}",
    ]
    if result["status"] == LIMIT:
        share = format_share(result["remaining_fraction"], result["remaining_log10"])
        log10 = result["remaining_log10"]
        lines.append(f"remaining    {share} of the search space"
                     + ("" if log10 is None else f" (log10 {log10:.2f})"))
    print("\n".join(lines))


def _report(result: dict, as_json: bool) -> int:
    if as_json:
        print(json.dumps(result))
    else:
        _print_result(result)
    if result["status"] == LIMIT:
        print(f"pbbflow: stopped; continue with: {resume_command(result['run'])}", file=sys.stderr)
        return EXIT_LIMIT
    return EXIT_DONE


def resume_command(run: str | Path) -> str:
    """The command that continues ``run``, quoted for a POSIX shell."""
    return f"pbbflow resume {shlex.quote(str(run))}"


def error_log_path(run: Path) -> Path:
    """Where the tracebacks of a run's internal errors go: beside its store."""
    return run.with_name(run.name + ".error.log")


def _report_failure(store: RunStore, failure: RunFailed) -> int:
    """One line for an internal error of a run (its traceback appended to the log file)."""
    log = error_log_path(store.path)
    stamp = datetime.datetime.now().isoformat(timespec="seconds")
    try:
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"--- {stamp} pbbflow {' '.join(sys.argv[1:])}\n{failure.details}\n")
        where = f"traceback in {log}"
    except OSError as error:
        where = f"no traceback log ({error.strerror}: {log})"
    state = "checkpointed" if failure.checkpointed else "the last checkpoint stands"
    print(f"pbbflow: internal error in {failure}; {where}; {state}: {resume_command(store.path)}", file=sys.stderr)
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


def _drive(store: RunStore, args: argparse.Namespace, startup: Startup, signals: StopSignals) -> int:
    """Run ``store`` on the cluster ``startup`` opens; ``signals`` stop it gracefully."""
    client = startup.ready()
    compiling = startup.compile_seconds()
    if compiling and not args.quiet:
        print(f"pbbflow: compiling, first run only: {compiling:.1f} s", file=sys.stderr)
    bar = ProgressBar(sys.stderr) if not args.quiet and sys.stderr.isatty() else None
    watch = None if args.quiet else _Watch(startup, bar)
    if watch is not None:
        watch.announce()
    try:
        result = drive(store, client, time_limit=args.time_limit, node_limit=args.node_limit,
                       checkpoint_every=args.checkpoint_every, stop=signals.stop, hurry=signals.hurry,
                       on_progress=watch, ivms=args.ivms, heuristics=args.heuristic_workers,
                       timings=startup.times)  # fmt: skip
    except RunFailed as failure:  # reported once the cluster is closed
        result = failure
    finally:
        if bar is not None:
            bar.close()
    startup.close()
    if isinstance(result, RunFailed):
        return _report_failure(store, result)
    result["startup"] = startup.breakdown()
    return _report(result, args.json)


def _solve(args: argparse.Namespace) -> int:
    if args.dry_run:
        print(slurm_job_script(_slurm_options(args)))
        return EXIT_DONE
    instance = load_instance(args.instance, fmt=args.format, orientation=args.orientation)
    if args.cluster == "local" and not args.scheduler:
        _local_gpus(args, args.bound)  # refuse a bad GPU request before creating the run store
    path = args.run
    if path is None:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
        path = Path("pbbflow-runs") / f"{instance.name}-{stamp}.zarr"
    args.run = path
    initial = "neh" if isinstance(args.ub, int) else args.ub
    ub = args.ub if isinstance(args.ub, int) else None
    with StopSignals() as signals, _reserved(path, overwrite=args.overwrite), \
            Startup(lambda: _cluster(args, args.bound), instance.p, args.bound, args.branch,
                    dashboard_after=args.dashboard_after) as startup:
        startup.load_client_code(initial=initial)
        with startup.phase("initial_heuristic_s"):
            first = first_schedule(instance, initial, should_stop=signals.stop.is_set)
        startup.opened()  # a cluster that cannot open leaves no run store behind
        store = create_run(path, instance, ub=ub, bound=args.bound, branch=args.branch,
                           overwrite=args.overwrite, initial=initial, first=first)  # fmt: skip
        args.store_written = True
        return _drive(store, args, startup, signals)


@contextlib.contextmanager
def _reserved(path: Path, *, overwrite: bool) -> Iterator[None]:
    """Hold ``path`` for a new run store (refused here, before the cluster starts); the directory
    goes again if the run ends before writing anything into it."""
    with RunStore.reserve(path, overwrite=overwrite):
        try:
            yield
        finally:
            with contextlib.suppress(OSError):  # not empty: the store was written
                path.rmdir()


def _resume(args: argparse.Namespace) -> int:
    if args.dry_run:
        print(slurm_job_script(_slurm_options(args)))
        return EXIT_DONE
    store = RunStore.open(args.run)
    if not store.latest().remaining:  # finished (or damaged: RunStoreError): answered without a cluster
        return _info(args)
    store.claim()  # refused here when another run holds it or it cannot be written
    args.store_written = True
    bound, branch = store.options["bound"], store.options["branch"]
    with StopSignals() as signals, Startup(lambda: _cluster(args, bound), store.p, bound, branch,
                                           dashboard_after=args.dashboard_after) as startup:
        startup.load_client_code(initial=None)
        return _drive(store, args, startup, signals)


def _heuristic(args: argparse.Namespace) -> int:
    """Iterated greedy until the time limit (status done) or SIGINT/SIGTERM (status stopped, exit 3)."""
    instance = load_instance(args.instance, fmt=args.format, orientation=args.orientation)
    with StopSignals() as signals:  # a signal stops the search after the chunk of iterations under way (~50 ms)
        result = iterated_greedy(instance.p, seconds=args.time_limit, seed=args.seed, should_stop=signals.stop.is_set)
    stop = signals.stop
    status = "stopped" if stop.is_set() else "done"
    out = {"instance": instance.name, "status": status, "makespan": result.makespan,
           "permutation": result.permutation.tolist(), "elapsed_s": round(result.elapsed_s, 6)}  # fmt: skip
    if args.json:
        print(json.dumps(out))
    else:
        print(f"instance     {instance.name} ({instance.n} jobs x {instance.m} machines)")
        print(f"status       {status}")
        print(f"makespan     {result.makespan} (iterated greedy, {result.iterations:,} iterations, seed {args.seed})")
        print(f"permutation  {' '.join(map(str, out['permutation']))}")
        print(f"elapsed      {result.elapsed_s:.2f} s")
    return EXIT_LIMIT if stop.is_set() else EXIT_DONE


def _plot(args: argparse.Namespace) -> int:
    from ..viz.plots import plot_run  # matplotlib loads only for this command

    store = RunStore.open(args.run)
    try:
        written = plot_run(store, args.out)
    except OSError as error:  # the output folder cannot be made or written
        print(f"pbbflow: error: {args.out}: cannot write the plots there ({error.strerror})", file=sys.stderr)
        return EXIT_USAGE
    for path in written:
        print(path)
    return EXIT_DONE


def _info(args: argparse.Namespace) -> int:
    store = RunStore.open(args.run)
    result = result_of(store)
    result["options"] = store.options
    result["checkpoint"] = store.latest().seq
    if args.json:
        print(json.dumps(result))
    else:
        _print_result(result)
        print(f"checkpoint   {result['checkpoint']}")
        print(f"options      {json.dumps(store.options)}")
    return EXIT_DONE


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``pbbflow`` console script.

    Where stdout's reader goes away early (``pbbflow info RUN | head -1``), the output left is
    dropped quietly: the exit code is the command's if it had finished, else 1.
    """
    code = EXIT_INTERNAL
    try:
        try:
            code = _main(argv)
        except SystemExit as done:  # argparse's, after --help or a usage error
            code = int(done.code or 0)
            raise
        finally:
            sys.stdout.flush()  # here, where a reader that has gone can still be handled
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the flush at exit writes nowhere
    return code


def _main(argv: list[str] | None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except KeyboardInterrupt:  # after the start-up handler (cli/__init__.py), before any command ran
        print("pbbflow: interrupted while starting; nothing was changed", file=sys.stderr)
        return EXIT_LIMIT
    exit_without_final_gc()
    command = {"solve": _solve, "resume": _resume, "info": _info, "heuristic": _heuristic, "plot": _plot,
               "minimize": minimize.run}[args.command]
    try:
        return command(args)
    except (InstanceError, RunStoreError, ClusterError, GpuError, ProblemError) as error:
        print(f"pbbflow: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        if getattr(args, "store_written", False):
            print(f"pbbflow: interrupted; the last checkpoint stands: {resume_command(args.run)}", file=sys.stderr)
        elif args.command == "solve":
            print("pbbflow: interrupted before a run store was written; nothing to resume", file=sys.stderr)
        else:
            print("pbbflow: interrupted", file=sys.stderr)
        return EXIT_LIMIT


if __name__ == "__main__":
    sys.exit(main())
