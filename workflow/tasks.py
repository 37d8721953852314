"""The tasks that run on Dask workers: explorers, and a side heuristic beside them.

An explorer explores its work for a time budget (cut short when other explorers wait for work or
the run stops; longer than the run's when checkpoints cost more than ``CHECKPOINT_SHARE`` of it),
checkpoints to the coordinator, and does what the answer says.  Its engine may ask whether others wait as often as it likes: the task asks the
coordinator at most every 0.2 s.  Its engine comes from the run's family (``family.py``: ``make_engine``, a GPU engine
on a worker with the resource ``GPU``), and so does the side heuristic (``side_heuristic``).  An
explorer holds no state the coordinator does not have (as of the last checkpoint), so a re-run
after a worker death is harmless: it starts empty (generation 0, a fresh attempt) and asks for work.
"""

from __future__ import annotations

import functools
import time
import traceback
import uuid
from collections.abc import Callable

from distributed import get_worker

from ..core.errors import GpuError
from ..core.family import family
from .protocol import Action, Checkpoint, CheckpointReply, Improve, RunHandle, Status, Waiting

WAIT_SECONDS = 0.05  # between checkpoints of an explorer that has nothing to do
HURRY = 0.05  # fraction of the budget to explore before the next checkpoint when others wait
CHECKPOINT_SHARE = 0.05  # at most this share of an explorer's time goes to its checkpoints: the budget
# grows with their cost (a spatial explorer with a million open boxes sends 72 MB)
TASK_POLL_S = 0.2  # how often a task asks the coordinator whether others wait, or the run is over


def _reporting_errors(task):
    """``task``, returning ``{"error": one line, "traceback": text}`` instead of raising an internal
    error, so that the driver reports it once (and checkpoints) instead of the worker logging it.
    A ``GpuError`` (a GPU that cannot serve the run as asked: the user's to fix) is raised as it is."""

    @functools.wraps(task)
    def wrapper(*args, **kwargs) -> dict:
        try:
            return task(*args, **kwargs)
        except GpuError:
            raise
        except Exception as error:  # noqa: BLE001 (every internal failure goes to the driver)
            return {"error": f"{type(error).__name__}: {error}", "traceback": traceback.format_exc()}

    return wrapper


def _coordinator(run: str) -> RunHandle:
    """In a task: run ``run`` on the coordinator, through the worker's scheduler connection."""
    worker = get_worker()
    return RunHandle(run, worker.scheduler, worker.loop)


def _at_most_every(seconds: float, ask: Callable[[], bool]) -> Callable[[], bool]:
    """``ask`` asked at most once per ``seconds`` (False in between): engines and heuristics may
    call the result as often as they like."""
    next_ask = 0.0

    def throttled() -> bool:
        nonlocal next_ask
        if time.monotonic() < next_ask:
            return False
        next_ask = time.monotonic() + seconds
        return ask()

    return throttled


@_reporting_errors
def explorer_task(run: str, explorer: str, kind: str, options: dict, budget_s: float) -> dict:
    """Explore for the coordinator until it says stop, with the engine of family ``kind`` for the
    run's ``options`` (on the GPU of a worker with resource GPU)."""
    worker = get_worker()
    gpu = worker.state.total_resources.get("GPU", 0) > 0
    engine = family(kind).make_engine(options, gpu=gpu, threads=worker.state.nthreads)
    ask = _coordinator(run).ask
    attempt = uuid.uuid4().hex  # this run of the task (Dask runs it again after its worker's loss)

    def checkpoint(remaining: bytes, generation: int, **progress) -> CheckpointReply:
        """Report; ``generation``: the last reply's (``ledger``: other reports count for nothing)."""
        report = Checkpoint(
            explorer, worker.address, remaining, generation, engine.capacity, attempt=attempt, **progress
        )
        return ask(report)

    def report(value, solution) -> None:
        ask(Improve(value, solution))

    def others_wait_or_stop() -> bool:
        answer = ask(Waiting(explorer))
        return answer.waiting > 0 or answer.stopping

    waiting = _at_most_every(TASK_POLL_S, others_wait_or_stop)
    offer = getattr(engine, "offer", None)  # the run's incumbent, for engines that use its solution
    totals = {"nodes": 0, "leaves": 0, "explorations": 0}
    reply = checkpoint(b"", 0)
    budget = budget_s
    while reply.action != Action.STOP:
        if reply.action == Action.WAIT:
            time.sleep(WAIT_SECONDS)
            reply = checkpoint(engine.remaining(), reply.generation)
            continue
        if reply.action == Action.REPLACE:
            engine.load(reply.work)
        if offer is not None and reply.solution is not None:
            offer(reply.ub, reply.solution)
        seconds = budget * HURRY if reply.hurry else budget
        nodes, leaves, best = engine.run(reply.ub, seconds, report, waiting, reply.nodes_left)
        totals["nodes"] += nodes
        totals["leaves"] += leaves
        totals["explorations"] += 1
        improvement = {} if best is None else {"best": best[0], "solution": best[1]}
        began = time.monotonic()
        reply = checkpoint(
            engine.remaining(), reply.generation, nodes=nodes, leaves=leaves, **engine.extras(), **improvement
        )
        budget = max(budget_s, (time.monotonic() - began) / CHECKPOINT_SHARE)
    return totals


@_reporting_errors
def heuristic_task(run: str, kind: str, options: dict, seed: int) -> dict:
    """Family ``kind``'s side heuristic beside the search until the run stops; every improvement
    goes to the coordinator at once (it forwards the new UB to the explorers at their next checkpoint)."""
    ask = _coordinator(run).ask

    def improved(value, solution) -> None:
        ask(Improve(value, solution))

    stopping = _at_most_every(TASK_POLL_S, lambda: ask(Status()).stopping)
    return family(kind).side_heuristic(options, seed, improved, stopping)
