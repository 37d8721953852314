"""Stop-and-resume drivers for the stress tests and the soak benchmark.

``explore_in_pieces`` runs an exploration to its end as a chain of calls, each stopped at a
random point by one of the explorers' ways to stop, and checks every call's books: the
remaining unit is valid and inside the unit the call was given (so the pieces explored,
``given - remaining``, and the final remainder partition [0, n!)).  The caller compares the
summed counts with one uninterrupted run's.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from pbbflow.flowshop.evaluation import makespan
from pbbflow.flowshop.explorer import explore
from pbbflow.flowshop.factoradic import factorial
from pbbflow.flowshop.intervals import WorkUnit

STOPS = ("nodes", "seconds", "instant", "progress", "interrupt")


@dataclass
class Pieces:
    """The totals of a chain of explorations."""

    nodes: int = 0
    leaves: int = 0
    calls: int = 0
    best: int | None = None  # best makespan found below the first UB
    explored: int = 0  # positions explored, summed over the calls


def check_books(given: WorkUnit, remaining: WorkUnit) -> int:
    """Assert ``remaining`` is a valid part of ``given``; return the size explored."""
    assert remaining.n == given.n
    WorkUnit(remaining.n, remaining.intervals)  # revalidated: in [0, n!), non-empty, ordered
    assert remaining.difference(given).is_empty(), "the remainder grew past the unit given"
    return int(given.size - remaining.size)


def _stopper(kind: str, rng: random.Random):
    """An ``on_progress`` callback that stops (or raises as a signal would) after a few calls."""
    calls = rng.randint(0, 3)

    def on_progress(snapshot) -> bool:
        nonlocal calls
        calls -= 1
        if calls >= 0:
            return False
        if kind == "interrupt":
            raise KeyboardInterrupt  # as SIGINT in the calling thread: explore stops its threads
        return True

    return on_progress


def explore_in_pieces(
    p: np.ndarray, ub: int, rng: random.Random, *, max_threads: int = 4, max_calls: int = 20_000
) -> Pieces:
    """Explore [0, n!) under ``ub`` in randomly stopped calls until nothing is left."""
    n = p.shape[0]
    work = WorkUnit.full(n)
    totals = Pieces()
    current_ub = ub
    while work:
        assert totals.calls < max_calls, "no progress"
        # half the chains stop at once in their first call, where the position 0 (the root's) is
        kind = "instant" if totals.calls == 0 and rng.random() < 0.5 else rng.choice(STOPS)
        options = {"threads": rng.randint(1, max_threads), "chunk_seconds": rng.choice((1e-6, 1e-5, 1e-4))}
        if kind == "nodes":
            options["max_nodes"] = round(10 ** rng.uniform(0, 4.3))  # 1 to 20,000, log-uniform
        elif kind == "seconds":
            options["max_seconds"] = rng.uniform(1e-4, 0.02)
        elif kind == "instant":  # stop at the first look, before any step
            options["max_seconds"] = 0
        else:
            options.update(on_progress=_stopper(kind, rng), progress_every=1e-3, max_nodes=rng.randint(1, 200_000))
        result = explore(p, work, current_ub, **options)
        totals.explored += check_books(work, result.remaining)
        totals.nodes += result.nodes
        totals.leaves += result.leaves
        totals.calls += 1
        if result.best_makespan is not None:
            assert result.best_makespan < current_ub
            assert makespan(p, result.best_permutation) == result.best_makespan
            current_ub = totals.best = result.best_makespan
        work = result.remaining
    assert totals.explored == int(factorial(n))
    return totals


def gpu_in_pieces(p: np.ndarray, ub: int, rng: random.Random, *, max_ivms: int = 5, max_nodes: int = 30) -> Pieces:
    """``explore_in_pieces`` on the GPU explorer: launches of 1-4 steps, stops by node budget, by
    ``on_launch`` (others waiting) or by time, device-side steals between launches, and a resume
    on a fresh explorer (another GPU, another K) half of the time."""
    from pbbflow.gpu.flowshop.explorer import GpuExplorer

    n = p.shape[0]
    work = WorkUnit.full(n)
    totals = Pieces()
    explorer = None
    while work:
        if explorer is None or rng.random() < 0.5:
            explorer = GpuExplorer(p, ivms=rng.randint(len(work), max(len(work), max_ivms)))
            explorer.load(work)
        launches = rng.randint(1, 4)

        def on_launch(nodes: int, leaves: int, current_ub: int) -> bool:
            nonlocal launches
            launches -= 1
            return launches <= 0

        kind = rng.choice(("nodes", "launches", "seconds"))
        budget = {
            "nodes": {"max_nodes": rng.randint(1, max_nodes)},
            "launches": {"on_launch": on_launch},
            "seconds": {"max_seconds": rng.uniform(0, 0.5)},
        }[kind]
        counts = explorer.run(ub, steps=rng.randint(1, 4), **budget)
        left = explorer.remaining().to_work_unit()
        totals.explored += check_books(work, left)
        totals.nodes += counts.nodes
        totals.leaves += counts.leaves
        totals.calls += 1
        best = explorer.best()
        if best is not None:
            assert best[0] < ub and makespan(p, best[1]) == best[0]
            ub = totals.best = best[0]
        work = left
    assert totals.explored == int(factorial(n))
    return totals
