"""The spatial B&B on the GPU (``minimize_gpu``) against the CPU solver, known optima and its own rules.

Under numba's CUDA simulator (CI) the kernels run in Python with libdevice's exact stand-ins, so
the GPU bounds equal the CPU's and small problems are proved with the CPU's certified answers; on
a GPU (``PBBFLOW_TEST_GPU=1``) the same tests run on the device.

The CPU side runs with ``second_order=False``: the GPU has no second-order bound, and the two
must bound by the same rules to be compared.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from numba import cuda
from spatial_helpers import arb_outputs

from pbbflow.cli.main import main
from pbbflow.gpu.spatial import bnb as gpu_bnb
from pbbflow.gpu.spatial import phase
from pbbflow.gpu.spatial.bnb import GpuExploration, minimize_auto, minimize_gpu
from pbbflow.gpu.spatial.kernels import MAX_VARS, THREADS_PER_BLOCK, DeviceTape, blocks
from pbbflow.spatial import Model
from pbbflow.spatial import commands as minimize_cli
from pbbflow.spatial.bnb import minimize
from pbbflow.spatial.bounds import evaluate_point, is_feasible
from pbbflow.spatial.boxes import bisect
from pbbflow.spatial.load import load_problem
from pbbflow.spatial.options import MinimizeOptions
from pbbflow.spatial.parse import problem_from_dict

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("simulated_libdevice")]

# Three problems of ../shared/data/spatial, as written there (so the tests need no shared data).
DOCUMENTS = {
    "C9-st-e01-globallib": {
        "name": "st_e01",
        "variables": 2,
        "domain": [[0, 6], [0, 4]],
        "objective": "((-x[0]) - x[1])",
        "inequalities": ["((x[0] * x[1]) - 4)"],
        "optimum": -6.666666666666667,
    },
    "C3-g11-cec2006-g11": {
        "name": "g11",
        "variables": 2,
        "domain": [[-1, 1], [-1, 1]],
        "objective": "((x[0] ** 2) + ((x[1] - 1) ** 2))",
        "equalities": ["(x[1] - (x[0] ** 2))"],
        "optimum": 0.7500000000000001,
    },
    "B6-booth": {
        "name": "booth",
        "variables": 2,
        "domain": [[-10, 10], [-10, 10]],
        "objective": "((((x[0] + (2 * x[1])) - 7) ** 2) + ((((2 * x[0]) + x[1]) - 5) ** 2))",
        "optimum": 0.0,
    },
}
SMALL = MinimizeOptions(second_order=False, subdomains=4, contract=False)
BUKIN = str(Path(__file__).resolve().parents[3] / "benchmarks" / "problems" / "bukin-6.json")


def _problem(stem: str):
    return problem_from_dict(DOCUMENTS[stem], stem)


@pytest.fixture
def problem_file(tmp_path):
    """The path of a problem file written from DOCUMENTS."""

    def write(stem: str) -> str:
        path = tmp_path / f"{stem}.json"
        path.write_text(json.dumps(DOCUMENTS[stem]))
        return str(path)

    return write


def _assert_same_answer(gpu, cpu, options: MinimizeOptions) -> None:
    """The same status; both certified bounds at or below both objectives; the gaps within eps."""
    assert gpu.status == cpu.status == "optimal"
    tolerance = max(options.eps_abs, options.eps_rel * abs(cpu.objective))
    for result in (gpu, cpu):
        assert result.lower_bound <= min(gpu.objective, cpu.objective)
        assert result.objective - result.lower_bound <= tolerance * (1 + 1e-9)
    assert abs(gpu.objective - cpu.objective) <= tolerance


@pytest.mark.parametrize(
    ("stem", "contract"),
    [("C9-st-e01-globallib", False), ("C9-st-e01-globallib", True), ("C3-g11-cec2006-g11", True), ("B6-booth", False)],
)
def test_small_problems_get_the_cpus_certified_answers(stem, contract):
    problem = _problem(stem)
    options = MinimizeOptions(second_order=False, subdomains=4, contract=contract)
    gpu = minimize_gpu(problem, options, phase_subdomains=64, capacity=64)
    cpu = minimize(problem, options)
    _assert_same_answer(gpu, cpu, options)
    assert gpu.lower_bound <= problem.optimum + 1e-12 * max(1.0, abs(problem.optimum))
    assert gpu.to_dict()["backend"] == "gpu" and gpu.open_boxes == 0


def test_first_incumbents_prove_a_root_bound_at_the_optimum_at_the_root():
    """Ackley-2, whose root bound is its optimum (0, at the centre): the first incumbents
    (spatial/first.py) close it at the root on the device as on the CPU, where without them the
    CPU's first incumbent is a local minimum and its search splits 87 boxes."""
    problem = load_problem(str(Path(__file__).resolve().parents[3] / "benchmarks" / "problems" / "ackley-2.json"))
    options = MinimizeOptions(second_order=False, subdomains=16, parallel=False)
    gpu = minimize_gpu(problem, options, phase_subdomains=64, capacity=64)
    cpu = minimize(problem, options)
    before = minimize(problem, replace(options, first_incumbents=False))
    assert gpu.status == cpu.status == before.status == "optimal"
    assert gpu.nodes == cpu.nodes <= 3 < 40 <= before.nodes and gpu.local_solves == 0
    assert gpu.lower_bound <= problem.optimum <= gpu.objective <= problem.optimum + options.eps_abs


def test_a_host_reserve_takes_the_overflow_and_loses_no_box():
    """Lists of 4 boxes and one box per phase: the open boxes spill to the host and come back."""
    problem = _problem("C3-g11-cec2006-g11")
    options = MinimizeOptions(second_order=False, subdomains=4)
    gpu = minimize_gpu(problem, options, phase_subdomains=4, capacity=4)
    assert gpu.reserve_spills > 0
    _assert_same_answer(gpu, minimize(problem, options), options)


def test_a_split_of_some_sides_is_refused_before_anything_runs():
    """split_axes is the CPU's rule: the GPU's exploration and minimize_auto refuse it (the latter
    before its CPU slice), rather than split every side silently."""
    options = replace(SMALL, split_axes=1)
    with pytest.raises(ValueError, match="CPU only"):
        GpuExploration(_problem("B6-booth"), options)
    with pytest.raises(ValueError, match="CPU only"):
        minimize_auto(_problem("B6-booth"), options, load_gpu=pytest.fail)


def test_a_limit_leaves_a_certified_bound_and_the_open_boxes():
    problem = _problem("C3-g11-cec2006-g11")
    options = MinimizeOptions(second_order=False, subdomains=4, contract=False, node_limit=9)
    result = minimize_gpu(problem, options, phase_subdomains=16, capacity=64)
    assert result.status == "limit" and result.open_boxes > 0 and 9 <= result.nodes <= 9 + 8
    assert result.lower_bound <= problem.optimum


def test_a_stop_request_ends_with_a_certified_bound_and_progress_was_reported():
    """should_stop (Ctrl-C in the CLI) is checked between phases; progress lines come meanwhile."""
    problem = _problem("C3-g11-cec2006-g11")
    seen, asked = [], []

    def stop() -> bool:
        asked.append(True)
        return len(asked) > 2

    result = minimize_gpu(
        problem, SMALL, phase_subdomains=16, capacity=64, progress=seen.append, progress_seconds=0.0, should_stop=stop
    )
    assert result.status == "limit" and result.open_boxes > 0 and result.lower_bound <= problem.optimum
    assert len(seen) >= 3 and all(p.lower_bound <= problem.optimum for p in seen)
    assert [p.nodes for p in seen] == sorted(p.nodes for p in seen)


def test_an_infeasible_problem_is_proved_infeasible():
    m = Model("none")
    x = m.variable(0, 1)
    m.minimize(x)
    m.subject_to(x * x + 0.5 - x <= 0)  # x^2 - x + 1/2 >= 1/4 > 0
    result = minimize_gpu(m.problem(), SMALL, phase_subdomains=16, capacity=16)
    assert result.status == "infeasible" and result.objective is None and result.lower_bound == math.inf


def test_a_constrained_problem_brings_a_lagrangian_bound_to_the_device(monkeypatch):
    uploaded = []
    upload = DeviceTape.upload.__func__

    def spy(cls, tape):
        uploaded.append(tape)
        return upload(cls, tape)

    monkeypatch.setattr(DeviceTape, "upload", classmethod(spy))
    problem = _problem("C9-st-e01-globallib")
    result = minimize_gpu(problem, SMALL, phase_subdomains=64, capacity=64)
    assert result.status == "optimal"
    assert len(uploaded) >= 2 and uploaded[0] is problem.tape and uploaded[1].size > problem.tape.size


def _random_points(problem, rng):
    return problem.lower + rng.random((40, problem.dimension)) * (problem.upper - problem.lower)


def _near_the_equality(problem, rng):
    """g11's points on h = x1 - x0^2 = 0 (feasible within feas_tol) and 1e-3 off it (not)."""
    t = rng.uniform(-1, 1, 20)
    return np.concatenate([np.stack([t, t * t], 1), np.stack([t, t * t + 1e-3], 1)])


@pytest.mark.parametrize(
    ("stem", "points"), [("C9-st-e01-globallib", _random_points), ("C3-g11-cec2006-g11", _near_the_equality)]
)
def test_candidates_are_evaluated_as_the_cpu_evaluates_points(stem, points):
    """The device's rigorous point evaluation and feasibility rule equal the CPU's, point by point."""
    problem = _problem(stem)
    points = points(problem, np.random.default_rng(3))
    points[1] = np.nan  # no best point: no candidate
    dtape = DeviceTape.upload(problem.tape)
    candidate = cuda.device_array(len(points))
    real = cuda.to_device(np.full(phase.N_REAL, np.inf))
    phase.offer_candidates(dtape, len(points), cuda.to_device(points), 1e-6, candidate, real)
    expected = []
    for point in points:
        value = None if np.isnan(point).any() else evaluate_point(problem.tape, point)
        expected.append(value.f_hi if value is not None and is_feasible(value, 1e-6) else math.inf)
    assert candidate.copy_to_host().tolist() == expected
    assert real.copy_to_host()[phase.R_UB] == min(expected) and 1 < expected.count(math.inf) < len(points) - 10


def test_bukin6_candidates_keep_the_residual_and_the_gpu_proves_it():
    """Issue 35 on the device: at (-10, 1) the candidate kernel encloses f = 100 sqrt(2.08e-17) =
    4.6e-7 as the CPU does (below eps_abs = 1e-6), and the GPU B&B proves Bukin N.6's optimum 0."""
    problem = load_problem(BUKIN)
    points = np.array([[-10.0, 1.0], [-9.999999999999998, 0.9999999999999997]])
    dtape = DeviceTape.upload(problem.tape)
    candidate = cuda.device_array(len(points))
    real = cuda.to_device(np.full(phase.N_REAL, np.inf))
    phase.offer_candidates(dtape, len(points), cuda.to_device(points), 1e-6, candidate, real)
    expected = [evaluate_point(problem.tape, point).f_hi for point in points]
    assert candidate.copy_to_host().tolist() == expected and max(expected) < 1e-6
    options = MinimizeOptions(second_order=False, subdomains=16, time_limit=120.0)
    result = minimize_gpu(problem, options, phase_subdomains=64, capacity=256)
    assert result.status == "optimal" and result.lower_bound <= 0.0 < result.objective < 1e-6, result


def test_branching_bisects_as_the_cpu_and_keeps_unsplittable_boxes():
    """branch, one round: pruned at the level, the first ``n_select`` at or below ``select_lb`` bisected like
    the CPU's ``bisect`` (boxes of width 0 or one float along a side included), the rest carried."""
    rng = np.random.default_rng(8)
    scale = np.array([1.0, 4.0, 0.0])
    lo = rng.uniform(-1, 1, (12, 3))
    hi = lo + rng.uniform(0, 1, (12, 3)) * [1, 4, 1]
    hi[3] = np.nextafter(lo[3], np.inf)  # no side splits: unsplittable
    hi[4, 0] = lo[4, 0]  # width 0 along x0
    lb = rng.uniform(-5, 5, 12)
    lb[5] = 10.0  # at or above the level: pruned
    real = np.full(phase.N_REAL, np.inf)
    real[phase.R_UB] = 8.0
    d_real, d_count = cuda.to_device(real), cuda.to_device(np.zeros(phase.N_COUNT, np.int64))
    phase.begin_phase[1, 1](d_real, d_count, math.inf)
    out = [cuda.device_array((12, 3)), cuda.device_array((12, 3)), cuda.device_array(12)]
    child = [cuda.device_array((24, 3)), cuda.device_array((24, 3))]
    select_lb = np.sort(lb[lb < 8])[7]  # at most 8 boxes ask; 6 may be bisected
    phase.branch_kernel()[blocks(12), THREADS_PER_BLOCK](
        12,
        cuda.to_device(lo),
        cuda.to_device(hi),
        cuda.to_device(lb),
        select_lb,
        6,
        1,
        cuda.to_device(scale),
        1e-6,
        1e-6,
        d_real,
        d_count,
        *out,
        *child,
    )
    counts, reals = d_count.copy_to_host(), d_real.copy_to_host()
    n_children, n_out = counts[phase.C_CHILDREN], counts[phase.C_OUT]
    assert reals[phase.R_PRUNED] == 10.0 and counts[phase.C_SELECTED] == 8
    children = list(zip(child[0].copy_to_host()[:n_children], child[1].copy_to_host()[:n_children]))
    carried = sorted(out[2].copy_to_host()[:n_out].tolist())
    bisected = []
    for b in range(12):
        if lb[b] >= 8:
            continue
        halves = bisect(lo[b], hi[b], scale)
        pair = None if halves is None else [(halves[0][k], halves[1][k]) for k in range(2)]
        if pair is not None and any(
            np.array_equal(c[0], pair[0][0]) and np.array_equal(c[1], pair[0][1]) for c in children
        ):
            bisected.append(b)
            assert any(np.array_equal(c[0], pair[1][0]) and np.array_equal(c[1], pair[1][1]) for c in children)
        elif halves is None and lb[b] <= select_lb:
            assert reals[phase.R_UNSPLIT] <= lb[b]
    assert 2 * len(bisected) == n_children and len(bisected) + counts[phase.C_UNSPLIT] == 6
    assert all(lb[b] <= select_lb for b in bisected)
    assert len(carried) + len(bisected) + counts[phase.C_UNSPLIT] + 1 == 12
    assert reals[phase.R_OPEN_MIN] == min(carried)


@pytest.mark.parametrize("levels", [2, 3])
def test_multisection_tiles_each_box_exactly(levels):
    """Up to 2**levels children per box: inside it, pairwise without common interior, their
    volumes summing to its own (so together exactly the box); sides that cannot split stay whole."""
    rng = np.random.default_rng(levels)
    lo = rng.uniform(-1, 1, (5, 3)) + 10.0 * np.arange(5)[:, None]  # disjoint boxes
    hi = lo + rng.uniform(0.5, 2, (5, 3))
    hi[1, 2] = lo[1, 2]  # flat along x2
    hi[2] = np.nextafter(lo[2], np.inf)  # no side splits: unsplittable, no children
    scale = np.ones(3)
    d_real, d_count = cuda.to_device(np.full(phase.N_REAL, np.inf)), cuda.to_device(np.zeros(phase.N_COUNT, np.int64))
    phase.begin_phase[1, 1](d_real, d_count, math.inf)
    child = [cuda.device_array((40, 3)), cuda.device_array((40, 3))]
    out = [cuda.device_array((5, 3)), cuda.device_array((5, 3)), cuda.device_array(5)]
    lb = np.arange(5.0)
    phase.branch_kernel()[1, THREADS_PER_BLOCK](
        5,
        cuda.to_device(lo),
        cuda.to_device(hi),
        cuda.to_device(lb),
        math.inf,
        5,
        levels,
        cuda.to_device(scale),
        1e-6,
        1e-6,
        d_real,
        d_count,
        *out,
        *child,
    )
    n_children = int(d_count.copy_to_host()[phase.C_CHILDREN])
    c_lo, c_hi = child[0].copy_to_host()[:n_children], child[1].copy_to_host()[:n_children]
    assert n_children == 4 * 2**levels and d_count.copy_to_host()[phase.C_UNSPLIT] == 1
    for b in (0, 1, 3, 4):
        mine = [k for k in range(n_children) if np.all(c_lo[k] >= lo[b]) and np.all(c_hi[k] <= hi[b])]
        widths = np.where(hi[b] > lo[b], hi[b] - lo[b], 1.0)
        volumes = [np.prod(np.where(hi[b] > lo[b], c_hi[k] - c_lo[k], 1.0)) for k in mine]
        assert math.isclose(sum(volumes), np.prod(widths), rel_tol=1e-12)
        for j, k in enumerate(mine):
            for m in mine[j + 1 :]:
                overlap = np.minimum(c_hi[k], c_hi[m]) - np.maximum(c_lo[k], c_lo[m])
                assert np.any(overlap[hi[b] > lo[b]] <= 0)


# ---------------------------------------------------------------- the CPU first (minimize_auto)


@pytest.fixture
def no_cuda(monkeypatch):
    """Any step towards the GPU fails the test: a device exploration, the kernels' load."""

    def refuse(*_args, **_kwargs):
        raise AssertionError("the GPU path was taken")

    monkeypatch.setattr(gpu_bnb, "GpuExploration", refuse)
    monkeypatch.setattr(gpu_bnb, "load_code", refuse)
    monkeypatch.setattr(gpu_bnb.DeviceTape, "upload", refuse)


def test_a_small_problem_is_answered_by_the_cpu_slice_without_cuda(no_cuda):
    problem = _problem("B6-booth")
    result = minimize_auto(problem, MinimizeOptions(second_order=False, subdomains=16), load_gpu=gpu_bnb.load_code)
    assert result.status == "optimal" and result.to_dict()["backend"] == "cpu" and result.subdomains == 64
    assert result.lower_bound <= problem.optimum <= result.objective <= problem.optimum + 1e-6


def test_a_stop_or_a_limit_within_the_slice_ends_on_the_cpu(no_cuda):
    problem = _problem("C3-g11-cec2006-g11")
    stopped = minimize_auto(problem, SMALL, should_stop=lambda: True, slice_s=60.0)
    limited = minimize_auto(problem, replace(SMALL, node_limit=3), slice_s=60.0)
    for result in (stopped, limited):
        assert result.status == "limit" and result.to_dict()["backend"] == "cpu"
        assert result.lower_bound <= problem.optimum and result.open_boxes > 0
    assert 3 <= limited.nodes <= 3 + 8


def test_closes_within_extrapolates_a_geometric_gap():
    closes_within = gpu_bnb.closes_within
    # 1 -> 0.1 in 5 ms: 0.01 after 5 ms more, 1e-3 after 10 ms
    assert closes_within(1.0, 0.1, 0.005, 1e-3, 0.0101)
    assert not closes_within(1.0, 0.1, 0.005, 1e-3, 0.0099)
    assert closes_within(1.0, 1e-4, 0.005, 1e-3, 0.0)  # already within the tolerance
    for before, after in [(0.4, 0.4), (0.4, 0.5), (math.inf, 0.1), (math.inf, math.inf), (0.1, 0.0)]:
        assert not closes_within(before, after, 0.005, 1e-3, 1.0)  # no shrink, no incumbent, a zero gap
    assert not closes_within(1.0, 0.1, 0.0, 1e-3, 1.0)  # no time between the two
    assert not closes_within(1.0, 0.1, 0.005, 0.0, 1.0)  # a gap that must close to 0
    # HS071 on the 2-core machine, at 14 and 19 ms: it ended 17 ms later
    assert closes_within(0.100043, 0.015839, 0.005, 1.7014e-5, 0.02)


def test_the_slice_runs_once_more_where_the_gap_closes_within_it(monkeypatch):
    """Where :func:`closes_within` says so, the CPU runs a second slice before the hand-over."""

    class HandOver(Exception):
        pass

    def hand_over():
        raise HandOver

    asked = []

    def closes(before, after, seconds, tolerance, within_s):
        asked.append((before, after, seconds, tolerance, within_s))
        return True

    monkeypatch.setattr(gpu_bnb, "closes_within", closes)
    problem = load_problem(str(Path(BUKIN).with_name("hs079.json")))
    minimize(problem, replace(SMALL, node_limit=2))  # its code loaded before the clock
    began = time.perf_counter()
    with pytest.raises(HandOver):
        minimize_auto(problem, SMALL, replace(SMALL, parallel=False), slice_s=0.002, load_gpu=hand_over)
    assert time.perf_counter() - began >= 0.004  # two slices on the CPU
    ((before, after, seconds, tolerance, within_s),) = asked
    assert before >= after > tolerance and 0 < tolerance < math.inf and seconds > 0 and within_s == 0.002


@pytest.mark.parametrize("contract", [True, False])
def test_what_outlasts_the_slice_is_handed_to_the_gpu_and_proved_there(monkeypatch, contract):
    """A slice of 0 s: the CPU bounds the root and hands every open box, its incumbent and counters
    to the device, which ends at the CPU's optimum; nodes count both parts."""
    problem = _problem("C9-st-e01-globallib")
    options = MinimizeOptions(second_order=False, subdomains=4, contract=contract, local_solves=False)
    parts, take_over, bound_children = {}, GpuExploration.take_over, GpuExploration._bound_children

    def spy_take_over(self, other):
        parts["cpu"], parts["open"] = other.nodes, len(other.remaining())
        parts["incumbent"] = other.incumbent.value
        take_over(self, other)
        parts["gpu"] = 0
        assert self.incumbent.value == other.incumbent.value and self.lower_bound == other.lower_bound

    def spy_bound_children(self, n_children, out):
        parts["gpu"] += n_children
        bound_children(self, n_children, out)

    monkeypatch.setattr(GpuExploration, "take_over", spy_take_over)
    monkeypatch.setattr(GpuExploration, "_bound_children", spy_bound_children)
    loads = []
    result = minimize_auto(
        problem,
        options,
        replace(options, parallel=False),
        slice_s=0.0,
        load_gpu=lambda: loads.append(True),
        phase_subdomains=64,
        capacity=64,
    )
    cpu = minimize(problem, options)
    _assert_same_answer(result, cpu, options)
    assert result.to_dict()["backend"] == "gpu" and loads == [True] and parts["open"] > 0
    assert result.nodes == parts["cpu"] + parts["gpu"] and parts["cpu"] >= 1 and parts["gpu"] > 0
    assert result.objective <= parts["incumbent"]
    assert result.lower_bound <= problem.optimum + 1e-12 * max(1.0, abs(problem.optimum))


def test_a_node_limit_counts_both_parts():
    problem = _problem("C3-g11-cec2006-g11")
    options = MinimizeOptions(second_order=False, subdomains=4, contract=False, local_solves=False, node_limit=9)
    result = minimize_auto(problem, options, replace(options, parallel=False), slice_s=0.0, phase_subdomains=16)
    assert result.status == "limit" and result.to_dict()["backend"] == "gpu"
    assert 9 <= result.nodes <= 9 + 8 and result.open_boxes > 0 and result.lower_bound <= problem.optimum


# ---------------------------------------------------------------- the command line


@pytest.fixture
def one_gpu(monkeypatch):
    """The CLI sees one GPU (the simulator's, in CI)."""
    monkeypatch.setattr("pbbflow.core.devices.gpu_count", lambda: 1)


def test_minimize_runs_on_the_gpu_when_asked(capsys, one_gpu, problem_file):
    assert main(["minimize", problem_file("C9-st-e01-globallib"), "--gpus", "1", "--subdomains", "4", "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["status"] == "optimal" and out["backend"] == "gpu" and out["subdomains"] == 4
    assert out["lower_bound"] <= -6.666666666666667 <= out["objective"] + 1e-12
    assert "loading the GPU kernels" in captured.err


def test_minimize_json_has_the_same_keys_on_the_gpu_and_the_cpu(capsys, one_gpu, problem_file):
    """The GPU's counters are null on the CPU: one set of keys (and one order)."""
    minimize = ["minimize", problem_file("C9-st-e01-globallib"), "--subdomains", "4", "--json", "--quiet"]
    assert main([*minimize, "--gpus", "1"]) == 0
    gpu = json.loads(capsys.readouterr().out)
    assert main([*minimize, "--gpus", "0"]) == 0
    cpu = json.loads(capsys.readouterr().out)
    assert main(minimize) == 0
    auto = json.loads(capsys.readouterr().out)
    assert list(gpu) == list(cpu) == list(auto) and gpu["backend"] == "gpu" and cpu["backend"] == "cpu"
    assert cpu["phases"] is None and cpu["reserve_spills"] is None and gpu["phases"] > 0


def test_the_gpu_is_the_default_when_one_is_visible_after_a_cpu_slice(capsys, one_gpu, monkeypatch, problem_file):
    """No --gpus: the CPU explores first and answers what it proves within the slice (no kernel is
    loaded); what outlasts it ends on the GPU; --serial stays on the CPU."""
    monkeypatch.setattr(minimize_cli, "GPU_SUBDOMAINS", 4)
    booth = ["minimize", problem_file("B6-booth"), "--json"]  # proved at the root (64 subdomains)
    with monkeypatch.context() as refused:
        refused.setattr(gpu_bnb, "GpuExploration", None)  # a call would raise
        refused.setattr(gpu_bnb, "load_code", None)
        assert main(booth) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["backend"] == "cpu" and "GPU kernels" not in captured.err
    monkeypatch.setattr(gpu_bnb, "CPU_SLICE_S", 0.0)
    monkeypatch.setattr(minimize_cli, "CPU_SUBDOMAINS", 4)  # not proved at the root
    assert main(["minimize", problem_file("C3-g11-cec2006-g11"), "--json", "--eps-abs", "1e-4"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["backend"] == "gpu" and out["status"] == "optimal" and "loading the GPU kernels" in captured.err
    assert out["lower_bound"] <= 0.7500000000000001 and abs(out["objective"] - 0.75) <= 1e-4  # within feas_tol
    assert main([*booth, "--serial", "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out)["backend"] == "cpu"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--gpus", "2"], "minimize runs on one GPU"),
        (["--gpus", "1", "--serial"], "--serial bounds on one CPU thread"),
    ],
)
def test_gpu_requests_it_cannot_serve_are_one_line_errors(capsys, one_gpu, arguments, message):
    assert main(["minimize", "peaks", *arguments]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_no_visible_gpu_is_a_one_line_error_or_the_cpu(capsys, monkeypatch, problem_file):
    monkeypatch.setattr("pbbflow.core.devices.gpu_count", lambda: 0)
    assert main(["minimize", "peaks", "--gpus", "all"]) == 2
    assert "no GPU is visible" in capsys.readouterr().err
    assert main(["minimize", problem_file("B6-booth"), "--quiet"]) == 0
    assert "on the CPU" in capsys.readouterr().out


def test_a_problem_beyond_the_kernels_variables_runs_on_the_cpu_unless_the_gpu_was_asked(capsys, one_gpu, tmp_path):
    wide = tmp_path / "nine.json"
    objective = " + ".join(f"(x[{i}] - {i}) ** 2" for i in range(MAX_VARS + 1))
    wide.write_text(
        json.dumps({"variables": MAX_VARS + 1, "domain": [[-10, 10]] * (MAX_VARS + 1), "objective": objective})
    )
    assert main(["minimize", str(wide)]) == 0
    captured = capsys.readouterr()
    assert f"pbbflow: on the CPU: the GPU bounds problems of at most {MAX_VARS} variables" in captured.err
    assert "on the CPU" in captured.out
    assert main(["minimize", str(wide), "--gpus", "1"]) == 2
    assert "use --gpus 0" in capsys.readouterr().err


def test_a_network_objective_is_bounded_through_its_layers_on_the_device(monkeypatch):
    """The margin of "Y_0 is the largest" of a 2-8-8-2 ReLU network (a network objective): within the
    same boxes, the GPU search that raises each child's bound to the network kernel's certifies a
    higher bound than with its tape alone, never above the CPU's proved optimum."""
    from pbbflow.spatial.network import Layer, Network, NetworkObjective
    from pbbflow.spatial.verify import margin_problem
    from pbbflow.spatial.vnnlib import parse_vnnlib

    rng = np.random.default_rng(5)
    network = Network(
        2,
        (
            Layer(rng.normal(0.0, 1.0, (8, 2)), rng.normal(0.0, 0.2, 8), "relu"),
            Layer(rng.normal(0.0, 0.5, (8, 8)), rng.normal(0.0, 0.2, 8), "relu"),
            Layer(rng.normal(0.0, 0.5, (2, 8)), rng.normal(0.0, 0.1, 2)),
        ),
    )
    text = (
        "(declare-const X_0 Real) (declare-const X_1 Real) (declare-const Y_0 Real) (declare-const Y_1 Real)"
        " (assert (>= X_0 -1)) (assert (<= X_0 1)) (assert (>= X_1 -1)) (assert (<= X_1 1))"
        " (assert (>= Y_0 Y_1))"
    )
    problem = margin_problem(network, parse_vnnlib(text).regions[0])
    assert NetworkObjective.of(problem) is not None
    options = MinimizeOptions(second_order=False, subdomains=4, contract=False, node_limit=8, local_solves=False)
    monkeypatch.setattr(gpu_bnb, "bounds_whole_boxes", lambda problem: False)  # the same subdomains both ways
    with_network = minimize_gpu(problem, options, phase_subdomains=16, capacity=64)
    monkeypatch.setattr(gpu_bnb.NetworkObjective, "of", classmethod(lambda cls, problem: None))
    tape_alone = minimize_gpu(problem, options, phase_subdomains=16, capacity=64)
    cpu = minimize(problem, MinimizeOptions(second_order=False, subdomains=4, contract=False))
    assert cpu.status == "optimal" and with_network.nodes == tape_alone.nodes
    assert tape_alone.lower_bound < with_network.lower_bound <= cpu.objective  # -0.80, -0.66, -0.31 measured


def test_a_network_objective_of_three_inputs_bounds_whole_boxes_on_the_device(monkeypatch):
    """Where the CPU bounds a network objective's boxes whole (3 inputs here), so does the device:
    one subdomain a box, raised through the layers, no contraction, and f's tape is never run on the
    device (neither bounded over a box nor evaluated at its best point: the host offers the centres).
    Its certified minimum lies below a brute-force grid's minimum and arb's value at its point, and
    matches the CPU's proof."""
    from pbbflow.spatial.network import Layer, Network

    rng = np.random.default_rng(2)
    network = Network(
        3,
        (
            Layer(rng.normal(0.0, 0.8, (4, 3)), rng.normal(0.0, 0.1, 4), "relu"),
            Layer(rng.normal(0.0, 0.7, (4, 4)), rng.normal(0.0, 0.1, 4), "relu"),
            Layer(rng.normal(0.0, 0.5, (1, 4)), None, "linear"),
        ),
    )
    model = Model("whole boxes on the device")
    model.minimize(network(model.variables(3, -2, 2))[0])
    problem = model.problem()
    contracted = []
    monkeypatch.setattr(gpu_bnb, "contract_boxes_device", lambda *a: contracted.append(1))
    tape_runs = []
    for module, name in ((gpu_bnb, "bound_on_device"), (gpu_bnb.phase, "offer_candidates")):
        run = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, run=run, name=name: tape_runs.append(name) or run(*a))
    result = minimize_gpu(problem, MinimizeOptions(subdomains=64), phase_subdomains=4 * gpu_bnb.NETWORK_BOX_SUBDOMAINS)
    cpu = minimize(problem, MinimizeOptions(parallel=False))
    assert result.status.name == "OPTIMAL" and result.extras["subdomains"] == 1 and not contracted
    assert not tape_runs
    values = np.stack(np.meshgrid(*[np.linspace(-2, 2, 41)] * 3), -1).reshape(-1, 3).T
    for layer in network.steps:
        values = layer.weights @ values + (0.0 if layer.bias is None else layer.bias[:, None])
        values = np.maximum(values, 0.0) if layer.activation == "relu" else values
    assert result.lower_bound <= values.min() + 1e-12
    assert arb_outputs(problem.tape, result.x)[0] >= result.lower_bound
    assert abs(result.objective - cpu.objective) <= 2e-6 and result.lower_bound <= cpu.objective
