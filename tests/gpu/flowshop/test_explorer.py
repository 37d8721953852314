"""The GPU explorer against the CPU explorer (the oracle), under the CUDA simulator in CI.

With UB = optimum the tree is fixed, so the GPU must decompose exactly the CPU's nodes, on
any partition of the work and across budget stops.  The simulator runs a warp as 4 threads
(``gpu/warp.py``), so these small instances take the kernels' multi-chunk paths too.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pbbflow.flowshop.evaluation import brute_force_optimum, makespan
from pbbflow.flowshop.explorer import explore
from pbbflow.flowshop.factoradic import digits_to_int, factorial, int_to_digits
from pbbflow.flowshop.intervals import WorkUnit
from pbbflow.flowshop.ivm import DONE, INIT
from pbbflow.flowshop.load import load_instance
from pbbflow.flowshop.packed import PackedUnit, limbs
from pbbflow.gpu.flowshop import factoradic as fd
from pbbflow.gpu.flowshop.explorer import GpuError, GpuExplorer, explore_gpu
from pbbflow.gpu.warp import SIMULATED

pytestmark = pytest.mark.gpu


def vector(x: int, n: int) -> np.ndarray:
    """(n+1)-digit vector of x in [0, n!]."""
    if x == factorial(n):
        return np.array([1] + [0] * n, np.int32)
    return np.concatenate([[0], int_to_digits(x, n)]).astype(np.int32)


def value(v: np.ndarray) -> int:
    n = v.shape[0] - 1
    return int(v[0]) * int(factorial(n)) + int(digits_to_int(v[1:]))


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40), st.data())
def test_factoradic_arithmetic_matches_gmpy2(n, data):
    total = int(factorial(n))
    x = data.draw(st.integers(0, total))
    y = data.draw(st.integers(0, total - x))  # x + y <= n!
    out = np.zeros(n + 1, np.int32)
    fd.add(vector(x, n), vector(y, n), out)
    assert value(out) == x + y
    hi, lo = max(x, y), min(x, y)
    fd.subtract(vector(hi, n), vector(lo, n), out)
    assert value(out) == hi - lo
    fd.halve(vector(x, n), out)
    assert value(out) == x // 2
    assert fd.compare(vector(x, n), vector(y, n)) == (x > y) - (x < y)
    leading = fd.leading_digit(vector(x, n))
    assert leading == (n + 1 if x == 0 else next(i for i, d in enumerate(vector(x, n)) if d))


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 60), st.data())
def test_digit_vectors_and_limbs_round_trip(n, data):
    total = int(factorial(n))
    values = data.draw(st.lists(st.integers(0, total), min_size=1, max_size=5))
    digits = np.stack([vector(x, n) for x in values])
    words = np.zeros((len(values), limbs(n)), np.uint64)
    scratch = np.zeros(2 * limbs(n), np.uint64)
    for row in range(len(values)):
        fd.to_limbs(digits[row], scratch, words[row])
    packed = b"".join(int(x).to_bytes(8 * limbs(n), "big") for x in values)
    assert words.astype(">u8").tobytes() == packed
    back = np.zeros_like(digits)
    fd.limbs_to_digits(words, back)
    assert np.array_equal(back, digits)


def random_instance(seed: int, n: int, m: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(1, 30, size=(n, m)).astype(np.int32)


@pytest.mark.parametrize(
    ("seed", "n", "m", "branch", "ivms"),
    [
        (8, 4, 3, "minmin", 2),  # n <= WARP: the small kernel (WARP is 4 under the simulator)
        (0, 5, 3, "minmin", 1),
        (1, 6, 5, "minmin", 3),
        (2, 7, 4, "minmin", 8),
        (3, 6, 6, "minbranch", 4),
        (4, 6, 3, "forward", 2),
        (5, 6, 4, "backward", 5),
    ],
)
def test_same_nodes_as_the_cpu_with_ub_at_the_optimum(seed, n, m, branch, ivms):
    p = random_instance(seed, n, m)
    optimum = brute_force_optimum(p)[0]
    cpu = explore(p, WorkUnit.full(n), optimum, branch=branch)
    gpu = explore_gpu(p, WorkUnit.full(n), optimum, branch=branch, ivms=ivms)
    assert (gpu.nodes, gpu.leaves) == (cpu.nodes, cpu.leaves)
    assert not gpu.remaining and gpu.best_makespan is None


@pytest.mark.parametrize(("n", "m"), [(3, 4), (7, 5)])
def test_same_nodes_as_the_cpu_with_the_instance_in_global_memory(monkeypatch, n, m):
    """The kernels that leave an instance too large for shared memory where it is."""
    from pbbflow.gpu.flowshop import kernels

    monkeypatch.setattr(kernels, "STAGED_BYTES", 0)
    p = random_instance(n, n, m)
    optimum = brute_force_optimum(p)[0]
    cpu = explore(p, WorkUnit.full(n), optimum)
    gpu = explore_gpu(p, WorkUnit.full(n), optimum, ivms=3)
    assert (gpu.nodes, gpu.leaves) == (cpu.nodes, cpu.leaves) and not gpu.remaining


@pytest.mark.parametrize(("name", "optimum"), [("ta001", 1278), ("ta002", 1359)])
def test_same_nodes_as_the_cpu_on_small_taillard_trees(name, optimum):
    p = load_instance(name).p
    cpu = explore(p, WorkUnit.full(20), optimum)
    gpu = explore_gpu(p, WorkUnit.full(20), optimum, ivms=4)
    assert gpu.nodes == cpu.nodes > 0 and not gpu.remaining


@pytest.mark.skipif(SIMULATED, reason="50 jobs take the simulator hours; its 4-lane warps test the large kernel")
@pytest.mark.parametrize(("name", "optimum"), [("ta042", 2867), ("ta050", 3065)])
def test_same_nodes_as_the_cpu_on_50_jobs(name, optimum):
    """The kernel for n > 32 on a real GPU (optima from ../shared/data/taillard/bounds.csv)."""
    p = load_instance(name).p
    cpu = explore(p, WorkUnit.full(50), optimum, threads=2)
    gpu = explore_gpu(p, WorkUnit.full(50), optimum)
    assert gpu.nodes == cpu.nodes > 100_000 and not gpu.remaining and gpu.best_makespan is None


def test_the_kernel_is_chosen_by_size():
    from pbbflow.gpu.flowshop import kernels
    from pbbflow.gpu.warp import WARP

    small = kernels.explore_kernel(WARP, 5)
    assert kernels.explore_kernel(2, 5) is small  # one kernel per size class and machine count
    assert kernels.explore_kernel(WARP + 1, 5) is not small
    assert kernels.explore_kernel(2 * WARP + 1, 5) is not kernels.explore_kernel(WARP + 1, 5)  # one per chunk count
    assert kernels.explore_kernel(WARP, 6) is not small


def test_finds_an_optimal_schedule_from_above():
    p = random_instance(7, 6, 4)
    optimum = brute_force_optimum(p)[0]
    result = explore_gpu(p, WorkUnit.full(6), optimum + 20, ivms=3)
    assert result.best_makespan == optimum
    assert makespan(p, result.best_permutation) == optimum
    assert sorted(result.best_permutation.tolist()) == list(range(6))


def test_budget_stops_resume_to_the_same_count_and_account_for_the_space():
    p = random_instance(21, 6, 5)
    optimum = brute_force_optimum(p)[0]
    total = explore(p, WorkUnit.full(6), optimum).nodes  # 56 nodes
    explorer = GpuExplorer(p, ivms=3)
    explorer.load(WorkUnit.full(6))
    done, rounds = 0, 0
    while True:
        before = explorer.remaining()
        counts = explorer.run(optimum, max_nodes=15, steps=1)  # a stop comes one launch late: short ones
        done += counts.nodes
        rounds += 1
        left = explorer.remaining()
        assert left.to_work_unit().difference(before.to_work_unit()).is_empty()  # only shrinks
        if not left:
            break
        explorer = GpuExplorer(p, ivms=3)  # resume on a fresh explorer from the remaining unit
        explorer.load(left)
    assert done == total and rounds > 2


def test_a_stop_takes_the_queued_launch_along_and_counts_its_nodes():
    """The launch queued behind the one that asked to stop still runs: its nodes are in the
    counts, and what is left is exactly what neither launch explored."""
    p = random_instance(21, 6, 5)
    optimum = brute_force_optimum(p)[0]
    total = explore(p, WorkUnit.full(6), optimum).nodes
    explorer = GpuExplorer(p, ivms=3)
    explorer.load(WorkUnit.full(6))
    asked = []
    counts = explorer.run(optimum, steps=1, on_launch=lambda nodes, leaves, ub: asked.append(nodes) or True)
    assert len(asked) == 1 and counts.launches == 2 and counts.nodes > asked[0]
    left = explore(p, explorer.remaining().to_work_unit(), optimum).nodes
    assert counts.nodes + left == total


def test_idle_ivms_steal_work():
    p = random_instance(10, 7, 5)
    optimum = brute_force_optimum(p)[0]
    explorer = GpuExplorer(p, ivms=4)
    explorer.load(WorkUnit.full(7))
    counts = explorer.run(optimum, steps=2)  # short launches: steals happen before the tree is done
    assert counts.peak_active >= 3  # one interval was shared out on the device
    assert counts.nodes == explore(p, WorkUnit.full(7), optimum).nodes == 109


def test_the_work_left_is_packed_on_the_device_as_the_ivms_hold_it():
    """``remaining`` (limbs made by the pack_work kernel) equals the IVMs' intervals read from their
    digit rows on the host, a stolen interval not decoded yet included (a steal queued after the
    last launch)."""
    p = random_instance(10, 7, 5)
    optimum = brute_force_optimum(p)[0]
    explorer = GpuExplorer(p, ivms=6)
    explorer.load(WorkUnit(7, [(0, 5040)]))
    explorer.run(optimum, steps=2, on_launch=lambda nodes, leaves, ub: True)  # two launches
    explorer._steal()
    explorer.stream.synchronize()
    state = explorer.state.copy_to_host()
    V, start, end = explorer.V.copy_to_host(), explorer.start.copy_to_host(), explorer.end.copy_to_host()
    busy = np.flatnonzero(state[:, DONE] == 0)
    intervals = [(value(start[w] if state[w, INIT] else np.concatenate([[0], V[w]])), value(end[w])) for w in busy]
    assert len(busy) == 2 and state[busy, INIT].sum() == 1  # the thief has not decoded its start yet
    assert explorer.remaining().to_work_unit() == WorkUnit(7, intervals)


def test_a_partial_unit_of_many_intervals():
    p = random_instance(21, 7, 5)
    optimum = brute_force_optimum(p)[0]  # UB = optimum: a fixed tree (above it, counts depend on timing)
    total = int(factorial(7))
    unit = WorkUnit(7, [(a, a + 37) for a in range(0, total - 37, 211)])
    cpu = explore(p, unit, optimum)
    gpu = explore_gpu(p, PackedUnit.from_work_unit(unit).to_work_unit(), optimum, ivms=len(unit))
    assert (gpu.nodes, gpu.leaves) == (cpu.nodes, cpu.leaves) and cpu.nodes == 18


def test_clear_errors():
    p = random_instance(0, 5, 3)
    with pytest.raises(GpuError, match="lb1 only"):
        GpuExplorer(p, bound="lb2")
    explorer = GpuExplorer(p, ivms=2)
    with pytest.raises(GpuError, match="at most 2"):
        explorer.load(WorkUnit(5, [(0, 1), (5, 6), (9, 10)]))
    with pytest.raises(ValueError, match="n=4"):
        explorer.load(WorkUnit.full(4))
    assert explorer.memory_bytes > 0 and explorer.k == 2
    with pytest.raises(GpuError, match="up to 255 machines"):
        GpuExplorer(random_instance(0, 3, 256))


@pytest.mark.parametrize(("branch", "seed"), [("minmin", 1), ("minbranch", 5)])
def test_direction_ties_without_packed_sums(branch, seed):
    """Ties between the directions go to the larger sum of bounds, also when the two sums are
    reduced one by one (instances whose sums could exceed 31 bits).  On these instances the
    count changes when the two sums are swapped (checked by mutating the kernel)."""
    p = random_instance(seed, 6, 5)
    optimum = brute_force_optimum(p)[0]
    cpu = explore(p, WorkUnit.full(6), optimum, branch=branch)
    explorer = GpuExplorer(p, ivms=3, branch=branch)
    explorer.pack_sums = False
    explorer.load(WorkUnit.full(6))
    counts = explorer.run(optimum)
    assert (counts.nodes, counts.leaves) == (cpu.nodes, cpu.leaves) and not explorer.remaining()


def test_every_flowshop_kernel_compiles_for_sm90(sm90_ptx):
    """numba-cuda (not the simulator, which types more leniently) types and compiles the explore
    kernel of both size classes and the stealing kernels; the selection votes across the warp."""
    names = {path.stem for path in sm90_ptx.glob("*.ptx")}
    assert {"explore_n20", "explore_n50", "classify", "list_victims", "steal", "pack_work"} <= names
    for size in ("n20", "n50"):
        ptx = (sm90_ptx / f"explore_{size}.ptx").read_text()
        assert "vote.sync.ballot" in ptx and "shfl.sync" in ptx
