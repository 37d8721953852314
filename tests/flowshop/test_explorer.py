"""The IVM explorer: brute-force oracle, fixed trees, interval ownership of nodes, budgets."""

import itertools
import platform
import time

import numba
import numpy as np
import pytest
from gmpy2 import mpz

from pbbflow.flowshop.choices import BOUND_NAMES, BRANCH_NAMES
from pbbflow.flowshop.evaluation import brute_force_optimum, makespan
from pbbflow.flowshop.explorer import explore
from pbbflow.flowshop.factoradic import factorial
from pbbflow.flowshop.intervals import WorkUnit
from pbbflow.flowshop.ivm import IVM, Problem, _cmov_kept, explore_steps
from pbbflow.flowshop.taillard import taillard_instance

BOUNDS = tuple(BOUND_NAMES)  # every bound: a new one is tested as it is added
BRANCHES = tuple(BRANCH_NAMES)  # every branching rule
NO_UB = 10**9


def random_instances(seed, count, max_n=8):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(rng.integers(1, max_n + 1))
        m = int(rng.integers(1, 6))
        yield rng.integers(1, 40, size=(n, m)).astype(np.int32)


@pytest.mark.parametrize("bound,branch", list(itertools.product(BOUNDS, BRANCHES)))
def test_optimum_equals_brute_force(bound, branch):
    for p in random_instances(10, 12):
        optimum, _ = brute_force_optimum(p)
        result = explore(p, WorkUnit.full(p.shape[0]), NO_UB, bound=bound, branch=branch)
        assert result.best_makespan == optimum
        assert makespan(p, result.best_permutation) == optimum
        assert not result.remaining
        assert result.leaves >= 1


@pytest.mark.parametrize("threads", [2, 3])
def test_optimum_with_threads_equals_brute_force(threads):
    for p in random_instances(11, 10):
        optimum, _ = brute_force_optimum(p)
        result = explore(p, WorkUnit.full(p.shape[0]), NO_UB, threads=threads)
        assert result.best_makespan == optimum and not result.remaining


def test_nothing_below_the_optimum():
    for p in random_instances(12, 10):
        optimum, _ = brute_force_optimum(p)
        result = explore(p, WorkUnit.full(p.shape[0]), optimum)
        assert result.best_makespan is None and result.best_permutation is None
        assert result.leaves == 0 and not result.remaining


@pytest.mark.parametrize("bound", BOUNDS)
def test_fixed_tree_node_count_does_not_depend_on_threads(bound):
    p = taillard_instance(11).p  # optimum 1582
    counts = {threads: explore(p, WorkUnit.full(20), 1582, bound=bound, threads=threads).nodes for threads in (1, 2, 3)}
    assert len(set(counts.values())) == 1, counts
    assert counts[1] > 1000


def test_node_counts_add_up_over_any_partition_of_the_space():
    """A node belongs to the interval holding its leftmost leaf: pieces sum to the whole."""
    rng = np.random.default_rng(13)
    cases = [(taillard_instance(11).p, 1582)] + [(p, brute_force_optimum(p)[0]) for p in random_instances(14, 6)]
    for p, ub in cases:
        n = p.shape[0]
        whole = explore(p, WorkUnit.full(n), ub).nodes
        total = int(factorial(n))
        cuts = sorted({0, total} | {int(rng.integers(0, total)) for _ in range(7)})
        pieces = [explore(p, WorkUnit(n, [(a, b)]), ub).nodes for a, b in itertools.pairwise(cuts)]
        assert sum(pieces) == whole


def test_resuming_from_the_remainder_accounts_for_every_position():
    p = taillard_instance(11).p
    whole = explore(p, WorkUnit.full(20), 1582, threads=2).nodes
    unit, nodes, explored, rounds = WorkUnit.full(20), 0, mpz(0), 0
    while unit:
        result = explore(p, unit, 1582, threads=2, max_nodes=20_000)
        assert result.remaining.difference(unit).is_empty()  # never grows
        assert result.remaining.size < unit.size
        explored += unit.size - result.remaining.size
        nodes += result.nodes
        unit = result.remaining
        rounds += 1
    assert rounds > 3
    assert nodes == whole
    assert explored == factorial(20)


def test_time_budget_stops_and_leaves_a_resumable_remainder(patience):
    p = taillard_instance(21).p  # 20 x 20: far longer than the budget
    result = explore(p, WorkUnit.full(20), 2297, threads=2, max_seconds=0.3)
    assert result.remaining and result.remaining.size < factorial(20)
    assert result.elapsed_s < patience(5)


def test_work_unit_of_several_intervals():
    p = taillard_instance(11).p
    total = int(factorial(20))
    parts = [(0, total // 5), (total // 3, total // 2), (3 * total // 4, total)]
    unit = WorkUnit(20, parts)
    rest = WorkUnit.full(20).difference(unit)
    together = explore(p, unit, 1582, threads=2).nodes + explore(p, rest, 1582, threads=3).nodes
    assert together == explore(p, WorkUnit.full(20), 1582).nodes


def test_improving_schedules_are_reported():
    p = taillard_instance(1).p  # optimum 1278
    result = explore(p, WorkUnit.full(20), 1400, threads=2)
    assert result.best_makespan == 1278
    assert makespan(p, result.best_permutation) == 1278


def test_invalid_arguments():
    p = taillard_instance(1).p
    with pytest.raises(ValueError):
        explore(p, WorkUnit.full(20), 1300, threads=0)
    with pytest.raises(ValueError):
        explore(p, WorkUnit.full(19), 1300)


def test_progress_callback_reports_growing_counters():
    snapshots = []
    p = taillard_instance(17).p
    result = explore(
        p, WorkUnit.full(20), 1484, threads=2, max_seconds=2.0, on_progress=snapshots.append, progress_every=0.4
    )
    assert len(snapshots) >= 2
    assert all(a.nodes <= b.nodes and a.elapsed_s < b.elapsed_s for a, b in itertools.pairwise(snapshots))
    assert all(s.ub == 1484 for s in snapshots) and snapshots[-1].nodes <= result.nodes


def test_a_progress_callback_returning_true_stops_like_a_budget(patience):
    p = taillard_instance(17).p
    started = time.monotonic()
    first = explore(p, WorkUnit.full(20), 1484, threads=2, on_progress=lambda s: True, progress_every=0.2)
    assert time.monotonic() - started < patience(5) and first.remaining  # stopped long before the 38 M nodes
    rest = explore(p, first.remaining, 1484, threads=2)
    assert first.nodes + rest.nodes == 38_400_745 and not rest.remaining


@pytest.mark.parametrize("width", [1, 12345, int(factorial(19))])
def test_a_start_whose_pruned_cells_run_past_the_end_is_exhausted(width):
    """ta011 under its optimum prunes job 5 at the root: an interval starting in that subtree
    and ending inside it has no unpruned position.  Stopped before its first step (a zero time
    budget), the explorer has nothing left; it once stood past its end (issue 12)."""
    start = 5 * factorial(19)
    result = explore(taillard_instance(11).p, WorkUnit(20, [(start, start + width)]), 1582, max_seconds=0)
    assert not result.remaining and result.nodes == 0


@pytest.mark.parametrize("budget", [{"max_nodes": 1}, {"max_seconds": 0}])
@pytest.mark.parametrize("threads", [1, 3])
def test_a_stop_before_the_first_step_at_position_0_leaves_the_root_to_the_resume(budget, threads):
    """The explorer starting at 0 decodes the root; stopped before its first step, it must not
    count it, as the resume at 0 decodes and counts it again (counted twice before)."""
    p = np.random.default_rng(3).integers(1, 30, size=(7, 4)).astype(np.int32)  # child 0 of the root survives
    optimum = brute_force_optimum(p)[0]
    whole = explore(p, WorkUnit.full(7), optimum)
    first = explore(p, WorkUnit.full(7), optimum, threads=threads, **budget)
    rest = explore(p, first.remaining, optimum)
    assert first.nodes + rest.nodes == whole.nodes == 100 and not rest.remaining


@numba.njit
def _completion(front, times):
    """The LB1 machine loop's shape: a running completion time against a front."""
    t = 0
    for k in range(front.shape[0]):
        t = max(t, front[k]) + times[k]
    return t


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="an x86 backend option")
def test_cmov_is_kept_inside_the_context_only():
    """LLVM's cmov-to-branch conversion is off inside ``_cmov_kept`` and back on after: the
    assembly of a loop like LB1's, generated with the option as it is at each point."""
    values = np.arange(8, dtype=np.int32)
    _completion(values, values)
    library = _completion.overloads[_completion.signatures[0]].library
    before = library.get_asm_str().count("cmov")
    with _cmov_kept():
        inside = library.get_asm_str().count("cmov")
    assert inside > before == library.get_asm_str().count("cmov")


@pytest.mark.parametrize("read_only", [False, True])
def test_explore_steps_runs_the_code_its_ivm_compiled(read_only):
    """An IVM compiles explore_steps for its types (with cmov kept); running adds no compile."""
    p = np.random.default_rng(5).integers(1, 30, size=(6, 3)).astype(np.int32)
    p.flags.writeable = not read_only
    explorer = IVM(Problem(p, BOUND_NAMES["lb1"], BRANCH_NAMES["minmin"]))
    compiled = set(explore_steps.overloads)
    explorer.start(np.zeros(6, np.int32), None, NO_UB)
    explorer.run(100)
    assert explorer.done and set(explore_steps.overloads) == compiled


@pytest.mark.parametrize(("bound", "branch"), [("lb3", "minmin"), ("lb1", "sideways"), ("LB1", "minmin")])
def test_unknown_bound_or_branching_names_are_refused(bound, branch):
    p = next(random_instances(1, 1))
    with pytest.raises(ValueError, match=r"unknown (bound|branching rule) '\w+' \(one of "):
        explore(p, WorkUnit.full(p.shape[0]), 100_000, bound=bound, branch=branch)


@pytest.mark.parametrize(("mode", "branch"), [(3, 2), (-1, 0), (0, 4), (0, -1)])
def test_unknown_codes_are_refused_not_run_as_some_other_rule(mode, branch):
    with pytest.raises(ValueError, match="unknown bound code"):
        Problem(next(random_instances(2, 1)), mode, branch)
    assert sorted(BOUND_NAMES.values()) == [0, 1, 2] and sorted(BRANCH_NAMES.values()) == [0, 1, 2, 3]
