"""The ``pbbflow`` command: ``solve``, ``resume``, ``info``, ``heuristic``, ``plot`` and ``minimize``.

Exit codes: 0 the search finished, 3 it stopped at a limit or on a signal (resumable),
2 usage or input error (one line on stderr), 1 internal error.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from pathlib import Path
from typing import NoReturn

from ..core.errors import PbbflowError
from ..core.text import printable
from ..flowshop.bounds import BOUND_NAMES
from ..flowshop.family import create_flowshop_run, first_schedule, no_gpu
from ..flowshop.instance import FORMATS, ORIENTATIONS
from ..flowshop.iterated_greedy import iterated_greedy
from ..flowshop.ivm import BRANCH_NAMES
from ..flowshop.load import load_instance
from ..flowshop.warmup import FIRST_RUN, code_cached, start_worker_code_apart, warm_client, warm_worker
from ..storage.runstore import RunStore
from ..workflow.cluster import slurm_job_script
from ..workflow.fastexit import exit_without_final_gc
from ..workflow.run import finished, result_of
from . import minimize
from .arguments import FLOWSHOP, add_run_options, parse_duration, seed, upper_bound
from .results import history_summary, print_history, print_json, print_result
from .runs import (
    EXIT_DONE,
    EXIT_INTERNAL,
    EXIT_LIMIT,
    EXIT_USAGE,
    drive_run,
    first_run_notice,
    local_gpus,
    prepare_cluster,
    report_internal_error,
    reserved,
    resume_command,
    run_cluster,
    slurm_options,
)
from .signals import StopSignals
from .startup import Startup


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
    parser = _Parser(
        prog="pbbflow",
        description="Exact parallel branch-and-bound: permutation flow shops "
        "(solve) and continuous global optimization (minimize).",
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_CommandParser)
    s = commands.add_parser("solve", help="prove an optimal schedule for an instance")
    s.add_argument("instance", help="a Taillard name (ta001 .. ta120) or an instance file")
    s.add_argument(
        "--run", type=Path, default=None, help="the run store to create (default: pbbflow-runs/<instance>-<time>.zarr)"
    )
    s.add_argument("--overwrite", action="store_true", help="replace an existing run store at --run")
    s.add_argument("--format", choices=FORMATS, default="auto", help="instance file format (default: auto)")
    s.add_argument(
        "--orientation",
        choices=ORIENTATIONS,
        default="job-major",
        help="Taillard-format files: n rows of m times (job-major, default) or m rows of n",
    )
    s.add_argument(
        "--ub",
        type=upper_bound,
        default="ig",
        metavar="INT|neh|ig",
        help="search for schedules better than this makespan, NEH's, or iterated greedy's after a "
        "short size-dependent run (default: ig)",
    )
    s.add_argument("--bound", choices=list(BOUND_NAMES), default="lb1", help="lower bound (default: lb1)")
    s.add_argument("--branch", choices=list(BRANCH_NAMES), default="minmin", help="branching rule (default: minmin)")
    add_run_options(s, FLOWSHOP)
    h = commands.add_parser("heuristic", help="iterated greedy alone: a good schedule, no proof")
    h.add_argument("instance", help="a Taillard name (ta001 .. ta120) or an instance file")
    h.add_argument(
        "--time-limit",
        type=parse_duration,
        required=True,
        metavar="DURATION",
        help="how long to search, e.g. 30s or 5m",
    )
    h.add_argument("--seed", type=seed, default=0, help="random seed, 0 to 2**64 - 1 (default: 0)")
    h.add_argument("--format", choices=FORMATS, default="auto", help="instance file format (default: auto)")
    h.add_argument(
        "--orientation",
        choices=ORIENTATIONS,
        default="job-major",
        help="Taillard-format files: n rows of m times (job-major, default) or m rows of n",
    )
    h.add_argument("--json", action="store_true", help="print the result as JSON")
    g = commands.add_parser(
        "plot",
        help="PNGs of a run: the search history, and the best schedule's Gantt chart "
        "(flow shop) or the open boxes of a problem of two variables (spatial)",
    )
    g.add_argument("run", type=Path, help="the run store (run.zarr), live or finished")
    g.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="DIR",
        help="folder for the PNGs (gantt.png or boxes.png, and history.png)",
    )
    r = commands.add_parser("resume", help="continue a run from its last checkpoint, on any cluster")
    r.add_argument("run", type=Path, help="the run store (run.zarr)")
    add_run_options(r, None)  # a run of either family
    i = commands.add_parser("info", help="show a run's state as of its last checkpoint")
    i.add_argument("run", type=Path, help="the run store (run.zarr)")
    i.add_argument("--json", action="store_true", help="print the state as JSON")
    minimize.add_parser(commands)
    return parser


def _solve(args: argparse.Namespace) -> int:
    if args.dry_run:
        print(slurm_job_script(slurm_options(args)))
        return EXIT_DONE
    instance = load_instance(args.instance, fmt=args.format, orientation=args.orientation)
    workers_here = args.cluster == "local" and not args.scheduler
    if workers_here:  # refuse a bad GPU request before creating the run store
        workers_here = local_gpus(args, no_gpu(args.bound)) == 0  # the CPU workers are this process's threads
    path = args.run
    if path is None:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
        path = Path("pbbflow-runs") / f"{instance.name}-{stamp}.zarr"
    args.run = path
    initial = "neh" if isinstance(args.ub, int) else args.ub
    ub = args.ub if isinstance(args.ub, int) else None
    worker_code = (warm_worker, (instance.p, args.bound, args.branch))
    first_run = None if code_cached(initial) else FIRST_RUN
    prepare_cluster(args)  # in this thread: start-up's opens the cluster
    with StopSignals() as signals, reserved(path, overwrite=args.overwrite):
        if first_run and workers_here:
            start_worker_code_apart(args.bound, args.branch)
        with Startup(
            lambda: run_cluster(args, no_gpu(args.bound)),
            worker_code,
            dashboard_after=args.dashboard_after,
            notice=first_run_notice(args, first_run),
        ) as startup:
            return _start_solve(args, startup, signals, instance, initial, ub)


def _start_solve(
    args: argparse.Namespace, startup: Startup, signals: StopSignals, instance, initial: str, ub: int | None
) -> int:
    """A new flow-shop run: the client's code and first schedule beside the cluster's start-up,
    then its store, then the run."""
    startup.load_client_code(lambda: warm_client(instance.p, args.bound, initial=initial))
    with startup.phase("initial_heuristic_s"):
        first = first_schedule(instance, initial, should_stop=signals.stop.is_set)
    startup.opened()  # a cluster that cannot open leaves no run store behind
    store = create_flowshop_run(
        args.run,
        instance,
        ub=ub,
        bound=args.bound,
        branch=args.branch,
        initial=initial,
        first=first,
        overwrite=args.overwrite,
    )
    args.store_written = True
    return drive_run(store, args, startup, signals)


def _resume(args: argparse.Namespace) -> int:
    if args.dry_run:
        print(slurm_job_script(slurm_options(args)))
        return EXIT_DONE
    store = RunStore.open(args.run)
    if finished(store):  # (or damaged: RunStoreError): answered without a cluster
        return _info(args)
    store.claim()  # refused here when another run holds it or it cannot be written
    args.store_written = True
    instance = store.instance
    refusal = instance.no_gpu()
    prepare_cluster(args)  # in this thread: start-up's opens the cluster
    first_run = instance.first_run_code()
    with (
        StopSignals() as signals,
        Startup(
            lambda: run_cluster(args, refusal),
            instance.worker_code(),
            dashboard_after=args.dashboard_after,
            notice=first_run_notice(args, first_run),
        ) as startup,
    ):
        startup.load_client_code(instance.client_code)
        return drive_run(store, args, startup, signals)


def _heuristic(args: argparse.Namespace) -> int:
    """Iterated greedy until the time limit (status done) or SIGINT/SIGTERM (status stopped, exit 3)."""
    instance = load_instance(args.instance, fmt=args.format, orientation=args.orientation)
    with StopSignals() as signals:  # a signal stops the search after the chunk of iterations under way (~50 ms)
        result = iterated_greedy(instance.p, seconds=args.time_limit, seed=args.seed, should_stop=signals.stop.is_set)
    stop = signals.stop
    status = "stopped" if stop.is_set() else "done"
    out = {
        "instance": instance.name,
        "status": status,
        "makespan": result.makespan,
        "permutation": result.permutation.tolist(),
        "elapsed_s": round(result.elapsed_s, 6),
    }
    if args.json:
        print(json.dumps(out))
    else:
        print(printable(f"instance     {instance.name} ({instance.n} jobs x {instance.m} machines)"))
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
        message = f"pbbflow: error: {args.out}: cannot write the plots there ({error.strerror})"
        print(printable(message), file=sys.stderr)
        return EXIT_USAGE
    for path in written:
        print(printable(str(path)))
    return EXIT_DONE


def _info(args: argparse.Namespace) -> int:
    store = RunStore.open(args.run)
    result = result_of(store)
    latest = store.latest()
    history = history_summary(latest.series)
    if args.json:
        print_json(result, options=store.options, checkpoint=latest.seq, history=history)
    else:
        print_result(result)
        print(f"checkpoint   {latest.seq}")
        print(f"options      {json.dumps(store.options)}")
        print_history(history, store.kind)
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
    command = {
        "solve": _solve,
        "resume": _resume,
        "info": _info,
        "heuristic": _heuristic,
        "plot": _plot,
        "minimize": minimize.run,
    }[args.command]
    try:
        return command(args)
    except PbbflowError as error:  # one line meant for the user (core.errors)
        print(f"pbbflow: error: {printable(str(error))}", file=sys.stderr)  # names and paths from files
        return EXIT_USAGE
    except KeyboardInterrupt:
        if getattr(args, "store_written", False):
            print(f"pbbflow: interrupted; the last checkpoint stands: {resume_command(args.run)}", file=sys.stderr)
        elif args.command == "solve":
            print("pbbflow: interrupted before a run store was written; nothing to resume", file=sys.stderr)
        else:
            print("pbbflow: interrupted", file=sys.stderr)
        return EXIT_LIMIT
    except BrokenPipeError:  # stdout's reader went away: main() ends quietly
        raise
    except Exception as error:  # noqa: BLE001 (pbbflow's own fault, or a missing package: one line, exit 1)
        return report_internal_error(error, args.run if getattr(args, "store_written", False) else None)


if __name__ == "__main__":
    sys.exit(main())
