"""Load a flow-shop run's numba code before its clock starts, and tell a compile from a cache load.

numba compiles a function the first time a process calls it, or loads it from its on-disk
cache (``cache=True``) when an earlier process on the machine compiled it (``core.compiling``).
:func:`warm_client` loads what the client process runs (the initial heuristic, the root bound,
and the coordinator's set operations: the scheduler of the clusters pbbflow starts runs in the
client's process) and the probes of the ETA (a first run compiles those in a process of its own,
beside the search); :func:`warm_worker` loads on every worker what its tasks run: the CPU
explorer, or on a worker with the resource ``GPU`` the kernels for the instance's size and
iterated greedy, which runs beside them by default (a CPU worker given a heuristic task loads
iterated greedy in the task, from the cache the client filled).  The workers of one machine
take turns (a file lock), so that a first run compiles once and the other workers load; one
that waits for its turn compiles the coordinator's code meanwhile, for the client to load.  The
workers of a local CPU cluster are threads of the client's process, which compiles one function
at a time: a first run there compiles the explorer in a process of its own that holds the turn
(:func:`start_worker_code_apart`), beside the client's code.
"""

from __future__ import annotations

import contextlib
import fcntl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
from distributed import get_worker

from ..core.compiling import CodeLoad, in_cache, recording, start_apart
from ..core.files import open_append
from ..workflow.fastexit import exit_without_final_gc
from .bounds import lower_bound
from .estimate import load_probes
from .evaluation import makespan, neh
from .explorer import explore
from .intervals import WorkUnit
from .iterated_greedy import iterated_greedy
from .packed import PackedUnit

SMALL_N = 6  # jobs of the instance slice the code runs on (numba compiles per type, not per size)
# beside numba's cache of this package: a file no other local user can create or hold
LOCK = Path(__file__).resolve().parent / "__pycache__" / "pbbflow-numba.lock"
TURN_SECONDS = 600.0  # the longest wait for another worker's turn (a first compile takes ~20 s)
# what a first run compiles, and about how long that takes (measured: benchmarks/first_run.py)
FIRST_RUN = ("the flow-shop solver", "20 s on 2 cores")
_loaded: set = set()  # what warm_worker loaded in this process: "cpu explorer" or GPU explore kernels


def _small(p: np.ndarray) -> np.ndarray:
    """The first jobs of ``p``: the same array type (read-only C int32) as the run's, for numba."""
    return p[: min(SMALL_N, p.shape[0])]


def _coordinator_code(n: int) -> None:
    """The packed set operations of the coordinator's ledger, on units of ``n``-job spaces."""
    whole = PackedUnit.from_bytes(n, WorkUnit.full(n).to_bytes())
    kept, given = whole.split_largest()
    left, right = PackedUnit.from_intervals(n, [(0, given[0]), given]).split_half()
    PackedUnit.union_of_disjoint(n, [left.intersect(kept), right])
    PackedUnit.union_of_disjoint(n, [])
    _ = whole.size


def warm_client(p: np.ndarray, bound: str, *, initial: str | None) -> CodeLoad:
    """Load (or compile) the client's code for instance ``p``: the coordinator's, and for a new
    run the root bound and its ``initial`` heuristic (``"neh"`` or ``"ig"``, as ``create_run``);
    then the ETA's probes, which a first run (numba's cache was cold: something compiled) leaves to
    a process of their own (:func:`compile_eta_apart`) instead of waiting for them before the search."""
    with recording() as outcome:
        small = _small(p)
        if initial == "ig":
            iterated_greedy(small, iterations=1)  # NEH and the insertion local search too
        elif initial == "neh":
            neh(small)
        if initial is not None:
            lower_bound(small, [], [], bound)
        _coordinator_code(small.shape[0])
    global _eta_compile, _eta_elsewhere
    with recording() as eta:
        if not outcome["compiled"]:
            _eta_compile, _eta_elsewhere = None, not _probes_lock_free()
            if not _eta_elsewhere:  # else another run's process is compiling them: wait for it
                load_probes()
        elif _eta_compile is None:
            compile_eta_apart()
    return CodeLoad(outcome["seconds"] + eta["seconds"], outcome["compiled"] or eta["compiled"])


PROBES_LOCK = LOCK.with_name("pbbflow-probes.lock")  # held while a process compiles the ETA's probes
_eta_compile: subprocess.Popen | None = None  # the process compiling the ETA's code (compile_eta_apart)
_eta_elsewhere = False  # whether another run's such process was compiling it when the client's code loaded
_COMPILE_PROBES = """
import fcntl
try:  # before numba's import, so that a run starting meanwhile waits for this one
    from pbbflow.core.files import open_append
    lock = open_append({lock!r})
    fcntl.flock(lock, fcntl.LOCK_EX)
except OSError:
    pass
from pbbflow.flowshop.estimate import load_probes
load_probes()
"""


def compile_eta_apart(command: list[str] | None = None) -> None:
    """Compile the ETA's code into numba's on-disk cache in a new Python process (``command``, by
    default one that holds ``PROBES_LOCK`` and runs ``flowshop.estimate.load_probes``), beside the
    run; :func:`eta_code_ready` says when the estimates may load it.  The process outlives a short
    run to fill the cache for the next (a signal to the process group ends it too: numba replaces a
    cache file only once it is whole)."""
    global _eta_compile
    if command is None:
        with contextlib.suppress(OSError):
            PROBES_LOCK.parent.mkdir(exist_ok=True)
        command = [sys.executable, "-c", _COMPILE_PROBES.format(lock=str(PROBES_LOCK))]
    _eta_compile = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def _probes_lock_free() -> bool:
    """Whether no process holds ``PROBES_LOCK`` (True where the lock file cannot be opened)."""
    try:
        handle = open_append(PROBES_LOCK)  # closed below
    except OSError:
        return True
    with handle:
        free = _try_lock(handle, fcntl.LOCK_SH)
        if free:
            fcntl.flock(handle, fcntl.LOCK_UN)
        return free


def eta_code_ready() -> bool:
    """Whether the ETA's code can be loaded without compiling here: it was loaded with the client's
    code, or the process that compiled it has ended well (this run's, or another's that held the
    lock).  False while one runs, and after this run's failed: the run then goes without estimates
    rather than compile them on its driver."""
    if _eta_compile is not None:
        return _eta_compile.poll() == 0
    return not _eta_elsewhere or _probes_lock_free()


def _kernel_misses(p: np.ndarray) -> int:
    """Kernels of ``p``'s size that numba-cuda did not find in its cache so far (0 in the simulator)."""
    from ..gpu.flowshop import kernels as K

    kernels = (K.explore_kernel(*p.shape), K.classify, K.list_victims, K.steal)
    return sum(sum(k.stats.cache_misses.values()) for k in kernels if hasattr(k, "stats"))


@contextlib.contextmanager
def _machine_turn(meanwhile: Callable[[], None]) -> Iterator[None]:
    """Hold this machine's lock; when another worker holds it, run ``meanwhile`` first, then wait
    for at most ``TURN_SECONDS`` (a worker that cannot open the lock file goes on without)."""
    try:
        LOCK.parent.mkdir(exist_ok=True)
        handle = open_append(LOCK)  # held for the block
    except OSError:
        yield
        return
    with handle:
        held = _try_lock(handle)
        if not held:
            meanwhile()
            deadline = time.monotonic() + TURN_SECONDS
            while not held and time.monotonic() < deadline:  # then go on without: loading is only slower
                time.sleep(0.05)
                held = _try_lock(handle)
        try:
            yield
        finally:
            if held:
                fcntl.flock(handle, fcntl.LOCK_UN)


def _try_lock(handle, mode: int = fcntl.LOCK_EX) -> bool:
    """Whether the lock ``mode`` on ``handle`` was taken now (never waits)."""
    try:
        fcntl.flock(handle, mode | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def warm_worker(p: np.ndarray, bound: str, branch: str) -> CodeLoad:
    """In a worker: load (or compile) its tasks' code for instance ``p`` (a Dask task); code
    loaded once stays loaded, so a second call for the same code returns at once.  The worker's
    process will exit without the final garbage collections, which a cluster's close waits for."""
    exit_without_final_gc()
    gpu = get_worker().state.total_resources.get("GPU", 0) > 0
    if gpu:
        from ..gpu.flowshop.kernels import explore_kernel  # one kernel per size class of instances

        code = explore_kernel(*p.shape)
    else:
        code = "cpu explorer"
    if code in _loaded:
        return CodeLoad(0.0, False)
    with recording() as outcome:
        small = _small(p)
        makespan(small, np.arange(small.shape[0]))  # numba's own start-up, outside the lock
        # while another worker compiles, the coordinator's code (which the client loads next)
        with _machine_turn(meanwhile=lambda: _coordinator_code(small.shape[0])):
            if gpu:
                from ..gpu.flowshop.explorer import compile_kernels  # only GPU workers import numba-cuda's runtime

                before = _kernel_misses(p)
                compile_kernels(p, branch)
                outcome["compiled"] = _kernel_misses(p) > before
                _coordinator_code(small.shape[0])  # the GPU explorer's work units are packed
                iterated_greedy(small, iterations=1)  # a heuristic task runs beside by default
            else:
                explore(
                    small, WorkUnit.full(small.shape[0]), int(small.sum()) + 1, bound=bound, branch=branch, max_nodes=64
                )
    _loaded.add(code)
    return CodeLoad(outcome["seconds"], outcome["compiled"])


def code_cached(initial: str | None, explorers: str | None = "cpu", shape: tuple[int, int] = (SMALL_N, 2)) -> bool:
    """Whether numba's on-disk cache holds the flow-shop code a run loads in this process before it
    searches: the client's (with its ``initial`` heuristic), and the explorers' where they are this
    process's (``explorers``: "cpu" threads, or "gpu" explorers of instances of ``shape``; None:
    elsewhere).  False: this is the machine's first run of that kind, or its first since an upgrade.
    (A GPU machine never compiles the CPU explorer's start, so a GPU run must not ask for it; the
    ETA's code is compiled apart, and a search never waits for it.)"""
    from . import evaluation, ivm, packed
    from . import iterated_greedy as ig

    heuristic = {"ig": [ig._iterate, ig._local_search], "neh": [evaluation.insert_best]}.get(initial, [])
    client = [*heuristic, packed._coalesce, packed._intersect]
    if explorers == "cpu":
        return in_cache(*client, ivm.explore_steps, ivm.init_at, ivm.set_root)
    if explorers == "gpu":
        from ..gpu.flowshop import kernels as K

        return in_cache(*client, K.explore_kernel(*shape), K.classify, K.list_victims, K.steal)
    return in_cache(*client)


def start_worker_code_apart(bound: str, branch: str) -> subprocess.Popen | None:
    """On a first run whose workers are threads of this process (a local CPU cluster), compile the
    CPU explorer's code in a process of its own that holds the machine's turn (``LOCK``) from its
    start: it compiles beside the client's code instead of after it (one process compiles one
    function at a time), and the workers, waiting for their turn, then load it.  None where
    nothing started (see ``core.compiling.start_apart``)."""
    with contextlib.suppress(OSError):
        LOCK.parent.mkdir(exist_ok=True)
    return start_apart(f"{__name__}:compile_explorer", bound, branch, lock=LOCK)


def compile_explorer(bound: str, branch: str) -> None:
    """A job of ``core.compiling.start_apart``: compile the CPU explorer for ``bound`` and ``branch``
    into numba's cache, on an instance of the run's array type (numba compiles per type, not size)."""
    from .instance import FlowShop

    p = FlowShop("warm-up", np.ones((SMALL_N, 2), dtype=np.int32)).p
    explore(p, WorkUnit.full(SMALL_N), int(p.sum()) + 1, bound=bound, branch=branch, max_nodes=64)
