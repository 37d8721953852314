"""The types of the command line's values, and the options every command that drives a run shares."""

from __future__ import annotations

import argparse
import re

from ..gpu import DEFAULT_IVMS
from ..workflow.cluster import CONNECT_SECONDS
from .startup import DASHBOARD_DELAY_S

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


def positive_int(text: str) -> int:
    value = _integer(text)
    if value is None or value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def upper_bound(text: str) -> int | str:
    """``neh``, ``ig`` or a positive makespan."""
    return text.lower() if text.lower() in ("neh", "ig") else positive_int(text)


def non_negative_int(text: str) -> int:
    value = _integer(text)
    if value is None or value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def seed(text: str) -> int:
    """A seed in [0, 2**64), the range iterated greedy takes (it refuses others, which would wrap)."""
    value = _integer(text)
    if value is None or not 0 <= value < 2**64:
        raise argparse.ArgumentTypeError(f"expected an integer from 0 to 2**64 - 1, got {text!r}")
    return value


def gpus(text: str) -> int | str:
    """``all`` or a number >= 0."""
    if text == "all":
        return text
    try:
        return non_negative_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0 or 'all', got {text!r}") from None


FLOWSHOP, SPATIAL = "flowshop", "spatial"  # the family of a command's runs (None: resume, either family)


def add_run_options(parser: argparse.ArgumentParser, family: str | None) -> None:
    """Options shared by the commands that drive a run: limits, cluster, output.  ``family`` is the
    family of the command's runs: ``FLOWSHOP`` (solve), ``SPATIAL`` (minimize, whose cluster options
    apply with ``--run``; it has no ``--ivms``, whose default it still sets) or None (resume, which
    continues a run of either); each option's help speaks of that family only."""
    spatial = family == SPATIAL
    run = "with --run: " if spatial else ""
    resumable = "with --run the run stays resumable" if spatial else "the run stays resumable"
    nodes = {
        FLOWSHOP: "decomposed this many nodes",
        SPATIAL: "explored this many boxes",
        None: "decomposed this many nodes (a spatial run: explored this many boxes)",
    }[family]
    parser.add_argument(
        "--time-limit",
        type=parse_duration,
        default=None,
        metavar="DURATION",
        help=f"stop after this long (90, 90s, 5m, 1.5h); {resumable}",
    )
    parser.add_argument(
        "--node-limit",
        type=positive_int,
        default=None,
        metavar="INT",
        help=f"stop once the run has {nodes} ({run}checked between checkpoints)",
    )
    parser.add_argument(
        "--checkpoint-every",
        type=parse_duration,
        default=60.0,
        metavar="DURATION",
        help=f"{run}write a checkpoint this often (default: 60s)",
    )
    cluster = parser.add_argument_group("cluster (with --run)" if spatial else "cluster")
    cluster.add_argument(
        "--cluster",
        choices=("local", "slurm"),
        default="local",
        help="local: a LocalCluster on this machine (default); slurm: dask-jobqueue workers",
    )
    cluster.add_argument("--scheduler", metavar="ADDRESS", help="use the running Dask scheduler at ADDRESS")
    cluster.add_argument(
        "--connect-timeout",
        type=parse_duration,
        default=CONNECT_SECONDS,
        metavar="DURATION",
        help=f"how long --scheduler may take to answer (default: {CONNECT_SECONDS:g}s)",
    )
    cluster.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        help="local workers (threads of this process; default: one per core)",
    )
    gpus_help = {
        FLOWSHOP: "local GPUs, one explorer of --ivms IVMs each (default: all GPUs present, CPU workers "
        "otherwise; 0: CPU only)",
        SPATIAL: "without --run: 0 runs on the CPU, 1 or all on one GPU (default: a GPU when one is visible); "
        "with --run: local GPUs, one explorer each (default: all GPUs present, CPU workers otherwise; "
        "0: CPU only)",
        None: "local GPUs, one explorer each, of --ivms IVMs for a flow-shop run (default: all GPUs present, "
        "CPU workers otherwise; 0: CPU only)",
    }[family]
    (parser if spatial else cluster).add_argument("--gpus", type=gpus, default=None, metavar="N|all", help=gpus_help)
    if spatial:
        parser.set_defaults(ivms=DEFAULT_IVMS)  # a spatial run's GPU explorers have no IVMs
    else:
        runs = " of a flow-shop run" if family is None else ""
        cluster.add_argument(
            "--ivms",
            type=positive_int,
            default=DEFAULT_IVMS,
            metavar="K",
            help=f"IVMs per GPU{runs} (default: {DEFAULT_IVMS})",
        )
    heuristic_help = {
        FLOWSHOP: "iterated greedy tasks beside the search, which send every better schedule to the explorers "
        "(default: one beside each GPU worker, none on CPU workers, where they would replace "
        "explorers; 0: none)",
        SPATIAL: "with --run: tasks of local solves from random starts beside the search, which send every "
        "better point to the explorers (default: none; on CPU workers they replace explorers)",
        None: "side-heuristic tasks beside the search: iterated greedy for a flow-shop run (default: one beside "
        "each GPU worker), local solves from random starts for a spatial run (default: none); on CPU "
        "workers they replace explorers; 0: none",
    }[family]
    cluster.add_argument("--heuristic-workers", type=non_negative_int, default=None, metavar="N", help=heuristic_help)
    cluster.add_argument(
        "--threads",
        type=positive_int,
        default=None,
        help="explorer threads per local worker (default: the cores shared out, 1 by default)",
    )
    slurm = parser.add_argument_group(
        "slurm (with --run --cluster slurm)" if spatial else "slurm (with --cluster slurm)"
    )
    slurm.add_argument("--partition")
    slurm.add_argument("--account")
    slurm.add_argument("--jobs", type=positive_int, default=1, help="Slurm jobs of workers (default: 1)")
    slurm.add_argument(
        "--cores", type=positive_int, default=1, help="cores per job, one single-threaded worker each (default: 1)"
    )
    slurm.add_argument("--memory", default="4GB", help="memory per job (default: 4GB)")
    slurm.add_argument("--walltime", default="01:00:00", help="per job (default: 01:00:00)")
    slurm.add_argument("--gpus-per-job", type=non_negative_int, default=0, help="GPUs per job (default: 0)")
    slurm.add_argument(
        "--directive",
        action="append",
        default=[],
        metavar="TEXT",
        help="an extra #SBATCH directive, e.g. --directive=--exclusive (repeatable)",
    )
    slurm.add_argument(
        "--prologue",
        action="append",
        default=[],
        metavar="LINE",
        help="a shell line run before the worker starts (repeatable)",
    )
    slurm.add_argument("--log-directory", default=None)
    slurm.add_argument(
        "--interface",
        default=None,
        help="network interface the scheduler and workers use, e.g. ib0 (default: 127.0.0.1 only)",
    )
    slurm.add_argument("--tls", action="store_true", help="encrypt with temporary TLS certificates")
    slurm.add_argument("--dry-run", action="store_true", help="print the Slurm job script and exit")
    out = parser.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print the result as JSON")
    out.add_argument("--quiet", action="store_true", help="no progress bar")
    out.add_argument(
        "--dashboard-after",
        type=parse_duration,
        default=DASHBOARD_DELAY_S,
        metavar="DURATION",
        help=f"{run}start a local cluster's dashboard once the search has run this long (default: "
        f"{DASHBOARD_DELAY_S:g}s; 0: at once); shorter runs start none",
    )
