"""The error of a surrogate: minimize ``sign * (ANN(x) - f(x))`` over the network's input box.

A network trained on a function f is as good as ``ANN - f`` is small; the extreme values of that
difference over the box bound its error rigorously (the interval seed paper's harder problem: the
peaks ANN against peaks itself).  ``sign = 1`` minimizes ANN - f, so the optimum is the error's
minimum; ``sign = -1`` minimizes f - ANN, whose optimum is minus the error's maximum.

The network is an ANN document (:mod:`.ann`) and f the objective of a problem document
(:mod:`.parse`) on the same box, without constraints; both are recorded on one model's variables,
so the tape holds the file's numbers exactly as the two problems alone do.
"""

from __future__ import annotations

from .ann import AnnNetwork
from .model import Model
from .parse import parse_domain, parse_expression
from .problem import Problem, ProblemError


def surrogate_error_problem(
    network_document: dict,
    function_document: dict,
    sign: int,
    name: str,
    where: str,
    optimum: float | None = None,
    x_optimum=None,
    origin: str = "",
) -> Problem:
    """Minimize ``sign * (ANN(x) - f(x))`` (``sign``: 1 or -1); ``where`` names the pair in messages,
    ``optimum``/``x_optimum`` are metadata as in :class:`.Problem`."""
    if sign not in (1, -1):
        raise ProblemError(f"{where}: sign must be 1 or -1, not {sign!r}")
    network = AnnNetwork.from_document(network_document, f"{where} (network)")
    lower, upper = parse_domain(function_document.get("domain"), f"{where} (function)")
    if (lower, upper) != (network.in_lo, network.in_hi):
        raise ProblemError(
            f"{where}: the function's domain {list(zip(lower, upper))} is not the network's "
            f"input box {list(zip(network.in_lo, network.in_hi))}"
        )
    if function_document.get("inequalities") or function_document.get("equalities"):
        raise ProblemError(f"{where}: the function must have no constraints")
    model = Model(name)
    x = [model.variable(lo, hi) for lo, hi in zip(lower, upper)]
    function = parse_expression(function_document.get("objective"), x, f"{where} (function)", "objective")
    network_output = network.output(x)
    model.minimize(network_output - function if sign == 1 else function - network_output)
    return model.problem(name, optimum=optimum, x_optimum=x_optimum, origin=origin)
