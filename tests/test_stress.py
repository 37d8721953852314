"""Stop-and-resume stress on the CPU explorer: explorations cut at random points, by every
way an exploration stops (node and time budgets, the progress callback asking to stop as a
Dask explorer does when others wait, a KeyboardInterrupt as a signal raises it), with 1-4
threads stealing from each other in tiny chunks, resumed until nothing is left.

Oracles: every remainder is a valid part of the unit given and the pieces partition [0, n!)
(``stress.explore_in_pieces``); with a UB that no schedule beats, the tree is fixed, so the
summed node and leaf counts equal one uninterrupted run's; from above, the optimum is found.
"""

import random
import threading

import numpy as np
import pytest
from stress import explore_in_pieces, gpu_in_pieces

from pbbflow.flowshop.evaluation import brute_force_optimum, neh
from pbbflow.flowshop.explorer import explore
from pbbflow.flowshop.intervals import WorkUnit
from pbbflow.flowshop.taillard import taillard_instance

# optima from ../shared/data/taillard/bounds.csv
TAILLARD = {11: 1582, 12: 1659, 13: 1496, 30: 2178, 41: 2991}


def random_instance(seed: int, max_nodes: int = 200_000) -> tuple[np.ndarray, int]:
    """A random instance of 6-50 jobs whose search from NEH takes at most ``max_nodes`` nodes,
    and its optimum (that search, uninterrupted)."""
    rng = np.random.default_rng(seed)
    while True:
        n, m = int(rng.integers(6, 51)), int(rng.integers(3, 16))
        p = rng.integers(1, 100, size=(n, m)).astype(np.int32)
        ub = neh(p)[0]
        result = explore(p, WorkUnit.full(n), ub, max_nodes=max_nodes)
        if not result.remaining:
            return p, result.best_makespan or ub


def fixed_tree_case(p: np.ndarray, ub: int, seed: int) -> None:
    whole = explore(p, WorkUnit.full(p.shape[0]), ub)
    assert whole.best_makespan is None  # nothing beats ub: the tree is fixed
    pieces = explore_in_pieces(p, ub, random.Random(seed))
    assert (pieces.nodes, pieces.leaves) == (whole.nodes, whole.leaves), f"seed {seed}, {pieces.calls} calls"
    assert pieces.best is None


@pytest.mark.parametrize(("number", "seed"), [(11, 0), (11, 1), (12, 2), (12, 3), (13, 4), (13, 5)])
def test_20_jobs_at_the_optimum_in_pieces(number, seed):
    fixed_tree_case(taillard_instance(number).p, TAILLARD[number], seed)


@pytest.mark.parametrize("seed", range(10))
def test_ta041_at_the_optimum_in_pieces(seed):
    fixed_tree_case(taillard_instance(41).p, TAILLARD[41], seed)


@pytest.mark.parametrize(("above", "seed"), [(1, 0), (1, 1), (5, 2), (30, 3)])
def test_ta041_from_above_in_pieces(above, seed):
    pieces = explore_in_pieces(taillard_instance(41).p, TAILLARD[41] + above, random.Random(seed))
    assert pieces.best == TAILLARD[41]


@pytest.mark.parametrize("seed", range(12))
def test_small_random_instances_at_the_optimum_in_pieces(seed):
    """Small trees, where the root's first child often survives (a stop at position 0 matters)."""
    rng = np.random.default_rng(100 + seed)
    p, optimum = small_instance(100 + seed, int(rng.integers(6, 10)), int(rng.integers(3, 7)))
    fixed_tree_case(p, optimum, seed)


@pytest.mark.parametrize("seed", range(16))
def test_random_instances_in_pieces(seed):
    p, optimum = random_instance(seed)
    fixed_tree_case(p, optimum, seed)
    pieces = explore_in_pieces(p, optimum + 1 + seed % 5, random.Random(seed + 1))
    assert pieces.best == optimum


def small_instance(seed: int, n: int, m: int) -> tuple[np.ndarray, int]:
    p = np.random.default_rng(seed).integers(1, 30, size=(n, m)).astype(np.int32)
    return p, brute_force_optimum(p)[0]


@pytest.mark.gpu
@pytest.mark.parametrize(("seed", "n", "m"), [(3, 7, 4), (21, 6, 5), (10, 7, 5)])
def test_gpu_explorer_at_the_optimum_in_pieces(seed, n, m):
    """Under the simulator in CI: ~50 nodes/s, so trees of about 100 nodes."""
    p, optimum = small_instance(seed, n, m)
    whole = explore(p, WorkUnit.full(n), optimum)
    pieces = gpu_in_pieces(p, optimum, random.Random(seed))
    assert (pieces.nodes, pieces.leaves) == (whole.nodes, whole.leaves) and pieces.best is None


@pytest.mark.gpu
def test_gpu_explorer_from_above_in_pieces():
    p, optimum = small_instance(7, 6, 4)
    pieces = gpu_in_pieces(p, optimum + 3, random.Random(7))
    assert pieces.best == optimum


def test_workflow_checkpoints_in_pieces(tmp_path):
    """The workflow's checkpoint path: sessions on 1-3 in-process workers, each stopped by a node
    limit, a time limit or a stop event (a signal), with checkpoints every 50 ms and explorer
    budgets of 5-50 ms; every committed remainder lies inside the one before it."""
    from distributed import Client, LocalCluster

    from pbbflow.flowshop.family import create_flowshop_run
    from pbbflow.storage.runstore import RunStore
    from pbbflow.workflow.run import drive

    instance = taillard_instance(30)  # 2.8 M nodes, 3 s on one core
    whole = explore(instance.p, WorkUnit.full(20), TAILLARD[30], threads=2)
    rng = random.Random(30)
    path = tmp_path / "run.zarr"
    store = create_flowshop_run(path, instance, ub=TAILLARD[30], bound="lb1", branch="minmin")
    before = store.latest().remaining
    sessions = 0
    while before:
        workers = rng.randint(1, 3)
        stop = threading.Event()
        kind = rng.choice(("nodes", "seconds", "signal"))
        limits = {
            "nodes": {"node_limit": store.latest().nodes + rng.randint(1, 200_000)},
            "seconds": {"time_limit": rng.uniform(0.05, 0.5)},
            "signal": {"stop": stop},
        }[kind]
        timer = threading.Timer(rng.uniform(0.05, 0.5), stop.set)
        timer.start()
        with (
            LocalCluster(n_workers=workers, threads_per_worker=1, processes=False, dashboard_address=None) as c,
            Client(c) as client,
        ):
            result = drive(
                RunStore.open(path), client, checkpoint_every=0.05, budget_s=rng.uniform(0.005, 0.05), **limits
            )
        timer.cancel()
        after = RunStore.open(path).latest().remaining
        assert after.difference(before).is_empty()
        before = after
        sessions += 1
    assert result["status"] == "bound_proved" and result["nodes"] == whole.nodes and sessions > 1
