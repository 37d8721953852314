"""A spatial problem: a box, a compiled tape, optional known optimum, and a JSON-ready source.

Every way of stating a problem (the Python model API, a JSON problem file, an ANN file, a model
file) ends in a :class:`Problem`; the solver sees only its box and tape. ``Problem.source`` is a
plain-JSON description that :meth:`Problem.from_source` turns back into the same problem without
running any code (run stores keep it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..core.errors import InputError
from ..core.text import printable, shorten
from .tape import Tape, TapeError

SOURCE_FORMAT = "tape"


class ProblemError(InputError):
    """A problem that cannot be built: the message is one line naming where, what and why
    (``reason``: the why alone)."""

    def __init__(self, message: str):
        message = printable(message)  # names and expressions from files: nothing a terminal obeys
        super().__init__(message)
        self.reason = message

    @classmethod
    def at(cls, where: str, part: str, expression: str | None, reason: str) -> ProblemError:
        """``where: part "expression": reason``, the expression shortened to one short line."""
        quoted = f' "{shorten(expression)}"' if expression is not None else ""
        error = cls(f"{where}: {part}{quoted}: {reason}")
        error.reason = printable(reason)
        return error


@dataclass(frozen=True, eq=False)
class Problem:
    """Minimize the tape's objective over the box [lower, upper] subject to its constraints.

    ``optimum`` and ``x_optimum`` are metadata (a known best value and point, e.g. from a file);
    ``names`` label the variables for display; ``origin`` says where the problem came from (a file,
    a built-in name); ``network_objective``, where the objective is exactly ``c . network(x) + d``
    (:func:`.model.network_objective_of`), is that objective's plain JSON (read by
    :meth:`.network.NetworkObjective.of`), which lets the search bound it through the network's layers;
    ``maximized``: the tape's objective is minus the user's (a maximum found as minus a minimum:
    results are reported in the user's sign); ``source`` is derived: the JSON-ready description of all of it.
    """

    name: str
    lower: np.ndarray
    upper: np.ndarray
    tape: Tape
    optimum: float | None = None
    x_optimum: np.ndarray | None = None
    names: tuple[str, ...] = ()
    origin: str = ""
    network_objective: dict | None = field(default=None, repr=False)
    maximized: bool = False
    source: dict = field(init=False, repr=False)

    def __post_init__(self) -> None:
        where = f'problem "{self.name}"'
        if not isinstance(self.name, str) or not self.name:
            raise ProblemError("problem: the name must be a non-empty string")
        if not isinstance(self.maximized, bool):
            raise ProblemError(f"{where}: maximized must be true or false")
        if not isinstance(self.tape, Tape):
            raise ProblemError(f"{where}: tape must be a Tape, not {type(self.tape).__name__}")
        lower = _finite_vector(self.lower, where, "lower bounds")
        upper = _finite_vector(self.upper, where, "upper bounds")
        d = len(lower)
        if d < 1:
            raise ProblemError(f"{where}: the domain needs at least one variable")
        if len(upper) != d:
            raise ProblemError(f"{where}: {d} lower bounds but {len(upper)} upper bounds")
        bad = np.flatnonzero(lower > upper)
        if len(bad):
            i = int(bad[0])
            lo, hi = float(lower[i]), float(upper[i])
            raise ProblemError(f"{where}: variable {i} has lower bound {lo!r} > upper bound {hi!r}")
        if self.tape.n_vars != d:
            raise ProblemError(f"{where}: the domain has {d} variables but the tape has {self.tape.n_vars}")
        optimum = self.optimum
        if optimum is not None:
            if isinstance(optimum, bool) or not isinstance(optimum, (int, float, np.floating, np.integer)):
                raise ProblemError(f"{where}: optimum must be a number, not {type(optimum).__name__}")
            try:
                optimum = float(optimum)
            except OverflowError:
                optimum = math.inf
            if not math.isfinite(optimum):
                raise ProblemError(f"{where}: optimum must be finite, not {optimum!r}")
        x_optimum = self.x_optimum
        if x_optimum is not None:
            x_optimum = _finite_vector(x_optimum, where, "x_optimum")
            if len(x_optimum) != d:
                raise ProblemError(f"{where}: x_optimum has {len(x_optimum)} values for {d} variables")
        names = tuple(self.names) or tuple(f"x[{i}]" for i in range(d))
        if len(names) != d or not all(isinstance(n, str) for n in names):
            raise ProblemError(f"{where}: names must be {d} strings")
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)
        object.__setattr__(self, "optimum", optimum)
        object.__setattr__(self, "x_optimum", x_optimum)
        object.__setattr__(self, "names", names)
        objective = self.network_objective
        if objective is not None:
            inputs = objective.get("inputs") if isinstance(objective, dict) else None
            if not isinstance(inputs, list) or not all(type(i) is int and 0 <= i < d for i in inputs):
                raise ProblemError(f"{where}: the network objective must read variables 0..{d - 1} by index")
        object.__setattr__(self, "source", self._describe())

    @property
    def dimension(self) -> int:
        return len(self.lower)

    def _describe(self) -> dict:
        described = {
            "format": SOURCE_FORMAT,
            "name": self.name,
            "domain": [[lo, hi] for lo, hi in zip(self.lower.tolist(), self.upper.tolist())],
            "names": list(self.names),
            "tape": self.tape.to_json(),
            "optimum": self.optimum,
            "x_optimum": None if self.x_optimum is None else self.x_optimum.tolist(),
            "origin": self.origin,
        }
        if self.maximized:  # absent otherwise, as below
            described["maximized"] = True
        if self.network_objective is not None:  # absent otherwise: older sources stay the same text
            described["network_objective"] = self.network_objective
        return described

    @classmethod
    def from_source(cls, source: dict) -> Problem:
        """The problem whose ``source`` this is; ProblemError for anything malformed."""
        if not isinstance(source, dict) or source.get("format") != SOURCE_FORMAT:
            raise ProblemError(f'problem source: expected a dict with "format": "{SOURCE_FORMAT}"')
        where = f'problem source "{shorten(str(source.get("name")))}"'
        try:
            domain = np.asarray(source["domain"], dtype=np.float64)
            if domain.ndim != 2 or domain.shape[1] != 2:
                raise ValueError("the domain must be a list of [lo, hi] pairs")
            tape = Tape.from_json(source["tape"])
            objective = source.get("network_objective")
            return cls(
                name=source["name"],
                lower=domain[:, 0],
                upper=domain[:, 1],
                tape=tape,
                optimum=source.get("optimum"),
                x_optimum=source.get("x_optimum"),
                names=tuple(source.get("names") or ()),
                origin=str(source.get("origin", "")),
                maximized=source.get("maximized", False),
                network_objective=objective,
            )
        except ProblemError:
            raise
        except (KeyError, TypeError, ValueError, TapeError) as error:
            raise ProblemError(f"{where}: {shorten(str(error), 200)}") from None


def _finite_vector(values, where: str, what: str) -> np.ndarray:
    """A read-only 1-D float64 copy of ``values``, all finite."""
    try:
        array = np.array(values, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as error:
        raise ProblemError(f"{where}: {what} must be numbers ({shorten(str(error))})") from None
    if array.ndim != 1:
        raise ProblemError(f"{where}: {what} must be a flat list of numbers")
    if not np.all(np.isfinite(array)):
        raise ProblemError(f"{where}: {what} must be finite, got {shorten(str(array.tolist()))}")
    array.setflags(write=False)
    return array
