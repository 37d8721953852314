"""``pbbflow minimize``: prove a continuous problem's global minimum by spatial branch-and-bound.

Exit codes as ``solve``: 0 finished (``optimal`` or ``infeasible``), 3 stopped at a limit or by a
signal, 2 bad input (one line), 1 internal error.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import TextIO

from ..spatial.load import builtin_names, load_problem
from .progress import clock, fit_fields, terminal_columns
from .signals import StopSignals

EXIT_DONE, EXIT_LIMIT = 0, 3


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}")
    return value


def add_parser(commands, duration, positive_int) -> None:
    """The ``minimize`` command on the subparsers ``commands`` (``duration`` and ``positive_int``
    parse the shared option types)."""
    m = commands.add_parser("minimize", help="prove the global minimum of a continuous problem (spatial B&B)")
    m.add_argument("problem", help="a problem or ANN JSON file, a Python model file (.py), or a built-in name "
                                   f"({', '.join(builtin_names())})")
    m.add_argument("--eps-abs", type=_non_negative_float, default=1e-6, metavar="X",
                   help="absolute optimality gap (default: 1e-6)")
    m.add_argument("--eps-rel", type=_non_negative_float, default=1e-6, metavar="X",
                   help="relative optimality gap (default: 1e-6)")
    m.add_argument("--feas-tol", type=_non_negative_float, default=1e-6, metavar="X",
                   help="equalities hold within this at the reported point (default: 1e-6)")
    m.add_argument("--subdomains", type=positive_int, default=64, metavar="N",
                   help="subdomains per box: the largest k^d <= N, uniform (default: 64)")
    m.add_argument("--bound", choices=("nie", "mvf", "both"), default="both",
                   help="subdomain bound: natural interval extension, mean value form, or both (default)")
    m.add_argument("--serial", action="store_true", help="bound subdomains on one thread")
    m.add_argument("--time-limit", type=duration, default=None, metavar="DURATION",
                   help="stop after this long (90, 90s, 5m, 1.5h)")
    m.add_argument("--node-limit", type=positive_int, default=None, metavar="INT",
                   help="stop once this many boxes were bounded")
    m.add_argument("--json", action="store_true", help="print the result as JSON")
    m.add_argument("--quiet", action="store_true", help="no progress line")


class ProgressLine:
    """One terminal line: certified LB, UB, gap, open boxes, boxes/s, elapsed."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.shown = 0
        self.last = (time.monotonic(), 0)

    def __call__(self, progress) -> None:
        now = time.monotonic()
        then, nodes_then = self.last
        rate = (progress.nodes - nodes_then) / max(now - then, 1e-9)
        self.last = (now, progress.nodes)
        ub = progress.objective
        gap = "-" if ub is None or not math.isfinite(progress.lower_bound) else f"{ub - progress.lower_bound:.3g}"
        fields = [
            (6, f"LB {progress.lower_bound:.10g}"),
            (5, f"UB {'-' if ub is None else f'{ub:.10g}'}"),
            (4, f"gap {gap}"),
            (3, f"{progress.open_boxes:,} open"),
            (2, f"{rate:,.0f} boxes/s"),
            (1, clock(progress.elapsed_s)),
        ]
        width = terminal_columns(self.stream) - 1
        line = fit_fields(fields, width)
        self.stream.write("\r" + line.ljust(min(self.shown, width)))
        self.stream.flush()
        self.shown = len(line)

    def close(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


def _print_result(out: dict, problem, lower_bound: float) -> None:
    def number(value) -> str:
        return "-" if value is None else repr(value)

    tape = problem.tape
    x = out["x"]
    lines = [
        f"problem      {out['problem']} ({problem.dimension} variables, {tape.n_ineq} inequalities, "
        f"{tape.n_eq} equalities)",
        f"status       {out['status']}",
        f"objective    {number(out['objective'])}",
        f"x            {'-' if x is None else ' '.join(repr(v) for v in x)}",
        f"lower bound  {lower_bound!r}",  # inf: infeasible; -inf: unbounded below so far
        f"gap          {number(out['gap_abs'])} (relative {number(out['gap_rel'])})",
        f"nodes        {out['nodes']:,} boxes of {out['subdomains']:,} subdomains, {out['elapsed_s']:.2f} s",
    ]
    if tape.n_eq:
        lines.append(f"feasibility  equalities within {out['feas_tol']:g}")
    print("\n".join(lines))


def run(args: argparse.Namespace) -> int:
    """Load the problem, minimize it, print the result; ProblemError reaches the caller (exit 2)."""
    problem = load_problem(args.problem)  # before numba loads: a bad file is answered at once
    from ..spatial.bnb import MinimizeOptions, load_code, minimize

    options = MinimizeOptions(eps_abs=args.eps_abs, eps_rel=args.eps_rel, feas_tol=args.feas_tol,
                              subdomains=args.subdomains, bound=args.bound, time_limit=args.time_limit,
                              node_limit=args.node_limit, parallel=not args.serial)  # fmt: skip
    line = ProgressLine(sys.stderr) if not args.quiet and sys.stderr.isatty() else None
    with StopSignals() as signals:
        seconds, compiled = load_code(problem, options)
        if compiled and not args.quiet:
            print(f"pbbflow: compiling, first run only: {seconds:.1f} s", file=sys.stderr)
        try:
            result = minimize(problem, options, progress=line, should_stop=signals.stop.is_set)
        finally:
            if line is not None:
                line.close()
    out = result.to_json()
    if args.json:
        print(json.dumps(out))
    else:
        _print_result(out, problem, result.lower_bound)
    return EXIT_LIMIT if result.status == "limit" else EXIT_DONE
