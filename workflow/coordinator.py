"""The coordinator: a Dask scheduler plugin holding one ``Ledger`` per run.

Explorer tasks and the client call its handlers (``protocol.Route``) through the scheduler
connection: each takes its route's request and gives its reply (``protocol.Message``, sent as dicts);
a run it does not hold is answered as ``protocol.closed_reply`` says.  Handlers run on
the scheduler's event loop: they only touch the in-memory ledger (no disk, no blocking).  A run is opened with its kind and its work space's
parameters (``family.py``); work travels as the family's bytes (flow shop: packed big-endian
intervals, since msgpack refuses ints above 64 bits), decoded by the run's space; every message
names its run, so runs do not mix.  The incumbent is a value and a solution (a makespan and a
permutation; an objective and a point).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from distributed.diagnostics.plugin import SchedulerPlugin
from tornado.ioloop import PeriodicCallback

from ..core.family import work_space
from .history import RunHistory
from .ledger import Ledger
from .protocol import (
    Action,
    Checkpoint,
    CheckpointReply,
    Close,
    Done,
    Estimate,
    Improve,
    ImproveReply,
    Message,
    Open,
    Route,
    State,
    StateReply,
    Status,
    StatusReply,
    Stop,
    Waiting,
    WaitingReply,
    closed_reply,
)

PLUGIN_NAME = "pbbflow-coordinator"
SAMPLE_MS = 1000  # the histories' sampling period
KEPT_HISTORIES = 8  # closed runs whose history stays for the dashboard


def _handler(request: type[Message]) -> Callable:
    """The handler of ``request``'s route: called with the request's fields (keywords on the wire), it
    gives the handler the request and sends back its reply as a dict; a run this coordinator does not
    hold gets ``closed_reply`` on every route but ``open``."""

    def wrap(handler: Callable[..., Message]) -> Callable[..., dict]:
        @functools.wraps(handler)
        def handle(self: Coordinator, run: str, *args, **kwargs) -> dict:
            if request.route is not Route.OPEN and run not in self.runs:
                return closed_reply(request.route, run)
            return handler(self, run, request(*args, **kwargs)).to_wire()

        handle.route = request.route
        return handle

    return wrap


class Coordinator(SchedulerPlugin):
    """Registers the handlers of ``protocol.Route``; keeps the ledgers of the runs on this cluster."""

    name = PLUGIN_NAME
    idempotent = True  # registering again keeps the running coordinator (and its ledgers)

    def __init__(self) -> None:
        self.runs: dict[str, Ledger] = {}
        self.histories: dict[str, RunHistory] = {}  # open runs and the last closed ones, oldest first
        self.clients: dict[str, str] = {}  # open run -> the id of the client that drives it
        self.sampler: PeriodicCallback | None = None

    async def start(self, scheduler) -> None:
        scheduler.handlers.update({Route.OPEN: self.open_run, **{h.route: h for h in self.route_handlers()}})
        self.sampler = PeriodicCallback(self.sample, SAMPLE_MS)
        self.sampler.start()

    async def close(self) -> None:
        if self.sampler is not None:
            self.sampler.stop()

    def sample(self) -> None:
        """Record every open run's state in its history (on the scheduler's event loop)."""
        for run, ledger in self.runs.items():
            self.histories[run].record(ledger)

    def latest_history(self) -> RunHistory | None:
        """The history of the run opened last (open or closed), for the dashboard page."""
        return next(reversed(self.histories.values()), None)

    def remove_worker(self, scheduler, worker: str, **kwargs) -> None:
        for ledger in self.runs.values():
            ledger.remove_worker(worker)

    def remove_client(self, scheduler, client: str) -> None:
        """A driver is gone (killed, or its connection lost): close its runs, so that their
        explorers and heuristic tasks stop at their next call; the run store keeps the work as of
        its last checkpoint, and ``pbbflow resume`` continues from there."""
        for run in [run for run, owner in self.clients.items() if owner == client]:
            self.close_run(run)

    def route_handlers(self) -> list[Callable[..., dict]]:
        """The handlers of every route but ``open``, each with its ``route``."""
        return [
            self.checkpoint,
            self.improve,
            self.waiting,
            self.status,
            self.state,
            self.stop_run,
            self.close_run,
            self.estimate,
        ]

    # ------------------------------------------------------------------ handlers
    @_handler(Open)
    def open_run(self, run: str, request: Open) -> Done:
        """Start a run's ledger (refused if the run id is in use): ``kind`` and ``space`` name its work
        space (``family.work_space``); ``label`` names it on the dashboard; the run closes when
        ``client`` (the id of the client that drives it) leaves the scheduler."""
        if run in self.runs:
            raise ValueError(f"run {run} is already open on this cluster")
        unassigned = work_space(request.kind, request.space).decode(request.work)
        if request.client is not None:
            self.clients[run] = request.client
        self.runs[run] = Ledger(
            unassigned,
            ub=request.ub,
            solution=request.solution,
            nodes=request.nodes,
            leaves=request.leaves,
            settled=request.settled,
            pieces=request.pieces,
            min_split=request.min_split,
            node_limit=request.node_limit,
        )
        self.histories[run] = RunHistory(request.label or run, kind=request.kind)
        self.histories[run].record(self.runs[run])
        return Done(run)

    @_handler(Checkpoint)
    def checkpoint(self, run: str, report: Checkpoint) -> CheckpointReply:
        """An explorer's checkpoint: what it does next."""
        ledger = self.runs[run]
        if report.best is not None:
            ledger.improve(report.best, report.solution)
        reply = ledger.checkpoint(
            report.explorer,
            report.worker,
            ledger.space.decode(report.remaining),
            report.nodes,
            report.leaves,
            report.capacity,
            report.settled,
            report.generation,
            report.attempt,
        )
        work = reply.work.to_bytes() if reply.action == Action.REPLACE else None
        return CheckpointReply(
            reply.action, reply.ub, work, reply.hurry, ledger.solution, reply.generation, ledger.nodes_left()
        )

    @_handler(Improve)
    def improve(self, run: str, request: Improve) -> ImproveReply:
        """A better solution found between checkpoints; returns the run's incumbent value."""
        ledger = self.runs[run]
        ledger.improve(request.best, request.solution)
        return ImproveReply(ledger.ub)

    @_handler(Waiting)
    def waiting(self, run: str, request: Waiting) -> WaitingReply:
        """How many other explorers of the run wait for work, and whether the run stops (cheap: asked
        between GPU launches)."""
        ledger = self.runs[run]
        return WaitingReply(len(ledger.waiting - {request.explorer}), ledger.stopping)

    @_handler(Status)
    def status(self, run: str, request: Status) -> StatusReply:
        """Whether the run is over (stopping, finished or closed) and its incumbent: for heuristic tasks."""
        ledger = self.runs[run]
        return StatusReply(ledger.stopping or ledger.finished, ledger.ub)

    @_handler(State)
    def state(self, run: str, request: State) -> StateReply:
        """Counters, incumbent and the exact remaining fraction; with ``intervals`` the remainder too."""
        ledger = self.runs[run]
        return StateReply(
            nodes=ledger.nodes,
            leaves=ledger.leaves,
            ub=ledger.ub,
            solution=ledger.solution,
            settled=ledger.settled,
            lower_bound=ledger.lower_bound(),
            pieces=ledger.pieces(),
            remaining_fraction=ledger.remaining_fraction(),
            remaining_log10=ledger.remaining_log10(),
            active_explorers=len(ledger.active),
            activity=ledger.activity(),
            checkpoints=ledger.checkpoints,
            finished=ledger.finished,
            stopped=ledger.all_stopped,
            remaining=ledger.remaining().to_bytes() if request.intervals else None,
        )

    @_handler(Estimate)
    def estimate(self, run: str, request: Estimate) -> Done:
        """The driver's latest estimate of the nodes left (and its low and high ends), made when
        ``nodes`` were done (``workflow.eta``): for the dashboard page."""
        self.histories[run].estimate = (int(request.nodes), tuple(float(v) for v in request.estimate))
        return Done(run)

    @_handler(Stop)
    def stop_run(self, run: str, request: Stop) -> Done:
        self.runs[run].stop()
        return Done(run)

    @_handler(Close)
    def close_run(self, run: str, request: Close) -> Done:
        ledger = self.runs.pop(run)
        self.clients.pop(run, None)
        history = self.histories[run]
        history.record(ledger)
        history.closed = True
        closed = [r for r, h in self.histories.items() if h.closed]
        for old in closed[: max(0, len(closed) - KEPT_HISTORIES)]:
            del self.histories[old]
        return Done(run)
