"""The flow-shop family's side of the workflow (``core.family``): its run instance, its work
space, its explorer engines and its side heuristic.

A run's instance (:class:`FlowShopRun`) is the processing times ``p`` and the options of
``run_options`` (bound, branching rule, initial schedule, bounds); in the run store its work is
intervals of [0, n!) as factoradic digit arrays (``starts``, ``ends``, ``end_is_total``) and its
incumbent a ``permutation`` with its makespan.

An engine explores a work unit held in its process between checkpoints: on a worker with the
resource ``GPU`` a ``GpuExplorer`` (K IVMs kept on the device, improvements sent up as soon as a
launch finds them), elsewhere the threaded CPU explorer with a thread per worker thread.  The
side heuristic is iterated greedy, beside the search until the run stops.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..core.result import Result
from ..gpu import default_ivms
from .choices import GPU_BOUND
from .describe import history_text, result_fields, result_lines  # noqa: F401 (the family describes its results)
from .estimate import Prober
from .evaluation import makespan, neh
from .explorer import explore
from .instance import FlowShop
from .intervals import WorkUnit
from .iterated_greedy import iterated_greedy
from .packed import PackedUnit, PermutationSpace
from .run_options import check_options, run_options
from .solve import classify, flowshop_result

if TYPE_CHECKING:
    from ..storage.runstore import RunStore
    from ..viz.dashboard import View

Space = PermutationSpace
CHUNK_SECONDS = 0.02  # explorer threads share the GIL with the worker's own threads: visit Python less
PROGRESS_SECONDS = 0.2  # how often the CPU explorer looks whether others wait, and then checkpoints early


def make_engine(options: dict, *, gpu: bool, threads: int) -> CpuEngine | GpuEngine:
    """The engine for a worker: ``options`` are the run's (``p``, ``bound``, ``branch``, ``ivms``)."""
    p, bound, branch = options["p"], options["bound"], options["branch"]
    return GpuEngine(p, bound, branch, options["ivms"]) if gpu else CpuEngine(p, bound, branch, threads)


class CpuEngine:
    """The threaded IVM explorer on a work unit held in this process (its improvements go up
    with the checkpoint that ends each run, at most a budget later, so ``report`` is unused)."""

    def __init__(self, p: np.ndarray, bound: str, branch: str, threads: int) -> None:
        self.p, self.bound, self.branch, self.capacity = p, bound, branch, threads
        self.unit = WorkUnit.empty(p.shape[0])

    def load(self, data: bytes) -> None:
        self.unit = WorkUnit.from_bytes(self.p.shape[0], data)

    def run(
        self, ub: int, seconds: float, report, waiting, max_nodes: int | None = None
    ) -> tuple[int, int, tuple[int, list[int]] | None]:
        result = explore(
            self.p,
            self.unit,
            ub,
            bound=self.bound,
            branch=self.branch,
            threads=self.capacity,
            max_seconds=seconds,
            max_nodes=max_nodes,
            chunk_seconds=CHUNK_SECONDS,
            progress_every=PROGRESS_SECONDS,
            on_progress=lambda snapshot: waiting(),
        )
        self.unit = result.remaining
        best = None
        if result.best_makespan is not None:
            best = (result.best_makespan, [int(j) for j in result.best_permutation])
        return result.nodes, result.leaves, best

    def remaining(self) -> bytes:
        return self.unit.to_bytes()

    def extras(self) -> dict:
        return {}


class GpuEngine:
    """A ``GpuExplorer`` whose IVMs stay on the device from one checkpoint to the next."""

    def __init__(self, p: np.ndarray, bound: str, branch: str, ivms: int) -> None:
        from ..gpu.flowshop.explorer import GpuExplorer  # only GPU workers import numba-cuda's runtime

        self.n = p.shape[0]
        self.gpu = GpuExplorer(p, ivms=ivms, bound=bound, branch=branch)
        self.capacity = ivms

    def load(self, data: bytes) -> None:
        self.gpu.load(PackedUnit.from_bytes(self.n, data))

    def run(
        self, ub: int, seconds: float, report, waiting, max_nodes: int | None = None
    ) -> tuple[int, int, tuple[int, list[int]] | None]:
        sent = ub

        def on_launch(nodes: int, leaves: int, current: int) -> bool:
            nonlocal sent
            if current < sent:  # a better schedule: up to the coordinator at once
                makespan, permutation = self.gpu.best()
                report(makespan, [int(j) for j in permutation])
                sent = makespan
            return waiting()  # others idle: checkpoint now, so that they get half of ours

        counts = self.gpu.run(ub, max_seconds=seconds, max_nodes=max_nodes, on_launch=on_launch)
        best = self.gpu.best()
        return counts.nodes, counts.leaves, None if best is None else (best[0], [int(j) for j in best[1]])

    def remaining(self) -> bytes:
        return self.gpu.remaining().to_bytes()

    def extras(self) -> dict:
        return {}


def side_heuristic(
    options: dict, seed: int, improved: Callable[[int, list[int]], None], stopping: Callable[[], bool]
) -> dict:
    """Iterated greedy on the run's instance until ``stopping()``; every improvement goes to ``improved``."""

    def on_improvement(makespan: int, permutation: np.ndarray) -> None:
        improved(makespan, [int(j) for j in permutation])

    result = iterated_greedy(
        options["p"], seconds=math.inf, seed=seed, on_improvement=on_improvement, should_stop=stopping
    )
    return {"makespan": result.makespan, "iterations": result.iterations}


def plot_run(store: RunStore, out: Path) -> list[Path]:
    """Write the run's pictures into ``out``: ``gantt.png`` of its schedule, ``history.png``
    (``flowshop.plots``: matplotlib loads only here)."""
    from . import plots

    return plots.plot_run(store, out)


def dashboard_view() -> type[View]:
    """Its runs' view on the dashboard page (``flowshop.dashboard``: Bokeh loads only here)."""
    from .dashboard import FlowShopView

    return FlowShopView


def no_gpu(bound: str) -> str | None:
    """Why a run with ``bound`` cannot use GPUs, if it cannot."""
    return None if bound == GPU_BOUND else f"the GPU explorer bounds with {GPU_BOUND} only (this run uses {bound})"


def initial_seconds(n: int, m: int) -> float:
    """Iterated greedy's time before a search: a tenth of the literature's n m / 2 x 30 ms, at most 30 s."""
    return min(30.0, n * m / 2 * 0.003)


def first_schedule(
    instance: FlowShop, initial: str, should_stop: Callable[[], bool] | None = None
) -> tuple[int, np.ndarray]:
    """(makespan, permutation) of a run's first schedule: ``"neh"`` (NEH's) or ``"ig"`` (iterated
    greedy from NEH for :func:`initial_seconds`, or until ``should_stop`` returns True)."""
    if initial == "ig":
        first = iterated_greedy(instance.p, seconds=initial_seconds(instance.n, instance.m), should_stop=should_stop)
        return first.makespan, first.permutation
    if initial == "neh":
        return neh(instance.p)
    raise ValueError(f"initial must be 'neh' or 'ig', not {initial!r}")


def create_flowshop_run(
    path,
    instance: FlowShop,
    *,
    ub: int | None,
    bound: str,
    branch: str,
    initial: str = "neh",
    first: tuple[int, np.ndarray] | None = None,
    overwrite: bool = False,
):
    """A new run store of ``instance`` (``workflow.run.create_run``) whose first checkpoint is all of
    [0, n!) and the first schedule ``first`` (made by ``initial`` when not given); it searches for
    schedules better than that, or than ``ub``."""
    from ..workflow.run import create_run

    first = first if first is not None else first_schedule(instance, initial)
    run = FlowShopRun.new(instance, ub=ub, bound=bound, branch=branch, initial=initial, first=first)
    return create_run(
        path, run, work=run.whole(), incumbent=int(first[0]), solution=[int(j) for j in first[1]], overwrite=overwrite
    )


class FlowShopRun:
    """A flow-shop run's instance and options (``core.family.RunInstance``)."""

    kind = "flowshop"
    work_arrays = ("starts", "ends", "end_is_total")
    solution_array = "permutation"
    side_heuristics_per_gpu = 1  # iterated greedy beside each GPU (benchmarks/heuristic_effect.py)

    def __init__(self, name: str, p: np.ndarray, options: dict) -> None:
        """ValueError for an invalid ``p`` or options (see ``run_options.check_options``)."""
        p = np.array(p, dtype=np.int32, order="C", copy=True)
        if p.ndim != 2 or min(p.shape) < 1 or p.min() < 0:
            raise ValueError(f"p must be (jobs, machines) times >= 0, got shape {p.shape}")
        if not isinstance(name, str) or not name:
            raise ValueError(f"the instance name must be a non-empty string, not {name!r}")
        check_options(options, p)
        p.flags.writeable = False
        self.name, self.p, self.options = name, p, options
        self._prober: Prober | None = None  # made at the first estimate (``estimate_left``)

    @classmethod
    def new(
        cls, instance: FlowShop, *, ub: int | None, bound: str, branch: str, initial: str, first: tuple[int, np.ndarray]
    ) -> FlowShopRun:
        """A new run of ``instance`` from its first schedule ``first`` (made by ``initial``)."""
        options = run_options(
            instance.p, bound=bound, branch=branch, user_ub=ub, initial=initial, initial_makespan=int(first[0])
        )
        return cls(instance.name, instance.p, options)

    @classmethod
    def from_store(cls, name: str, arrays: dict[str, np.ndarray], options) -> FlowShopRun:
        p = arrays.get("p")
        if p is None or set(arrays) != {"p"} or p.dtype != np.int32:
            raise ValueError("the instance must be one int32 array p")
        return cls(name, p, options)

    @property
    def n(self) -> int:
        """Jobs."""
        return self.p.shape[0]

    def arrays(self) -> dict[str, np.ndarray]:
        return {"p": self.p}

    def space(self) -> PermutationSpace:
        return PermutationSpace(self.n)

    def whole(self) -> WorkUnit:
        """All of [0, n!): a new run's work."""
        return WorkUnit.full(self.n)

    def encode_work(self, work: WorkUnit) -> dict[str, np.ndarray]:
        if not isinstance(work, WorkUnit) or work.n != self.n:
            raise ValueError(f"remaining must be a WorkUnit over n={self.n}")
        starts, ends, end_is_total = work.to_digit_arrays()
        return {"starts": starts.astype(np.int16), "ends": ends.astype(np.int16), "end_is_total": end_is_total}

    def decode_work(self, arrays: dict[str, np.ndarray] | None = None, data: bytes | None = None) -> WorkUnit:
        if data is not None:
            return WorkUnit.from_bytes(self.n, data)
        return WorkUnit.from_digit_arrays(self.n, arrays["starts"], arrays["ends"], arrays["end_is_total"])

    def encode_solution(self, solution) -> np.ndarray:
        perm = np.zeros(0, np.int32) if solution is None else np.array(list(solution), np.int32)
        if solution is not None and sorted(perm.tolist()) != list(range(self.n)):
            raise ValueError(f"permutation must be a permutation of range({self.n})")
        return perm

    def decode_solution(self, array: np.ndarray) -> tuple[int, ...] | None:
        return tuple(array.tolist()) if array.size else None

    def incumbent_problem(self, value, solution) -> str | None:
        if solution is None:
            return None if value is None else "it has no permutation"
        try:
            actual = makespan(self.p, np.asarray(solution, dtype=np.int32))
        except ValueError as e:
            return str(e)
        return None if type(value) is int and value == actual else f"its permutation's makespan is {actual}"

    def search_ub(self) -> int:
        return self.options["search_ub"]

    def engine_options(self, *, ivms: int | None = None, **_settings) -> dict:
        ivms = default_ivms(self.p.shape[0]) if ivms is None else ivms
        return {"p": self.p, "bound": self.options["bound"], "branch": self.options["branch"], "ivms": ivms}

    def result(self, remaining: WorkUnit, incumbent, solution, settled, nodes, leaves, elapsed_s) -> Result:
        status, proved = classify(not remaining, incumbent, self.options["search_ub"], self.options["root_lower_bound"])
        return flowshop_result(
            self.name,
            self.n,
            int(self.p.shape[1]),
            status,
            incumbent,
            solution,
            proved,
            nodes,
            leaves,
            elapsed_s,
            remaining,
        )

    def estimate_left(
        self, work: WorkUnit, ub: int, seconds: float, threads: int = 1
    ) -> tuple[float, float, float] | None:
        """Sampled enumerations of the explorers' tree in ``work`` under ``ub`` (``flowshop.estimate``),
        for about ``seconds`` on ``threads`` threads: the nodes left and the range of that estimate;
        None while a first run's estimate code is still being compiled apart
        (``warmup.compile_eta_apart``)."""
        from .warmup import eta_code_ready

        if not eta_code_ready():
            return None
        if self._prober is None or self._prober.threads != threads:
            if self._prober is not None:
                self._prober.close()  # its threads, not left to the collector
            self._prober = Prober(self.p, bound=self.options["bound"], branch=self.options["branch"], threads=threads)
        estimate = self._prober.estimate(work, int(ub), seconds=seconds)
        return estimate.nodes, estimate.low, estimate.high

    def client_code(self):
        from .warmup import warm_client

        return warm_client(self.p, self.options["bound"], initial=None)

    def first_run_code(self, explorers: str | None = "cpu"):
        from .warmup import FIRST_RUN, code_cached

        return None if code_cached(None, explorers, self.p.shape) else FIRST_RUN

    def worker_code(self):
        from .warmup import warm_worker

        return warm_worker, (self.p, self.options["bound"], self.options["branch"])

    def no_gpu(self) -> str | None:
        return no_gpu(self.options["bound"])


Instance = FlowShopRun
