"""benchmarks/eta_wbe.py's walk: over the whole tree the weighted backtrack estimator is exact."""

import sys
from pathlib import Path

import numpy as np
import pytest

from pbbflow.flowshop.estimate import Prober
from pbbflow.flowshop.evaluation import neh
from pbbflow.flowshop.intervals import WorkUnit

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))  # an importable module: numba caches its code

import eta_wbe as wbe  # noqa: E402


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("strata", [0, 1])
def test_a_whole_walk_counts_every_node_and_its_dead_ends_hold_all_the_probability(seed, strata):
    rng = np.random.default_rng(seed)
    p = rng.integers(1, 30, size=(7, 3)).astype(np.int32)
    p.flags.writeable = False
    ub = int(neh(p)[0]) + int(rng.integers(0, 8))  # at and above the best known: a tree with pruning
    total = Prober(p).exact(WorkUnit.full(7), ub)
    for alpha in (0.0, 1.0):
        run = wbe.study(p, ub, total, alpha, strata, quantum=7)
        assert run["counted"] == total
        assert run["final_probability"] == pytest.approx(1.0)
        assert run["final_estimate"] == pytest.approx(total, rel=1e-9)
        assert [point["share"] for point in run["points"]] == list(wbe.SHARES)[: len(run["points"])]
