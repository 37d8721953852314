"""The seam between the workflow and a family of problems.

The ledger, the coordinator and the tasks hand out, split, count, measure and explore work
through these protocols and know no family:

- a :class:`WorkSet` is a family's unit of work, made of pieces (flow shop: intervals of
  [0, n!), ``flowshop.packed.PackedUnit``; spatial B&B: boxes with their lower bounds);
- a :class:`WorkSpace` is the space those sets live in: it decodes their wire format (bytes,
  never a pickle), forms unions, and measures what is left;
- an :class:`Engine` explores a work set held in a worker between checkpoints;
- a :class:`RunInstance` is what a run solves, with its options, as the run store and the driver
  see it: its arrays on disk, its work and incumbent there, its result, its code to warm up;
- a :class:`Family` (a module) names its space and its instance, makes engines and runs its side
  heuristic; it may draw its runs' pictures and its view on the dashboard page.

A family is found by its run kind (:func:`family`), so that a scheduler or a worker builds what
it needs from a message naming the kind and plain parameters (``WorkSpace.params``, the run's
options).  The two built-in families are named in ``FAMILIES`` and imported on first use.  A third
family, in a package of its own, declares an entry point of the group ``pbbflow.families``
(``toy = "toy_package.family"``: the kind, and the module or object that is its :class:`Family`),
read the first time a kind is not known; or it calls :func:`register` in every process that
looks it up (the client, the scheduler and the workers).  The built-ins are not entry points: a
source tree or an editable install whose metadata predates a family still finds them.

A family's commands (:class:`Commands`: flow shop's ``solve`` and ``heuristic``, spatial's
``minimize``) live in a module of their own, named apart in ``COMMANDS`` (or by an entry point of
the group ``pbbflow.commands``, or ``register(..., commands=...)``), so that the command line
imports what its parser needs and no family's engines.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, Protocol, Self, cast, runtime_checkable

import numpy as np

from .result import Result

ENTRY_POINTS = "pbbflow.families"  # the entry-point group of families in other packages
COMMAND_ENTRY_POINTS = "pbbflow.commands"  # the entry-point group of those families' commands
_BUILTINS = {"flowshop": "pbbflow.flowshop", "spatial": "pbbflow.spatial"}  # run kind -> its package
# run kind -> its Family, or where to find it ("module" or "module:object"), imported on first use
FAMILIES: dict[str, Family | ModuleType | str] = {kind: f"{package}.family" for kind, package in _BUILTINS.items()}
# run kind -> its family's Commands, or where to find them, imported by the command line only
COMMANDS: dict[str, Commands | ModuleType | str] = {kind: f"{package}.commands" for kind, package in _BUILTINS.items()}
SUITE_KIND = "pbbflow-suite"  # the root kind of a store of verification instances (``spatial.suite``)
# a store kind other than the run store's -> its StoreCommands, or where to find them (imported on first use)
STORE_COMMANDS: dict[str, StoreCommands | ModuleType | str] = {SUITE_KIND: "pbbflow.spatial.suite_commands"}


class WorkSet(Protocol):
    """A family's unit of work; immutable."""

    def __len__(self) -> int:
        """Its pieces (intervals, boxes): what an explorer of capacity k works on k at a time."""

    @property
    def space(self) -> WorkSpace:
        """The space it lives in."""

    def weight(self) -> float:
        """A number that orders sets of one space by their work (to choose what to cut)."""

    def to_bytes(self) -> bytes:
        """The wire format, read back by ``WorkSpace.decode``."""

    def split_half(self) -> tuple[Self, Self]:
        """``(kept, given)``, about half of the work each, from a set of many pieces."""

    def split_piece(self, min_split: int) -> tuple[Self, Self] | None:
        """``(kept, given)``: work for another explorer (flow shop: the right half of its largest
        interval, if that holds ``min_split`` positions; spatial: half its boxes, or half of its one
        box); None when nothing can be given."""

    def pieces(self) -> list[Self]:
        """One set per piece, in order."""

    def accept(self, reported: Self) -> Self:
        """What of an explorer's report counts, ``self`` being the coordinator's copy of the work
        it was given (flow shop: the intersection, so that nothing outside the copy comes back)."""


class WorkSpace(Protocol):
    """The space of a run's work sets."""

    kind: str

    def params(self) -> dict:
        """The constructor's arguments, JSON-able: how a scheduler rebuilds this space."""

    def empty(self) -> WorkSet:
        """The empty set."""

    def decode(self, data: bytes) -> WorkSet:
        """A set from its wire format; ``ValueError`` (one line) when malformed."""

    def union(self, sets: Sequence[WorkSet]) -> WorkSet:
        """The union of disjoint sets."""

    def remaining_fraction(self, sets: Sequence[WorkSet]) -> float:
        """The share of the whole space that the disjoint ``sets`` hold."""

    def remaining_log10(self, sets: Sequence[WorkSet]) -> float | None:
        """log10 of that share (None when the sets are empty): readable where it is tiny."""

    def lower_bound(self, sets: Sequence[WorkSet]) -> float | None:
        """The lowest bound the sets' pieces hold (spatial: the least box bound, inf when empty);
        None for a family whose pieces hold none (flow shop)."""


class Engine(Protocol):
    """Explores a work set held in a worker, from one checkpoint to the next."""

    capacity: int  # the pieces it works on at once (threads, IVMs)

    def load(self, data: bytes) -> None:
        """Explore this set (the wire format) from now on."""

    def run(
        self,
        ub: Any,
        seconds: float,
        report: Callable[[Any, Any], None],
        waiting: Callable[[], bool],
        max_nodes: int | None = None,
    ) -> tuple[int, int, tuple[Any, Any] | None]:
        """Explore for about ``seconds`` below ``ub``, or until ``waiting()`` says others wait (cheap
        to call: the task asks the coordinator at most every 0.2 s), or until about ``max_nodes``
        nodes (the run's node limit; None: no limit); may send improvements early
        through ``report(value, solution)``.  Returns the nodes and leaves
        of this call and the best ``(value, solution)`` it found (None if none)."""

    def remaining(self) -> bytes:
        """What is left of its set (the wire format)."""

    def extras(self) -> dict:
        """More of its checkpoint (``Ledger.checkpoint``'s keywords, e.g. ``settled``); may be empty."""

    # Optional: ``offer(value, solution)``, the run's incumbent, given before each ``run`` where the
    # coordinator has one (spatial: the point, which the engine verifies and bounds with).


class StoredWork(Protocol):
    """A checkpoint's work as the family keeps it in the run store (flow shop: a ``WorkUnit``;
    spatial: a ``BoxSet``): as many pieces as ``len``, and the wire format of its ``WorkSet``."""

    def __len__(self) -> int: ...

    def to_bytes(self) -> bytes: ...


class RunInstance(Protocol):
    """What a run solves and how, as its run store and its driver see it (``storage.runstore``,
    ``workflow.run``).  Its arrays and options are everything a result depends on: the store signs
    them and rebuilds the instance from them (``Family.Instance.from_store``)."""

    kind: str  # the family's run kind (``family``)
    name: str  # the instance's or problem's name
    options: dict  # plain JSON
    work_arrays: tuple[str, ...]  # the names of a checkpoint's work arrays, in order
    solution_array: str  # the name of a checkpoint's incumbent array
    side_heuristics_per_gpu: int  # side-heuristic tasks beside each GPU worker by default

    @classmethod
    def from_store(cls, name: str, arrays: dict[str, np.ndarray], options: Any) -> Self:
        """The instance a store holds; ``ValueError`` (one line) for anything invalid."""

    def arrays(self) -> dict[str, np.ndarray]:
        """The instance as named arrays (``instance/<name>`` in the store)."""

    def space(self) -> WorkSpace:
        """The space of its work."""

    def encode_work(self, work: StoredWork) -> dict[str, np.ndarray]:
        """A checkpoint's work as arrays named ``work_arrays``."""

    def decode_work(self, arrays: dict[str, np.ndarray] | None = None, data: bytes | None = None) -> StoredWork:
        """A checkpoint's work from its arrays, or from the wire format ``data``; ``ValueError``."""

    def encode_solution(self, solution: Any) -> np.ndarray:
        """The incumbent (None: none) as an array (empty: none)."""

    def decode_solution(self, array: np.ndarray) -> Any:
        """The incumbent of ``encode_solution``'s array (None for an empty one)."""

    def incumbent_problem(self, value: Any, solution: Any) -> str | None:
        """What is wrong with ``(value, solution)`` as an incumbent (None: nothing; both None: no
        incumbent yet)."""

    def search_ub(self) -> Any:
        """The value the search prunes with from the start (without an incumbent)."""

    def engine_options(self, **settings: Any) -> dict:
        """The options its engines and side heuristic get (``settings``: the session's, e.g. ``ivms``;
        one not given: the family's default)."""

    def result(
        self,
        remaining: StoredWork,
        incumbent: Any,
        solution: Any,
        settled: float,
        nodes: int,
        leaves: int,
        elapsed_s: float,
    ) -> Result:
        """The result of a run in this state (its ``status``: ``LIMIT`` while work is left)."""

    def no_gpu(self) -> str | None:
        """Why this run cannot use GPUs, if it cannot (None: it can; flow shop: a bound other than
        lb1); ``pbbflow resume`` asks it of every run (``cli.main``)."""

    def client_code(self) -> Any:
        """Load the code the client process runs for this run (the coordinator's): a ``CodeLoad``."""

    def first_run_code(self, explorers: str | None = "cpu") -> tuple[str, str] | None:
        """What a run would compile in this process, and about how long that takes (for
        ``core.compiling.FirstRunNotice``); None where numba's cache holds its code.  ``explorers``:
        where the run's explorers are (``cli.runs.explorers_here``)."""

    def worker_code(self) -> tuple[Callable[..., Any], tuple]:
        """``(function, arguments)``: the task that loads a worker's code for this run (it returns a
        ``core.compiling.CodeLoad``)."""


@runtime_checkable
class EstimatesWork(Protocol):
    """A run instance that can estimate its work left (optional: ``workflow.eta`` estimates where
    the instance is one; flow shop: ``flowshop.estimate``)."""

    def estimate_left(
        self, work: StoredWork, ub: Any, seconds: float, threads: int = 1
    ) -> tuple[float, float, float] | None:
        """(nodes, low, high): the nodes explorers would decompose in ``work`` under the incumbent ``ub``
        and a range of that estimate, from about ``seconds`` of sampling on ``threads`` threads; None
        when it cannot say."""


class Family(Protocol):
    """What a family's module provides: its space, its instance, its engines, its side heuristic,
    and how its results read (``result_fields``, ``result_lines``, ``history_text``)."""

    Space: Callable[..., WorkSpace]  # its WorkSpace, built from ``params()``
    Instance: type[RunInstance]  # its run instance, rebuilt from a store
    # a result's JSON fields, in order (``core.result.Result.to_dict``): "key" (a shared field or an
    # extra), or "key=field" (the shared ``field`` under the family's name ``key``)
    result_fields: tuple[str, ...]

    def result_lines(self, result: Result) -> list[str]:
        """The result as lines (``info``, and ``solve`` without ``--json``), before its ``run``."""

    def history_text(self, history: dict[str, list], i: int) -> str:
        """Row ``i`` of a run's history as ``info`` summarizes it (between its clock and its nodes)."""

    def make_engine(self, options: dict, *, gpu: bool, threads: int) -> Engine:
        """An engine for the run's ``options`` on a GPU worker or on ``threads`` CPU threads."""

    def side_heuristic(
        self, options: dict, seed: int, improved: Callable[[Any, Any], None], stopping: Callable[[], bool]
    ) -> dict:
        """Look for better solutions until ``stopping()``, each through ``improved(value, solution)``."""

    # Optional, each importing its drawing code only when called (a worker never loads it):
    # ``plot_run(store, out) -> list[Path]``: write the pictures of a run store
    # (``storage.runstore.RunStore``) into the folder ``out``, which exists, and return their paths
    # (``pbbflow plot``; without it, ``viz.plots.history`` of the series every run records);
    # ``dashboard_view() -> type``: the ``viz.dashboard.View`` of its runs on the dashboard page
    # (without it, ``viz.dashboard.HistoryView``).


class Commands(Protocol):
    """What a family's commands module provides to the command line (``cli.main``)."""

    def add_commands(self, subparsers: Any) -> None:
        """Add its commands to ``pbbflow``'s subparsers (an ``argparse`` subparsers action), each
        parser with the default ``handler``: the function of the parsed arguments that runs the
        command and returns its exit code."""

    def add_run_settings(self, group: Any, *, any_family: bool) -> None:
        """Add the options its runs take from whichever command drives them (``workflow.run.drive``'s
        settings, e.g. flow shop's ``--ivms``) to the cluster group of an ``argparse`` parser: of its
        own commands, or (``any_family``) of ``resume``, where their help names the family; their
        defaults hold for every command."""


class StoreCommands(Protocol):
    """``resume`` and ``info`` on a store of another kind than the run store's (``STORE_COMMANDS``)."""

    def resume(self, args: Any) -> int:
        """Continue the store that ``resume``'s parsed arguments name; the exit code."""

    def info(self, args: Any) -> int:
        """Show the store that ``info``'s parsed arguments name; the exit code."""


def store_commands(kind: Any) -> StoreCommands | None:
    """The commands on stores of root kind ``kind``; None for a run store's kind or an unknown one."""
    found = STORE_COMMANDS.get(kind) if isinstance(kind, str) else None
    if found is None:
        return None
    STORE_COMMANDS[kind] = found = _imported(found)
    return cast(StoreCommands, found)


def register(kind: str, family: Family | ModuleType | str, commands: Commands | ModuleType | str | None = None) -> None:
    """Make run kind ``kind`` known in this process: its family, or where to find it (``"module"`` or
    ``"module:object"``, imported on first use), and its commands, if it has any (likewise);
    ``ValueError`` where ``kind`` is another family's."""
    known, known_commands = FAMILIES.get(kind), COMMANDS.get(kind)
    other_commands = commands is not None and known_commands not in (None, commands)
    if (known is not None and known != family) or other_commands:
        raise ValueError(f"run kind {kind!r} is already registered")
    FAMILIES[kind] = family
    if commands is not None:
        COMMANDS[kind] = commands


def _discover() -> None:
    """Add the families and commands that installed packages declare (``ENTRY_POINTS``,
    ``COMMAND_ENTRY_POINTS``) to the kinds not known."""
    from importlib.metadata import entry_points  # only here: a module that imports email and zipfile

    for group, known in ((ENTRY_POINTS, FAMILIES), (COMMAND_ENTRY_POINTS, COMMANDS)):
        for point in entry_points(group=group):
            known.setdefault(point.name, point.value)


def _imported(found: Any) -> Any:
    """``found``, or the module or object that the string ``"module"`` or ``"module:object"`` names."""
    if not isinstance(found, str):
        return found
    module, _, name = found.partition(":")
    found = importlib.import_module(module)
    for attribute in filter(None, name.split(".")):
        found = getattr(found, attribute)
    return found


def known_kinds() -> list[str]:
    """The run kinds known here, sorted: the built-ins, those registered and those of entry points."""
    _discover()
    return sorted(FAMILIES)


def family(kind: str) -> Family:
    """The family of run kind ``kind``; ``ValueError`` for an unknown kind."""
    if kind not in FAMILIES:
        _discover()
    found = FAMILIES.get(kind)
    if found is None:
        raise ValueError(f"unknown run kind {kind!r} (known: {', '.join(known_kinds())})")
    FAMILIES[kind] = found = _imported(found)
    return cast(Family, found)


def family_commands() -> list[Commands]:
    """Every known family's commands, in the order their kinds were made known (the built-ins, then
    those registered, then those of entry points)."""
    _discover()
    for kind, found in COMMANDS.items():
        COMMANDS[kind] = _imported(found)
    return [cast(Commands, found) for found in COMMANDS.values()]


def work_space(kind: str, params: dict) -> WorkSpace:
    """The work space of run kind ``kind`` with ``params``; ``ValueError`` for an unknown kind."""
    return family(kind).Space(**params)
