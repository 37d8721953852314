"""The resumable spatial B&B on the GPU (``GpuExploration``) and the spatial engine of a GPU worker:
runs stopped, re-uploaded and resumed, explorations sharing work, a sampling oracle at every stop,
starts from a ``BoxSet`` node for node with the CPU's ``Exploration``, the engine's round trip.

Under numba's CUDA simulator (CI) the device bounds equal the CPU's, so runs are compared to the
node; on a GPU (``PBBFLOW_TEST_GPU=1``) only the certified answers are.

The CPU side runs with ``second_order=False``: the GPU has no second-order bound, and the two
must bound by the same rules to be compared.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from spatial_oracle import Oracle

from pbbflow.gpu.spatial.bnb import GpuExploration
from pbbflow.gpu.spatial.kernels import MAX_VARS
from pbbflow.gpu.warp import SIMULATED
from pbbflow.spatial import explorer
from pbbflow.spatial.boxes import BoxSet
from pbbflow.spatial.explorer import Exploration
from pbbflow.spatial.family import SpatialRun, make_engine
from pbbflow.spatial.options import MinimizeOptions
from pbbflow.spatial.parse import problem_from_dict

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("simulated_libdevice")]

# Two problems of ../shared/data/spatial, as written there, and their global minimizers.
DOCUMENTS = {
    "C9-st-e01-globallib": {
        "name": "st_e01",
        "variables": 2,
        "domain": [[0, 6], [0, 4]],
        "objective": "((-x[0]) - x[1])",
        "inequalities": ["((x[0] * x[1]) - 4)"],
        "optimum": -6.666666666666667,
    },
    "B2-six-hump-camel": {
        "name": "Six-hump camel",
        "variables": 2,
        "domain": [[-3, 3], [-2, 2]],
        "objective": "(((((4 - (2.1 * (x[0] ** 2))) + ((x[0] ** 4) / 3)) * (x[0] ** 2)) + (x[0] * x[1])) + "
        "((-4 + (4 * (x[1] ** 2))) * (x[1] ** 2)))",
        "optimum": -1.0316284534898774,
    },
}
MINIMIZERS = {
    "C9-st-e01-globallib": [(6.0, 2.0 / 3.0)],
    "B2-six-hump-camel": [(0.08984201290140914, -0.7126564027485676), (-0.08984201290140914, 0.7126564027485676)],
}
# Small budgets and no local solves: many nodes, an incumbent that improves slowly (the oracle bites).
SLOW = MinimizeOptions(second_order=False, subdomains=4, contract=False, local_solves=False)
PHASE = 64  # subdomains per phase: 16 boxes of 4


def _problem(stem: str):
    return problem_from_dict(DOCUMENTS[stem], stem)


def _oracle(stem: str) -> Oracle:
    return Oracle(_problem(stem), MINIMIZERS[stem], seed=len(stem))


def _tolerance(value: float, options: MinimizeOptions) -> float:
    return max(options.eps_abs, options.eps_rel * abs(value))


def _at_or_below_optimum(bound: float, problem) -> bool:
    return bound <= problem.optimum + 1e-12 * max(1.0, abs(problem.optimum))


def _settled(*explorations) -> float:
    return min(min(e.settled_lb, e.unsplittable_lb) for e in explorations)


@pytest.mark.parametrize("stem", DOCUMENTS)
def test_chunks_and_uploads_change_nothing(stem):
    """One run, and the same search in chunks of random node limits with its open boxes downloaded
    and uploaded again every other stop: the same certified answer (under the simulator the same
    nodes, objective and bound, to the bit), and the oracle holds at every stop."""
    problem, oracle = _problem(stem), _oracle(stem)
    rng = np.random.default_rng(5)
    whole = GpuExploration(problem, SLOW, phase_subdomains=PHASE)
    report = whole.run()
    chunked = GpuExploration(problem, SLOW, phase_subdomains=PHASE)
    stops = seen = 0
    while not (last := chunked.run(node_limit=int(rng.integers(0, 10)))).done:
        assert _at_or_below_optimum(last.lower_bound, problem) and last.lower_bound == chunked.lower_bound
        seen += oracle.check(chunked.remaining(), chunked.level, _settled(chunked))
        stops += 1
        if stops % 2:
            chunked.replace(chunked.remaining())
    assert report.done and stops >= 5 and seen > 0 and report.unsplittable == 0
    tolerance = _tolerance(report.objective, SLOW)
    assert abs(report.objective - problem.optimum) <= tolerance
    for exploration in (whole, chunked):
        assert _at_or_below_optimum(exploration.lower_bound, problem)
        assert exploration.incumbent.value - exploration.lower_bound <= tolerance * (1 + 1e-9)
    if SIMULATED:
        assert (chunked.nodes, chunked.incumbent.value, chunked.lower_bound) == (
            whole.nodes,
            whole.incumbent.value,
            whole.lower_bound,
        )


@pytest.mark.parametrize(("stem", "least_shares"), [("C9-st-e01-globallib", 1), ("B2-six-hump-camel", 2)])
def test_two_explorations_sharing_work_prove_it_together(stem, least_shares):
    """One exploration gives half its open boxes to a second; they run alternately in chunks,
    trading incumbents (one by its point, the other by its value only); the one that runs dry gets
    half of the other's boxes. At every stop the oracle holds over the union of their open boxes;
    the min of their lower bounds is at or below the optimum, their best within eps of it."""
    problem, oracle = _problem(stem), _oracle(stem)
    rng = np.random.default_rng(13)
    first = GpuExploration(problem, SLOW, phase_subdomains=PHASE)
    first.run(node_limit=3)
    second = GpuExploration(problem, SLOW, first.give_share(), phase_subdomains=PHASE)
    explorations, retired, shares, seen = [first, second], math.inf, 1, 0
    while True:
        reports = [e.run(node_limit=int(rng.integers(1, top))) for e, top in zip(explorations, (60, 12))]
        if explorations[0].incumbent.x is not None:
            explorations[1].offer(explorations[0].incumbent.x)
        explorations[0].prune_at(explorations[1].ub)
        open_boxes = BoxSet.concat([e.remaining() for e in explorations])
        settled = min(retired, _settled(*explorations))
        assert _at_or_below_optimum(min(settled, open_boxes.lowest()), problem)
        seen += oracle.check(open_boxes, min(e.level for e in explorations), settled)
        if all(e.done for e in explorations):
            break
        idle = [i for i, (e, r) in enumerate(zip(explorations, reports)) if r.done and e.done]
        if len(idle) == 1:
            busy = explorations[1 - idle[0]]
            share = busy.give_share()
            if len(share):
                retired = min(retired, explorations[idle[0]].lower_bound)
                explorations[idle[0]] = GpuExploration(problem, SLOW, share, phase_subdomains=PHASE)
                explorations[idle[0]].prune_at(busy.ub)
                shares += 1
    best = min(e.ub for e in explorations)
    bound = min(retired, *(e.lower_bound for e in explorations))
    tolerance = _tolerance(best, SLOW)
    assert shares >= least_shares and seen > 0
    assert abs(best - problem.optimum) <= tolerance
    assert _at_or_below_optimum(bound, problem) and best - bound <= tolerance * (1 + 1e-9)


@pytest.mark.parametrize(
    ("stem", "contract", "offered", "before"),
    [
        ("C9-st-e01-globallib", False, False, 20),
        ("C9-st-e01-globallib", True, True, 4),  # the offered point brings the Lagrangian bound
        ("B2-six-hump-camel", True, False, 300),
    ],
)
def test_a_start_from_boxes_is_the_cpus_exploration_node_for_node(monkeypatch, stem, contract, offered, before):
    """The CPU's open boxes after ``before`` nodes, explored on each side to the end, one box per
    step (the CPU's batch of one, one box per phase on the device): the same nodes, incumbent
    value and bound under the simulator, the same certified answer on a GPU."""
    monkeypatch.setattr(explorer, "BATCH_SUBDOMAINS", 8)  # 2 children of 4 subdomains: one box per step
    problem = _problem(stem)
    options = MinimizeOptions(second_order=False, subdomains=4, contract=contract, local_solves=False)
    source = Exploration(problem, options)
    source.run(node_limit=before)
    start = source.remaining()
    cpu = Exploration(problem, options, start)
    gpu = GpuExploration(problem, options, start, phase_subdomains=4)
    assert gpu.nodes == 0 and gpu.remaining().to_bytes() == start.to_bytes() and len(start) > 1
    if offered:
        for exploration in (cpu, gpu):
            assert exploration.offer(source.incumbent.x)
    reports = [cpu.run(), gpu.run()]
    assert all(r.done and r.open_boxes == 0 for r in reports) and gpu.phases == reports[1].nodes // 2
    tolerance = _tolerance(cpu.incumbent.value, options)
    assert abs(gpu.incumbent.value - cpu.incumbent.value) <= tolerance
    assert _at_or_below_optimum(min(gpu.lower_bound, source.settled_lb), problem)
    if SIMULATED:
        assert (reports[1].nodes, gpu.incumbent.value, gpu.lower_bound, gpu.unsplittable) == (
            reports[0].nodes,
            cpu.incumbent.value,
            cpu.lower_bound,
            cpu.unsplittable,
        )


@pytest.mark.parametrize(("stem", "before"), [("C9-st-e01-globallib", 6), ("B2-six-hump-camel", 40)])
def test_a_hand_over_from_the_cpu_loses_nothing(stem, before):
    """``minimize_auto``'s hand-over: the CPU's open boxes (settled first) to a device exploration
    that takes over its incumbent, settled bounds and counters. Right after it, the same certified
    bound, incumbent and nodes, and the oracle holds over the device's boxes; at every stop after,
    the oracle holds; the end is the optimum."""
    problem, oracle = _problem(stem), _oracle(stem)
    source = Exploration(problem, SLOW)
    source.run(node_limit=before)
    source.settle()
    gpu = GpuExploration(problem, SLOW, source.remaining(), phase_subdomains=PHASE)
    gpu.take_over(source)
    assert (gpu.lower_bound, gpu.incumbent.value, gpu.nodes) == (
        source.lower_bound,
        source.incumbent.value,
        source.nodes,
    )
    assert not gpu.done and gpu.remaining().to_bytes() == source.remaining().to_bytes()
    seen = oracle.check(gpu.remaining(), gpu.level, _settled(gpu))
    while not (last := gpu.run(node_limit=8)).done:
        assert _at_or_below_optimum(last.lower_bound, problem)
        seen += oracle.check(gpu.remaining(), gpu.level, _settled(gpu))
    assert seen > 0 and abs(gpu.incumbent.value - problem.optimum) <= _tolerance(problem.optimum, SLOW)
    assert _at_or_below_optimum(gpu.lower_bound, problem) and gpu.nodes > source.nodes


def test_a_hand_over_keeps_the_boxes_too_small_to_split():
    """What the CPU could not split stays counted and bounds the result (a stand-in set by hand:
    such boxes are rare in a short run)."""
    problem = _problem("C9-st-e01-globallib")
    source = Exploration(problem, SLOW)
    source.run(node_limit=4)
    source.unsplittable, source.unsplittable_lb = 2, problem.optimum - 1.0
    gpu = GpuExploration(problem, SLOW, source.remaining(), phase_subdomains=PHASE)
    gpu.take_over(source)
    report = gpu.run()
    assert report.unsplittable == 2 and report.lower_bound == problem.optimum - 1.0 == gpu.unsplittable_lb


def _camel_after(nodes: int) -> GpuExploration:
    exploration = GpuExploration(_problem("B2-six-hump-camel"), SLOW, phase_subdomains=16)
    exploration.run(node_limit=nodes)
    return exploration


def test_a_value_found_elsewhere_prunes_on_the_device():
    """prune_at lowers the value the kernels prune with to the min of the incumbent's and its own:
    a phase keeps nothing at or above its level, and the incumbent stays this exploration's."""
    exploration = _camel_after(60)
    before = exploration.remaining()
    value = float(np.median(before.lb[np.isfinite(before.lb)]))  # as if another explorer had found it
    own = exploration.incumbent.value
    exploration.prune_at(value)
    assert exploration.ub == value < own and exploration.level < value
    bound = exploration.lower_bound
    exploration.run(node_limit=1)
    assert np.all(exploration.remaining().lb < exploration.level) and exploration.incumbent.value == own
    assert exploration.settled_lb <= float(before.lb[before.lb >= exploration.level].min())
    assert exploration.lower_bound >= bound


def test_settle_closes_the_boxes_a_better_value_prunes_and_keeps_the_bound():
    exploration = _camel_after(60)
    before = exploration.remaining()
    exploration.prune_at(float(np.median(before.lb[np.isfinite(before.lb)])))
    bound = exploration.lower_bound
    exploration.settle()
    after = exploration.remaining()
    assert 0 < len(after) < len(before) and np.all(after.lb < exploration.level)
    assert exploration.settled_lb <= float(before.lb[before.lb >= exploration.level].min())
    assert exploration.lower_bound == bound
    replaced = after.split(exploration.problem.upper - exploration.problem.lower)[0]
    exploration.replace(replaced)
    assert exploration.remaining().to_bytes() == replaced.to_bytes()


def test_more_boxes_than_the_lists_hold_wait_on_the_host_and_come_back():
    """A start from more boxes than the device's lists hold (8): the upper half by bound waits in
    the host reserve; remaining() holds them all; the search proves what the CPU's proves."""
    problem = _problem("B2-six-hump-camel")
    options = MinimizeOptions(second_order=False, subdomains=4, local_solves=False)
    source = Exploration(problem, options)
    source.run(node_limit=300)
    start = source.remaining()
    gpu = GpuExploration(problem, options, start, phase_subdomains=8, capacity=8)
    assert len(start) > 8 and len(gpu._reserve) == len(start) - 4
    assert sorted(gpu.remaining().lb.tolist()) == sorted(start.lb.tolist())
    cpu = Exploration(problem, options, start)
    reports = [gpu.run(), cpu.run()]
    assert all(r.done for r in reports) and gpu.spills > 0 and np.all(gpu.remaining().lb >= gpu.level)
    assert abs(gpu.incumbent.value - cpu.incumbent.value) <= _tolerance(cpu.incumbent.value, options)
    assert _at_or_below_optimum(min(gpu.lower_bound, source.settled_lb), problem)


def test_a_single_box_is_given_bisected_and_dimensions_are_checked():
    problem = _problem("B2-six-hump-camel")
    exploration = GpuExploration(problem, SLOW, BoxSet.root(problem), phase_subdomains=PHASE)
    assert len(exploration.remaining()) == 1 and exploration.nodes == 0 and not exploration.done
    given = exploration.give_share()
    kept = exploration.remaining()
    assert len(given) == len(kept) == 1 and given.lb[0] == kept.lb[0] == -math.inf
    assert given.volume(np.array([6.0, 4.0])) + kept.volume(np.array([6.0, 4.0])) == 1.0
    assert len(GpuExploration(problem, SLOW, BoxSet.empty(2)).give_share()) == 0
    with pytest.raises(ValueError):
        GpuExploration(problem, SLOW, BoxSet.empty(3))
    with pytest.raises(ValueError):
        exploration.replace(BoxSet.empty(3))


def test_a_gpu_worker_explores_on_the_device_through_the_engine():
    """The engine of a GPU worker: boxes loaded as bytes, run for budgets, checkpointed back as
    bytes and loaded again, to the end: the best value sent up once per improvement, the settled
    bound and the open boxes' bounds at or below the optimum."""
    problem = _problem("C9-st-e01-globallib")
    options = MinimizeOptions(second_order=False, subdomains=4, contract=False)
    engine = make_engine(
        SpatialRun.new(problem, options, subdomains=options.subdomains).engine_options(), gpu=True, threads=1
    )
    assert isinstance(engine.exploration, GpuExploration) and engine.capacity == 1
    engine.load(BoxSet.root(problem).to_bytes())
    sent, total, rounds, asked = [], 0, 0, itertools.count()
    while True:  # one phase per run: ``waiting`` answers no, then yes
        nodes, leaves, best = engine.run(math.inf, 60.0, None, lambda: next(asked) % 2 == 1)
        total, rounds = total + nodes, rounds + 1
        if best is not None:
            sent.append(best[0])
        remaining = BoxSet.from_bytes(engine.remaining(), problem.dimension)
        settled = engine.extras()["settled"]
        assert leaves == 0 and _at_or_below_optimum(min(settled, remaining.lowest()), problem)
        if not len(remaining):
            break
        assert np.all(remaining.lb < engine.exploration.level)  # settled: nothing the incumbent prunes
        engine.load(remaining.to_bytes())
    assert rounds >= 2 and total == engine.exploration.nodes and sent == sorted(sent, reverse=True)
    assert abs(sent[-1] - problem.optimum) <= _tolerance(problem.optimum, options)
    assert sent[-1] - settled <= _tolerance(problem.optimum, options) * (1 + 1e-9)


def test_a_problem_beyond_the_kernels_variables_explores_on_the_cpu():
    n = MAX_VARS + 1
    problem = problem_from_dict(
        {"variables": n, "domain": [[-1, 1]] * n, "objective": " + ".join(f"x[{i}] ** 2" for i in range(n))}, "wide"
    )
    engine = make_engine(
        SpatialRun.new(problem, SLOW, subdomains=SLOW.subdomains).engine_options(), gpu=True, threads=2
    )
    assert type(engine.exploration) is Exploration and engine.exploration.options.parallel
