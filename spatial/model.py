"""The Python API that records a spatial problem as an expression DAG and compiles it to a tape.

>>> from pbbflow.spatial import Model, exp, sin
>>> m = Model("example")
>>> x = m.variable(-3, 3, name="x")
>>> y = m.variable(-3, 3, name="y")
>>> m.minimize((1 - x) ** 2 * exp(-x**2 - y**2) + sin(x * y))
>>> m.subject_to(x**2 + y**2 <= 4)
>>> m.subject_to(x - y == 1)
>>> problem = m.problem()

Design:

- An :class:`Expr` is an immutable node (operation + operands). Arithmetic on expressions records
  nodes; nothing is evaluated. Shared subexpressions are compiled once (by object identity and, in
  :class:`~pbbflow.spatial.tape.TapeBuilder`, by structure).
- Comparisons ``a <= b``, ``a >= b`` and ``a == b`` on expressions do not compare: they make a
  :class:`Constraint` for :meth:`Model.subject_to`. A constraint has no truth value (``if a == b``
  raises ProblemError). Expressions hash by identity, so they work as dict keys; but ``expr in
  list`` compares with ``==``, so look expressions up with ``is``. ``<`` and ``>`` are refused
  (the feasible set is closed). :meth:`Model.inequality` / :meth:`Model.equality` say the same
  without operators: ``expr <= 0`` / ``expr == 0``.
- Numbers mean their nearest double: a Python float as is, an int exactly when a double holds it
  and otherwise enclosed by the two neighbouring doubles, a Fraction enclosed likewise; ``pi`` and
  ``e`` are the real constants, enclosed. Arithmetic between plain Python numbers happens in
  Python before anything is recorded (``1/3 * x`` records the double nearest 1/3; write ``x / 3``
  or ``constant(1) / 3`` to record the exact quotient).
- ``**`` takes an integer exponent only.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from fractions import Fraction

import numpy as np

from .problem import Problem, ProblemError, shorten
from .tape import MAX_EXPONENT, Op, TapeBuilder

WHERE = "model"
ACTIVATIONS = ("tanh", "sigmoid", "relu", "leaky_relu", "softplus", "linear")
LEAKY_RELU_ALPHA = 0.01  # leaky_relu's default slope below 0 (ONNX's and PyTorch's)
_RENDER_CHARS = 200  # str(expr) is cut here: a DAG with sharing can spell out exponentially long

_INFIX = {Op.ADD: " + ", Op.SUB: " - ", Op.MUL: " * ", Op.DIV: " / "}
_CALLS = {
    Op.SQRT: "sqrt",
    Op.EXP: "exp",
    Op.LOG: "log",
    Op.TANH: "tanh",
    Op.SIN: "sin",
    Op.COS: "cos",
    Op.TAN: "tan",
    Op.ABS: "abs",
    Op.ATAN2: "atan2",
    Op.MIN: "minimum",
    Op.MAX: "maximum",
    Op.SIGMOID: "sigmoid",
    Op.RELU: "relu",
}


class Expr:
    """A recorded expression: ``op`` applied to ``args`` (``data``: a VAR's index, a CONST's
    enclosure and label, a POWI's exponent)."""

    __slots__ = ("op", "args", "data")
    __array_ufunc__ = None  # numpy scalars and arrays defer to our operators
    __hash__ = object.__hash__

    def __init__(self, op: Op, args: tuple[Expr, ...] = (), data=None):
        self.op = op
        self.args = args
        self.data = data

    def __add__(self, other):
        return _binary(Op.ADD, self, other)

    def __radd__(self, other):
        return _binary(Op.ADD, other, self)

    def __sub__(self, other):
        return _binary(Op.SUB, self, other)

    def __rsub__(self, other):
        return _binary(Op.SUB, other, self)

    def __mul__(self, other):
        return _binary(Op.MUL, self, other)

    def __rmul__(self, other):
        return _binary(Op.MUL, other, self)

    def __truediv__(self, other):
        return _binary(Op.DIV, self, other)

    def __rtruediv__(self, other):
        return _binary(Op.DIV, other, self)

    def __neg__(self):
        return Expr(Op.NEG, (self,))

    def __pos__(self):
        return self

    def __abs__(self):
        return Expr(Op.ABS, (self,))

    def __pow__(self, exponent):
        return power(self, exponent)

    def __rpow__(self, base):
        raise ProblemError.at(
            WHERE,
            "power",
            f"{base!r} ** ({self})",
            "the exponent must be an integer, not an expression (write exp(y * log(b)) for b ** y)",
        )

    def __le__(self, other):
        return Constraint(_binary(Op.SUB, self, other), equality=False)

    def __ge__(self, other):
        return Constraint(_binary(Op.SUB, other, self), equality=False)

    def __eq__(self, other):
        return Constraint(_binary(Op.SUB, self, other), equality=True)

    def __ne__(self, other):
        raise ProblemError.at(WHERE, "comparison", f"{self} != {other}", "!= is not a constraint")

    def __lt__(self, other):
        raise ProblemError.at(WHERE, "comparison", f"{self} < {other}", "use <= (no strict inequalities)")

    def __gt__(self, other):
        raise ProblemError.at(WHERE, "comparison", f"{self} > {other}", "use >= (no strict inequalities)")

    def __bool__(self):
        raise ProblemError.at(WHERE, "expression", str(self), "an expression has no truth value")

    def __str__(self) -> str:
        return render(self)

    def __repr__(self) -> str:
        return f"Expr({render(self)})"


class Variable(Expr):
    """A decision variable of one :class:`Model` (``data`` is its index there)."""

    __slots__ = ("name", "model")

    def __init__(self, model: Model, index: int, name: str):
        super().__init__(Op.VAR, (), index)
        self.model = model
        self.name = name


class Constraint:
    """``expression <= 0`` or ``expression == 0``, for :meth:`Model.subject_to`."""

    __slots__ = ("expression", "equality")

    def __init__(self, expression: Expr, equality: bool):
        self.expression = expression
        self.equality = equality

    def __bool__(self):
        raise ProblemError.at(
            WHERE,
            "constraint",
            str(self),
            "a constraint has no truth value (comparisons of expressions make constraints)",
        )

    def __str__(self) -> str:
        return f"{render(self.expression)} {'==' if self.equality else '<='} 0"

    def __repr__(self) -> str:
        return f"Constraint({self})"


def constant(value) -> Expr:
    """``value`` as an expression: a point at its double, or the tightest enclosure when no double is it."""
    if isinstance(value, Expr):
        return value
    if type(value) is float and math.isfinite(value):  # the common case, without the ABC checks below
        return Expr(Op.CONST, (), (value, value, None))
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.integer, np.floating)):
        raise ProblemError.at(WHERE, "constant", repr(value), f"expected a number, not {type(value).__name__}")
    if isinstance(value, (float, np.floating)):
        number = float(value)
        if not math.isfinite(number):
            raise ProblemError.at(WHERE, "constant", repr(number), "numbers must be finite")
        return Expr(Op.CONST, (), (number, number, None))
    exact = Fraction(int(value)) if isinstance(value, (int, np.integer)) else Fraction(value)
    lo, hi = enclose(exact)
    return Expr(Op.CONST, (), (lo, hi, None))


def enclose(value: Fraction) -> tuple[float, float]:
    """The tightest double interval holding the rational ``value`` (a point when a double is it)."""
    try:
        nearest = float(value)  # correctly rounded
    except OverflowError:
        raise ProblemError.at(WHERE, "constant", shorten(str(value)), "too large for a double") from None
    if not math.isfinite(nearest):
        raise ProblemError.at(WHERE, "constant", shorten(str(value)), "too large for a double")
    if Fraction(nearest) == value:
        return nearest, nearest
    if Fraction(nearest) < value:
        return nearest, math.nextafter(nearest, math.inf)
    return math.nextafter(nearest, -math.inf), nearest


pi = Expr(Op.CONST, (), (math.pi, math.nextafter(math.pi, math.inf), "pi"))  # math.pi < pi < next double
e = Expr(Op.CONST, (), (math.e, math.nextafter(math.e, math.inf), "e"))  # math.e < e < next double


def _operand(value) -> Expr:
    return value if isinstance(value, Expr) else constant(value)


def _binary(code: Op, left, right) -> Expr:
    a, b = _operand(left), _operand(right)
    if code is Op.DIV and b.op is Op.CONST and b.data[0] == 0.0 and b.data[1] == 0.0:
        raise ProblemError.at(WHERE, "division", f"{a} / 0", "division by zero")
    return Expr(code, (a, b))


def power(base, exponent) -> Expr:
    """``base ** exponent`` for an integer exponent (``** 0`` is 1, ``** 1`` the base itself)."""
    base = _operand(base)
    if isinstance(exponent, bool) or not isinstance(exponent, (int, np.integer)):
        raise ProblemError.at(WHERE, "power", f"{base} ** {exponent!r}", "the exponent must be an integer")
    k = int(exponent)
    if not -MAX_EXPONENT <= k <= MAX_EXPONENT:
        raise ProblemError.at(
            WHERE, "power", f"{base} ** {shorten(str(k))}", f"the exponent must be within +-{MAX_EXPONENT}"
        )
    if k == 0:
        return constant(1)
    if k == 1:
        return base
    return Expr(Op.POWI, (base,), k)


def _unary(code: Op):
    def function(value) -> Expr:
        return Expr(code, (_operand(value),))

    function.__name__ = _CALLS[code]
    function.__doc__ = f"{_CALLS[code]}(value) as an expression."
    return function


sqrt = _unary(Op.SQRT)
exp = _unary(Op.EXP)
log = _unary(Op.LOG)
tanh = _unary(Op.TANH)
sin = _unary(Op.SIN)
cos = _unary(Op.COS)
tan = _unary(Op.TAN)
sigmoid = _unary(Op.SIGMOID)
relu = _unary(Op.RELU)


def abs_(value) -> Expr:
    """|value| as an expression (exported as ``abs``; the built-in ``abs(expr)`` works too)."""
    return Expr(Op.ABS, (_operand(value),))


def atan2(y, x) -> Expr:
    """The angle of the point (x, y), as ``math.atan2(y, x)``."""
    return Expr(Op.ATAN2, (_operand(y), _operand(x)))


def minimum(first, second, *more) -> Expr:
    """The smallest of two or more values."""
    result = Expr(Op.MIN, (_operand(first), _operand(second)))
    for value in more:
        result = Expr(Op.MIN, (result, _operand(value)))
    return result


def maximum(first, second, *more) -> Expr:
    """The largest of two or more values."""
    result = Expr(Op.MAX, (_operand(first), _operand(second)))
    for value in more:
        result = Expr(Op.MAX, (result, _operand(value)))
    return result


def activate(value, activation: str, alpha: float = LEAKY_RELU_ALPHA) -> Expr:
    """``value`` through a named activation (:data:`ACTIVATIONS`), each exact in tape operations:
    ``leaky_relu`` is max(v, alpha v) (min for alpha > 1) and ``softplus`` is log(1 + exp(v)), tight
    as one monotone chain (above v = 709.78 exp overflows: the enclosure's upper end is +inf, still rigorous)."""
    if activation == "tanh":
        return tanh(value)
    if activation == "sigmoid":
        return sigmoid(value)
    if activation == "relu":
        return relu(value)
    if activation == "leaky_relu":
        value = _operand(value)
        slope = _operand(alpha)
        return maximum(value, slope * value) if alpha <= 1 else minimum(value, slope * value)
    if activation == "softplus":
        return log(1 + exp(value))
    if activation == "linear":
        return _operand(value)
    raise ProblemError.at(WHERE, "activation", repr(activation), f"expected one of {', '.join(ACTIVATIONS)}")


def dense(inputs: Sequence, W, b, activation: str = "linear", alpha: float = LEAKY_RELU_ALPHA) -> list[Expr]:
    """One dense layer: ``activation(W @ inputs + b)`` with W of shape (out, in), recorded exactly
    (each weight is a constant; the sums are tape operations); ``b`` None adds no bias, ``alpha``
    is leaky_relu's slope."""
    weights = _matrix(W, "W")
    bias = None if b is None else _matrix(b, "b")
    if bias is not None and bias.ndim != 1:
        raise ProblemError.at(WHERE, "dense layer", None, f"b must be a vector, got shape {bias.shape}")
    rows = len(bias) if bias is not None else weights.shape[0] if weights.ndim == 2 else 0
    if weights.ndim != 2 or weights.shape != (rows, len(inputs)):
        raise ProblemError.at(
            WHERE,
            "dense layer",
            None,
            f"W has shape {weights.shape}, expected ({rows}, {len(inputs)}) = (outputs, inputs)",
        )
    if activation not in ACTIVATIONS:
        raise ProblemError.at(WHERE, "activation", repr(activation), f"expected one of {', '.join(ACTIVATIONS)}")
    if not (isinstance(alpha, (int, float, np.floating)) and math.isfinite(alpha)):
        raise ProblemError.at(WHERE, "activation", repr(alpha), "alpha must be a finite number")
    values = [_operand(value) for value in inputs]
    offsets = [None] * len(weights) if bias is None else bias.tolist()
    results = []
    for row, offset in zip(weights.tolist(), offsets):
        total = _operand(row[0]) * values[0]
        for weight, value in zip(row[1:], values[1:]):
            total = total + _operand(weight) * value
        results.append(activate(total if offset is None else total + offset, activation, alpha))
    return results


def scale_inputs(inputs: Sequence, lo, hi) -> list[Expr]:
    """Map each input from [lo, hi] onto [-1, 1]: ``2 (x - lo) / (hi - lo) - 1``, every step a tape
    operation on the given doubles (no rounded constant is derived). ``lo``/``hi``: scalars or one per input."""
    lows, highs = _per_item(lo, len(inputs), "lo"), _per_item(hi, len(inputs), "hi")
    two = constant(2)
    return [two * (_operand(x) - a) / (constant(c) - constant(a)) - 1 for x, a, c in zip(inputs, lows, highs)]


def unscale_outputs(outputs: Sequence, mean, sd) -> list[Expr]:
    """Map standardized outputs back: ``y * sd + mean`` (scalars or one per output)."""
    means, sds = _per_item(mean, len(outputs), "mean"), _per_item(sd, len(outputs), "sd")
    return [_operand(y) * s + m for y, m, s in zip(outputs, means, sds)]


def _matrix(values, what: str) -> np.ndarray:
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ProblemError.at(WHERE, "dense layer", None, f"{what} must be an array of numbers") from None
    if not np.all(np.isfinite(array)):
        raise ProblemError.at(WHERE, "dense layer", None, f"{what} must be finite")
    return array


def _per_item(values, count: int, what: str) -> list[float]:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim == 0:
        array = np.full(count, float(array))
    if array.shape != (count,) or not np.all(np.isfinite(array)):
        raise ProblemError.at(WHERE, "scaling", None, f"{what} must be a finite number or {count} finite numbers")
    return array.tolist()


class Model:
    """Variables, one objective to minimize, constraints; :meth:`problem` compiles them."""

    def __init__(self, name: str = "model"):
        self.name = name
        self._variables: list[Variable] = []
        self._bounds: list[tuple[float, float]] = []
        self._objective: Expr | None = None
        self._inequalities: list[Expr] = []
        self._equalities: list[Expr] = []

    @property
    def where(self) -> str:
        return f'model "{self.name}"'

    def variable(self, lo, hi, name: str | None = None) -> Variable:
        """A new variable in [lo, hi] (finite; lo == hi fixes it); ``name`` defaults to x[i]."""
        index = len(self._variables)
        name = f"x[{index}]" if name is None else str(name)
        if any(v.name == name for v in self._variables):
            raise ProblemError.at(self.where, "variable", name, "the name is already taken")
        bounds = []
        for bound in (lo, hi):
            if isinstance(bound, bool) or not isinstance(bound, (numbers.Real, np.integer, np.floating)):
                reason = f"bounds must be numbers, not {type(bound).__name__}"
                raise ProblemError.at(self.where, "variable", name, reason)
            value = float(bound)
            if not math.isfinite(value) or Fraction(value) != Fraction(bound):
                raise ProblemError.at(self.where, "variable", name, f"bound {bound!r} is not a finite double")
            bounds.append(value)
        if bounds[0] > bounds[1]:
            raise ProblemError.at(self.where, "variable", name, f"empty domain [{bounds[0]!r}, {bounds[1]!r}]")
        variable = Variable(self, index, name)
        self._variables.append(variable)
        self._bounds.append((bounds[0], bounds[1]))
        return variable

    def variables(self, count: int, lo, hi, name: str = "x") -> list[Variable]:
        """``count`` new variables name[0], name[1], ...; lo/hi scalars or one per variable."""
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
            raise ProblemError.at(self.where, "variables", None, f"count must be a positive integer, not {count!r}")
        lows = list(lo) if isinstance(lo, Iterable) else [lo] * count
        highs = list(hi) if isinstance(hi, Iterable) else [hi] * count
        if len(lows) != count or len(highs) != count:
            raise ProblemError.at(self.where, "variables", name, f"lo and hi need {count} values each")
        return [self.variable(a, b, f"{name}[{i}]") for i, (a, b) in enumerate(zip(lows, highs))]

    def minimize(self, objective) -> None:
        """Set the objective (once)."""
        if self._objective is not None:
            raise ProblemError.at(self.where, "objective", str(objective), "the objective is already set")
        self._objective = self._expression(objective, "objective")

    def subject_to(self, constraint: Constraint) -> None:
        """Add ``a <= b``, ``a >= b`` or ``a == b`` (made by comparing expressions)."""
        if isinstance(constraint, Constraint):
            target = self._equalities if constraint.equality else self._inequalities
            target.append(constraint.expression)
            return
        if isinstance(constraint, Expr):
            reason = "pass a comparison (expr <= 0, expr == 0), or use inequality()/equality()"
        elif isinstance(constraint, bool):
            reason = "this comparison involved no expression, so Python evaluated it to a bool"
        else:
            reason = f"expected a constraint, not {type(constraint).__name__}"
        raise ProblemError.at(self.where, "constraint", repr(constraint), reason)

    def inequality(self, expression) -> None:
        """Add ``expression <= 0``."""
        self._inequalities.append(self._expression(expression, "inequality"))

    def equality(self, expression) -> None:
        """Add ``expression == 0``."""
        self._equalities.append(self._expression(expression, "equality"))

    def _expression(self, value, part: str) -> Expr:
        if isinstance(value, Constraint):
            raise ProblemError.at(self.where, part, str(value), "expected an expression, not a constraint")
        return _operand(value)

    def problem(
        self, name: str | None = None, optimum: float | None = None, x_optimum=None, origin: str = "model"
    ) -> Problem:
        """Compile to a :class:`Problem` (common subexpressions once)."""
        name = self.name if name is None else name
        if not self._variables:
            raise ProblemError.at(self.where, "variables", None, "the model has no variables")
        if self._objective is None:
            raise ProblemError.at(self.where, "objective", None, "no objective: call minimize(expr)")
        builder = TapeBuilder(len(self._variables))
        compiler = _Compiler(self, builder)
        objective = compiler.slot(self._objective, "objective")
        inequalities = [compiler.slot(g, f"inequalities[{i}]") for i, g in enumerate(self._inequalities)]
        equalities = [compiler.slot(h, f"equalities[{i}]") for i, h in enumerate(self._equalities)]
        lower, upper = np.array(self._bounds, dtype=np.float64).T
        return Problem(
            name=name,
            lower=lower,
            upper=upper,
            tape=builder.build(objective, inequalities, equalities),
            optimum=optimum,
            x_optimum=x_optimum,
            names=tuple(v.name for v in self._variables),
            origin=origin,
            network_objective=network_objective_of(self._objective),
        )


class NetworkOutput(Expr):
    """Output ``index`` of ``network`` (a :class:`.network.Network`) at the model variables
    ``inputs`` (their indices): the expression a network call records, tagged so that
    :func:`network_objective_of` can see it."""

    __slots__ = ("network", "inputs", "index")

    def __init__(self, op: Op, args, data, network, inputs: tuple[int, ...], index: int):
        super().__init__(op, args, data)
        self.network = network
        self.inputs = inputs
        self.index = index


_MAX_OBJECTIVE_TERMS = 100_000
_MAX_OBJECTIVE_ROWS = 64  # affine pieces of a max or min objective

_Row = tuple[dict[int, Fraction], Fraction]  # an affine form of the outputs: coefficients and constant
_FLIP = {"one": "one", "max": "min", "min": "max"}


def _is_point(node: Expr) -> bool:
    return node.op is Op.CONST and node.data[0] == node.data[1]


def _scaled(row: _Row, factor: Fraction) -> _Row:
    return {k: v * factor for k, v in row[0].items()}, row[1] * factor


def _summed(first: _Row, second: _Row) -> _Row:
    terms = dict(first[0])
    for k, v in second[0].items():
        terms[k] = terms.get(k, Fraction(0)) + v
    return terms, first[1] + second[1]


def _combined(op: Op, first, second):
    """The piece ``first op second`` (a piece: ``(kind, rows)``, kind one, max or min), or None."""
    if op is Op.SUB:
        second = (_FLIP[second[0]], [_scaled(r, Fraction(-1)) for r in second[1]])
    if op in (Op.ADD, Op.SUB):
        if first[0] != "one":
            first, second = second, first
        if first[0] != "one":
            return None  # a max plus a max is no max of affine pieces
        return second[0], [_summed(first[1][0], r) for r in second[1]]
    kind = "max" if op is Op.MAX else "min"
    if first[0] not in ("one", kind) or second[0] not in ("one", kind):
        return None
    return kind, first[1] + second[1]


def network_objective_of(expression: Expr) -> dict | None:
    """``expression`` as ``c . network(x) + d``, or as the largest (smallest) of several such
    forms, where it is exactly that: sums, differences, negations, maxima and minima of one
    network's outputs (at the same variables), of point constants, and of their products with
    point constants, where every coefficient is a double exactly; its JSON
    (:meth:`.network.Network.objective_json`), else None."""
    found: list[NetworkOutput] = []
    pieces: dict[int, tuple] = {}  # id(node) -> its piece, once its arguments are done
    stack = [expression]
    visits = 0
    while stack:
        node = stack[-1]
        visits += 1
        if visits > _MAX_OBJECTIVE_TERMS:  # a shared DAG spelled out as a tree
            return None
        if isinstance(node, NetworkOutput):
            first = found[0] if found else node
            if node.network is not first.network or node.inputs != first.inputs:
                return None
            found.append(node)
            piece = ("one", [({node.index: Fraction(1)}, Fraction(0))])
        elif _is_point(node):
            piece = ("one", [({}, Fraction(node.data[0]))])
        elif node.op in (Op.NEG, Op.ADD, Op.SUB, Op.MUL, Op.MAX, Op.MIN):
            if node.op is Op.MUL and not any(_is_point(a) for a in node.args):
                return None
            waiting = [a for a in node.args if id(a) not in pieces]
            if waiting:
                stack += waiting
                continue
            args = [pieces[id(a)] for a in node.args]
            if node.op is Op.NEG:
                piece = (_FLIP[args[0][0]], [_scaled(r, Fraction(-1)) for r in args[0][1]])
            elif node.op is Op.MUL:
                factor, other = (args[0], args[1]) if _is_point(node.args[0]) else (args[1], args[0])
                scale = factor[1][0][1]
                piece = (other[0] if scale > 0 else _FLIP[other[0]], [_scaled(r, scale) for r in other[1]])
            else:
                piece = _combined(node.op, *args)
            if piece is None or len(piece[1]) > _MAX_OBJECTIVE_ROWS:
                return None
        else:
            return None
        pieces[id(node)] = piece
        stack.pop()
    if not found:
        return None
    kind, rows = pieces[id(expression)]
    network = found[0].network
    c = [[terms.get(k, Fraction(0)) for k in range(network.n_outputs)] for terms, _ in rows]
    d = [constant for _, constant in rows]
    if any(Fraction(float(v)) != v for v in (*(v for row in c for v in row), *d)):
        return None
    floats = [[float(v) for v in row] for row in c]
    return network.objective_json(found[0].inputs, floats, [float(v) for v in d], "min" if kind == "min" else "max")


class _Compiler:
    """Emits expression DAGs into a TapeBuilder, each node once (iteratively: no recursion limit)."""

    def __init__(self, model: Model, builder: TapeBuilder):
        self.model = model
        self.builder = builder
        self.slots: dict[int, int] = {}  # id(node) -> slot; the roots keep every node alive

    def slot(self, root: Expr, part: str) -> int:
        stack = [root]
        while stack:
            node = stack[-1]
            if id(node) in self.slots:
                stack.pop()
                continue
            pending = [arg for arg in node.args if id(arg) not in self.slots]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            self.slots[id(node)] = self._emit(node, root, part)
        return self.slots[id(root)]

    def _emit(self, node: Expr, root: Expr, part: str) -> int:
        code = node.op
        if code is Op.VAR:
            if node.model is not self.model:
                raise ProblemError.at(
                    self.model.where,
                    part,
                    str(root),
                    f"variable {node.name} belongs to another model ({node.model.name})",
                )
            return self.builder.var(node.data)
        if code is Op.CONST:
            return self.builder.const(node.data[0], node.data[1])
        args = [self.slots[id(arg)] for arg in node.args]
        if code is Op.POWI:
            return self.builder.powi(args[0], node.data)
        if len(args) == 2:
            return self.builder.binary(code, *args)
        return self.builder.unary(code, args[0])


def render(expr: Expr, limit: int = _RENDER_CHARS) -> str:
    """Python-like text of ``expr``, fully parenthesized, cut at ``limit`` characters."""
    pieces: list[str] = []
    length = 0
    stack: list[Expr | str] = [expr]
    while stack and length <= limit:
        item = stack.pop()
        if isinstance(item, str):
            text = item
        elif item.op is Op.VAR:
            text = item.name
        elif item.op is Op.CONST:
            lo, hi, label = item.data
            text = label or (repr(lo) if lo == hi else f"[{lo!r}, {hi!r}]")
        elif item.op is Op.NEG:
            text = "(-"
            stack.extend([")", item.args[0]])
        elif item.op is Op.POWI:
            text = "("
            stack.extend([f" ** {item.data})", item.args[0]])
        elif item.op in _INFIX:
            text = "("
            stack.extend([")", item.args[1], _INFIX[item.op], item.args[0]])
        else:
            text = _CALLS[item.op] + "("
            parts: list[Expr | str] = [")"]
            for i, arg in enumerate(reversed(item.args)):
                parts.extend([arg] if i == 0 else [", ", arg])
            stack.extend(parts)
        pieces.append(text)
        length += len(text)
    text = "".join(pieces)
    return text if not stack and len(text) <= limit else text[: limit - 3] + "..."
