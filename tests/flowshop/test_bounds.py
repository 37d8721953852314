"""LB1 / LB2: validity against brute force, monotonicity, incremental = from scratch, root values."""

import csv
import itertools
from pathlib import Path

import numpy as np
import pytest

from pbbflow.flowshop.bounds import (
    lb1_backward_child_body,
    lb1_forward_child_body,
    lower_bound,
    subproblem_vectors,
)
from pbbflow.flowshop.choices import BOUND_NAMES
from pbbflow.flowshop.evaluation import makespan
from pbbflow.flowshop.taillard import taillard_instance

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
BOUNDS = tuple(BOUND_NAMES)  # every bound: a new one is tested as it is added


def random_subproblems(seed, count=40, max_n=7):
    """Random instances with a random split of the jobs into sigma1 / unscheduled / sigma2."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(rng.integers(1, max_n + 1))
        m = int(rng.integers(1, 6))
        p = rng.integers(0 if rng.random() < 0.2 else 1, 30, size=(n, m)).astype(np.int32)
        jobs = [int(j) for j in rng.permutation(n)]
        d1 = int(rng.integers(0, n + 1))
        d2 = int(rng.integers(0, n - d1 + 1))
        yield p, jobs[:d1], jobs[d1 : d1 + d2], jobs[d1 + d2 :]


@pytest.mark.parametrize("bound", BOUNDS)
def test_bound_never_exceeds_any_completion(bound):
    for p, sigma1, sigma2, free in random_subproblems(1):
        lb = lower_bound(p, sigma1, sigma2, bound)
        best = min(makespan(p, np.array(sigma1 + list(mid) + sigma2)) for mid in itertools.permutations(free))
        assert lb <= best, (p.tolist(), sigma1, sigma2)


@pytest.mark.parametrize("bound", BOUNDS)
def test_bound_of_a_complete_schedule_is_its_makespan(bound):
    rng = np.random.default_rng(2)
    for _ in range(50):
        n, m = int(rng.integers(1, 9)), int(rng.integers(1, 7))
        p = rng.integers(1, 50, size=(n, m)).astype(np.int32)
        perm = [int(j) for j in rng.permutation(n)]
        cut = int(rng.integers(0, n + 1))
        assert lower_bound(p, perm[:cut], perm[cut:], bound) == makespan(p, np.array(perm))


@pytest.mark.parametrize("bound", BOUNDS)
def test_child_bound_is_at_least_parent_bound(bound):
    for p, sigma1, sigma2, free in random_subproblems(3):
        parent = lower_bound(p, sigma1, sigma2, bound)
        for j in free:
            assert lower_bound(p, sigma1 + [j], sigma2, bound) >= parent
            assert lower_bound(p, sigma1, [j] + sigma2, bound) >= parent


def test_lb2_dominates_lb1():
    for p, sigma1, sigma2, _ in random_subproblems(4):
        assert lower_bound(p, sigma1, sigma2, "lb2") >= lower_bound(p, sigma1, sigma2, "lb1")


def test_incremental_children_equal_bounds_from_scratch():
    for p, sigma1, sigma2, free in random_subproblems(5, count=60):
        front, remain, back = subproblem_vectors(p, sigma1, sigma2)
        for j in free:
            forward = lb1_forward_child_body(front, remain + back, p, j)
            backward = lb1_backward_child_body(back, front + remain, p, j)
            assert forward == lower_bound(p, sigma1 + [j], sigma2, "lb1")
            assert backward == lower_bound(p, sigma1, [j] + sigma2, "lb1")


def test_lb2_is_exact_on_two_machines():
    """With m = 2 the Johnson bound at the root is the optimum (Johnson 1954)."""
    rng = np.random.default_rng(6)
    for _ in range(20):
        n = int(rng.integers(1, 7))
        p = rng.integers(1, 40, size=(n, 2)).astype(np.int32)
        optimum = min(makespan(p, np.array(perm)) for perm in itertools.permutations(range(n)))
        assert lower_bound(p, [], [], "lb2") == optimum


@pytest.mark.skipif(not (DATA / "taillard" / "bounds_sources.csv").exists(), reason="../shared/data not present")
def test_root_bounds_of_all_taillard_instances_match_reference():
    """Root LB1 / LB2 equal the values computed independently for ../shared/data/taillard."""
    with open(DATA / "taillard" / "bounds_sources.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 120
    for row in rows:
        p = taillard_instance(int(row["instance"][2:])).p
        assert lower_bound(p, [], [], "lb1") == int(row["root_lb1_computed"]), row["instance"]
        assert lower_bound(p, [], [], "lb2") == int(row["root_lb2_computed"]), row["instance"]
