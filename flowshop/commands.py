"""``pbbflow solve`` (prove an optimal schedule) and ``pbbflow heuristic`` (iterated greedy alone).

Exit codes as every command's (``cli.main``): 0 finished, 3 stopped at a limit or by a signal,
2 bad input (one line), 1 internal error.
"""

from __future__ import annotations

import argparse
import datetime
import json
from pathlib import Path

from ..cli.arguments import RunHelp, add_run_options, integer, parse_duration, positive_int
from ..cli.runs import (
    EXIT_DONE,
    EXIT_LIMIT,
    drive_run,
    explorers_here,
    first_run_notice,
    prepare_cluster,
    reserved,
    run_cluster,
    slurm_options,
)
from ..cli.signals import StopSignals, starting
from ..cli.startup import Startup
from ..core.text import printable
from ..gpu import LARGE_IVMS, SMALL_IVMS
from ..workflow.cluster import slurm_job_script
from .choices import BOUND_NAMES, BRANCH_NAMES, DEFAULT_BOUND, DEFAULT_BRANCH
from .instance import DEFAULT_FORMAT, DEFAULT_ORIENTATION, FORMATS, ORIENTATIONS
from .load import load_instance

# the shared run options' help for solve
SOLVE_RUNS = RunHelp(
    nodes="decomposed this many nodes",
    gpus="local GPUs, one explorer of --ivms IVMs each (default: all GPUs present, CPU workers otherwise; 0: CPU only)",
    heuristic_workers="iterated greedy tasks beside the search, which send every better schedule to the "
    "explorers (default: one beside each GPU worker, none on CPU workers, where they would replace "
    "explorers; 0: none)",
)


def upper_bound(text: str) -> int | str:
    """``neh``, ``ig`` or a positive makespan."""
    return text.lower() if text.lower() in ("neh", "ig") else positive_int(text)


def seed(text: str) -> int:
    """A seed in [0, 2**64), the range iterated greedy takes (it refuses others, which would wrap)."""
    value = integer(text)
    if value is None or not 0 <= value < 2**64:
        raise argparse.ArgumentTypeError(f"expected an integer from 0 to 2**64 - 1, got {text!r}")
    return value


def add_run_settings(group: argparse._ArgumentGroup, *, any_family: bool) -> None:
    """``--ivms``, the IVMs of each GPU explorer of a flow-shop run (``workflow.run.drive``'s ``ivms``)."""
    runs = " of a flow-shop run" if any_family else ""
    group.add_argument(
        "--ivms",
        type=positive_int,
        default=None,
        metavar="K",
        help=f"IVMs per GPU{runs} (default: {SMALL_IVMS:,} up to 32 jobs, {LARGE_IVMS:,} above)",
    )


def add_commands(commands: argparse._SubParsersAction) -> None:
    """The ``solve`` and ``heuristic`` commands on the subparsers ``commands``."""
    s = commands.add_parser("solve", help="prove an optimal schedule for an instance")
    s.add_argument("instance", help="a Taillard name (ta001 .. ta120) or an instance file")
    s.add_argument(
        "--run", type=Path, default=None, help="the run store to create (default: pbbflow-runs/<instance>-<time>.zarr)"
    )
    s.add_argument("--overwrite", action="store_true", help="replace an existing run store at --run")
    s.add_argument(
        "--format", choices=FORMATS, default=DEFAULT_FORMAT, help=f"instance file format (default: {DEFAULT_FORMAT})"
    )
    s.add_argument(
        "--orientation",
        choices=ORIENTATIONS,
        default=DEFAULT_ORIENTATION,
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
    s.add_argument(
        "--bound", choices=list(BOUND_NAMES), default=DEFAULT_BOUND, help=f"lower bound (default: {DEFAULT_BOUND})"
    )
    s.add_argument(
        "--branch",
        choices=list(BRANCH_NAMES),
        default=DEFAULT_BRANCH,
        help=f"branching rule (default: {DEFAULT_BRANCH})",
    )
    add_run_options(s, SOLVE_RUNS, lambda group: add_run_settings(group, any_family=False))
    s.set_defaults(handler=solve, interrupted="pbbflow: interrupted before a run store was written; nothing to resume")
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
    h.add_argument(
        "--format", choices=FORMATS, default=DEFAULT_FORMAT, help=f"instance file format (default: {DEFAULT_FORMAT})"
    )
    h.add_argument(
        "--orientation",
        choices=ORIENTATIONS,
        default=DEFAULT_ORIENTATION,
        help="Taillard-format files: n rows of m times (job-major, default) or m rows of n",
    )
    h.add_argument("--json", action="store_true", help="print the result as JSON")
    h.set_defaults(handler=heuristic)


def solve(args: argparse.Namespace) -> int:
    """A new flow-shop run store, driven on the cluster the options name."""
    with starting():  # the engines and Dask (warmup's) load here, not with the parser
        from .family import no_gpu
        from .warmup import FIRST_RUN, code_cached, start_worker_code_apart, warm_worker

    if args.dry_run:
        print(slurm_job_script(slurm_options(args)))
        return EXIT_DONE
    instance = load_instance(args.instance, fmt=args.format, orientation=args.orientation)
    explorers = explorers_here(args, no_gpu(args.bound))  # refuses a bad GPU request before the run store
    path = args.run
    if path is None:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
        path = Path("pbbflow-runs") / f"{instance.name}-{stamp}.zarr"
    args.run = path
    initial = "neh" if isinstance(args.ub, int) else args.ub
    ub = args.ub if isinstance(args.ub, int) else None
    worker_code = (warm_worker, (instance.p, args.bound, args.branch))
    first_run = None if code_cached(initial, explorers, instance.p.shape) else FIRST_RUN
    prepare_cluster(args)  # in this thread: start-up's opens the cluster
    with StopSignals() as signals, reserved(path, overwrite=args.overwrite):
        if first_run and explorers == "cpu":  # the CPU workers are this process's threads
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
    from .family import create_flowshop_run, first_schedule
    from .warmup import warm_client

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


def heuristic(args: argparse.Namespace) -> int:
    """Iterated greedy until the time limit (status done) or SIGINT/SIGTERM (status stopped, exit 3)."""
    with starting():
        from .iterated_greedy import iterated_greedy

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
