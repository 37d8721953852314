"""How a spatial result reads: its JSON fields (``core.result.Result.to_dict``), its lines (a run's,
and ``minimize``'s in its process) and a row of its history, for the command line
(``core.family.Family``)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..core.result import Result

if TYPE_CHECKING:
    from .problem import Problem

# ``pbbflow minimize --json``'s first fields, in order ("key=field": the shared field ``field`` as
# ``key``); the extras follow (options, and a search's own counters)
result_fields = (
    "problem=name",
    "dimension",
    "status",
    "objective=value",
    "x=solution",
    "lower_bound",
    "gap_abs",
    "gap_rel",
    "nodes",
    "elapsed_s",
    "open_boxes",
    "remaining_fraction",
    "remaining_log10",
)


def _number(value) -> str:
    return "-" if value is None else repr(value)


def _answer_lines(result: Result) -> list[str]:
    """What every spatial search answers, printed alike by a run and by ``minimize`` in this process:
    the status, the best point and its value, the certified lower bound (inf: infeasible; -inf:
    unbounded below so far; ``--json`` writes both as null) and the gap."""
    x = result.solution
    return [
        f"status       {result.status}",
        f"objective    {_number(result.value)}",
        f"x            {'-' if x is None else ' '.join(repr(v) for v in x)}",
        f"lower bound  {result.lower_bound!r}",
        f"gap          {_number(result.gap_abs)} (relative {_number(result.gap_rel)})",
    ]


def _user_lines(result: Result) -> list[str]:
    """A maximum in the user's sign (where the search minimized minus the user's f), and the answer
    to a threshold question."""
    lines = []
    if result.maximized:
        upper = "-" if result.lower_bound is None else repr(-result.lower_bound)
        lines.append(f"maximum      {'-' if result.value is None else repr(-result.value)} (certified <= {upper})")
    return lines + _threshold_lines(result)


def _threshold_lines(result: Result) -> list[str]:
    """The answer to a threshold question (none without one): holds with its certificate, violated
    at a verified point, or undecided; a maximized problem's lines say f <= -C with the signs
    turned back."""
    threshold = result.threshold
    if threshold is None:
        return []
    sign, at_least, below = (-1.0, "<=", ">") if result.maximized else (1.0, ">=", "<")
    level = sign * threshold["prove_above"]
    bound = result.lower_bound
    certified = "-" if bound is None or not math.isfinite(bound) else repr(sign * bound)
    if threshold["holds"] is None:
        text = f"undecided: f {at_least} {level!r} (stopped at a limit; certified bound {certified})"
    elif not threshold["holds"]:
        x = " ".join(repr(v) for v in result.solution)
        text = f"violated at x = {x} (f = {sign * result.value!r} {below} {level!r})"
    elif bound == math.inf:
        text = f"holds: f {at_least} {level!r} vacuously: no point is feasible (the problem is infeasible)"
    else:
        text = f"holds: f {at_least} {level!r} on the whole box (certified bound {certified})"
    return [f"threshold    {text}"]


def result_lines(result: Result) -> list[str]:
    """The result of a run, a line for each of its parts: from the result alone (a run's explorers
    may differ in device and subdomains)."""
    return [
        f"problem      {result.name} ({result.dimension} variables)",
        *_answer_lines(result),
        f"nodes        {result.nodes:,} boxes bounded, {result.open_boxes:,} open, {result.elapsed_s:.2f} s "
        f"({result.nodes_per_s:,.0f} boxes/s)",
        *_user_lines(result),
    ]


def search_lines(result: Result, problem: Problem) -> list[str]:
    """The result of ``minimize`` in this process on ``problem``, a line for each of its parts: also
    the problem's constraints, and the one device and subdomain count the search ran with."""
    tape = problem.tape
    lines = [
        f"problem      {result.name} ({problem.dimension} variables, {tape.n_ineq} inequalities, "
        f"{tape.n_eq} equalities)",
        *_answer_lines(result),
        f"nodes        {result.nodes:,} boxes of {result.subdomains:,} subdomains, {result.elapsed_s:.2f} s "
        f"on the {result.backend.upper()}",
    ]
    if tape.n_eq:
        lines.append(f"feasibility  equalities within {result.feas_tol:g}")
    return lines + _user_lines(result)


def history_text(history: dict[str, list], i: int) -> str:
    """Row ``i`` of a run's history (``info``): the certified lower bound and the incumbent."""
    lower = history.get("lower_bound", [None] * len(history["t"]))[i]
    incumbent = history["incumbent"][i]
    return f"LB {'-' if lower is None else f'{lower:.10g}'}  UB {'-' if incumbent is None else f'{incumbent:.10g}'}"
