"""``pbbflow minimize``: prove a continuous problem's global minimum by spatial branch-and-bound;
``pbbflow verify``: decide a VNN-LIB property of an ONNX network.

Exit codes as ``solve``: 0 finished (``optimal``, ``infeasible``, a threshold question
``decided``, a property ``unsat`` or ``sat``), 3 stopped at a limit or by a signal (a property's
``timeout``, or ``unknown``), 2 bad input (one line), 1 internal error.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
from dataclasses import replace
from functools import partial
from pathlib import Path

from ..cli.arguments import RunHelp, add_run_options, non_negative_int, positive_int
from ..cli.progress import ProgressBar
from ..cli.runs import (
    EXIT_DONE,
    EXIT_LIMIT,
    drive_run,
    first_run_notice,
    prepare_cluster,
    print_search_json,
    reserved,
    run_cluster,
    slurm_options,
)
from ..cli.signals import StopSignals, starting
from ..cli.startup import Startup
from ..core.compiling import CodeLoad, compiled_line
from ..core.defaults import CHECKPOINT_EVERY_S
from ..core.files import create_file
from ..core.result import Status
from ..core.text import printable
from ..workflow.cluster import slurm_job_script
from ..workflow.fastexit import collecting_none
from .defaults import (
    CPU_SLICE_S,
    CPU_SUBDOMAINS,
    EPS_ABS,
    EPS_REL,
    FEAS_TOL,
    GPU_SUBDOMAINS,
)
from .describe import search_lines
from .load import BUILTINS, ERROR_BUILTINS
from .problem import ProblemError
from .suite_commands import suite_command

BUILTIN_NAMES = (*BUILTINS, *ERROR_BUILTINS)  # load_problem's built-in names, in its docstring's order
# options that only a run on a cluster (--run) takes, with their defaults
RUN_ONLY = {
    "checkpoint_every": CHECKPOINT_EVERY_S,
    "cluster": "local",
    "scheduler": None,
    "workers": None,
    "threads": None,
    "heuristic_workers": None,
    "dry_run": False,
    "overwrite": False,
}
# the shared run options' help for verify, whose cluster options apply to a suite (--instances)
VERIFY_RUNS = RunHelp(  # no node limit (each instance stops at its row's time limit), checkpoints or heuristic
    nodes=None,
    gpus="1: bound the split boxes on the GPU (default: the CPU); with --instances, GPU workers",
    heuristic_workers=None,
    with_run=True,
    checkpoints=False,
)
# the shared run options' help for minimize, whose cluster options apply with --run
MINIMIZE_RUNS = RunHelp(
    nodes="explored this many boxes",
    gpus="without --run: 0 runs on the CPU, 1 or all on one GPU (default: a GPU when one is visible, "
    f"after {CPU_SLICE_S:g} s on one CPU thread that answers a problem it proves in that time); "
    "with --run: local GPUs, one explorer each (default: all GPUs present, CPU workers otherwise; "
    "0: CPU only)",
    heuristic_workers="with --run: tasks of local solves from random starts beside the search, which send "
    "every better point to the explorers (default: none; on CPU workers they replace explorers)",
    with_run=True,
)


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}")
    return value


def _finite_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def _domain(text: str) -> list[tuple[float, float]]:
    """``LO:HI[,LO:HI...]``: finite numbers with lo < hi."""
    pairs = []
    for part in text.split(","):
        ends = part.split(":")
        try:
            lo, hi = (float(end) for end in ends) if len(ends) == 2 else (math.nan, math.nan)
        except ValueError:
            lo = hi = math.nan
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise argparse.ArgumentTypeError(f"expected LO:HI[,LO:HI...] of finite numbers, got {part!r} in {text!r}")
        if not lo < hi:
            raise argparse.ArgumentTypeError(f"{part!r}: the interval must have lo < hi")
        pairs.append((lo, hi))
    return pairs


def add_commands(commands: argparse._SubParsersAction) -> None:
    """The ``minimize`` command on the subparsers ``commands``."""
    m = commands.add_parser("minimize", help="prove the global minimum of a continuous problem (spatial B&B)")
    m.add_argument(
        "problem",
        help=f"a problem or ANN JSON file, a Python model file (.py), an ONNX network (.onnx, with --domain), "
        f"or a built-in name ({', '.join(BUILTIN_NAMES)})",
    )
    m.add_argument(
        "--domain",
        type=_domain,
        default=None,
        metavar="LO:HI[,LO:HI...]",
        help="an ONNX network's input box: one interval for every input, or one per input (e.g. -3:3,-2:2)",
    )
    m.add_argument("--maximize", action="store_true", help="an ONNX network: maximize the output (default: minimize)")
    m.add_argument(
        "--output",
        type=non_negative_int,
        default=0,
        metavar="K",
        help="an ONNX network: the output to optimize (default: 0)",
    )
    m.add_argument(
        "--prove-above",
        type=_finite_float,
        default=None,
        metavar="C",
        help="decide whether f >= C at every feasible point instead of proving the minimum: stops as soon as "
        "the certified bound reaches C (holds) or a verified point is below C (violated)",
    )
    m.add_argument(
        "--prove-below",
        type=_finite_float,
        default=None,
        metavar="C",
        help="with --maximize: decide whether the output is <= C everywhere (as --prove-above -C on minus the output)",
    )
    m.take_dash_values("--domain", "--prove-above", "--prove-below")
    m.add_argument(
        "--run",
        type=Path,
        default=None,
        metavar="PATH",
        help="run on a Dask cluster with checkpoints in this run store (resumable; default: in this "
        "process on the CPU or one GPU, no store)",
    )
    m.add_argument("--overwrite", action="store_true", help="replace an existing run store at --run")
    m.add_argument(
        "--eps-abs",
        type=_non_negative_float,
        default=EPS_ABS,
        metavar="X",
        help=f"absolute optimality gap (default: {EPS_ABS:g})",
    )
    m.add_argument(
        "--eps-rel",
        type=_non_negative_float,
        default=EPS_REL,
        metavar="X",
        help=f"relative optimality gap (default: {EPS_REL:g})",
    )
    m.add_argument(
        "--feas-tol",
        type=_non_negative_float,
        default=FEAS_TOL,
        metavar="X",
        help=f"equalities hold within this at the reported point (default: {FEAS_TOL:g})",
    )
    m.add_argument(
        "--subdomains",
        type=positive_int,
        default=None,
        metavar="N",
        help=f"subdomains per box: the largest k^d <= N, uniform (default: {CPU_SUBDOMAINS} on the CPU, "
        f"{GPU_SUBDOMAINS} on a GPU; an unconstrained network objective's boxes are bounded whole, through its layers)",
    )
    m.add_argument(
        "--bound",
        choices=("nie", "mvf", "both"),
        default="both",
        help="subdomain bound: natural interval extension, mean value form, or both (default)",
    )
    m.add_argument("--serial", action="store_true", help="bound subdomains on one CPU thread (implies --gpus 0)")
    add_run_options(m, MINIMIZE_RUNS)
    m.set_defaults(handler=run)
    v = commands.add_parser(
        "verify",
        help="decide a VNN-LIB property of an ONNX network: unsat (it holds), sat (a counterexample); "
        "or a suite of them as one resumable job",
        description="Decide a VNN-LIB property of an ONNX network on the CPU (its boxes bounded on one GPU with "
        "--gpus 1): unsat (it holds, exit 0), sat "
        "(a checked counterexample, exit 0), timeout or unknown (exit 3).  With --instances CSV --run PATH: "
        "a VNN-COMP instance list (rows onnx_path,vnnlib_path,timeout_seconds, paths relative to the CSV) "
        "decided on a Dask cluster as one resumable job, each result committed to the suite store PATH as "
        "it ends (pbbflow resume PATH continues it, pbbflow info PATH shows it); the results table goes "
        "beside the store as STEM.results.csv and STEM.results.json.  A suite exits 0 when every instance "
        "is decided (sat or unsat), 3 when stopped (Ctrl-C, SIGTERM, --time-limit) or some instance is "
        "not (timeout, unknown, error).  Exit 2: bad input or options (one line); 1: internal error.",
    )
    v.add_argument("network", nargs="?", help="the network (.onnx)")
    v.add_argument("property", nargs="?", help="the property (.vnnlib): its asserts state a counterexample")
    v.add_argument("--result", type=Path, default=None, metavar="FILE", help="also write VNN-COMP's result format")
    v.add_argument(
        "--instances",
        type=Path,
        default=None,
        metavar="CSV",
        help="a VNN-COMP instance list: decide its instances as one resumable job (with --run; no network "
        "or property then)",
    )
    v.add_argument(
        "--run",
        type=Path,
        default=None,
        metavar="PATH",
        help="with --instances: the suite store (suite.zarr), which holds the instances' files and each result",
    )
    v.add_argument("--overwrite", action="store_true", help="replace an existing suite store at --run")
    add_run_options(v, VERIFY_RUNS)
    v.set_defaults(handler=verify_command)


def verify_command(args: argparse.Namespace) -> int:
    """Read the network and the property, decide it on the CPU or one GPU, print the answer (and write the
    result file); with ``--instances``, a suite (``suite_commands``).  ProblemError reaches the caller
    (exit 2)."""
    from .onnx_network import read_onnx
    from .vnnlib import read_vnnlib

    if args.instances is not None:
        return suite_command(args)
    if args.network is None or args.property is None:
        raise ProblemError("verify takes MODEL.onnx PROPERTY.vnnlib, or --instances CSV --run PATH")
    given = [name for name, default in RUN_ONLY.items() if getattr(args, name, default) != default]
    given += ["run"] if args.run is not None else []
    if given:
        option = f"--{given[0].replace('_', '-')}"
        raise ProblemError(f"{option} is for a suite (verify --instances CSV --run PATH); one property runs here")
    gpu = _verify_gpu(args)
    network = read_onnx(args.network)
    prop = read_vnnlib(args.property)
    if (prop.n_inputs, prop.n_outputs) != (network.n_inputs, network.n_outputs):
        raise ProblemError(
            f"{Path(args.property).name} has {prop.n_inputs} inputs and {prop.n_outputs} outputs; "
            f"{Path(args.network).name} {network.n_inputs} and {network.n_outputs}"
        )
    with starting():
        from .options import MinimizeOptions
        from .verify import FIRST_RUN, code_cached, load_code, load_gpu_code, verify
    options = MinimizeOptions(time_limit=args.time_limit)
    with contextlib.ExitStack() as stack:
        result_file = None if args.result is None else stack.enter_context(_result_file(args.result))
        with StopSignals() as signals:
            notice = None if code_cached(network, prop, options) else first_run_notice(args, FIRST_RUN)
            with collecting_none():
                seconds, compiled = load_code(network, prop, options)
            _tell_loaded(args, notice, seconds, compiled)
            if gpu:
                with collecting_none():
                    _tell_loaded(args, None, load_gpu_code(network), True, gpu=True)
            verdict = verify(network, prop, options, should_stop=signals.stop.is_set, gpu=gpu)
        if result_file is not None:
            result_file.write(vnncomp_result(verdict).encode())
    if args.json:
        print(
            json.dumps(
                {
                    "answer": verdict.answer,
                    "x": verdict.x,
                    "y": verdict.y,
                    "nodes": verdict.nodes,
                    "elapsed_s": round(verdict.elapsed_s, 6),
                    "regions": len(prop.regions),
                }
            )
        )
    else:
        lines = [
            f"property     {Path(args.property).name} on {Path(args.network).name} ({prop.n_inputs} inputs, "
            f"{prop.n_outputs} outputs, {len(prop.regions)} region{'' if len(prop.regions) == 1 else 's'})",
            f"answer       {verdict.answer}",
        ]
        if verdict.x is not None:
            lines.append(f"x            {' '.join(repr(v) for v in verdict.x)}")
        if verdict.y is not None:
            lines.append(f"y            {' '.join(repr(v) for v in verdict.y)}")
        lines.append(
            f"nodes        {verdict.nodes:,} boxes, {verdict.elapsed_s:.2f} s on the {'GPU' if gpu else 'CPU'}"
        )
        print("\n".join(map(printable, lines)))
    return EXIT_DONE if verdict.answer in ("sat", "unsat") else EXIT_LIMIT


def _verify_gpu(args: argparse.Namespace) -> bool:
    """Whether verify bounds its boxes on the GPU: with ``--gpus 1`` (the CPU by default and with
    ``--gpus 0``); ProblemError (exit 2) for a request that cannot be served."""
    from ..core.devices import gpu_count

    if args.gpus in (None, 0):
        return False
    if args.gpus != 1:
        raise ProblemError(
            f"--gpus {args.gpus}: verify bounds one property's boxes on one GPU (--gpus 1), or a suite's "
            "instances on a cluster of them (--instances CSV --run PATH)"
        )
    if gpu_count() == 0:
        raise ProblemError("--gpus 1: no GPU is visible (check the driver and CUDA_VISIBLE_DEVICES)")
    return True


def _result_file(path: Path):
    """``--result``'s file, opened before the search (never through a link, a FIFO never blocks);
    ProblemError (exit 2) where it cannot be written."""
    try:
        return create_file(path)
    except OSError as error:
        raise ProblemError(f"--result {path}: cannot write it ({error.strerror or error})") from None


def vnncomp_result(verdict) -> str:
    """VNN-COMP's result text: the answer, and for sat the counterexample's inputs and outputs."""
    if verdict.answer != "sat":
        return verdict.answer + "\n"
    pairs = [f"(X_{i} {v!r})" for i, v in enumerate(verdict.x)] + [f"(Y_{j} {v!r})" for j, v in enumerate(verdict.y)]
    return "sat\n(" + "\n".join(pairs) + ")\n"


def add_run_settings(group: argparse._ArgumentGroup, *, any_family: bool) -> None:
    """None: a spatial run takes no settings from the command that drives it."""


def _gpus_for(args: argparse.Namespace, problem) -> int:
    """0 (the CPU) or 1: ``--gpus`` against the visible GPUs and the variables the GPU kernels take; ProblemError
    (exit 2) for a request that cannot be served."""
    from ..core.devices import gpu_count

    if args.gpus == 0 or (args.gpus is None and args.serial):
        return 0
    if args.serial:
        raise ProblemError("--serial bounds on one CPU thread; it does not go with --gpus")
    if isinstance(args.gpus, int) and args.gpus > 1:
        raise ProblemError(
            f"--gpus {args.gpus}: minimize runs on one GPU in this process (use --gpus 1, or --run "
            "PATH to run on a cluster of them)"
        )
    visible = gpu_count()
    if visible == 0:
        if args.gpus is None:
            return 0
        raise ProblemError(f"--gpus {args.gpus}: no GPU is visible (check the driver and CUDA_VISIBLE_DEVICES)")
    from ..gpu.spatial.kernels import TooManyVariables, check_size

    try:
        check_size(problem.tape)
    except TooManyVariables as error:
        if args.gpus is not None:
            raise ProblemError(f"{error}; use --gpus 0") from None
        if not args.quiet:
            print(f"pbbflow: on the CPU: {error}", file=sys.stderr)
        return 0
    return 1


def run(args: argparse.Namespace) -> int:
    """Load the problem, minimize it (in this process, or with ``--run`` on a cluster), print the
    result; ProblemError reaches the caller (exit 2)."""
    if args.dry_run and args.run is not None:
        print(slurm_job_script(slurm_options(args)))
        return EXIT_DONE
    if args.run is None:
        given = [name for name, default in RUN_ONLY.items() if getattr(args, name) != default]
        if given:
            raise ProblemError(f"--{given[0].replace('_', '-')} drives a run on a cluster: add --run PATH")
    _threshold(args)  # a wrong combination is answered before anything loads
    problem = _problem(args)  # before numba loads: a bad file is answered at once
    if args.run is not None:
        return _run_on_cluster(args, problem)
    return _run_here(args, problem)


def _problem(args: argparse.Namespace):
    """The problem ``args`` name: an ONNX network over ``--domain``, or what ``load_problem`` reads."""
    from .load import load_problem
    from .onnx_network import onnx_problem

    if Path(args.problem).suffix.lower() == ".onnx":
        if args.domain is None:
            raise ProblemError(f"{args.problem}: an ONNX network needs its input box: add --domain LO:HI[,LO:HI...]")
        return onnx_problem(args.problem, args.domain, args.output, args.maximize)
    given = [f"--{name}" for name in ("domain", "maximize", "output") if getattr(args, name) not in (None, False, 0)]
    if given:
        raise ProblemError(f"{given[0]} is for ONNX networks (.onnx); {args.problem} states its own problem")
    return load_problem(args.problem)


def _threshold(args: argparse.Namespace) -> float | None:
    """The threshold C of ``--prove-above C``, or -C of ``--prove-below C`` (the search minimizes minus
    a maximized output); None without one; ProblemError (exit 2) for a wrong combination."""
    if args.prove_above is not None and args.prove_below is not None:
        raise ProblemError("--prove-above and --prove-below ask two questions: give one")
    if args.prove_below is not None:
        if not args.maximize:
            raise ProblemError("--prove-below needs --maximize (minimizing, ask --prove-above C)")
        return -args.prove_below
    if args.prove_above is not None and args.maximize:
        raise ProblemError("--prove-above goes with a minimum: with --maximize, ask --prove-below C")
    return args.prove_above


def _options(args: argparse.Namespace, subdomains: int):
    from .options import MinimizeOptions

    return MinimizeOptions(
        prove_above=_threshold(args),
        eps_abs=args.eps_abs,
        eps_rel=args.eps_rel,
        feas_tol=args.feas_tol,
        subdomains=subdomains,
        bound=args.bound,
        time_limit=args.time_limit,
        node_limit=args.node_limit,
        parallel=not args.serial,
    )


def _client_code(instance) -> CodeLoad:
    """Load the code of a new run's client: its first work's (``minimize``'s) and its coordinator's."""
    from .bnb import load_code

    seconds, compiled = load_code(instance.problem, instance.minimize_options())
    coordinator = instance.client_code()
    return CodeLoad(seconds + coordinator.seconds, compiled or coordinator.compiled)


def _run_on_cluster(args: argparse.Namespace, problem) -> int:
    """A run store of ``problem``, driven on the cluster the options name (as ``solve``)."""
    with starting():  # Dask and the engine load here, not with the parser
        from ..workflow.run import create_run
        from .family import SpatialRun, first_work

    if args.serial and args.gpus not in (None, 0):
        raise ProblemError("--serial bounds on one CPU thread; it does not go with --gpus")
    instance = SpatialRun.new(problem, _options(args, args.subdomains or CPU_SUBDOMAINS), subdomains=args.subdomains)
    no_gpu = "--serial runs on the CPU" if args.serial else None
    prepare_cluster(args)  # in this thread: start-up's opens the cluster
    first_run = instance.first_run_code()
    with (
        StopSignals() as signals,
        reserved(args.run, overwrite=args.overwrite),
        Startup(
            lambda: run_cluster(args, no_gpu),
            instance.worker_code(),
            dashboard_after=args.dashboard_after,
            notice=first_run_notice(args, first_run),
        ) as startup,
    ):
        startup.load_client_code(lambda: _client_code(instance))
        with startup.phase("initial_heuristic_s"):
            first = first_work(instance)  # the root bounded, a local solve from its best point
        startup.opened()  # a cluster that cannot open leaves no run store behind
        store = create_run(
            args.run,
            instance,
            work=first.boxes,
            incumbent=first.value,
            solution=first.x,
            settled=first.settled,
            nodes=first.nodes,
            overwrite=args.overwrite,
        )
        args.store_written = True
        return drive_run(store, args, startup, signals)


def _run_here(args: argparse.Namespace, problem) -> int:
    """Minimize ``problem`` in this process, on the CPU or one GPU; with the GPU chosen by default
    (no ``--gpus``), on the CPU first (``minimize_auto``)."""
    with collecting_none(), starting():  # numba and the engine load here, not with the parser
        gpus = _gpus_for(args, problem)
        if gpus:
            from ..gpu.spatial.bnb import load_code, minimize_auto
            from ..gpu.spatial.bnb import minimize_gpu as minimize
        else:
            from .bnb import load_code, minimize
        from .bnb import load_code as load_cpu_code
    auto = gpus and args.gpus is None
    options = _options(args, args.subdomains or (GPU_SUBDOMAINS if gpus else CPU_SUBDOMAINS))
    bar = ProgressBar(sys.stderr, every=0) if not args.quiet and sys.stderr.isatty() else None  # drawn as reported
    with StopSignals() as signals:
        if auto:
            cpu_options = replace(options, subdomains=args.subdomains or CPU_SUBDOMAINS, parallel=False)
            _load(args, load_cpu_code, problem, cpu_options, gpu=False)
            gpu_code = partial(_load, args, load_code, problem, options, gpu=True)
            run = partial(minimize_auto, cpu_options=cpu_options, load_gpu=gpu_code)
        else:
            _load(args, load_code, problem, options, gpu=bool(gpus))
            run = minimize
        try:
            result = run(problem, options, progress=bar, should_stop=signals.stop.is_set)
        finally:
            if bar is not None:
                bar.close()
    if args.json:
        print_search_json(result)
    else:
        print("\n".join(map(printable, search_lines(result, problem))))  # the name is the file's
    return EXIT_LIMIT if result.status == Status.LIMIT else EXIT_DONE


def _load(args: argparse.Namespace, load_code, problem, options, *, gpu: bool) -> None:
    """Run a backend's ``load_code`` before its search (out of the search's time), telling what it
    took: the GPU's kernels, or the CPU's code when it compiled (announced on a first run)."""
    from .bnb import FIRST_RUN, code_cached

    notice = None if gpu or code_cached(options) else first_run_notice(args, FIRST_RUN)
    with collecting_none():  # numba's first use and its cache, scipy: objects kept to the end
        seconds, compiled = load_code(problem, options)
    _tell_loaded(args, notice, seconds, compiled, gpu=gpu)


def _tell_loaded(args: argparse.Namespace, notice, seconds: float, compiled: bool, *, gpu: bool = False) -> None:
    """End a first run's compile notice, or tell what loading the code took where it is news."""
    if notice is not None:
        notice.finish()
    elif gpu and not args.quiet:  # numba-cuda compiles the kernels in every process
        print(
            f"pbbflow: loading the GPU kernels (compiled on a machine's first run, then from numba's cache): "
            f"{seconds:.1f} s",
            file=sys.stderr,
        )
    elif compiled and not args.quiet:
        print(compiled_line(seconds), file=sys.stderr)
