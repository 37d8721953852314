"""The wire between a run's driver, its tasks and the coordinator (``coordinator.Coordinator``, a Dask
scheduler plugin): the routes, the explorers' actions, and the answer for a run that is over.

Routes (:class:`Route`: scheduler handlers, each called with the run's id ``run``), each with its request
and reply (:class:`Message`: dataclasses that travel as dicts of plain values):

- ``pbbflow_open``: start a run's ledger (the driver): :class:`Open`, :class:`Done`;
- ``pbbflow_checkpoint``: an explorer's report (:class:`Checkpoint`); the reply (:class:`CheckpointReply`)
  says what it does next, and its ``generation`` is echoed in the next report (``ledger``);
- ``pbbflow_improve``: a better solution found between checkpoints (explorers, heuristics): :class:`Improve`,
  :class:`ImproveReply`;
- ``pbbflow_waiting``: whether other explorers wait for work, or the run stops (explorers, between launches):
  :class:`Waiting`, :class:`WaitingReply`;
- ``pbbflow_status``: whether the run is over, and its incumbent (heuristics): :class:`Status`,
  :class:`StatusReply`;
- ``pbbflow_state``: counters, incumbent and what is left (the driver): :class:`State`, :class:`StateReply`;
- ``pbbflow_stop``: answer STOP to every explorer from now on (the driver): :class:`Stop`, :class:`Done`;
- ``pbbflow_close``: forget the run (the driver; also when its client leaves the scheduler): :class:`Close`,
  :class:`Done`;
- ``pbbflow_estimate``: the driver's estimate of the work left, for the dashboard: :class:`Estimate`,
  :class:`Done`.

A run the coordinator does not hold (closed, or never opened there) is over, and every route but
``open`` answers so, with :func:`closed_reply`: an explorer is told STOP, heuristics and explorers'
polls that the run stops, an improvement is dropped (``ub`` 0), ``stop``, ``close`` and ``estimate``
have nothing to do, and ``state``, which has no state to give, answers ``{"closed": True}``
(:meth:`RunHandle.call` raises it as :class:`RunClosed`).  Routes and actions are strings on the
wire (``StrEnum``).  The driver and the tasks send requests through a :class:`RunHandle`
(:meth:`RunHandle.ask`); the coordinator's handlers take them and give replies.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Self


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


class Message:
    """A route's request or reply: a frozen dataclass of plain values (bytes, numbers, strings, lists,
    dicts) that travels as the dict of its fields, never as a pickle."""

    def to_wire(self) -> dict:
        """The message as it travels: its fields by name."""
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}

    @classmethod
    def from_wire(cls, message: dict) -> Self:
        """The message a :meth:`to_wire` dict carries."""
        return cls(**message)


# ---------------------------------------------------------------------- replies


@dataclass(frozen=True)
class Done(Message):
    """The answer of a route with nothing to tell but the run (open, stop, close, estimate)."""

    run: str


@dataclass(frozen=True)
class CheckpointReply(Message):
    """The coordinator's answer to a :class:`Checkpoint`."""

    action: Action
    ub: Any  # prune what cannot beat it: the incumbent's value, or the initial bound
    work: bytes | None = None  # with REPLACE: what to explore instead
    hurry: bool = False  # others wait for work: checkpoint again soon
    solution: Any = None  # the incumbent, if the run has one
    generation: int = 0  # what the next checkpoint echoes
    nodes_left: int | None = None  # explore at most about this many nodes before the next checkpoint

    @classmethod
    def from_wire(cls, message: dict) -> Self:
        return cls(**{**message, "action": Action(message["action"])})


@dataclass(frozen=True)
class ImproveReply(Message):
    """The run's incumbent value, after an :class:`Improve`."""

    ub: Any


@dataclass(frozen=True)
class WaitingReply(Message):
    """How many other explorers of the run wait for work, and whether the run stops."""

    waiting: int
    stopping: bool


@dataclass(frozen=True)
class StatusReply(Message):
    """Whether the run is over (stopping, finished or closed), and its incumbent value."""

    stopping: bool
    ub: Any


@dataclass(frozen=True)
class StateReply(Message):
    """The run's counters, incumbent and what is left (the driver's samples and checkpoints)."""

    nodes: int
    leaves: int
    ub: Any
    solution: Any
    settled: float
    lower_bound: float | None  # None for a family whose pieces hold no bounds
    pieces: int
    remaining_fraction: float
    remaining_log10: float | None
    active_explorers: int
    activity: dict  # worker -> the share of its explorers' capacity holding work
    checkpoints: int
    finished: bool
    stopped: bool  # stopping, and every explorer still present was told so
    remaining: bytes | None  # everything left, in the family's wire format, when asked for


# ---------------------------------------------------------------------- requests (each names its route and reply)


@dataclass(frozen=True)
class Open(Message):
    """Start a run's ledger (``Coordinator.open_run``)."""

    route: ClassVar[Route] = Route.OPEN
    reply: ClassVar[type[Message]] = Done

    kind: str
    space: dict  # the parameters of its work space (``family.work_space``)
    work: bytes  # what is left to explore, in the family's wire format
    ub: Any
    solution: Any = None
    nodes: int = 0
    leaves: int = 0
    settled: float = math.inf
    pieces: int = 1  # cut the work into at least as many pieces
    min_split: int = 2
    label: str = ""  # the run's name on the dashboard
    client: str | None = None  # the id of the client that drives it: the run closes when it leaves
    node_limit: int | None = None  # the run stops once its nodes (``nodes`` included) reach it


@dataclass(frozen=True)
class Checkpoint(Message):
    """An explorer's report (see ``Ledger.checkpoint``)."""

    route: ClassVar[Route] = Route.CHECKPOINT
    reply: ClassVar[type[Message]] = CheckpointReply

    explorer: str
    worker: str  # its worker's address
    remaining: bytes  # the work it has left, in its family's wire format
    generation: int | None = None  # that of the last reply it got (0: none yet; None: not checked)
    capacity: int = 1  # the pieces it works on at once
    nodes: int = 0  # decomposed since its last checkpoint
    leaves: int = 0
    settled: float = math.inf  # a lower bound of what it discarded unexplored since then
    best: Any = None  # its best value and solution, if it found one better than the run's
    solution: Any = None
    attempt: str | None = None  # its task's attempt: a fresh id each time the task runs (``ledger``)


@dataclass(frozen=True)
class Improve(Message):
    """A better solution found between checkpoints (explorers, heuristics)."""

    route: ClassVar[Route] = Route.IMPROVE
    reply: ClassVar[type[Message]] = ImproveReply

    best: Any
    solution: Any


@dataclass(frozen=True)
class Waiting(Message):
    """Whether explorers other than ``explorer`` wait for work (asked between GPU launches)."""

    route: ClassVar[Route] = Route.WAITING
    reply: ClassVar[type[Message]] = WaitingReply

    explorer: str


@dataclass(frozen=True)
class Status(Message):
    """Whether the run is over (heuristics)."""

    route: ClassVar[Route] = Route.STATUS
    reply: ClassVar[type[Message]] = StatusReply


@dataclass(frozen=True)
class State(Message):
    """The run's state; with ``intervals``, everything left too (the driver)."""

    route: ClassVar[Route] = Route.STATE
    reply: ClassVar[type[Message]] = StateReply

    intervals: bool = False


@dataclass(frozen=True)
class Stop(Message):
    """Answer STOP to every explorer from now on (the driver)."""

    route: ClassVar[Route] = Route.STOP
    reply: ClassVar[type[Message]] = Done


@dataclass(frozen=True)
class Close(Message):
    """Forget the run (the driver)."""

    route: ClassVar[Route] = Route.CLOSE
    reply: ClassVar[type[Message]] = Done


@dataclass(frozen=True)
class Estimate(Message):
    """The driver's estimate of the nodes left (and its low and high ends) when ``nodes`` were done."""

    route: ClassVar[Route] = Route.ESTIMATE
    reply: ClassVar[type[Message]] = Done

    nodes: int
    estimate: list


class RunClosed(RuntimeError):
    """The coordinator holds no such run (closed, or never opened there)."""


CLOSED_REPLIES: dict[Route, Message] = {
    Route.CHECKPOINT: CheckpointReply(Action.STOP, 0),
    Route.IMPROVE: ImproveReply(0),
    Route.WAITING: WaitingReply(0, True),
    Route.STATUS: StatusReply(True, 0),
}


def closed_reply(route: Route, run: str) -> dict:
    """Route ``route``'s answer for ``run`` when the coordinator does not hold it (see the module)."""
    if route in CLOSED_REPLIES:
        return CLOSED_REPLIES[route].to_wire()
    if route is Route.STATE:
        return {"closed": True}
    if route in (Route.STOP, Route.CLOSE, Route.ESTIMATE):
        return Done(run).to_wire()
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

    def ask(self, request: Message) -> Message:
        """The coordinator's reply to ``request`` (of the type its route answers with), as :meth:`call`."""
        return request.reply.from_wire(self.call(request.route, **request.to_wire()))
