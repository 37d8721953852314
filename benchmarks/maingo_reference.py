"""MAiNGO (McCormick-relaxation branch-and-bound) on pbbflow's instruction tapes: the reference side by side.

Each tape instruction becomes one maingopy FFVar operation, so MAiNGO solves exactly the problem the
tape describes. Benchmarks only: the package and its CI tests never import maingopy
(``pip install maingopy``).

- Every constant is passed as ``maingopy.FFVar(c)``: maingopy rounds a bare Python float to float32
  (``x - 0.1`` evaluates as ``x - 0.10000000149``), which would change the problem.
- A tape constant is an enclosure [lo, hi]; MAiNGO gets its midpoint rounded to the nearest double
  (the constant itself for a point; within one ulp of pi or e for their neighbouring-double
  enclosures).
- MAiNGO has no atan2: a tape using ATAN2 is reported ``unsupported``, never approximated.
- SIGMOID is written 1 / (1 + exp(-x)), RELU max(x, 0), integer powers ``maingopy.pow(x, k)``
  (negative k included).
- MAiNGO runs serially (the wheel has no MPI), with logging off and every output file disabled
  and, should one be written anyway, named into a temporary directory.
- ``lbp_solver``: ``mccormick`` (MAiNGO's default lower bounds: McCormick relaxations, their LPs
  solved by CLP in the wheel) or ``interval`` (its interval extensions alone, ``LBP_SOLVER_INTERVAL``).

    python benchmarks/maingo_reference.py TAPE.json ...   # one JSON object per problem
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from importlib.metadata import version

import maingopy

from pbbflow.spatial.tape import Op, Tape

UNSUPPORTED_OPS = frozenset({Op.ATAN2})
LBP_SOLVERS = {"mccormick": None, "interval": maingopy.LBP_SOLVER_INTERVAL}  # None: MAiNGO's default
OUTPUT_FILE_SETTERS = (
    ("set_log_file_name", "maingo.log"),
    ("set_result_file_name", "maingo_result.txt"),
    ("set_solution_and_statistics_csv_file_name", "maingo_statistics.csv"),
    ("set_iterations_csv_file_name", "maingo_iterations.csv"),
    ("set_json_file_name", "maingo.json"),
    ("set_bab_file_name", "maingo_bab.log"),
)


def _finite(value: float) -> float | None:
    """MAiNGO's value, or None for its "none" sentinels (+-DBL_MAX, inf: no bound or no gap yet)."""
    return value if abs(value) < sys.float_info.max else None


class UnsupportedTape(ValueError):
    """The tape uses an operation MAiNGO does not provide."""


def _constant(lo: float, hi: float) -> maingopy.FFVar:
    """A tape constant as a double-precision FFVar: its enclosure's midpoint (see the module doc)."""
    return maingopy.FFVar(float(0.5 * lo + 0.5 * hi))


def _unary(code: Op, a: maingopy.FFVar) -> maingopy.FFVar:
    if code is Op.NEG:
        return -a
    if code is Op.SQRT:
        return maingopy.sqrt(a)
    if code is Op.EXP:
        return maingopy.exp(a)
    if code is Op.LOG:
        return maingopy.log(a)
    if code is Op.TANH:
        return maingopy.tanh(a)
    if code is Op.SIN:
        return maingopy.sin(a)
    if code is Op.COS:
        return maingopy.cos(a)
    if code is Op.TAN:
        return maingopy.tan(a)
    if code is Op.ABS:
        return maingopy.fabs(a)
    if code is Op.SIGMOID:
        one = maingopy.FFVar(1.0)
        return one / (one + maingopy.exp(-a))
    if code is Op.RELU:
        return maingopy.max(a, maingopy.FFVar(0.0))
    raise UnsupportedTape(f"no MAiNGO operation for {code.name}")


def _binary(code: Op, a: maingopy.FFVar, b: maingopy.FFVar) -> maingopy.FFVar:
    if code is Op.ADD:
        return a + b
    if code is Op.SUB:
        return a - b
    if code is Op.MUL:
        return a * b
    if code is Op.DIV:
        return a / b
    if code is Op.MIN:
        return maingopy.min(a, b)
    if code is Op.MAX:
        return maingopy.max(a, b)
    raise UnsupportedTape(f"no MAiNGO operation for {code.name}")


def evaluate_tape(tape: Tape, variables: Sequence[maingopy.FFVar]) -> list[maingopy.FFVar]:
    """Walk the tape once with FFVar operations; the outputs (f, then g, then h) as FFVars."""
    slots: list[maingopy.FFVar] = []
    for code, a, b in zip(tape.op.tolist(), tape.arg0.tolist(), tape.arg1.tolist()):
        code = Op(code)
        if code is Op.VAR:
            value = variables[a]
        elif code is Op.CONST:
            value = _constant(tape.const_lo[a], tape.const_hi[a])
        elif code is Op.POWI:
            value = maingopy.pow(slots[a], int(b))
        elif b >= 0:
            value = _binary(code, slots[a], slots[b])
        else:
            value = _unary(code, slots[a])
        slots.append(value)
    return [slots[i] for i in tape.outputs.tolist()]


class TapeModel(maingopy.MAiNGOmodel):
    """A MAiNGO model whose objective, inequalities (<= 0) and equalities (== 0) come from a tape."""

    def __init__(self, tape: Tape, lower: Sequence[float], upper: Sequence[float]):
        super().__init__()
        self.tape = tape
        self.lower = [float(v) for v in lower]
        self.upper = [float(v) for v in upper]

    def get_variables(self) -> list[maingopy.OptimizationVariable]:
        return [
            maingopy.OptimizationVariable(maingopy.Bounds(lo, hi), maingopy.VT_CONTINUOUS, f"x{i}")
            for i, (lo, hi) in enumerate(zip(self.lower, self.upper))
        ]

    def evaluate(self, variables: Sequence[maingopy.FFVar]) -> maingopy.EvaluationContainer:
        outputs = evaluate_tape(self.tape, variables)
        n_ineq = self.tape.n_ineq
        result = maingopy.EvaluationContainer()
        result.objective = outputs[0]
        result.ineq = outputs[1 : 1 + n_ineq]
        result.eq = outputs[1 + n_ineq :]
        return result


def tape_to_maingo(tape: Tape, lower: Sequence[float], upper: Sequence[float]) -> TapeModel:
    """The MAiNGO model of minimizing the tape's f over [lower, upper] s.t. g <= 0, h == 0.

    Raises UnsupportedTape when the tape uses an operation MAiNGO lacks (ATAN2) and ValueError for
    a box that does not match the tape.
    """
    used = {Op(code) for code in set(tape.op.tolist())}
    missing = sorted(code.name for code in used & UNSUPPORTED_OPS)
    if missing:
        raise UnsupportedTape(f"MAiNGO has no {', '.join(missing)}")
    if len(lower) != tape.n_vars or len(upper) != tape.n_vars:
        raise ValueError(f"the box has {len(lower)}/{len(upper)} bounds for {tape.n_vars} variables")
    if any(not lo <= hi for lo, hi in zip(lower, upper)):
        raise ValueError("every lower bound must be <= its upper bound")
    return TapeModel(tape, lower, upper)


def solve_with_maingo(
    tape: Tape,
    lower: Sequence[float],
    upper: Sequence[float],
    eps_abs: float = 1e-6,
    eps_rel: float = 1e-6,
    time_limit: float = 60.0,
    lbp_solver: str = "mccormick",
) -> dict:
    """Solve the tape's problem with MAiNGO; status, value, point, bounds, nodes, times and settings.

    ``nodes`` is MAiNGO's B&B iteration count (one node processed per iteration); ``lbp_solves`` and
    ``ubp_solves`` count its lower and upper bounding problems. ``seconds`` is the wall time of
    ``solve()`` alone; ``maingo_cpu_seconds``/``maingo_wall_seconds`` are MAiNGO's own clocks.
    ``lower_bound`` and the gaps are None where MAiNGO has none (infeasible, or stopped before the
    root's bound); ``status`` is the RETCODE name, or ``unsupported`` or ``error`` (MAiNGO failed,
    e.g. it cannot relax log or 1/x over a box reaching 0) with a ``reason``.
    """
    settings = {
        "epsilonA": eps_abs,
        "epsilonR": eps_rel,
        "deltaIneq": 1e-6,
        "deltaEq": 1e-6,
        "maxTime": time_limit,
        "loggingDestination": int(maingopy.LOGGING_NONE),
        "writeCsv": False,
        "writeJson": False,
        "writeResultFile": False,
    }
    if LBP_SOLVERS[lbp_solver] is not None:
        settings["LBP_solver"] = int(LBP_SOLVERS[lbp_solver])
    result = {"maingo_version": version("maingopy"), "settings": settings}
    try:
        model = tape_to_maingo(tape, lower, upper)
    except UnsupportedTape as error:
        return {**result, "status": "unsupported", "reason": str(error)}
    # The solver keeps only a C++ reference: ``model`` must stay alive (a collected Python model
    # fails with "pure virtual function ... evaluate").
    solver = maingopy.MAiNGO(model)
    with tempfile.TemporaryDirectory(prefix="maingo-") as scratch:
        for setter, name in OUTPUT_FILE_SETTERS:
            getattr(solver, setter)(os.path.join(scratch, name))
        for key, value in settings.items():
            if not solver.set_option(key, value):
                raise RuntimeError(f"MAiNGO refused the setting {key} = {value}")
        start = time.perf_counter()
        try:
            status = solver.solve()
        except maingopy.MAiNGOException as error:  # e.g. a relaxation of log or 1/x over a box with 0
            reason = " ".join(str(error).split())
            return {**result, "status": "error", "reason": reason, "seconds": time.perf_counter() - start}
        seconds = time.perf_counter() - start
    found = status in (maingopy.GLOBALLY_OPTIMAL, maingopy.FEASIBLE_POINT)
    lower_bound = _finite(solver.get_final_LBD()) if status != maingopy.INFEASIBLE else None
    bounded = found and lower_bound is not None
    return {
        **result,
        "status": status.name,
        "objective": solver.get_objective_value() if found else None,
        "x": list(solver.get_solution_point()) if found else None,
        "lower_bound": lower_bound,
        "gap_abs": solver.get_final_abs_gap() if bounded else None,
        "gap_rel": solver.get_final_rel_gap() if bounded else None,
        "nodes": int(solver.get_iterations()),
        "lbp_solves": int(solver.get_LBP_count()),
        "ubp_solves": int(solver.get_UBP_count()),
        "max_nodes_in_memory": int(solver.get_max_nodes_in_memory()),
        "seconds": seconds,
        "maingo_cpu_seconds": solver.get_cpu_solution_time(),
        "maingo_wall_seconds": solver.get_wallclock_solution_time(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tapes", nargs="+", help='JSON files {"name", "lower", "upper", "tape"}')
    parser.add_argument("--eps-abs", type=float, default=1e-6)
    parser.add_argument("--eps-rel", type=float, default=1e-6)
    parser.add_argument("--time-limit", type=float, default=60.0, help="seconds per problem")
    parser.add_argument(
        "--lbp-solver",
        choices=sorted(LBP_SOLVERS),
        default="mccormick",
        help="lower bounds: McCormick relaxations (default) or interval extensions alone",
    )
    args = parser.parse_args(argv)
    for path in args.tapes:
        with open(path) as handle:
            problem = json.load(handle)
        tape = Tape.from_json(problem["tape"])
        result = solve_with_maingo(
            tape, problem["lower"], problem["upper"], args.eps_abs, args.eps_rel, args.time_limit, args.lbp_solver
        )
        print(json.dumps({"name": problem["name"], "file": path, **result}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
