"""SCIP (spatial branch-and-bound over LP relaxations) on pbbflow's instruction tapes: a second reference.

Each tape instruction becomes one pyscipopt expression (a few for the identities below; variables
are wrapped as general expressions first, so products and powers keep the tape's structure instead
of being expanded into polynomials), so SCIP solves the problem the tape describes. Benchmarks only: the package and its
CI tests never import pyscipopt (``pip install pyscipopt``).

- A tape constant is an enclosure [lo, hi]; SCIP gets its midpoint rounded to the nearest double
  (the constant itself for a point; within one ulp of pi or e), as MAiNGO does.
- SCIP's objective must be linear: f becomes the constraint ``f - t <= 0`` and SCIP minimizes the
  free auxiliary variable ``t``.
- Inequalities are ``g <= 0`` and equalities ``h == 0``, both accepted by SCIP within its
  feasibility tolerance ``numerics/feastol`` = ``feas_tol`` (1e-6, MAiNGO's deltaIneq/deltaEq).
- SCIP has sqrt, exp, log, sin, cos, abs and powers. The others are exact identities over the reals:
  tanh(x) = 1 - 2 / (1 + exp(2x)), sigmoid(x) = 1 / (1 + exp(-x)), tan(x) = sin(x) / cos(x),
  min(a, b) = (a + b - |a - b|) / 2, max(a, b) = (a + b + |a - b|) / 2, relu(x) = (x + |x|) / 2.
  atan2 has none: a tape using ATAN2 is reported ``unsupported``, never approximated.
- One thread (``parallel/maxnthreads``, ``lp/threads``), output off, stopping at the absolute or
  relative gap (``limits/absgap``, ``limits/gap``) or the time limit (``limits/time``, wall clock).

    python benchmarks/scip_reference.py TAPE.json ...   # one JSON object per problem
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from importlib.metadata import version

import pyscipopt
from pyscipopt.scip import GenExpr, buildGenExprObj

from pbbflow.spatial.tape import Op, Tape

UNSUPPORTED_OPS = frozenset({Op.ATAN2})
PROVED = frozenset({"optimal", "gaplimit"})  # SCIP statuses that certify the gap


class Unsupported(ValueError):
    """The tape uses an operation SCIP neither provides nor can write by an exact identity."""


def _constant(lo: float, hi: float) -> GenExpr:
    """A tape constant as a double: its enclosure's midpoint (see the module doc)."""
    return buildGenExprObj(float(0.5 * lo + 0.5 * hi))


def _unary(code: Op, a: GenExpr) -> GenExpr:
    if code is Op.NEG:
        return -a
    if code is Op.SQRT:
        return pyscipopt.sqrt(a)
    if code is Op.EXP:
        return pyscipopt.exp(a)
    if code is Op.LOG:
        return pyscipopt.log(a)
    if code is Op.SIN:
        return pyscipopt.sin(a)
    if code is Op.COS:
        return pyscipopt.cos(a)
    if code is Op.ABS:
        return abs(a)
    if code is Op.TANH:  # tanh(x) = 1 - 2 / (1 + exp(2x))
        return 1.0 - 2.0 / (1.0 + pyscipopt.exp(2.0 * a))
    if code is Op.SIGMOID:  # sigmoid(x) = 1 / (1 + exp(-x))
        return 1.0 / (1.0 + pyscipopt.exp(-a))
    if code is Op.TAN:  # tan(x) = sin(x) / cos(x)
        return pyscipopt.sin(a) / pyscipopt.cos(a)
    if code is Op.RELU:  # max(x, 0) = (x + |x|) / 2
        return 0.5 * (a + abs(a))
    raise Unsupported(f"no SCIP operation or exact identity for {code.name}")


def _binary(code: Op, a: GenExpr, b: GenExpr) -> GenExpr:
    if code is Op.ADD:
        return a + b
    if code is Op.SUB:
        return a - b
    if code is Op.MUL:
        return a * b
    if code is Op.DIV:
        return a / b
    if code is Op.MIN:  # min(a, b) = (a + b - |a - b|) / 2
        return 0.5 * (a + b - abs(a - b))
    if code is Op.MAX:  # max(a, b) = (a + b + |a - b|) / 2
        return 0.5 * (a + b + abs(a - b))
    raise Unsupported(f"no SCIP operation or exact identity for {code.name}")


def evaluate_tape(tape: Tape, variables: Sequence[pyscipopt.Variable]) -> list[GenExpr]:
    """Walk the tape once with pyscipopt expressions; the outputs (f, then g, then h)."""
    slots: list[GenExpr] = []
    for code, a, b in zip(tape.op.tolist(), tape.arg0.tolist(), tape.arg1.tolist()):
        code = Op(code)
        if code is Op.VAR:
            value = buildGenExprObj(variables[a])
        elif code is Op.CONST:
            value = _constant(tape.const_lo[a], tape.const_hi[a])
        elif code is Op.POWI:
            value = slots[a] ** int(b)
        elif b >= 0:
            value = _binary(code, slots[a], slots[b])
        else:
            value = _unary(code, slots[a])
        slots.append(value)
    return [slots[i] for i in tape.outputs.tolist()]


def tape_to_scip(tape: Tape, lower: Sequence[float], upper: Sequence[float]) -> tuple[pyscipopt.Model, list]:
    """The SCIP model of minimizing the tape's f over [lower, upper] s.t. g <= 0, h == 0, and its
    variables (the tape's, in order; the objective's auxiliary variable is not among them).

    Raises Unsupported when the tape uses ATAN2 and ValueError for a box that does not match the tape.
    """
    used = {Op(code) for code in set(tape.op.tolist())}
    missing = sorted(code.name for code in used & UNSUPPORTED_OPS)
    if missing:
        raise Unsupported(f"SCIP has no {', '.join(missing)} and no exact identity for it")
    if len(lower) != tape.n_vars or len(upper) != tape.n_vars:
        raise ValueError(f"the box has {len(lower)}/{len(upper)} bounds for {tape.n_vars} variables")
    if any(not lo <= hi for lo, hi in zip(lower, upper)):
        raise ValueError("every lower bound must be <= its upper bound")
    model = pyscipopt.Model("pbbflow tape")
    model.hideOutput()
    variables = [model.addVar(f"x{i}", lb=float(lo), ub=float(hi)) for i, (lo, hi) in enumerate(zip(lower, upper))]
    outputs = evaluate_tape(tape, variables)
    objective = model.addVar("objective", lb=None, ub=None)
    model.addCons(outputs[0] - objective <= 0.0, name="f")
    n_ineq = tape.n_ineq
    for i, g in enumerate(outputs[1 : 1 + n_ineq]):
        model.addCons(g <= 0.0, name=f"g{i}")
    for i, h in enumerate(outputs[1 + n_ineq :]):
        model.addCons(h == 0.0, name=f"h{i}")
    model.setObjective(objective, "minimize")
    return model, variables


def solve_with_scip(
    tape: Tape,
    lower: Sequence[float],
    upper: Sequence[float],
    eps_abs: float = 1e-6,
    eps_rel: float = 1e-6,
    time_limit: float = 60.0,
    feas_tol: float = 1e-6,
) -> dict:
    """Solve the tape's problem with SCIP; status, value, point, dual bound, nodes, times and settings.

    ``status`` is SCIP's (``optimal`` or ``gaplimit`` when the gap is closed to eps_abs or eps_rel,
    ``timelimit``, ``infeasible``, ...), or ``unsupported`` or ``error`` with a ``reason``.
    ``objective`` is SCIP's primal bound, the auxiliary variable's value: ``f - t <= 0`` holds within
    feastol, so it may sit up to feas_tol below f at ``x`` (Booth: -7.4e-7 where f >= 0).
    ``lower_bound`` is SCIP's dual bound (None when it has none); ``nodes`` counts every node of
    every run (restarts included); ``seconds`` is the wall time of ``optimize()`` alone.
    """
    settings = {
        "limits/absgap": eps_abs,
        "limits/gap": eps_rel,
        "limits/time": time_limit,
        "numerics/feastol": feas_tol,
        "parallel/maxnthreads": 1,
        "lp/threads": 1,
    }
    result = {
        "scip_version": str(pyscipopt.Model().version()),
        "pyscipopt_version": version("pyscipopt"),
        "settings": settings,
    }
    try:
        model, variables = tape_to_scip(tape, lower, upper)
    except Unsupported as error:
        return {**result, "status": "unsupported", "reason": str(error)}
    for key, value in settings.items():
        model.setParam(key, value)
    start = time.perf_counter()
    try:
        model.optimize()
    except Exception as error:  # pyscipopt raises a bare Exception when SCIP returns an error code
        reason = " ".join(str(error).split())
        return {**result, "status": "error", "reason": reason, "seconds": time.perf_counter() - start}
    seconds = time.perf_counter() - start
    status = model.getStatus()
    found = model.getNSols() > 0
    dual_bound = model.getDualbound()
    lower_bound = None if status == "infeasible" or model.isInfinity(abs(dual_bound)) else dual_bound
    objective = model.getObjVal() if found else None
    return {
        **result,
        "status": status,
        "objective": objective,
        "x": [model.getVal(v) for v in variables] if found else None,
        "lower_bound": lower_bound,
        "gap_abs": objective - lower_bound if found and lower_bound is not None else None,
        "nodes": int(model.getNTotalNodes()),
        "seconds": seconds,
        "scip_solving_seconds": model.getSolvingTime(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tapes", nargs="+", help='JSON files {"name", "lower", "upper", "tape"}')
    parser.add_argument("--eps-abs", type=float, default=1e-6)
    parser.add_argument("--eps-rel", type=float, default=1e-6)
    parser.add_argument("--time-limit", type=float, default=60.0, help="seconds per problem")
    args = parser.parse_args(argv)
    for path in args.tapes:
        with open(path) as handle:
            problem = json.load(handle)
        tape = Tape.from_json(problem["tape"])
        result = solve_with_scip(tape, problem["lower"], problem["upper"], args.eps_abs, args.eps_rel, args.time_limit)
        print(json.dumps({"name": problem["name"], "file": path, **result}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
