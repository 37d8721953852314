"""The spatial family's side of the workflow (``core.family``): the problem as the run's
instance, open boxes as the work, the resumable exploration as the engine (on the device of a GPU
worker), local solves from random starts as the side heuristic.

A run's instance (:class:`SpatialRun`) is the problem's plain-JSON ``source`` (in the run store:
its UTF-8 bytes as the array ``source``, never code) and the options of :data:`OPTION_KEYS`; a
checkpoint's work is its open boxes as float64 arrays ``lo``, ``hi``, ``lb``, and its incumbent a
point ``x`` with its value.

Work is a set of boxes with their certified lower bounds (:mod:`.work`; a :class:`.boxes.BoxSet`, its wire format
on the wire).  An explorer refines the boxes it was given, so the coordinator accepts of its report
the boxes that lie inside a box of its copy (exactly, ``BoxSet.inside``); what it discarded without splitting to the end (pruned
within the tolerance, cut away, too small to split) goes to the ledger as ``settled``, the lowest
bound of all of it, so that the run's certified lower bound is ``min(settled, every open box's
bound)``.  The work left is measured by volume, as a share of the domain (a side of zero width
counts as 1, as in :meth:`.BoxSet.volume`).

A run's options for engines and heuristics are plain data: ``{"problem": Problem.source,
"run": the run's options}`` (``SpatialRun.engine_options``).  Incumbents travel as ``(value, point as a list)``; the
explorers prune with the coordinator's best value (:meth:`.Exploration.prune_at`).

A threshold question (the option ``prove_above``, C) runs the same way: the explorers prune at C
(:func:`.options.prune_level`); once the coordinator's value is below C (a verified point violates
it), every explorer settles its boxes at its next step and the run ends, ``decided``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..core.files import FileRefused, loads_json
from ..core.result import Result, Status
from .bounds import evaluate_point
from .boxes import BoxSet
from .defaults import CPU_SUBDOMAINS, GPU_SUBDOMAINS
from .describe import history_text, result_fields, result_lines  # noqa: F401 (the family describes its results)
from .explorer import Exploration, bounds_whole_boxes
from .local import _LocalSolver
from .options import MinimizeOptions, _Incumbent, prune_level, subdomains_per_dim
from .problem import Problem, ProblemError
from .result import box_result
from .work import BoxSpace

if TYPE_CHECKING:
    from ..gpu.spatial.bnb import GpuExploration
    from ..storage.runstore import RunStore
    from ..viz.dashboard import View


Space = BoxSpace


def _problem_and_options(options: dict) -> tuple[Problem, MinimizeOptions]:
    """The problem and (CPU) exploration options of a heuristic's ``options`` (``SpatialRun.engine_options``)."""
    return Problem.from_source(options["problem"]), _minimize_options(options["run"], gpu=False)


def make_engine(options: dict, *, gpu: bool, threads: int) -> ExplorationEngine:
    """The engine for a worker: on a GPU worker a ``GpuExploration`` (its open boxes stay on the
    device), unless the problem has more variables than the GPU kernels take; elsewhere, and then, the CPU
    :class:`.Exploration` on the worker's threads."""
    problem = Problem.from_source(options["problem"])
    empty = BoxSet.empty(problem.dimension)
    if gpu:
        from ..gpu.spatial.bnb import GpuExploration  # only GPU workers import numba-cuda's runtime
        from ..gpu.spatial.kernels import TooManyVariables, check_size

        try:
            check_size(problem.tape)
        except TooManyVariables:
            pass
        else:
            return ExplorationEngine(GpuExploration(problem, _minimize_options(options["run"], gpu=True), empty))
    minimize = _minimize_options(options["run"], gpu=False)
    return ExplorationEngine(Exploration(problem, dataclasses.replace(minimize, parallel=threads > 1), empty))


class ExplorationEngine:
    """A resumable exploration (:class:`.Exploration`, or ``GpuExploration`` on a GPU) whose open
    boxes stay in this process, or on its device, between checkpoints."""

    capacity = 1

    def __init__(self, exploration: Exploration | GpuExploration) -> None:
        self.problem = exploration.problem
        self.exploration = exploration
        self.reported = math.inf  # the incumbent value last sent up, or offered by the coordinator

    def offer(self, value: float, solution: list[float]) -> None:
        """The run's incumbent: a point better than any this engine had is verified and, for a
        constrained problem, bounds with the Lagrangian of its multipliers (``Exploration.offer``)."""
        if value < self.reported:
            self.reported = value
            self.exploration.offer(np.asarray(solution, dtype=np.float64))

    def load(self, data: bytes) -> None:
        self.exploration.replace(BoxSet.from_bytes(data, self.problem.dimension))

    def run(
        self, ub: float, seconds: float, report, waiting, max_nodes: int | None = None
    ) -> tuple[int, int, tuple[float, list[float]] | None]:
        self.exploration.prune_at(ub)
        result = self.exploration.run(should_stop=waiting, time_limit=seconds, node_limit=max_nodes)
        self.exploration.settle()  # a report holds no box the run's incumbent prunes
        best = None
        if result.objective is not None and result.objective < self.reported:
            best = (result.objective, result.x)
            self.reported = result.objective
        return result.nodes, 0, best

    def remaining(self) -> bytes:
        return self.exploration.remaining().to_bytes()

    def extras(self) -> dict:
        e = self.exploration
        return {"settled": min(e.settled_lb, e.unsplittable_lb)}


def side_heuristic(
    options: dict, seed: int, improved: Callable[[float, list[float]], None], stopping: Callable[[], bool]
) -> dict:
    """Local solves (SLSQP) from uniform random starts in the domain until ``stopping()``, each
    followed by a pause: they are Python that holds the GIL, which the explorer beside them in the
    worker needs (a GPU's kernel launches wait for it), so they take at most ``HEURISTIC_DUTY`` of
    the time.  Every rigorously verified improvement goes to ``improved(value, point)``."""
    problem, minimize = _problem_and_options(options)
    incumbent = _Incumbent(problem, minimize.feas_tol)
    local = _LocalSolver(problem, incumbent, minimize.eps_abs, minimize.eps_rel)
    rng = np.random.default_rng(seed)
    while not stopping():
        before, began = incumbent.value, time.perf_counter()
        local.run(rng.uniform(problem.lower, problem.upper))
        if incumbent.value < before:
            improved(incumbent.value, incumbent.x.tolist())
        pause = (1 / HEURISTIC_DUTY - 1) * (time.perf_counter() - began)
        while pause > 0 and not stopping():
            time.sleep(min(pause, PAUSE_STEP_S))
            pause -= PAUSE_STEP_S
    return {"objective": None if incumbent.x is None else incumbent.value, "local_solves": local.count}


def plot_run(store: RunStore, out: Path) -> list[Path]:
    """Write the run's pictures into ``out``: ``boxes.png`` of a problem of two variables,
    ``history.png`` (``spatial.plots``: matplotlib loads only here)."""
    from . import plots

    return plots.plot_run(store, out)


def dashboard_view() -> type[View]:
    """Its runs' view on the dashboard page (``spatial.dashboard``: Bokeh loads only here)."""
    from .dashboard import SpatialView

    return SpatialView


HEURISTIC_DUTY = 0.25  # the share of its thread's time a side heuristic's local solves take at most
PAUSE_STEP_S = 0.2  # it looks whether the run stops this often while it pauses

# a run's options: MinimizeOptions' fields that decide its result (``subdomains`` null: each
# engine's default, 64 on a CPU and 1024 on a GPU as ``pbbflow minimize``; ``prove_above`` null: the
# optimum, else a threshold question)
OPTION_KEYS = (
    "eps_abs",
    "eps_rel",
    "feas_tol",
    "subdomains",
    "bound",
    "max_open",
    "local_solves",
    "contract",
    "prove_above",
)
# options that stores written before them lack, and their values there
ADDED_OPTIONS = {"prove_above": None}


def _check_options(options) -> None:
    """ValueError naming the first thing wrong with a spatial run's ``options``."""
    required = set(OPTION_KEYS) - set(ADDED_OPTIONS)
    if not isinstance(options, dict) or not required <= set(options) <= set(OPTION_KEYS):
        held = ", ".join(sorted(options)) if isinstance(options, dict) else type(options).__name__
        added = ", ".join(ADDED_OPTIONS)
        raise ValueError(
            f"options must hold exactly {', '.join(OPTION_KEYS)} ({added} may be absent); they hold {held}"
        )
    for key in ("eps_abs", "eps_rel", "feas_tol") + (
        ("prove_above",) if options.get("prove_above") is not None else ()
    ):
        if type(options[key]) not in (int, float):
            raise ValueError(f"option {key} must be a number, not {options[key]!r}")
    for key in ("max_open",) + (("subdomains",) if options["subdomains"] is not None else ()):
        if type(options[key]) is not int:
            raise ValueError(f"option {key} must be an integer, not {options[key]!r}")
    for key in ("local_solves", "contract"):
        if type(options[key]) is not bool:
            raise ValueError(f"option {key} must be true or false, not {options[key]!r}")
    _minimize_options(options, gpu=False)  # its own checks (ranges, the bound's name)


def _minimize_options(options: dict, *, gpu: bool) -> MinimizeOptions:
    subdomains = options["subdomains"] or (GPU_SUBDOMAINS if gpu else CPU_SUBDOMAINS)
    return MinimizeOptions(**{**ADDED_OPTIONS, **options, "subdomains": subdomains})


class SpatialRun:
    """A spatial run's problem and options (``core.family.RunInstance``)."""

    kind = "spatial"
    work_arrays = ("lo", "hi", "lb")
    solution_array = "x"
    # none by default: the explorations solve locally on their own schedule, and local solves beside a
    # GPU worker cost its explorer 9% of its boxes/s even paused 3x their length (hs071 on an H200,
    # benchmarks/results/spatial_workflow_overhead_h200_2026-12-01.json)
    side_heuristics_per_gpu = 0

    def __init__(self, problem: Problem, options: dict) -> None:
        """ValueError for invalid options."""
        _check_options(options)
        self.problem, self.options, self.name = problem, options, problem.name
        self._scale = problem.upper - problem.lower

    @classmethod
    def new(cls, problem: Problem, options: MinimizeOptions, *, subdomains: int | None = None) -> SpatialRun:
        """A new run of ``problem`` with ``options`` (their limits are a session's, not the run's;
        ``subdomains`` None: each engine's default)."""
        fields = dataclasses.asdict(options)
        return cls(problem, {**{k: fields[k] for k in OPTION_KEYS}, "subdomains": subdomains})

    @classmethod
    def from_store(cls, name: str, arrays: dict[str, np.ndarray], options) -> SpatialRun:
        source = arrays.get("source")
        if source is None or set(arrays) != {"source"} or source.dtype != np.uint8 or source.ndim != 1:
            raise ValueError("the instance must be one uint8 array source (the problem's JSON)")
        try:
            problem = Problem.from_source(loads_json(source.tobytes().decode("utf-8")))
        except UnicodeDecodeError as e:
            raise ValueError(f"the problem's source is not JSON ({e})") from None
        except FileRefused as e:
            raise ValueError(f"the problem's source is not strict JSON ({e.reason})") from None
        except ProblemError as e:
            raise ValueError(str(e)) from None
        if problem.name != name:
            raise ValueError(f"the problem is named {problem.name!r}, the store says {name!r}")
        return cls(problem, options)

    def arrays(self) -> dict[str, np.ndarray]:
        text = json.dumps(self.problem.source, sort_keys=True, separators=(",", ":"), allow_nan=False)
        return {"source": np.frombuffer(text.encode("utf-8"), dtype=np.uint8)}

    def space(self) -> BoxSpace:
        return BoxSpace(self.problem.lower, self.problem.upper)

    def minimize_options(self, *, gpu: bool = False) -> MinimizeOptions:
        """The options of an exploration of this run (no limits: those are a session's)."""
        return _minimize_options(self.options, gpu=gpu)

    def encode_work(self, work: BoxSet) -> dict[str, np.ndarray]:
        if not isinstance(work, BoxSet) or work.d != self.problem.dimension:
            raise ValueError(f"remaining must be a BoxSet of dimension {self.problem.dimension}")
        return {"lo": np.asarray(self._inside(work).lo), "hi": np.asarray(work.hi), "lb": np.asarray(work.lb)}

    def _inside(self, boxes: BoxSet) -> BoxSet:
        """``boxes``, when they lie in the domain; ValueError otherwise."""
        if len(boxes) and not (np.all(boxes.lo >= self.problem.lower) and np.all(boxes.hi <= self.problem.upper)):
            raise ValueError("a box reaches outside the problem's domain")
        return boxes

    def decode_work(self, arrays: dict[str, np.ndarray] | None = None, data: bytes | None = None) -> BoxSet:
        d = self.problem.dimension
        if data is not None:
            boxes = BoxSet.from_bytes(data, d) if data else BoxSet.empty(d)
        else:
            if any(arrays[k].dtype != np.float64 for k in self.work_arrays):
                raise ValueError("boxes must be float64 arrays")
            boxes = BoxSet(arrays["lo"], arrays["hi"], arrays["lb"])
        return self._inside(boxes)

    def encode_solution(self, solution) -> np.ndarray:
        if solution is None:
            return np.zeros(0, np.float64)
        x = np.array(solution, dtype=np.float64)
        if x.shape != (self.problem.dimension,):
            raise ValueError(f"x must be a point of dimension {self.problem.dimension}")
        return x

    def decode_solution(self, array: np.ndarray) -> list[float] | None:
        return array.tolist() if array.size else None

    def incumbent_problem(self, value, solution) -> str | None:
        """A point in the domain whose objective enclosure holds ``value`` (within 1e-9 relative: the
        GPU's rounding and the CPU's differ by ulps).  Its feasibility was verified rigorously
        where it was found; a damaged store is caught by its checksum."""
        if solution is None:
            return None if value is None else "it has no point"
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return f"its value must be a finite number, not {value!r}"
        x = np.asarray(solution, dtype=np.float64)
        if x.shape != (self.problem.dimension,) or not (
            np.all(x >= self.problem.lower) and np.all(x <= self.problem.upper)
        ):
            return "its point is not a point of the domain"
        enclosure = evaluate_point(self.problem.tape, x)
        slack = 1e-9 * max(1.0, abs(enclosure.f_hi))
        if not enclosure.f_lo - slack <= value <= enclosure.f_hi + slack:
            return f"its point's objective is in [{enclosure.f_lo!r}, {enclosure.f_hi!r}]"
        return None

    def search_ub(self) -> float:
        return math.inf

    def engine_options(self, **_settings) -> dict:
        return {"problem": self.problem.source, "run": self.options}

    def lower_bound(self, remaining: BoxSet, settled: float) -> float:
        """The certified lower bound of a run in this state: below every open box and all settled."""
        return min(settled, remaining.lowest())

    def result(self, remaining: BoxSet, incumbent, solution, settled, nodes, leaves, elapsed_s) -> Result:
        lower = self.lower_bound(remaining, settled)
        options, d = self.minimize_options(), self.problem.dimension
        if len(remaining):
            status = Status.LIMIT
        elif solution is None:
            status = Status.INFEASIBLE if lower == math.inf else Status.LIMIT
        else:  # ended; boxes too small to split may hold a gap (in ``settled``)
            status = Status.OPTIMAL if lower >= prune_level(incumbent, options) else Status.LIMIT
        # (with a threshold, box_result answers it: decided, or limit)
        return box_result(
            self.problem,
            options,
            status,
            incumbent,
            None if solution is None else [float(v) for v in solution],
            lower,
            nodes,
            elapsed_s,
            remaining,
            len(remaining),
            # a box's subdomains where every engine has the same (``minimize``'s count), else null (the
            # CPU's engines bound a network objective's boxes whole, a GPU's split them)
            subdomains=None
            if self.options["subdomains"] is None or bounds_whole_boxes(self.problem)
            else subdomains_per_dim(options.subdomains, d) ** d,
        )

    def no_gpu(self) -> None:
        return None

    def client_code(self):
        """The coordinator's check of reports (``BoxWork.accept``)."""
        from ..core.compiling import CodeLoad, recording

        with recording() as outcome:
            BoxSet.root(self.problem).inside(BoxSet.root(self.problem))
        return CodeLoad(outcome["seconds"], outcome["compiled"])

    def first_run_code(self, explorers: str | None = "cpu"):
        from ..core.compiling import in_cache
        from .bnb import FIRST_RUN, code_cached
        from .boxes import _inside_any

        return None if code_cached(self.minimize_options()) and in_cache(_inside_any) else FIRST_RUN

    def worker_code(self):
        return warm_worker, (self.problem.source, self.options)


@dataclass(frozen=True)
class FirstWork:
    """A new run's first checkpoint: the root box bounded (``boxes``, or none when it was settled at
    once), the incumbent of a local solve from its best point (``value`` and ``x``, or None), the
    bound of what was settled and the nodes bounded."""

    boxes: BoxSet
    value: float | None
    x: list[float] | None
    settled: float
    nodes: int


def first_work(run: SpatialRun) -> FirstWork:
    """A new run's first work, as ``minimize`` starts: the root bounded, then a local solve."""
    exploration = Exploration(run.problem, dataclasses.replace(run.minimize_options(), parallel=False))
    exploration.settle()
    found = exploration.incumbent.x is not None
    return FirstWork(
        exploration.remaining(),
        exploration.incumbent.value if found else None,
        exploration.incumbent.x.tolist() if found else None,
        min(exploration.settled_lb, exploration.unsplittable_lb),
        exploration.nodes,
    )


def warm_worker(source: dict, options: dict):
    """In a worker: load (or compile) the code its explorer runs for the problem (a Dask task)."""
    from distributed import get_worker

    from ..core.compiling import CodeLoad

    gpu = get_worker().state.total_resources.get("GPU", 0) > 0
    problem = Problem.from_source(source)
    if gpu:
        from ..gpu.spatial.bnb import load_code
    else:
        from .bnb import load_code
    seconds, compiled = load_code(problem, _minimize_options(options, gpu=gpu))
    return CodeLoad(seconds, compiled)


Instance = SpatialRun
