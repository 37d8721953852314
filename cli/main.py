"""The ``pbbflow`` command.

Exit codes: 0 the search finished, 3 it stopped at a limit (or was interrupted),
2 usage or input error (one line on stderr), 1 internal error.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

from ..flowshop.bounds import BOUND_NAMES
from ..flowshop.instance import FORMATS, ORIENTATIONS, InstanceError, load_instance
from ..search.explorer import Snapshot
from ..search.ivm import BRANCH_NAMES
from ..search.solve import LIMIT, SolveResult, solve

EXIT_DONE, EXIT_INTERNAL, EXIT_USAGE, EXIT_LIMIT = 0, 1, 2, 3
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """Seconds in '90', '90s', '5m', '1.5h' or '2d'."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([smhd]?)\s*", text.lower())
    if not match or float(match.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r} (examples: 90, 90s, 5m, 1.5h)")
    return float(match.group(1)) * _UNITS[match.group(2)]


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _upper_bound(text: str) -> int | None:
    return None if text.lower() == "neh" else _positive_int(text)


def _default_threads() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pbbflow", description="Exact branch-and-bound for the permutation flow shop.")
    commands = parser.add_subparsers(dest="command", required=True)
    s = commands.add_parser("solve", help="prove an optimal schedule for an instance")
    s.add_argument("instance", help="a Taillard name (ta001 .. ta120) or an instance file")
    s.add_argument("--format", choices=FORMATS, default="auto", help="instance file format (default: auto)")
    s.add_argument("--orientation", choices=ORIENTATIONS, default="job-major",
                   help="Taillard-format files: n rows of m times (job-major, default) or m rows of n")
    s.add_argument("--ub", type=_upper_bound, default=None, metavar="INT|neh",
                   help="search for schedules better than this makespan (default: NEH's)")
    s.add_argument("--bound", choices=list(BOUND_NAMES), default="lb1", help="lower bound (default: lb1)")
    s.add_argument("--branch", choices=list(BRANCH_NAMES), default="minmin", help="branching rule (default: minmin)")
    s.add_argument("--threads", type=_positive_int, default=_default_threads(), help="explorer threads (default: all cores)")
    s.add_argument("--time-limit", type=parse_duration, default=None, metavar="DURATION", help="stop after this long")
    s.add_argument("--node-limit", type=_positive_int, default=None, metavar="INT", help="stop after this many nodes")
    s.add_argument("--json", action="store_true", help="print the result as JSON")
    s.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return parser


def _progress_printer(stream):
    def show(snapshot: Snapshot) -> None:
        rate = snapshot.nodes / snapshot.elapsed_s if snapshot.elapsed_s > 0 else 0.0
        stream.write(f"\r{snapshot.elapsed_s:8.1f} s  {snapshot.nodes:,} nodes  {rate / 1e6:.2f} M/s  "
                     f"incumbent {snapshot.ub}   ")
        stream.flush()

    return show


def _print_result(result: SolveResult) -> None:
    rate = result.nodes / result.elapsed_s if result.elapsed_s > 0 else 0.0
    lines = [
        f"instance     {result.instance} ({result.n} jobs x {result.m} machines)",
        f"status       {result.status}",
        f"makespan     {result.makespan if result.makespan is not None else '-'}",
        f"permutation  {' '.join(map(str, result.permutation)) if result.permutation else '-'}",
        f"lower bound  {result.lower_bound}",
        f"nodes        {result.nodes:,} decomposed, {result.leaves:,} leaves, {result.elapsed_s:.2f} s ({rate / 1e6:.2f} M nodes/s)",
    ]
    if result.status == LIMIT:
        lines.append(f"remaining    {result.remaining_fraction:.3%} of the search space")
    print("\n".join(lines))


def _solve(args: argparse.Namespace) -> int:
    instance = load_instance(args.instance, fmt=args.format, orientation=args.orientation)
    show_progress = not args.quiet and sys.stderr.isatty()
    result = solve(
        instance, ub=args.ub, bound=args.bound, branch=args.branch, threads=args.threads,
        time_limit=args.time_limit, node_limit=args.node_limit,
        on_progress=_progress_printer(sys.stderr) if show_progress else None,
    )  # fmt: skip
    if show_progress:
        sys.stderr.write("\n")
    if args.json:
        print(json.dumps(result.to_dict()))
    else:
        _print_result(result)
    return EXIT_LIMIT if result.status == LIMIT else EXIT_DONE


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``pbbflow`` console script."""
    args = build_parser().parse_args(argv)
    try:
        return _solve(args)
    except InstanceError as error:
        print(f"pbbflow: error: {error}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
