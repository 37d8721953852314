"""A third family plugs into the workflow without touching it: a toy family, defined here, whose
work is integer ranges and whose search is an exhaustive minimum of a function on them, runs
through the coordinator's ledger, explorer tasks and a side-heuristic task on a Dask cluster.
Its node count must equal the size of the space: nothing explored twice, nothing lost."""

import math
import sys
import time
import types

import numpy as np
import pytest
from distributed import Client, LocalCluster

from pbbflow.workflow import family as family_module
from pbbflow.workflow.coordinator import Coordinator
from pbbflow.workflow.family import family, work_space
from pbbflow.workflow.tasks import explorer_task, heuristic_task

SIZE = 200_000


def value(k: np.ndarray) -> np.ndarray:
    """The toy objective on integers: a scrambled parabola with its minimum somewhere inside."""
    return (k * 7919 % 100_003 - 61_234) ** 2 + k % 13


class Ranges:
    """Disjoint half-open integer ranges, as a (k, 2) int64 array (the toy WorkSet)."""

    def __init__(self, bounds: np.ndarray, space: "RangeSpace") -> None:
        self.bounds, self.space = np.asarray(bounds, dtype=np.int64).reshape(-1, 2), space

    def __len__(self) -> int:
        return len(self.bounds)

    def to_bytes(self) -> bytes:
        return self.bounds.astype("<i8").tobytes()

    def weight(self) -> float:
        return float((self.bounds[:, 1] - self.bounds[:, 0]).sum())

    def split_half(self):
        return Ranges(self.bounds[0::2], self.space), Ranges(self.bounds[1::2], self.space)

    def split_piece(self, min_split: int):
        if not len(self):
            return None
        i = int(np.argmax(self.bounds[:, 1] - self.bounds[:, 0]))
        a, b = self.bounds[i]
        if b - a < max(2, min_split):
            return None
        kept = self.bounds.copy()
        kept[i, 1] = (a + b) // 2
        return Ranges(kept, self.space), Ranges([[(a + b) // 2, b]], self.space)

    def pieces(self):
        return [Ranges(row, self.space) for row in self.bounds]

    def accept(self, reported: "Ranges") -> "Ranges":
        return reported


class RangeSpace:
    kind = "toy"

    def __init__(self, size: int) -> None:
        self.size = size

    def params(self) -> dict:
        return {"size": self.size}

    def empty(self) -> Ranges:
        return Ranges(np.zeros((0, 2)), self)

    def decode(self, data: bytes) -> Ranges:
        bounds = np.frombuffer(data, dtype="<i8").reshape(-1, 2)
        if np.any(bounds[:, 0] >= bounds[:, 1]) or np.any(bounds < 0) or np.any(bounds > self.size):
            raise ValueError("toy: malformed ranges")
        return Ranges(bounds, self)

    def union(self, sets) -> Ranges:
        parts = [s.bounds for s in sets]
        return Ranges(np.concatenate(parts) if parts else np.zeros((0, 2)), self)

    def remaining_fraction(self, sets) -> float:
        return sum(s.weight() for s in sets) / self.size

    def remaining_log10(self, sets) -> float | None:
        left = self.remaining_fraction(sets)
        return math.log10(left) if left else None


class ScanEngine:
    """Scans its ranges in chunks of 1,000 integers; a node is one integer evaluated."""

    capacity = 1

    def __init__(self) -> None:
        self.space, self.left = RangeSpace(SIZE), np.zeros((0, 2), dtype=np.int64)

    def load(self, data: bytes) -> None:
        self.left = self.space.decode(data).bounds.copy()

    def run(self, ub, seconds: float, report, waiting):
        nodes, best, ends = 0, None, time.monotonic() + seconds
        while len(self.left) and time.monotonic() < ends:
            a, b = self.left[0]
            stop = min(b, a + 1000)
            values = value(np.arange(a, stop))
            nodes += stop - a
            i = int(np.argmin(values))
            if values[i] < ub and (best is None or values[i] < best[0]):
                best = (int(values[i]), int(a + i))
            self.left = self.left[1:] if stop == b else np.vstack([[stop, b], self.left[1:]])
        return int(nodes), 0, best

    def remaining(self) -> bytes:
        return Ranges(self.left, self.space).to_bytes()

    def extras(self) -> dict:
        return {}


def side_heuristic(options: dict, seed: int, improved, stopping) -> dict:
    rng, best, tries = np.random.default_rng(seed), math.inf, 0
    while not stopping():
        k = rng.integers(0, options["size"], 256)
        values = value(k)
        tries += 256
        if values.min() < best:
            best = int(values.min())
            improved(best, int(k[np.argmin(values)]))
    return {"tries": tries}


@pytest.fixture
def toy_family(monkeypatch):
    module = types.ModuleType("pbbflow_toy_family")
    module.Space = RangeSpace
    module.make_engine = lambda options, *, gpu, threads: ScanEngine()
    module.side_heuristic = side_heuristic
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(family_module.FAMILIES, "toy", module.__name__)
    return module


def test_an_unknown_kind_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"unknown run kind 'toy' \(known: flowshop, spatial\)"):
        family("toy")


def test_a_third_family_runs_on_the_workflow_with_exact_counts(toy_family):
    space = work_space("toy", {"size": SIZE})
    whole = space.decode(np.array([[0, SIZE]], dtype="<i8").tobytes())
    with LocalCluster(n_workers=3, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:  # fmt: skip
        client.register_plugin(Coordinator())
        client.sync(client.scheduler.pbbflow_open, run="t", kind="toy", space=space.params(),
                    work=whole.to_bytes(), ub=math.inf, pieces=2)  # fmt: skip
        workers = list(client.scheduler_info()["workers"])
        futures = [client.submit(explorer_task, "t", f"e{i}", "toy", {}, 0.02, workers=[workers[i]], pure=False)
                   for i in range(2)]  # fmt: skip
        futures.append(client.submit(heuristic_task, "t", "toy", {"size": SIZE}, 1, workers=[workers[2]], pure=False))
        deadline = time.monotonic() + 60
        while not (state := client.sync(client.scheduler.pbbflow_state, run="t"))["finished"]:
            assert time.monotonic() < deadline, state
            time.sleep(0.02)
        client.sync(client.scheduler.pbbflow_stop, run="t")
        results = client.gather(futures)
    assert all("error" not in r for r in results), results
    everything = value(np.arange(SIZE))
    assert state["nodes"] == SIZE  # every integer once: nothing lost, nothing twice
    assert state["ub"] == everything.min() and value(np.array([state["solution"]]))[0] == everything.min()
    assert state["remaining_fraction"] == 0.0
