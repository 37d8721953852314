"""The Lagrangians of tied optima on the GPU path (issue 35): kept by the CPU's selection code,
each box bounded with its nearest one as on the CPU (node for node under the simulator), and the
bounds below sampled feasible points at every stop.

The problem is ``spatial_helpers.two_optima_problem``: two optima whose multipliers of one
equality have opposite signs (each set sharp only near its own optimum)."""

from __future__ import annotations

import numpy as np
import pytest
from spatial_helpers import check_below_the_curve, two_optima_curve, two_optima_problem

from pbbflow.gpu.spatial.bnb import GpuExploration
from pbbflow.gpu.warp import SIMULATED
from pbbflow.spatial import explorer
from pbbflow.spatial.explorer import Exploration
from pbbflow.spatial.options import MinimizeOptions

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("simulated_libdevice")]

ONE_BOX = MinimizeOptions(
    subdomains=8, local_solves=False, first_incumbents=False, second_order=False
)  # 2^3 subdomains per box


def _opposite(exploration) -> bool:
    """Two Lagrangians kept, whose multipliers of y - 2 z are opposite (the two optima's)."""
    lam = [bound.weights[-1] for _, _, bound in exploration._lagrangians]
    return len(lam) == 2 and lam[0] * lam[1] < 0 and abs(lam[0] + lam[1]) < 1e-3 * abs(lam[0])


def _near_and_mirror() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The curve's points and values, a point of it 1e-3 above the optimum (part of the curve lies
    below its prune level) and its mirror image (the other optimum's side, the same value)."""
    points = two_optima_curve(200001)
    values = np.prod(points, axis=1)
    near = points[int(np.argmin(np.abs(values - (two_optima_problem().optimum + 1e-3))))]
    return points, values, near, near * [1, -1, -1]


def test_a_local_optimum_that_ties_brings_its_multipliers_on_the_device():
    """A local solve from the mirror image of the incumbent lands on the other optimum, which ties
    it: its multipliers join the incumbent's (the CPU's selection, ExplorationBase's)."""
    problem = two_optima_problem()
    gpu = GpuExploration(problem, MinimizeOptions(subdomains=8, second_order=False), phase_subdomains=64)
    assert abs(gpu.incumbent.value - problem.optimum) <= 1e-6 and len(gpu._lagrangians) >= 1
    gpu._solve_locally(gpu.incumbent.x * [1, -1, -1])
    assert _opposite(gpu)
    gpu._solve_locally(gpu.incumbent.x * [1, -1, -1])  # the same set again: not added twice
    assert _opposite(gpu)


def test_a_hand_over_brings_the_cpus_lagrangians_to_the_device():
    problem = two_optima_problem()
    points, values, near, mirror = _near_and_mirror()
    cpu = Exploration(problem, ONE_BOX)
    assert cpu.offer(near)
    cpu._add_multipliers_at(mirror, first=False)
    cpu.run(node_limit=20)
    cpu.settle()
    gpu = GpuExploration(problem, ONE_BOX, cpu.remaining(), phase_subdomains=64)
    gpu.take_over(cpu)
    assert _opposite(cpu) and _opposite(gpu)
    assert all(a.same_weights(b) for (_, _, a), (_, _, b) in zip(cpu._lagrangians, gpu._lagrangians, strict=True))
    assert check_below_the_curve(gpu, points, values, node_limit=16, stops=3) > 0


def test_each_box_is_bounded_with_its_nearest_lagrangian_as_on_the_cpu(monkeypatch):
    """An incumbent 1e-3 above the optimum and the Lagrangians of it and its mirror image, on the
    CPU and the device from the same open boxes, one box per step, to the end: at every stop the
    curve's points below the level lie in open boxes whose bounds are at or below their values (the
    oracle of the CPU's test), and under the simulator both searches are the same, box for box."""
    monkeypatch.setattr(explorer, "BATCH_SUBDOMAINS", 16)  # 2 children of 8 subdomains: one box per step
    problem = two_optima_problem()
    points, values, near, mirror = _near_and_mirror()
    source = Exploration(problem, ONE_BOX)
    source.run(node_limit=40)
    start = source.remaining()
    cpu = Exploration(problem, ONE_BOX, start)
    gpu = GpuExploration(problem, ONE_BOX, start, phase_subdomains=8)
    for exploration in (cpu, gpu):
        assert exploration.offer(near)
        exploration._add_multipliers_at(mirror, first=False)
        assert _opposite(exploration)
    seen = check_below_the_curve(gpu, points, values, node_limit=20)
    assert cpu.run().done and gpu.done and seen > 1000
    assert cpu.lower_bound <= problem.optimum and gpu.lower_bound <= problem.optimum
    if SIMULATED:
        assert (gpu.nodes, gpu.lower_bound, gpu.incumbent.value) == (cpu.nodes, cpu.lower_bound, cpu.incumbent.value)
