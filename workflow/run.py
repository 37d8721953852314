"""Drive a run on a Dask cluster: coordinator, explorer tasks, periodic Zarr checkpoints.

``create_run`` writes a new run store (the family's instance and options, its first work and
incumbent as the first checkpoint), held for writing by this process.  ``drive`` claims the store
(unless its caller did) and continues the run from its last committed checkpoint on whatever
cluster the client reaches, until the search ends, a time limit passes or ``stop`` is set (a
signal): the explorers are told to stop, and the last state is written as a new checkpoint.
Checkpoints are written by the client process on a background thread, never on the scheduler's
event loop.  Nothing here knows a family: the store's instance (``core.family.RunInstance``)
gives the work space, the engines' options, the code to load and the result.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from distributed import Client, wait

from ..core.compiling import usable_cores
from ..core.defaults import CHECKPOINT_EVERY_S
from ..core.errors import GpuError
from ..core.family import RunInstance, StoredWork
from ..core.progress import Eta, Progress
from ..core.result import Result
from ..storage.runstore import RunStore, RunStoreError
from .cluster import connected_workers, threads_here
from .coordinator import Coordinator
from .eta import COLUMNS as ESTIMATE_COLUMNS
from .eta import Estimator, estimate_threads, eta_of, recent_rate
from .history import activity_column
from .protocol import Close, Estimate, Open, RunHandle, State, Stop
from .tasks import explorer_task, heuristic_task
from .worker_code import warm_workers

STOP_SECONDS = 60.0  # after a stop, how long explorers get to send their last checkpoint
# + activity columns; lower_bound is NaN for a family whose work holds no bounds (flow shop)
SERIES = ("t", "nodes", "leaves", "remaining_fraction", "incumbent", "lower_bound", "pieces", "active_explorers")
DRIVER_POLL_S = 0.2
CALL_SECONDS = 120.0  # the longest wait for one answer of the coordinator


class RunFailed(RuntimeError):
    """An internal error stopped the run (``checkpointed``: whether a final checkpoint of the
    coordinator's state was written).  ``details`` is the traceback, for a log file."""

    def __init__(self, where: str, error: str, details: str, checkpointed: bool) -> None:
        super().__init__(f"{where}: {error}")
        self.details, self.checkpointed = details, checkpointed


def create_run(
    path,
    instance: RunInstance,
    *,
    work: StoredWork,
    incumbent: Any = None,
    solution: Any = None,
    settled: float = math.inf,
    nodes: int = 0,
    overwrite: bool = False,
) -> RunStore:
    """A new run store of ``instance`` whose first checkpoint is ``work`` (all of the space, or
    what is left after the family's first steps: ``nodes`` of them, ``settled``) and the first
    incumbent, if any."""
    store = RunStore.create(path, instance, overwrite=overwrite)
    store.commit(
        remaining=work,
        incumbent=incumbent,
        solution=solution,
        settled=settled,
        nodes=nodes,
        leaves=0,
        elapsed_s=0.0,
        series={k: [] for k in SERIES},
    )
    return store


def result_of(store: RunStore) -> Result:
    """The result of the run as of its last checkpoint, with the ``estimate`` of the work left
    (RunStoreError if the result recorded there disagrees with the checkpoint's state)."""
    cp = store.latest()
    result = _result(store, cp.remaining, cp.incumbent, cp.solution, cp.settled, cp.nodes, cp.leaves, cp.elapsed_s)
    if not _agrees(cp.result, result.to_dict()):
        raise RunStoreError(store.path, f"checkpoint {cp.seq} records a result that disagrees with its state")
    # the estimate of the work left as of the last checkpoint (``workflow.eta``; null fields when unknown)
    return dataclasses.replace(result, estimate=eta_of(cp.series).as_json())


def _agrees(recorded: Any, result: dict) -> bool:
    """Whether the result a checkpoint recorded (None: none) is ``result`` but for its ``run``
    (the path it was written at); a key it lacks (a store written before the key was) is not asked."""
    if recorded is None:
        return True
    return isinstance(recorded, dict) and all(k == "run" or k in result and result[k] == v for k, v in recorded.items())


def finished(store: RunStore) -> bool:
    """Whether the run's last checkpoint holds no work."""
    return not store.latest().remaining


def _result(store: RunStore, remaining: StoredWork, incumbent, solution, settled, nodes, leaves, elapsed_s) -> Result:
    result = store.instance.result(remaining, incumbent, solution, settled, nodes, leaves, elapsed_s)
    return dataclasses.replace(result, run=str(store.path))


def _is_gpu(worker_info: dict) -> bool:
    return worker_info.get("resources", {}).get("GPU", 0) > 0


class _Session:
    """One ``drive`` call: the run id, the task futures, the series, the writer thread."""

    def __init__(
        self,
        store: RunStore,
        client: Client,
        budget_s: float,
        settings: Mapping[str, Any],
        heuristics: int | None,
        node_limit: int | None = None,
    ) -> None:
        self.store, self.client = store, client
        self.start = store.latest()
        self.run = uuid.uuid4().hex
        # the coordinator's answers for this run; TimeoutError after CALL_SECONDS (a scheduler that
        # stopped answering must not hold the driver for ever)
        self.ask = RunHandle(self.run, client.scheduler, client.loop, CALL_SECONDS).ask
        self.started = time.monotonic()
        self.ended: float | None = None  # when the explorers stopped (the final checkpoint)
        self.series = {k: list(v) for k, v in self.start.series.items()} or {k: [] for k in SERIES}
        self.writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pbbflow-checkpoint")
        self.pending = None
        instance = store.instance
        ub, solution = instance.search_ub(), None
        if self.start.incumbent is not None and self.start.incumbent <= ub:  # the explorers get its solution
            ub, solution = self.start.incumbent, self.start.solution
        client.register_plugin(Coordinator())
        info = connected_workers(client)
        self.estimator = Estimator(instance, threads=estimate_threads(threads_here(info), usable_cores()))
        space = instance.space()
        self.kind = space.kind
        self.ask(
            Open(
                kind=space.kind,
                space=space.params(),
                work=self.start.remaining.to_bytes(),
                ub=ub,
                solution=solution,
                nodes=self.start.nodes,
                leaves=self.start.leaves,
                settled=self.start.settled,
                pieces=max(1, len(info)),
                label=instance.name,
                client=client.id,
                node_limit=node_limit,
            )
        )
        self.budget_s, self.settings = budget_s, dict(settings)
        self.futures = []
        self.served: set[str] = set()  # workers that were given their tasks
        self.explorers = self.heuristics = 0
        # default: the family's count beside each GPU worker (flow shop: one iterated greedy), none on
        # CPU-only clusters
        per_gpu = store.instance.side_heuristics_per_gpu
        self.heuristic_limit = per_gpu * sum(_is_gpu(w) for w in info.values()) if heuristics is None else heuristics
        self.add_explorers()

    def add_explorers(self) -> None:
        """Tasks for every worker that has none yet (workers may join at any time).

        A GPU worker runs an explorer, and iterated greedy beside it while heuristic tasks are
        wanted; a CPU worker runs iterated greedy instead of exploring while heuristic tasks are
        wanted and some other worker explores.
        """
        info = connected_workers(self.client)
        new = sorted(set(info) - self.served, key=lambda w: (not _is_gpu(info[w]), w))  # GPU workers first
        for index, worker in enumerate(new):
            gpu = _is_gpu(info[worker])
            wants_heuristic = self.heuristics < self.heuristic_limit
            someone_else_explores = self.explorers > 0 or index < len(new) - 1
            if gpu:
                self._submit_explorer(worker)
                if wants_heuristic:
                    self._submit_heuristic(worker)
            elif wants_heuristic and someone_else_explores:
                self._submit_heuristic(worker)
            else:
                self._submit_explorer(worker)
            self.served.add(worker)

    def _submit_explorer(self, worker: str) -> None:
        explorer = f"{self.run}-{self.explorers}"
        self.futures.append(
            self.client.submit(
                explorer_task,
                self.run,
                explorer,
                self.kind,
                self.engine_options(),
                self.budget_s,
                key=f"pbbflow-explorer-{explorer}",
                workers=[worker],
                allow_other_workers=True,
                pure=False,
            )
        )
        self.explorers += 1

    def _submit_heuristic(self, worker: str) -> None:
        self.futures.append(
            self.client.submit(
                heuristic_task,
                self.run,
                self.kind,
                self.engine_options(),
                self.heuristics,
                key=f"pbbflow-heuristic-{self.run}-{self.heuristics}",
                workers=[worker],
                allow_other_workers=True,
                pure=False,
            )
        )
        self.heuristics += 1

    def engine_options(self) -> dict:
        """The run's options for its family's engines and side heuristic."""
        return self.store.instance.engine_options(**self.settings)

    def elapsed(self) -> float:
        """The run's search seconds: until now, or until its explorers stopped (``ended``)."""
        return self.start.elapsed_s + (self.ended or time.monotonic()) - self.started

    def sample(self, state: dict) -> None:
        lower = state["lower_bound"]
        row = (
            self.elapsed(),
            state["nodes"],
            state["leaves"],
            state["remaining_fraction"],
            state["ub"],
            math.nan if lower is None else lower,
            state["pieces"],
            state["active_explorers"],
        )
        # a column new to the store (the store of an older release, a worker that came, the ETA's
        # estimates) is NaN before its first value; per-worker busy share: NaN where a worker held
        # no explorer (workers come and go)
        before = len(self.series.get("t", ()))
        left = self.estimator.left(state["nodes"]) if self.estimator.enabled else None
        activity = ((activity_column(worker), share) for worker, share in state["activity"].items())
        columns = [*zip(SERIES, row, strict=True), *activity, *zip(ESTIMATE_COLUMNS, left or (), strict=False)]
        for column, value in columns:
            self.series.setdefault(column, [float("nan")] * before).append(value)
        length = before + 1
        for column in self.series.values():
            if len(column) < length:
                column.append(float("nan"))

    def checkpoint(self, state: dict, *, final: bool = False) -> None:
        """Write the ledger's state as a new version (waits for the previous write first)."""
        if self.pending is not None:
            self.pending.result()
        remaining = self.store.instance.decode_work(data=state["remaining"])
        incumbent, solution = self.start.incumbent, self.start.solution
        if state["solution"] is not None:
            incumbent, solution = state["ub"], state["solution"]
        args = {
            "remaining": remaining,
            "incumbent": incumbent,
            "solution": solution,
            "settled": state["settled"],
            "nodes": state["nodes"],
            "leaves": state["leaves"],
            "elapsed_s": self.elapsed(),
            "series": {k: list(v) for k, v in self.series.items()},
        }
        if final and not remaining:  # the search ended: the result goes into the store too
            args["result"] = _result(
                self.store,
                remaining,
                incumbent,
                solution,
                state["settled"],
                state["nodes"],
                state["leaves"],
                args["elapsed_s"],
            ).to_dict()
        self.pending = self.writer.submit(lambda: self.store.commit(**args))
        if final:
            self.pending.result()

    def eta(self, nodes: int, rate: float) -> Eta:
        """The ETA now that ``nodes`` are done: the latest estimate at the rate of the latest samples
        (``rate`` while there are too few)."""
        left = self.estimator.left(nodes)
        if left is None:
            return Eta()
        recent = recent_rate(self.series["t"], self.series["nodes"])
        return Eta(*left, recent if recent is not None else rate or None)

    def state(self, *, intervals: bool = False) -> dict:
        """The coordinator's state of the run (``protocol.StateReply``, as the dict it travels as, which
        the samples, the checkpoints and the estimator read); with ``intervals``, everything left too."""
        return self.ask(State(intervals)).to_wire()

    def estimate(self, now: float) -> None:
        """Ask for a new estimate of the work left when one is due; send a new one to the coordinator
        (for the dashboard page)."""
        if self.estimator.due(now):
            self.estimator.refresh(now, self.state(intervals=True))
        fresh = self.estimator.fresh()
        if fresh is not None:
            self.ask(Estimate(fresh[0], list(fresh[1])))

    def nap(self, seconds: float) -> None:
        """Sleep ``seconds``, or less when a task ends (explorers end when the run does, or fail)."""
        running = [f for f in self.futures if not f.done()]
        if not running:
            time.sleep(seconds)
            return
        with contextlib.suppress(TimeoutError):
            wait(running, timeout=seconds, return_when="FIRST_COMPLETED")

    def close(self, *, after_error: bool = False) -> None:
        """Let a pending checkpoint write finish, then forget the run on the scheduler (after an
        error, a scheduler that cannot be reached any more must not hide that error)."""
        self.writer.shutdown(wait=True)
        self.estimator.close()
        try:
            self.ask(Close())
        except Exception:
            if not after_error:
                raise


def drive(
    store: RunStore,
    client: Client,
    *,
    time_limit: float | None = None,
    node_limit: int | None = None,
    checkpoint_every: float = CHECKPOINT_EVERY_S,
    budget_s: float = 2.0,
    stop: threading.Event | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    settings: Mapping[str, Any] | None = None,
    heuristics: int | None = None,
    timings: dict[str, float] | None = None,
    hurry: threading.Event | None = None,
) -> Result:
    """Continue the run in ``store`` until it ends, a limit is reached or ``stop`` is set.

    ``time_limit`` counts this session's seconds; ``node_limit`` the run's total nodes: the
    coordinator stops the run once its explorers' checkpoints reach it, and an explorer decomposes
    about the nodes left at most before its next one (a soft limit: k explorers may pass it by
    about k times what was left).  ``settings``: the session's settings for the
    family's engines (``RunInstance.engine_options``; flow shop's ``ivms``: IVMs per GPU worker);
    the family's defaults where absent.  ``heuristics``: iterated greedy tasks that send improvements to the coordinator
    during the search (default: the family's ``side_heuristics_per_gpu`` beside each GPU worker;
    0: none).
    The workers load their numba code before the session's clock starts (``warm_workers``).
    ``timings``, if given, receives this session's ``search_s`` and ``final_checkpoint_s``.
    Once stopped, the explorers get ``STOP_SECONDS`` to send their last checkpoints, or until
    ``hurry`` is set; one that does not answer keeps its work in the ledger as of its last one.
    RunStoreError if another live run holds the store.
    """
    stop = stop or threading.Event()
    hurry = hurry or threading.Event()
    store.claim()  # a no-op when the caller holds it already
    if finished(store) or stop.is_set():
        return result_of(store)
    warm_workers(client, *store.instance.worker_code())
    session = _Session(store, client, budget_s, settings or {}, heuristics, node_limit)
    try:
        failure = _search(session, stop, time_limit, node_limit, checkpoint_every, on_progress)
        if failure is None:
            try:
                failure = _final_checkpoint(session, hurry, timings)
            except GpuError:
                raise
            except Exception as error:  # noqa: BLE001 (e.g. a store that cannot be written any more)
                raise RunFailed(
                    "the final checkpoint",
                    f"{type(error).__name__}: {error}",
                    traceback.format_exc(),
                    checkpointed=False,
                ) from error
            if failure is not None:
                raise RunFailed(*failure, checkpointed=True)
        else:
            try:
                _final_checkpoint(session, hurry)
                checkpointed = True
            except Exception:  # noqa: BLE001 (the first failure is the one reported)
                checkpointed = False
            raise RunFailed(*failure, checkpointed=checkpointed)
    except BaseException:
        session.close(after_error=True)
        raise
    session.close()
    return result_of(store)


def _search(
    session: _Session,
    stop: threading.Event,
    time_limit: float | None,
    node_limit: int | None,
    checkpoint_every: float,
    on_progress: Callable[[Progress], None] | None,
):
    """Poll the coordinator until the search ends, a limit passes, ``stop`` is set or a task
    fails; returns None, or (where, error, traceback) of the first failure."""
    last_checkpoint = last_sample = time.monotonic()
    try:
        while True:
            state = session.state()
            now = time.monotonic()
            session.estimate(now)
            if on_progress is not None:
                rate = (state["nodes"] - session.start.nodes) / max(now - session.started, 1e-9)
                on_progress(
                    Progress(
                        session.elapsed(),
                        state["nodes"],
                        rate,
                        state["ub"],
                        state["remaining_fraction"],
                        state["remaining_log10"],
                        state["active_explorers"],
                        state["lower_bound"],
                        state["pieces"],
                        session.eta(state["nodes"], rate),
                    )
                )
            if now - last_sample >= 1.0:
                session.sample(state)
                last_sample = now
            out_of_time = time_limit is not None and now - session.started >= time_limit
            out_of_nodes = node_limit is not None and state["nodes"] >= node_limit
            if state["finished"] or stop.is_set() or out_of_time or out_of_nodes:
                return None
            if now - last_checkpoint >= checkpoint_every:
                session.checkpoint(session.state(intervals=True))
                last_checkpoint = now
            failed = _failed_task(session.futures)
            if failed is not None:
                return failed
            session.add_explorers()
            session.nap(DRIVER_POLL_S)
    except GpuError:
        raise
    except Exception as error:  # noqa: BLE001 (the driver's own failure: checkpoint what the ledger has)
        return "the driver", f"{type(error).__name__}: {error}", traceback.format_exc()


def _failed_task(futures) -> tuple[str, str, str] | None:
    """(task key, error, traceback) of the first task that failed, if any: tasks return their
    internal errors (``tasks._reporting_errors``); Dask's own failures (a task that could not run)
    raise.  A ``GpuError`` (the user's to fix) is raised here, for the CLI to print as such."""
    for future in futures:
        if future.status == "error":
            error = future.exception()
            if isinstance(error, GpuError):
                raise error
            text = "".join(traceback.format_exception(type(error), error, future.traceback()))
            return f"task {future.key}", f"{type(error).__name__}: {error}", text
        if future.status == "finished":
            result = future.result()
            if "error" in result:
                return f"task {future.key}", result["error"], result["traceback"]
    return None


def _final_checkpoint(
    session: _Session, hurry: threading.Event, timings: dict[str, float] | None = None
) -> tuple[str, str, str] | None:
    """Stop the explorers and write the coordinator's state as the final checkpoint once every
    task has ended or every explorer has answered the stop (a worker that left counts as
    answered), after at most ``STOP_SECONDS``, or at once when ``hurry`` is set; an explorer that
    did not answer, or failed, keeps its work there as of its last checkpoint.  Returns the first
    failed task, if any.  ``timings`` receives ``search_s`` (until the explorers stopped) and
    ``final_checkpoint_s``."""
    session.ask(Stop())
    deadline = time.monotonic() + STOP_SECONDS
    while not hurry.is_set() and time.monotonic() < deadline:
        running = [f for f in session.futures if not f.done()]
        if not running or session.state()["stopped"]:
            break
        with contextlib.suppress(TimeoutError):
            wait(running, timeout=DRIVER_POLL_S, return_when="FIRST_COMPLETED")
    failed = _failed_task(session.futures)
    state = session.state(intervals=True)
    searched = session.ended = time.monotonic()  # the search's clock stops here, not after the estimate
    if not hurry.is_set():  # a second signal wants the checkpoint now: the last estimate stands
        session.estimator.final(state)
    session.sample(state)
    session.checkpoint(state, final=True)
    if timings is not None:
        timings.update(search_s=searched - session.started, final_checkpoint_s=time.monotonic() - searched)
    return failed
