"""Hand-built tapes of a few spatial test problems (``shared/data/spatial``), for benchmark self-checks.

Written with :class:`TapeBuilder` through a small operator-overloading wrapper, independently of
the JSON expression parser, so that a reference solver can be checked before the parser exists.
:func:`evaluate_at` evaluates a tape at a point in float64 (constants at their midpoints): the
independent check of a tape against a problem file's ``optimum`` at its ``x_optimum``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pbbflow.spatial.tape import Op, Tape, TapeBuilder

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "spatial"


class Term:
    """A tape slot with arithmetic operators: ``x[0] ** 2 + 3 * x[1]`` emits instructions."""

    def __init__(self, builder: TapeBuilder, slot: int):
        self.builder = builder
        self.slot = slot

    def _lift(self, other: Term | float) -> Term:
        return other if isinstance(other, Term) else Term(self.builder, self.builder.const(other))

    def _binary(self, code: Op, left: Term | float, right: Term | float) -> Term:
        return Term(self.builder, self.builder.binary(code, self._lift(left).slot, self._lift(right).slot))

    def __add__(self, other: Term | float) -> Term:
        return self._binary(Op.ADD, self, other)

    def __radd__(self, other: float) -> Term:
        return self._binary(Op.ADD, other, self)

    def __sub__(self, other: Term | float) -> Term:
        return self._binary(Op.SUB, self, other)

    def __rsub__(self, other: float) -> Term:
        return self._binary(Op.SUB, other, self)

    def __mul__(self, other: Term | float) -> Term:
        return self._binary(Op.MUL, self, other)

    def __rmul__(self, other: float) -> Term:
        return self._binary(Op.MUL, other, self)

    def __truediv__(self, other: Term | float) -> Term:
        return self._binary(Op.DIV, self, other)

    def __rtruediv__(self, other: float) -> Term:
        return self._binary(Op.DIV, other, self)

    def __neg__(self) -> Term:
        return Term(self.builder, self.builder.unary(Op.NEG, self.slot))

    def __pow__(self, exponent: int) -> Term:
        return Term(self.builder, self.builder.powi(self.slot, exponent))


def apply(code: Op, *args: Term | float) -> Term:
    """A unary or binary tape operation on terms (the first argument must be a Term)."""
    first = args[0]
    if len(args) == 2:
        return first._binary(code, first, args[1])
    return Term(first.builder, first.builder.unary(code, first.slot))


def pi(builder: TapeBuilder) -> Term:
    """pi enclosed by its neighbouring doubles (math.pi is the double just below it)."""
    return Term(builder, builder.const(math.pi, math.nextafter(math.pi, math.inf)))


@dataclass(frozen=True)
class HandTape:
    """A tape with its box and the problem file's known optimum and minimizer."""

    name: str
    tape: Tape
    lower: list[float]
    upper: list[float]
    optimum: float
    x_optimum: list[float]


def _problem(file_name: str, build) -> HandTape:
    """A problem file's box and metadata with the tape ``build(builder, x)`` returns."""
    problem = json.loads((DATA / file_name).read_text())
    builder = TapeBuilder(problem["variables"])
    x = [Term(builder, builder.var(i)) for i in range(problem["variables"])]
    objective, inequalities, equalities = build(builder, x)
    tape = builder.build(objective.slot, [g.slot for g in inequalities], [h.slot for h in equalities])
    lower, upper = (list(map(float, bounds)) for bounds in zip(*problem["domain"]))
    return HandTape(problem["name"], tape, lower, upper, problem["optimum"], problem["x_optimum"])


def branin() -> HandTape:
    def build(b, x):
        p = pi(b)
        f = (x[1] - 5.1 / (4 * p**2) * x[0] ** 2 + 5 / p * x[0] - 6) ** 2
        return f + 10 * (1 - 1 / (8 * p)) * apply(Op.COS, x[0]) + 10, [], []

    return _problem("B1-branin-branin-hoo.json", build)


def six_hump_camel() -> HandTape:
    def build(b, x):
        f = (4 - 2.1 * x[0] ** 2 + x[0] ** 4 / 3) * x[0] ** 2 + x[0] * x[1] + (-4 + 4 * x[1] ** 2) * x[1] ** 2
        return f, [], []

    return _problem("B2-six-hump-camel.json", build)


def peaks() -> HandTape:
    def build(b, x):
        x0, x1 = x
        f = 3 * (1 - x0) ** 2 * apply(Op.EXP, -(x0**2) - (x1 + 1) ** 2)
        f = f - 10 * (x0 / 5 - x0**3 - x1**5) * apply(Op.EXP, -(x0**2) - x1**2)
        return f - apply(Op.EXP, -((x0 + 1) ** 2) - x1**2) / 3, [], []

    return _problem("B14-peaks-matlab.json", build)


def eggholder() -> HandTape:
    def build(b, x):
        x0, x1 = x
        first = -(x1 + 47) * apply(Op.SIN, apply(Op.SQRT, apply(Op.ABS, x1 + x0 / 2 + 47)))
        return first - x0 * apply(Op.SIN, apply(Op.SQRT, apply(Op.ABS, x0 - (x1 + 47)))), [], []

    return _problem("B12-eggholder.json", build)


def g06() -> HandTape:
    def build(b, x):
        f = (x[0] - 10) ** 3 + (x[1] - 20) ** 3
        g1 = -((x[0] - 5) ** 2) - (x[1] - 5) ** 2 + 100
        g2 = (x[0] - 6) ** 2 + (x[1] - 5) ** 2 - 82.81
        return f, [g1, g2], []

    return _problem("C1-g06-cec2006-g06-floudas-pardalos.json", build)


def hs071() -> HandTape:
    def build(b, x):
        f = x[0] * x[3] * (x[0] + x[1] + x[2]) + x[2]
        g = 25 - x[0] * x[1] * x[2] * x[3]
        h = x[0] ** 2 + x[1] ** 2 + x[2] ** 2 + x[3] ** 2 - 40
        return f, [g], [h]

    return _problem("C17-hs071-hock-schittkowski-71.json", build)


def peaks_ann() -> HandTape:
    """The 2-10-8-1 tanh network: inputs scaled to [-1, 1], linear output de-standardized."""
    net = json.loads((DATA / "peaks-ann-2-10-8-1.json").read_text())
    lo, hi = net["in_lo"], net["in_hi"]
    builder = TapeBuilder(2)
    layer = [2 * (Term(builder, builder.var(i)) - lo) / (hi - lo) - 1 for i in range(2)]
    for k, (weights, biases) in enumerate(zip(net["W"], net["b"])):
        sums = []
        for row, bias in zip(weights, biases):
            total = row[0] * layer[0]
            for w, a in zip(row[1:], layer[1:]):
                total = total + w * a
            sums.append(total + bias)
        layer = sums if k == len(net["W"]) - 1 else [apply(Op.TANH, s) for s in sums]
    y = layer[0] * net["y_sd"] + net["y_mu"]
    tape = builder.build(y.slot)
    return HandTape("peaks ANN 2-10-8-1", tape, [lo, lo], [hi, hi], net["ann_min_f"], net["ann_min_x"])


def every_operation() -> HandTape:
    """A tape with every operation MAiNGO supports (for point checks; optimum and x_optimum unknown)."""
    builder = TapeBuilder(3)
    x, y, z = (Term(builder, builder.var(i)) for i in range(3))
    f = apply(Op.SQRT, x) + apply(Op.LOG, y) + apply(Op.TANH, z) + apply(Op.SIN, x * y) + apply(Op.COS, z / x)
    f = f + apply(Op.TAN, z / 4) + apply(Op.ABS, z - y) + apply(Op.MIN, x, y) - apply(Op.MAX, y, z)
    f = f + apply(Op.SIGMOID, z) * apply(Op.RELU, z - 0.5) + x**-2 - y**3 + apply(Op.EXP, -z) - (-x)
    g = x * y - 3.5
    h = x + y + z - pi(builder)
    tape = builder.build(f.slot, [g.slot], [h.slot])
    return HandTape("every operation", tape, [0.5, 0.5, -1.0], [2.0, 3.0, 2.0], math.nan, [])


def atan2_problem() -> HandTape:
    """min atan2(x1, x0) on [1, 2]^2: MAiNGO has no atan2, so it must come back unsupported."""
    builder = TapeBuilder(2)
    x = [Term(builder, builder.var(i)) for i in range(2)]
    tape = builder.build(apply(Op.ATAN2, x[1], x[0]).slot)
    return HandTape("atan2", tape, [1.0, 1.0], [2.0, 2.0], math.atan2(1.0, 2.0), [2.0, 1.0])


def evaluate_at(tape: Tape, point: list[float]) -> np.ndarray:
    """The tape's outputs (f, g..., h...) at a point, in float64 with midpoint constants."""
    unary = {
        Op.NEG: np.negative, Op.SQRT: np.sqrt, Op.EXP: np.exp, Op.LOG: np.log, Op.TANH: np.tanh,
        Op.SIN: np.sin, Op.COS: np.cos, Op.TAN: np.tan, Op.ABS: np.abs,
        Op.SIGMOID: lambda v: 1.0 / (1.0 + np.exp(-v)), Op.RELU: lambda v: np.maximum(v, 0.0),
    }
    binary = {
        Op.ADD: np.add, Op.SUB: np.subtract, Op.MUL: np.multiply, Op.DIV: np.divide,
        Op.ATAN2: np.arctan2, Op.MIN: np.minimum, Op.MAX: np.maximum,
    }
    slots: list[float] = []
    for code, a, b in zip(tape.op.tolist(), tape.arg0.tolist(), tape.arg1.tolist()):
        code = Op(code)
        if code is Op.VAR:
            value = np.float64(point[a])
        elif code is Op.CONST:
            value = np.float64(0.5 * tape.const_lo[a] + 0.5 * tape.const_hi[a])
        elif code is Op.POWI:
            value = np.float64(slots[a]) ** b
        elif code in binary:
            value = binary[code](slots[a], slots[b])
        else:
            value = unary[code](slots[a])
        slots.append(value)
    return np.array([slots[i] for i in tape.outputs.tolist()])


PROBLEMS = (six_hump_camel, branin, peaks, eggholder, g06, hs071, peaks_ann)
