"""Estimates of the nodes left (``flowshop.estimate``): enumerations of the explorers' own tree.

The exact walk of the enumerated tree must count what the CPU explorer counts, for any bound,
branching rule and work unit (UB = optimum: the tree is fixed).  An enumeration that keeps every
node must give that count exactly; one that keeps a few nodes per depth is an unbiased estimate of
it, so the mean of K enumerations lies within a few standard errors of the truth; 5 standard
errors leave a chance below 1e-6 per comparison under the central limit theorem (these trees are
small, so the variance is finite and K = 20,000 is in its range), and the seeds are fixed.
"""

import itertools
import random

import numpy as np
import pytest

from pbbflow.flowshop.choices import BOUND_NAMES, BRANCH_NAMES
from pbbflow.flowshop.estimate import KEPT_LIMITS, THREAD_BYTES, Prober, most_kept, summarise, work_rows
from pbbflow.flowshop.evaluation import brute_force_optimum
from pbbflow.flowshop.explorer import explore
from pbbflow.flowshop.factoradic import factorial
from pbbflow.flowshop.intervals import WorkUnit
from pbbflow.flowshop.packed import PackedUnit
from pbbflow.flowshop.taillard import taillard_instance

BOUNDS = tuple(BOUND_NAMES)  # every bound: a new one is tested as it is added
BRANCHES = tuple(BRANCH_NAMES)  # every branching rule
SAMPLES = 20_000
FEW = 3  # nodes kept per depth where the enumeration must sample
TOLERANCE_SE = 5.0


def random_instances(seed, count, low_n=1, high_n=8):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(rng.integers(low_n, high_n + 1))
        yield rng.integers(1, 40, size=(n, int(rng.integers(2, 6)))).astype(np.int32)


def units(n: int, rng) -> list[WorkUnit]:
    """The whole space, a random interval, and three random disjoint ones."""
    total = int(factorial(n))
    a, b = sorted(int(x) for x in rng.integers(0, total + 1, 2))
    cuts = sorted(int(x) for x in rng.integers(0, total + 1, 6))
    return [WorkUnit.full(n), WorkUnit(n, [(a, b)]), WorkUnit(n, list(zip(cuts[0::2], cuts[1::2])))]


@pytest.mark.parametrize(("bound", "branch"), list(itertools.product(BOUNDS, BRANCHES)))
def test_the_exact_walk_counts_what_the_explorer_counts(bound, branch):
    rng = np.random.default_rng(5)
    for p in random_instances(6, 8):
        optimum, _ = brute_force_optimum(p)
        prober = Prober(p, bound=bound, branch=branch)
        for work in units(p.shape[0], rng):
            assert prober.exact(work, optimum) == explore(p, work, optimum, bound=bound, branch=branch).nodes


def test_nodes_by_depth_add_up_over_depths_and_over_pieces_of_the_work():
    """The per-depth count sums to the explorer's count, is additive over a split of the work,
    counts the root only where its leftmost leaf (position 0) is in the work, and no leaf."""
    rng = np.random.default_rng(11)
    for p in random_instances(12, 8, 2, 8):
        n = p.shape[0]
        optimum, _ = brute_force_optimum(p)
        prober = Prober(p)
        for work in units(n, rng):
            by_depth = prober.exact_by_depth(work, optimum)
            assert by_depth.shape == (n + 1,) and by_depth[n] == 0
            assert by_depth.sum() == explore(p, work, optimum).nodes
            assert by_depth[0] == int(bool(work.intersect(WorkUnit(n, [(0, 1)]))))
            if work.size > 1:
                left, right = work.halve()
                assert np.array_equal(
                    by_depth, prober.exact_by_depth(left, optimum) + prober.exact_by_depth(right, optimum)
                )


def slices():
    """Random 7-9 job instances and Taillard slices, with their optima."""
    for p in [*random_instances(7, 3, 7, 9), taillard_instance(1).p[:8], taillard_instance(11).p[:9]]:
        p = np.ascontiguousarray(p)
        yield p, brute_force_optimum(p)[0]


@pytest.mark.parametrize("slack", [0, 25])
def test_the_mean_of_the_enumerations_is_the_node_count(slack):
    """UB at the optimum (the explorer's own count) and above it (the fixed-UB tree's count)."""
    checked = 0
    for p, optimum in slices():
        ub = optimum + slack
        prober = Prober(p, kept=FEW)
        work = WorkUnit.full(p.shape[0])
        exact = prober.exact(work, ub)
        if slack == 0:
            assert exact == explore(p, work, ub).nodes
        values = prober.samples(work, ub, SAMPLES, seed=1)
        se = values.std(ddof=1) / np.sqrt(values.size)
        assert abs(values.mean() - exact) <= TOLERANCE_SE * se + 1e-9, (exact, values.mean(), se)
        checked += se > 0  # the enumeration sampled: not only trees narrower than FEW
    assert checked >= 3


@pytest.mark.parametrize(("bound", "branch"), list(itertools.product(BOUNDS, BRANCHES)))
def test_an_enumeration_that_keeps_every_node_counts_them_exactly(bound, branch):
    """With more slots than any depth has nodes, nothing is sampled: the explorer's count, for every
    work unit; with one slot, the root's children are still all counted (the width of depth 1)."""
    rng = np.random.default_rng(9)
    for p in random_instances(10, 8):
        n = p.shape[0]
        optimum, _ = brute_force_optimum(p)
        everything, one = Prober(p, bound=bound, branch=branch, kept=int(factorial(n))), Prober(p, kept=1)
        for work in units(n, rng):
            nodes = explore(p, work, optimum, bound=bound, branch=branch).nodes
            assert everything.samples(work, optimum, 2, seed=3).tolist() == [nodes, nodes]
        by_depth = one.exact_by_depth(WorkUnit.full(n), optimum)
        assert one.samples(WorkUnit.full(n), optimum, 1)[0] >= by_depth[:2].sum()


def test_the_enumerations_keep_to_the_work():
    """An estimate over [a, b) and over two intervals against an exploration of the same work."""
    rng = np.random.default_rng(8)
    for p, optimum in slices():
        n = p.shape[0]
        total = int(factorial(n))
        a, b = total // 5, total * 3 // 4
        c = int(rng.integers(b, total))
        prober = Prober(p, kept=FEW)
        for work in (WorkUnit(n, [(a, b)]), WorkUnit(n, [(0, a // 3), (b, c)])):
            actual = explore(p, work, optimum).nodes
            assert prober.exact(work, optimum) == actual
            values = prober.samples(work, optimum, SAMPLES, seed=2)
            se = values.std(ddof=1) / np.sqrt(values.size)
            assert abs(values.mean() - actual) <= TOLERANCE_SE * se + 1e-9, (actual, values.mean(), se)


def test_no_work_no_nodes():
    p = taillard_instance(1).p
    prober = Prober(p)
    empty = WorkUnit.empty(20)
    assert prober.exact(empty, 1278) == 0
    assert not prober.samples(empty, 1278, 10).any()
    estimate = prober.estimate(empty, 1278)
    assert (estimate.nodes, estimate.low, estimate.high, estimate.samples) == (0.0, 0.0, 0.0, 0)


def test_threads_give_the_same_enumerations():
    """Each enumeration is its seed's, whichever thread runs it (each thread has its own arrays)."""
    p, optimum = next(slices())
    work = WorkUnit.full(p.shape[0])
    alone = Prober(p, kept=FEW).samples(work, optimum, 7, seed=4)
    assert np.array_equal(Prober(p, kept=FEW, threads=3).samples(work, optimum, 7, seed=4), alone)
    assert len(set(alone.tolist())) > 1  # and they differ from seed to seed


def test_a_runs_prober_of_another_thread_count_lets_the_old_ones_threads_go(tmp_path):
    """A run's estimates on another thread count get a new prober; the old one's pool is shut."""
    from pbbflow.flowshop.family import create_flowshop_run

    run = create_flowshop_run(tmp_path / "r.zarr", taillard_instance(1), ub=1278, bound="lb1", branch="minmin").instance
    work = run.whole()
    assert run.estimate_left(work, 1278, 0.01, threads=2) is not None
    first = run._prober
    assert run.estimate_left(work, 1278, 0.01, threads=3) is not None
    assert run._prober is not first and first.pool._shutdown and not run._prober.pool._shutdown


def test_an_estimate_keeps_what_its_time_affords():
    """Without a fixed count, the first estimate times a small enumeration, then fits the count to
    the time left; a longer time affords more."""
    p = taillard_instance(21).p
    prober = Prober(p, threads=2)
    assert prober.kept_per_second is None
    short = prober.estimate(WorkUnit.full(20), 2297, seconds=0.05)
    assert prober.kept_per_second > 0 and short.samples == 2
    assert 447_987_895 / 20 < short.nodes < 447_987_895 * 20
    longer = prober.estimate(WorkUnit.full(20), 2297, seconds=1.0)
    assert short.kept < longer.kept <= most_kept(20, 20) and longer.seconds < 5.0
    with pytest.raises(ValueError, match="threads"):
        Prober(p, threads=0)


def test_large_trees_keep_fewer_nodes_in_the_same_memory():
    """A VFR instance of 800 jobs x 60 machines keeps about 1,600 nodes per depth in THREAD_BYTES,
    where ta056's size keeps the most; never fewer than the least."""
    assert most_kept(50, 20) == KEPT_LIMITS[1] > most_kept(800, 60) > KEPT_LIMITS[0]
    assert most_kept(100_000, 60) == KEPT_LIMITS[0]
    prober = Prober(np.ones((800, 60), np.int32))
    assert prober.most == most_kept(800, 60)
    store_bytes = sum(a.nbytes for store in prober.scratch[0][1:] for a in store)
    assert store_bytes < THREAD_BYTES


def test_an_estimate_is_bounded_in_time_and_its_range_holds_the_mean():
    p = taillard_instance(21).p
    estimate = Prober(p).estimate(WorkUnit.full(20), 2297, seconds=0.2)
    assert estimate.samples >= 2 and estimate.seconds < 2.0
    assert 0 < estimate.low <= estimate.nodes <= estimate.high
    # ta021 with UB = optimum is 447,987,895 nodes (benchmarks/results/gpu_explorer_h200_2026-11-30.json)
    assert 447_987_895 / 20 < estimate.nodes < 447_987_895 * 20


def test_summarise():
    estimate = summarise(np.array([1.0, 2.0, 3.0, 100.0]), seconds=0.5)
    assert estimate.nodes == 26.5 and estimate.low <= 26.5 <= estimate.high and estimate.samples == 4
    assert np.isnan(summarise(np.zeros(0)).nodes)


@pytest.mark.parametrize("n", [5, 20, 50])
def test_work_rows_are_the_digits_of_the_intervals(n):
    """Through packed limbs, as the digit arrays of gmpy2 integers: many intervals, one ending at n!."""
    total = int(factorial(n))
    draw = random.Random(n)
    cuts = sorted({draw.randrange(1, total) for _ in range(41)})
    work = WorkUnit(n, [(0, 1), *itertools.pairwise(cuts)][::2] + [(cuts[-1], total)])
    starts, ends, end_is_total = work.to_digit_arrays()
    ends[end_is_total, 0] = n
    assert end_is_total[-1] and len(work) > 10
    for given in (work, PackedUnit.from_work_unit(work)):
        rows = work_rows(given)
        assert np.array_equal(rows[0], starts) and np.array_equal(rows[1], ends)
