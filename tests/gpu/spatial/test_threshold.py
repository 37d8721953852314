"""Threshold questions on the GPU (``minimize_gpu``, ``minimize_auto`` past its CPU slice): the
kernels prune and contract at C (the host lowers the device's value to min(UB, C) with no
tolerance), and the answers are the CPU's, checked against known optima and rigorous evaluation.

The CPU side runs with ``second_order=False``: the GPU has no second-order bound, and the two
must bound by the same rules to be compared.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from pbbflow.gpu.spatial.bnb import minimize_auto, minimize_gpu
from pbbflow.spatial import Model
from pbbflow.spatial.bnb import minimize
from pbbflow.spatial.bounds import evaluate_point, is_feasible
from pbbflow.spatial.load import load_problem
from pbbflow.spatial.options import MinimizeOptions

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("simulated_libdevice")]

SMALL = MinimizeOptions(second_order=False, subdomains=4, eps_abs=1e-4, eps_rel=1e-4)


def st_e01():
    """min -x - y subject to x y <= 4 over [0, 6] x [0, 4]: -6.666... at (6, 2/3) (globallib st_e01)."""
    model = Model("st_e01")
    x, y = model.variable(0, 6), model.variable(0, 4)
    model.minimize(-x - y)
    model.inequality(x * y - 4)
    return model.problem(optimum=-6.666666666666667)


def bowl():
    """(x - 1)^2 + 3 (y - 0.5)^2 + 2 over [-2, 3] x [-1, 2]: 2 at (1, 0.5), a point of doubles."""
    model = Model("bowl")
    x, y = model.variable(-2, 3), model.variable(-1, 2)
    model.minimize((x - 1) ** 2 + 3 * (y - 0.5) ** 2 + 2)
    return model.problem(optimum=2.0)


@pytest.mark.parametrize("make", [st_e01, bowl])
def test_the_gpu_decides_as_the_cpu(make):
    problem = make()
    delta = 1e-2
    for level, holds in ((problem.optimum - delta, True), (problem.optimum + delta, False)):
        options = replace(SMALL, prove_above=level)
        gpu = minimize_gpu(problem, options, phase_subdomains=16, capacity=64)
        cpu = minimize(problem, options)
        for result in (gpu, cpu):
            assert result.status == "decided" and result.threshold == {"prove_above": level, "holds": holds}
        assert gpu.to_dict()["backend"] == "gpu"
        if holds:
            assert level <= gpu.lower_bound <= problem.optimum
        else:
            value = evaluate_point(problem.tape, np.array(gpu.solution))
            assert is_feasible(value, options.feas_tol) and value.f_hi == gpu.value < level


def test_at_an_optimum_of_doubles_the_gpu_holds_and_a_node_limit_leaves_it_open():
    problem = bowl()
    exact = minimize_gpu(problem, replace(SMALL, prove_above=2.0), phase_subdomains=16, capacity=64)
    assert exact.status == "decided" and exact.threshold["holds"] is True and exact.lower_bound >= 2.0
    hard = load_problem("peaks")
    options = replace(SMALL, prove_above=hard.optimum - 1e-9, node_limit=3, local_solves=False)
    limited = minimize_gpu(hard, options, phase_subdomains=16, capacity=64)
    assert limited.status == "limit" and limited.threshold["holds"] is None and limited.open_boxes > 0


def test_auto_routing_decides_on_the_gpu_past_the_slice():
    problem = load_problem("peaks")
    options = replace(SMALL, prove_above=problem.optimum - 1e-3)
    result = minimize_auto(problem, options, replace(options, parallel=False), slice_s=0.0, phase_subdomains=16)
    assert result.to_dict()["backend"] == "gpu" and result.threshold["holds"] is True
    assert result.lower_bound >= problem.optimum - 1e-3
