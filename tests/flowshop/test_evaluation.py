"""Tests for pbbflow.flowshop.evaluation: makespan, NEH and the brute-force oracle."""

import itertools
from pathlib import Path

import numpy as np
import pytest

from pbbflow.flowshop.evaluation import brute_force_optimum, makespan, neh

TAILLARD_DIR = Path(__file__).resolve().parents[3] / "shared" / "data" / "taillard"


def ref_makespan(p, perm):
    """Plain-Python double loop over the completion-time recurrence."""
    m = len(p[0])
    c = [0] * m
    for j in perm:
        for k in range(m):
            c[k] = max(c[k], c[k - 1] if k else 0) + int(p[j][k])
    return c[-1]


def naive_neh(p):
    """NEH with full re-evaluation of every insertion position, earliest best kept."""
    order = sorted(range(len(p)), key=lambda j: -int(sum(p[j])))  # sorted() is stable
    seq = [order[0]]
    for j in order[1:]:
        cands = [seq[:r] + [j] + seq[r:] for r in range(len(seq) + 1)]
        seq = min(cands, key=lambda s: ref_makespan(p, s))  # min() keeps the first minimum
    return ref_makespan(p, seq), seq


def random_instance(rng, n, m, hi=100):
    return rng.integers(1, hi, size=(n, m), dtype=np.int32)


def test_makespan_hand_example():
    p = np.array([[3, 2], [1, 4], [2, 1]], dtype=np.int32)
    # perm (1, 0, 2):
    #   job 1: C = [1, 1+4=5]
    #   job 0: C = [1+3=4, max(5,4)+2=7]
    #   job 2: C = [4+2=6, max(7,6)+1=8]  -> 8
    assert makespan(p, np.array([1, 0, 2])) == 8
    # perm (0, 1, 2): [3,5] -> [4, max(5,4)+4=9] -> [6, max(9,6)+1=10] -> 10
    assert makespan(p, np.array([0, 1, 2])) == 10


def test_makespan_single_job_and_single_machine():
    row = np.array([[4, 7, 1, 9]], dtype=np.int32)
    assert makespan(row, np.array([0])) == 21  # one job: sum over machines
    col = np.array([[4], [7], [1], [9]], dtype=np.int32)
    assert makespan(col, np.array([2, 0, 3, 1])) == 21  # one machine: sum over jobs


@pytest.mark.parametrize(
    "perm",
    [[0, 1], [0, 1, 1], [0, 1, 3], [-1, 0, 1], [[0, 1, 2]], [0.0, 1.0, 2.0], [0, 1, 2, 3]],
)
def test_makespan_rejects_invalid_perm(perm):
    p = np.ones((3, 2), dtype=np.int32)
    with pytest.raises(ValueError):
        makespan(p, np.array(perm))


def test_makespan_matches_reference():
    rng = np.random.default_rng(1)
    for _ in range(200):
        n, m = rng.integers(1, 25), rng.integers(1, 12)
        p = random_instance(rng, n, m)
        perm = rng.permutation(n)
        assert makespan(p, perm) == ref_makespan(p.tolist(), perm.tolist())


def test_neh_matches_naive_neh():
    rng = np.random.default_rng(2)
    for trial in range(150):
        n, m = rng.integers(2, 16), rng.integers(1, 9)
        # small ranges every other trial provoke ties in sums and positions
        p = random_instance(rng, n, m, hi=4 if trial % 2 else 100)
        cmax, perm = neh(p)
        ref_cmax, ref_perm = naive_neh(p.tolist())
        assert perm.dtype == np.int32
        assert perm.tolist() == ref_perm
        assert cmax == ref_cmax == makespan(p, perm)


def test_neh_single_job():
    p = np.array([[5, 6, 7]], dtype=np.int32)
    cmax, perm = neh(p)
    assert (cmax, perm.tolist()) == (18, [0])


def test_neh_ta001():
    path = TAILLARD_DIR / "ta001.txt"
    if not path.exists():
        pytest.skip(f"{path} not found")
    lines = path.read_text().split("\n")
    n, m = map(int, lines[0].split())
    p = np.array([list(map(int, line.split())) for line in lines[1 : n + 1]], dtype=np.int32)
    assert p.shape == (n, m) == (20, 5)
    cmax, perm = neh(p)
    assert cmax >= 1278  # proven optimum
    assert cmax == makespan(p, perm)
    assert cmax == 1286  # published NEH value (stable decreasing-sum order, earliest position)


def test_brute_force_matches_itertools():
    rng = np.random.default_rng(3)
    for trial in range(40):
        n, m = rng.integers(1, 7), rng.integers(1, 6)
        p = random_instance(rng, n, m, hi=5 if trial % 2 else 50)
        pl = p.tolist()
        cmax, perm = brute_force_optimum(p)
        ref = min(itertools.permutations(range(n)), key=lambda s: ref_makespan(pl, s))
        assert cmax == ref_makespan(pl, ref)
        assert perm.tolist() == list(ref)  # both give the lexicographically first optimum
        assert makespan(p, perm) == cmax


def test_brute_force_bounds_neh():
    rng = np.random.default_rng(4)
    p = random_instance(rng, 8, 4)
    assert brute_force_optimum(p)[0] <= neh(p)[0]


def test_brute_force_refuses_large_n():
    with pytest.raises(ValueError):
        brute_force_optimum(np.ones((12, 3), dtype=np.int32))
