"""The instruction tape a spatial problem compiles to, shared by every evaluator (CPU and GPU).

A tape is a straight-line program in topological order: instruction ``i`` computes slot ``i``
from earlier slots. Its arrays are plain int32/float64 so that numba (CPU and CUDA) reads them
directly and the run store keeps them without pickling.

- ``op[i]``: an :class:`Op`.
- ``arg0[i]``: the first operand's slot; for ``VAR`` the variable index, for ``CONST`` the
  constant index.
- ``arg1[i]``: the second operand's slot; for ``POWI`` the integer exponent; -1 when unused.
- ``const_lo/const_hi``: enclosures of the constants (a decimal number is the point interval of
  its nearest double; ``pi`` and ``e`` are enclosed by their neighbouring doubles).
- ``outputs``: the slots of the objective, then the inequalities (``<= 0``), then the equalities
  (``== 0``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntEnum

import numpy as np


class Op(IntEnum):
    """Instruction codes (stable: tapes are stored and sent to GPUs by these numbers)."""

    VAR = 0
    CONST = 1
    ADD = 2
    SUB = 3
    MUL = 4
    DIV = 5
    NEG = 6
    POWI = 7  # x ** k, k an integer in arg1 (negative allowed)
    SQRT = 8
    EXP = 9
    LOG = 10
    TANH = 11
    SIN = 12
    COS = 13
    TAN = 14
    ABS = 15
    ATAN2 = 16  # atan2(arg0, arg1) = atan2(y, x)
    MIN = 17
    MAX = 18
    SIGMOID = 19  # 1 / (1 + exp(-x))
    RELU = 20  # max(x, 0)


BINARY = frozenset({Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.ATAN2, Op.MIN, Op.MAX})
UNARY = frozenset(Op) - BINARY - {Op.VAR, Op.CONST, Op.POWI}
MAX_EXPONENT = 2**31 - 1


class TapeError(ValueError):
    """A tape that is not a valid straight-line program (bad codes, forward references, ...)."""


@dataclass(frozen=True, eq=False)
class Tape:
    """A compiled problem: f, g (<= 0) and h (== 0) over ``n_vars`` variables (see the module doc)."""

    op: np.ndarray
    arg0: np.ndarray
    arg1: np.ndarray
    const_lo: np.ndarray
    const_hi: np.ndarray
    outputs: np.ndarray
    n_vars: int
    n_ineq: int
    n_eq: int

    def __post_init__(self) -> None:
        for name in ("op", "arg0", "arg1", "const_lo", "const_hi", "outputs"):
            array = getattr(self, name)
            if isinstance(array, np.ndarray) and not (array.flags.c_contiguous and array.flags.writeable):
                object.__setattr__(self, name, np.array(array, order="C"))  # every tape one numba type
        self.check()

    @property
    def size(self) -> int:
        return len(self.op)

    @property
    def objective(self) -> int:
        return int(self.outputs[0])

    @property
    def inequalities(self) -> np.ndarray:
        return self.outputs[1 : 1 + self.n_ineq]

    @property
    def equalities(self) -> np.ndarray:
        return self.outputs[1 + self.n_ineq :]

    def check(self) -> None:
        """Raise TapeError unless every instruction is well formed (tapes may come from a store)."""
        k = len(self.op)
        for name in ("op", "arg0", "arg1", "outputs"):
            array = getattr(self, name)
            if not (isinstance(array, np.ndarray) and array.dtype == np.int32 and array.ndim == 1):
                raise TapeError(f"tape field {name} must be a 1-D int32 array")
        for name in ("const_lo", "const_hi"):
            array = getattr(self, name)
            if not (isinstance(array, np.ndarray) and array.dtype == np.float64 and array.ndim == 1):
                raise TapeError(f"tape field {name} must be a 1-D float64 array")
        if len(self.arg0) != k or len(self.arg1) != k or len(self.const_lo) != len(self.const_hi):
            raise TapeError("tape arrays have different lengths")
        if self.n_vars < 1 or self.n_ineq < 0 or self.n_eq < 0:
            raise TapeError("a tape needs at least one variable and non-negative constraint counts")
        if len(self.outputs) != 1 + self.n_ineq + self.n_eq:
            raise TapeError("tape outputs do not match its constraint counts")
        if not np.all((self.outputs >= 0) & (self.outputs < k)):
            raise TapeError("a tape output names a slot that does not exist")
        if not np.all(np.isfinite(self.const_lo) & np.isfinite(self.const_hi)) or np.any(self.const_lo > self.const_hi):
            raise TapeError("tape constants must be finite intervals with lo <= hi")
        codes = {int(code) for code in Op}
        for i, (code, a, b) in enumerate(zip(self.op.tolist(), self.arg0.tolist(), self.arg1.tolist())):
            if code not in codes:
                raise TapeError(f"instruction {i}: unknown code {code}")
            code = Op(code)
            if code is Op.VAR:
                ok = 0 <= a < self.n_vars
            elif code is Op.CONST:
                ok = 0 <= a < len(self.const_lo)
            elif code is Op.POWI:
                ok = 0 <= a < i
            elif code in BINARY:
                ok = 0 <= a < i and 0 <= b < i
            else:
                ok = 0 <= a < i
            if not ok:
                raise TapeError(f"instruction {i} ({code.name}) refers to a slot or index out of range")

    def to_json(self) -> dict:
        """A JSON-ready description (exact: Python writes floats with round-trip precision)."""
        return {
            "op": self.op.tolist(),
            "arg0": self.arg0.tolist(),
            "arg1": self.arg1.tolist(),
            "const_lo": self.const_lo.tolist(),
            "const_hi": self.const_hi.tolist(),
            "outputs": self.outputs.tolist(),
            "n_vars": self.n_vars,
            "n_ineq": self.n_ineq,
            "n_eq": self.n_eq,
        }

    @classmethod
    def from_json(cls, data: dict) -> Tape:
        """The tape :meth:`to_json` described; TapeError for anything malformed."""
        try:
            return cls(
                op=np.asarray(data["op"], dtype=np.int32),
                arg0=np.asarray(data["arg0"], dtype=np.int32),
                arg1=np.asarray(data["arg1"], dtype=np.int32),
                const_lo=np.asarray(data["const_lo"], dtype=np.float64),
                const_hi=np.asarray(data["const_hi"], dtype=np.float64),
                outputs=np.asarray(data["outputs"], dtype=np.int32),
                n_vars=int(data["n_vars"]),
                n_ineq=int(data["n_ineq"]),
                n_eq=int(data["n_eq"]),
            )
        except (KeyError, TypeError, ValueError, OverflowError) as error:
            if isinstance(error, TapeError):
                raise
            raise TapeError(f"malformed tape: {error}") from None


class TapeBuilder:
    """Appends instructions, sharing identical ones (common subexpressions are computed once)."""

    def __init__(self, n_vars: int):
        self.n_vars = n_vars
        self._rows: list[tuple[int, int, int]] = []
        self._index: dict[tuple[int, int, int], int] = {}
        self._consts: list[tuple[float, float]] = []
        self._const_index: dict[tuple[float, float], int] = {}

    def _emit(self, code: Op, a: int, b: int = -1) -> int:
        key = (int(code), int(a), int(b))
        slot = self._index.get(key)
        if slot is None:
            slot = len(self._rows)
            self._rows.append(key)
            self._index[key] = slot
        return slot

    def var(self, index: int) -> int:
        if not 0 <= index < self.n_vars:
            raise TapeError(f"variable x[{index}] out of range (the problem has {self.n_vars})")
        return self._emit(Op.VAR, index)

    def const(self, lo: float, hi: float | None = None) -> int:
        """A constant enclosed by [lo, hi] (a point when hi is None)."""
        lo = float(lo)
        hi = lo if hi is None else float(hi)
        if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
            raise TapeError(f"constant [{lo}, {hi}] is not a finite interval")
        key = (lo + 0.0, hi + 0.0)  # -0.0 and 0.0 are one constant
        index = self._const_index.get(key)
        if index is None:
            index = len(self._consts)
            self._consts.append(key)
            self._const_index[key] = index
        return self._emit(Op.CONST, index)

    def unary(self, code: Op, a: int) -> int:
        if code not in UNARY:
            raise TapeError(f"{code.name} is not a unary operation")
        return self._emit(code, a)

    def binary(self, code: Op, a: int, b: int) -> int:
        if code not in BINARY:
            raise TapeError(f"{code.name} is not a binary operation")
        return self._emit(code, a, b)

    def powi(self, a: int, exponent: int) -> int:
        if not -MAX_EXPONENT <= exponent <= MAX_EXPONENT:
            raise TapeError(f"exponent {exponent} is too large")
        return self._emit(Op.POWI, a, exponent)

    def build(self, objective: int, inequalities: list[int] = (), equalities: list[int] = ()) -> Tape:
        rows = np.asarray(self._rows, dtype=np.int64).reshape(-1, 3)
        consts = np.asarray(self._consts, dtype=np.float64).reshape(-1, 2)
        return Tape(
            op=rows[:, 0].astype(np.int32),
            arg0=rows[:, 1].astype(np.int32),
            arg1=rows[:, 2].astype(np.int32),
            const_lo=consts[:, 0].copy(),
            const_hi=consts[:, 1].copy(),
            outputs=np.asarray([objective, *inequalities, *equalities], dtype=np.int32),
            n_vars=self.n_vars,
            n_ineq=len(inequalities),
            n_eq=len(equalities),
        )
