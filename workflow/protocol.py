"""The wire between a run's driver, its tasks and the coordinator (``coordinator.Coordinator``, a Dask
scheduler plugin): the routes, the explorers' actions, and the answer for a run that is over.

Routes (:class:`Route`: scheduler handlers, each called with the run's id ``run``):

- ``pbbflow_open``: start a run's ledger (the driver);
- ``pbbflow_checkpoint``: an explorer's report (:class:`Checkpoint`); the reply (:class:`CheckpointReply`)
  says what it does next, and its ``generation`` is echoed in the next report (``ledger``);
- ``pbbflow_improve``: a better solution found between checkpoints (explorers, heuristics);
- ``pbbflow_waiting``: whether other explorers wait for work, or the run stops (explorers, between launches);
- ``pbbflow_status``: whether the run is over, and its incumbent (heuristics);
- ``pbbflow_state``: counters, incumbent and what is left (the driver);
- ``pbbflow_stop``: answer STOP to every explorer from now on (the driver);
- ``pbbflow_close``: forget the run (the driver; also when its client leaves the scheduler);
- ``pbbflow_estimate``: the driver's estimate of the work left, for the dashboard.

A run the coordinator does not hold (closed, or never opened there) is over, and every route but
``open`` answers so, with :func:`closed_reply`: an explorer is told STOP, heuristics and explorers'
polls that the run stops, an improvement is dropped (``ub`` 0), ``stop``, ``close`` and ``estimate``
have nothing to do, and ``state``, which has no state to give, answers ``{"closed": True}``
(:meth:`RunHandle.call` raises it as :class:`RunClosed`).  Routes and actions are strings on the
wire (``StrEnum``).  The driver and the tasks call the routes through a :class:`RunHandle`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Self


class Route(StrEnum):
    """The coordinator's handlers."""

    OPEN = "pbbflow_open"
    CHECKPOINT = "pbbflow_checkpoint"
    IMPROVE = "pbbflow_improve"
    WAITING = "pbbflow_waiting"
    STATUS = "pbbflow_status"
    STATE = "pbbflow_state"
    STOP = "pbbflow_stop"
    CLOSE = "pbbflow_close"
    ESTIMATE = "pbbflow_estimate"


class Action(StrEnum):
    """What an explorer does after a checkpoint."""

    CONTINUE = "continue"  # go on with its work
    REPLACE = "replace"  # explore the reply's ``work`` instead
    WAIT = "wait"  # nothing to do yet: ask again soon
    STOP = "stop"


@dataclass(frozen=True)
class Checkpoint:
    """An explorer's report (the keywords of ``Route.CHECKPOINT``; see ``Ledger.checkpoint``)."""

    explorer: str
    worker: str  # its worker's address
    remaining: bytes  # the work it has left, in its family's wire format
    generation: int | None  # that of the last reply it got (0: none yet)
    capacity: int = 1  # the pieces it works on at once
    nodes: int = 0  # decomposed since its last checkpoint
    leaves: int = 0
    settled: float = math.inf  # a lower bound of what it discarded unexplored since then
    best: Any = None  # its best value and solution, if it found one better than the run's
    solution: Any = None
    attempt: str | None = None  # its task's attempt: a fresh id each time the task runs (``ledger``)

    def to_wire(self) -> dict:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class CheckpointReply:
    """The coordinator's answer to a :class:`Checkpoint`."""

    action: Action
    ub: Any  # prune what cannot beat it: the incumbent's value, or the initial bound
    work: bytes | None = None  # with REPLACE: what to explore instead
    hurry: bool = False  # others wait for work: checkpoint again soon
    solution: Any = None  # the incumbent, if the run has one
    generation: int = 0  # what the next checkpoint echoes

    def to_wire(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_wire(cls, message: dict) -> Self:
        return cls(**{**message, "action": Action(message["action"])})


class RunClosed(RuntimeError):
    """The coordinator holds no such run (closed, or never opened there)."""


def closed_reply(route: Route, run: str) -> dict:
    """Route ``route``'s answer for ``run`` when the coordinator does not hold it (see the module)."""
    if route is Route.CHECKPOINT:
        return CheckpointReply(Action.STOP, 0).to_wire()
    if route is Route.IMPROVE:
        return {"ub": 0}
    if route is Route.WAITING:
        return {"waiting": 0, "stopping": True}
    if route is Route.STATUS:
        return {"stopping": True, "ub": 0}
    if route is Route.STATE:
        return {"closed": True}
    if route in (Route.STOP, Route.CLOSE, Route.ESTIMATE):
        return {"run": run}
    raise ValueError(f"route {route} answers no closed run")


@dataclass(frozen=True)
class RunHandle:
    """Run ``run`` on the coordinator, as its driver and its tasks call it: ``scheduler`` is a client's
    or a worker's connection to the scheduler, ``loop`` its event loop; a call waits at most
    ``timeout`` seconds (None: as long as it takes)."""

    run: str
    scheduler: Any
    loop: Any
    timeout: float | None = None

    def call(self, route: Route, **kwargs) -> dict:
        """The coordinator's answer on ``route`` for this run (from another thread than ``loop``'s);
        :class:`RunClosed` where it holds no such run and the route has nothing to say then (``state``)."""
        from distributed.utils import sync  # here: the ledger imports this module, and stays free of Dask

        reply = sync(self.loop, getattr(self.scheduler, route), run=self.run, callback_timeout=self.timeout, **kwargs)
        if reply.get("closed"):
            raise RunClosed(f"run {self.run} is not open on the scheduler")
        return reply
