"""Subtree roots, capped counts, subtree probes and depth-first cuts (``flowshop.calibrate``).

On small random instances with UB = optimum + 1 (a tree of some size): the roots of a work unit's
maximal subtrees, counted exactly, plus its partial nodes make the exact count of the work; a
count stops past its cap; the probes of one subtree average to its size; a cut after K nodes
leaves the complement of about K nodes.
"""

import numpy as np

from pbbflow.flowshop.calibrate import Calibrator
from pbbflow.flowshop.estimate import Prober
from pbbflow.flowshop.evaluation import brute_force_optimum
from pbbflow.flowshop.factoradic import factorial
from pbbflow.flowshop.intervals import WorkUnit


def instances(seed: int, count: int):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(rng.integers(4, 8))
        p = rng.integers(1, 40, size=(n, int(rng.integers(2, 5)))).astype(np.int32)
        yield p, int(brute_force_optimum(p)[0]) + 1, rng


def test_roots_partition_the_work():
    for p, ub, rng in instances(1, 12):
        n = p.shape[0]
        prober, cal = Prober(p), Calibrator(p)
        cuts = sorted(int(x) for x in rng.integers(0, int(factorial(n)), 4))
        works = [WorkUnit.full(n), WorkUnit(n, [(cuts[0], cuts[1]), (cuts[2], cuts[3])])]
        for work in works + [WorkUnit.full(n).difference(w) for w in works]:
            roots = cal.roots(work, ub)
            sizes = [cal.count(roots.prefixes[i], roots.depths[i], ub) for i in range(len(roots))]
            assert sum(sizes) + int(roots.partial.sum()) == prober.exact(work, ub)


def test_count_cap_and_probe_mean():
    for p, ub, _ in instances(2, 6):
        n = p.shape[0]
        cal = Calibrator(p)
        root = np.zeros(n, np.int32)
        size = cal.count(root, 0, ub)
        assert size == Prober(p).exact(WorkUnit.full(n), ub)
        assert cal.count(root, 0, ub, cap=size) == size
        if size > 1:
            assert cal.count(root, 0, ub, cap=size - 1) == -1
        values, by_depth = cal.probes(root, 0, ub, 20_000, seed=3)
        assert abs(values.mean() - size) <= 5 * values.std() / np.sqrt(values.size) + 1e-9
        assert np.isclose(by_depth.sum(), values.mean())


def test_cut_leaves_the_rest():
    for p, ub, _ in instances(3, 8):
        n = p.shape[0]
        prober, cal = Prober(p), Calibrator(p)
        total = prober.exact(WorkUnit.full(n), ub)
        for nodes in (1, total // 3, total // 2, total):
            left = cal.cut(nodes, ub)
            done = prober.exact(WorkUnit.full(n).difference(left), ub)
            assert done + prober.exact(left, ub) == total
            assert nodes - n <= done <= nodes
