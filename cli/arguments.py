"""The types of the command line's values, and the options every command that drives a run shares."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from dataclasses import dataclass

from ..core.defaults import CHECKPOINT_EVERY_S
from ..workflow.cluster import CONNECT_SECONDS
from .startup import DASHBOARD_DELAY_S

_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """Seconds in '90', '90s', '5m', '1.5h' or '2d'."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([smhd]?)\s*", text.lower(), re.ASCII)
    if not match or float(match.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r} (examples: 90, 90s, 5m, 1.5h)")
    return float(match.group(1)) * _UNITS[match.group(2)]


def integer(text: str) -> int | None:
    """The integer ``text`` writes in ASCII digits, else None (int() takes any script's digits and '_')."""
    return int(text) if re.fullmatch(r"\s*[+-]?\d+\s*", text, re.ASCII) else None


def positive_int(text: str) -> int:
    value = integer(text)
    if value is None or value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    value = integer(text)
    if value is None or value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def gpus(text: str) -> int | str:
    """``all`` or a number >= 0."""
    if text == "all":
        return text
    try:
        return non_negative_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0 or 'all', got {text!r}") from None


@dataclass(frozen=True)
class RunHelp:
    """How the help of the options every run-driving command shares speaks of that command's runs."""

    nodes: str | None  # what a run counts for --node-limit, e.g. "decomposed this many nodes" (None: no such option)
    gpus: str  # the help of --gpus
    heuristic_workers: str | None  # the help of --heuristic-workers (None: no such option)
    with_run: bool = False  # its cluster options apply with --run only (minimize); --gpus also without
    checkpoints: bool = True  # it takes --checkpoint-every


def add_run_options(
    parser: argparse.ArgumentParser,
    words: RunHelp,
    add_settings: Callable[[argparse._ArgumentGroup], None] | None = None,
) -> None:
    """Options shared by the commands that drive a run: limits, cluster, output, their help in the
    command's ``words``; ``add_settings`` adds the options of the command's family (or families)
    after ``--gpus`` in the cluster group (``core.family.Commands.add_run_settings``)."""
    run = "with --run: " if words.with_run else ""
    resumable = "with --run the run stays resumable" if words.with_run else "the run stays resumable"
    parser.add_argument(
        "--time-limit",
        type=parse_duration,
        default=None,
        metavar="DURATION",
        help=f"stop after this long (90, 90s, 5m, 1.5h); {resumable}",
    )
    if words.nodes is not None:
        parser.add_argument(
            "--node-limit",
            type=positive_int,
            default=None,
            metavar="INT",
            help=f"stop once the run has {words.nodes} ({run}about: each explorer stops at what was left of it at its last checkpoint)",
        )
    if words.checkpoints:
        parser.add_argument(
            "--checkpoint-every",
            type=parse_duration,
            default=CHECKPOINT_EVERY_S,
            metavar="DURATION",
            help=f"{run}write a checkpoint this often (default: {CHECKPOINT_EVERY_S:g}s)",
        )
    cluster = parser.add_argument_group("cluster (with --run)" if words.with_run else "cluster")
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
    (parser if words.with_run else cluster).add_argument(
        "--gpus", type=gpus, default=None, metavar="N|all", help=words.gpus
    )
    if add_settings is not None:
        add_settings(cluster)
    if words.heuristic_workers is not None:
        cluster.add_argument(
            "--heuristic-workers", type=non_negative_int, default=None, metavar="N", help=words.heuristic_workers
        )
    cluster.add_argument(
        "--threads",
        type=positive_int,
        default=None,
        help="explorer threads per local worker (default: the cores shared out, 1 by default)",
    )
    slurm = parser.add_argument_group(
        "slurm (with --run --cluster slurm)" if words.with_run else "slurm (with --cluster slurm)"
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
