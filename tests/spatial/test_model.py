"""The spatial modelling API: recording, compiling to a tape (DAG sharing), constants, constraints, errors."""

import json
import math
from fractions import Fraction

import numpy as np
import pytest

from pbbflow.spatial import (
    Constraint,
    Expr,
    Model,
    Op,
    Problem,
    ProblemError,
    Tape,
    atan2,
    constant,
    cos,
    dense,
    e,
    evaluate_float,
    exp,
    log,
    maximum,
    minimum,
    pi,
    relu,
    scale_inputs,
    sigmoid,
    sin,
    sqrt,
    tan,
    tanh,
    unscale_outputs,
)
from pbbflow.spatial import abs as abs_expr


def two_variables(lo=-2.0, hi=2.0):
    m = Model("t")
    return m, m.variable(lo, hi, name="x"), m.variable(lo, hi, name="y")


def objective_at(m: Model, point) -> float:
    return evaluate_float(m.problem().tape, point)[0]


def test_every_operation_matches_python_math_at_random_points():
    m, x, y = two_variables(0.5, 2.0)
    m.minimize(
        (2 - x) * (3 / y)
        + x / 4
        - (-y)
        + (+x)
        + x**3
        - y**-2
        + sqrt(x)
        + exp(-y)
        + log(x)
        + tanh(x - y)
        + sin(x) * cos(y)
        + tan(x / 3)
        + abs(x - y)
        + abs_expr(y - 1.5)
        + atan2(y - 1, x - 1)
        + minimum(x, y)
        + maximum(x, y, 1.7)
        + sigmoid(x - y)
        + relu(1 - x)
        + pi * e
    )
    tape = m.problem().tape

    def reference(a, b):
        return (
            (2 - a) * (3 / b)
            + a / 4
            + b
            + a
            + a**3
            - b**-2
            + math.sqrt(a)
            + math.exp(-b)
            + math.log(a)
            + math.tanh(a - b)
            + math.sin(a) * math.cos(b)
            + math.tan(a / 3)
            + abs(a - b)
            + abs(b - 1.5)
            + math.atan2(b - 1, a - 1)
            + min(a, b)
            + max(a, b, 1.7)
            + 1 / (1 + math.exp(b - a))
            + max(1 - a, 0.0)
            + math.pi * math.e
        )

    rng = np.random.default_rng(1)
    for a, b in rng.uniform(0.5, 2.0, size=(50, 2)):
        assert evaluate_float(tape, [a, b])[0] == pytest.approx(reference(a, b), rel=1e-13, abs=1e-13)


def test_constraints_by_comparison_and_by_name_have_the_stated_direction():
    m, x, y = two_variables()
    m.minimize(x)
    m.subject_to(x <= 1)  # g = x - 1
    m.subject_to(1 <= y)  # g = 1 - y (int.__le__ defers to y.__ge__)
    m.subject_to(x >= y * 2)  # g = 2y - x
    m.subject_to(x + y == 3)  # h = x + y - 3
    m.subject_to(0.5 == y)  # h = y - 0.5 (or its negation: either is the same constraint)
    m.inequality(x * y)
    m.equality(x - 0.25)
    problem = m.problem()
    assert (problem.tape.n_ineq, problem.tape.n_eq) == (4, 3)
    f, g, h = evaluate_float(problem.tape, [0.75, 1.5])
    assert f == 0.75
    assert g.tolist() == [0.75 - 1, 1 - 1.5, 3.0 - 0.75, 0.75 * 1.5]
    assert [abs(v) for v in h.tolist()] == [abs(0.75 + 1.5 - 3), 1.0, 0.5]


def test_comparisons_make_constraints_without_truth_values_and_expressions_hash_by_identity():
    m, x, y = two_variables()
    assert isinstance(x == y, Constraint) and isinstance(x <= 1, Constraint)
    with pytest.raises(ProblemError, match="no truth value"):
        if x == y:
            pass
    with pytest.raises(ProblemError, match="no truth value"):
        bool(x)
    with pytest.raises(ProblemError, match="use <="):
        x < y  # noqa: B015
    with pytest.raises(ProblemError, match="use >="):
        x > 1  # noqa: B015
    with pytest.raises(ProblemError, match="!= is not a constraint"):
        x != y  # noqa: B015
    table = {x: "x", y: "y", x + y: "sum"}
    assert table[x] == "x" and table[y] == "y" and len(table) == 3
    with pytest.raises(ProblemError, match="Python evaluated it to a bool"):
        m.subject_to(1 == 1)
    with pytest.raises(ProblemError, match="pass a comparison"):
        m.subject_to(x - y)
    with pytest.raises(ProblemError, match="not a constraint"):
        m.inequality(x <= y)


def test_numpy_numbers_defer_to_expression_operators():
    m, x, y = two_variables()
    assert isinstance(np.float64(2.0) * x, Expr)
    assert isinstance(np.int64(3) - x, Expr)
    assert isinstance(np.float64(1.0) <= x, Constraint)
    m.minimize(np.float64(2.0) * x + np.int64(3) * y)
    assert objective_at(m, [1.0, 1.0]) == 5.0


def test_integer_powers_only():
    m, x, _ = two_variables()
    for exponent in (0.5, 2.0, "2", True, None):
        with pytest.raises(ProblemError, match="the exponent must be an integer"):
            x**exponent
    with pytest.raises(ProblemError, match="the exponent must be an integer"):
        x**x
    with pytest.raises(ProblemError, match=r"exp\(y \* log\(b\)\)"):
        2**x
    with pytest.raises(ProblemError, match="within"):
        x ** (2**40)
    assert x**1 is x
    assert (x**0).op is Op.CONST and (x**0).data[:2] == (1.0, 1.0)
    square = x**-2
    assert square.op is Op.POWI and square.data == -2
    assert x ** np.int64(3) is not None


def test_numbers_mean_their_double_and_inexact_ones_are_enclosed():
    assert constant(0.1).data[:2] == (0.1, 0.1)  # a float as is
    assert constant(7).data[:2] == (7.0, 7.0)
    lo, hi, _ = constant(2**53 + 1).data  # no double holds it
    assert Fraction(lo) < 2**53 + 1 < Fraction(hi) and hi == math.nextafter(lo, math.inf)
    lo, hi, _ = constant(-(10**30) - 1).data
    assert Fraction(lo) < -(10**30) - 1 < Fraction(hi) and hi == math.nextafter(lo, math.inf)
    lo, hi, _ = constant(Fraction(1, 3)).data
    assert Fraction(lo) < Fraction(1, 3) < Fraction(hi) and hi == math.nextafter(lo, math.inf)
    for bad, reason in (
        (10**400, "too large"),
        (math.inf, "finite"),
        (math.nan, "finite"),
        (True, "number"),
        ("1", "number"),
        (1j, "number"),
    ):
        with pytest.raises(ProblemError, match=reason):
            constant(bad)


def test_pi_and_e_are_enclosed():
    flint = pytest.importorskip("flint")
    flint.ctx.prec = 200
    for expression, exact in ((pi, flint.arb.pi()), (e, flint.arb.const_e())):
        lo, hi, _ = expression.data
        assert lo < hi and hi == math.nextafter(lo, math.inf)
        assert flint.arb(lo) < exact < flint.arb(hi)


def test_shared_subexpressions_are_compiled_once():
    m, x, y = two_variables()
    s = x * y + 1
    m.minimize(sin(s) + cos(s) + s * s)
    m.subject_to(x * y <= 2)  # built anew: the same instruction as inside s
    tape = m.problem().tape
    ops = [Op(code) for code in tape.op.tolist()]
    assert ops.count(Op.MUL) == 2  # x*y and s*s
    assert ops.count(Op.ADD) == 3  # x*y+1, sin+cos, +s*s
    assert ops.count(Op.SUB) == 1  # x*y - 2
    assert ops.count(Op.VAR) == 2 and ops.count(Op.CONST) == 2  # 1 and 2
    assert tape.size == 2 + 2 + 2 + 3 + 1 + 2  # + sin, cos


def test_exponential_dags_compile_linearly_and_print_shortened():
    m = Model("doubling")
    x = m.variable(0.5, 1.5)
    y = x
    for _ in range(200):  # spelled out, this tree has 2**200 leaves
        y = y * y
    m.minimize(y)
    assert m.problem().tape.size == 201
    assert len(str(y)) <= 200 and str(y).endswith("...")


def test_deep_chains_compile_without_recursion():
    m = Model("chain")
    x = m.variable(0.0, 1.0)
    total = x
    for k in range(20_000):
        total = total + x * k
    m.minimize(total)
    tape = m.problem().tape
    assert evaluate_float(tape, [1.0])[0] == 1 + sum(range(20_000))


def test_variables_and_their_bounds():
    m = Model("v")
    xs = m.variables(3, 0, [1, 2, 3.5])
    fixed = m.variable(2.0, 2.0, name="fixed")  # a point variable is allowed
    m.minimize(sum(xs) + fixed)
    problem = m.problem()
    assert problem.names == ("x[0]", "x[1]", "x[2]", "fixed")
    assert problem.lower.tolist() == [0, 0, 0, 2] and problem.upper.tolist() == [1, 2, 3.5, 2]
    for lo, hi, reason in (
        (1, 0, "empty domain"),
        (0, math.inf, "not a finite double"),
        (math.nan, 1, "finite"),
        (0, 2**53 + 1, "not a finite double"),
        ("0", 1, "must be numbers"),
    ):
        with pytest.raises(ProblemError, match=reason):
            m.variable(lo, hi)
    with pytest.raises(ProblemError, match="already taken"):
        m.variable(0, 1, name="fixed")
    with pytest.raises(ProblemError, match="need 3 values"):
        m.variables(3, 0, [1, 2])
    with pytest.raises(ProblemError, match="positive integer"):
        m.variables(0, 0, 1)


def test_model_errors_name_the_model_and_stay_on_one_line():
    m = Model("empty")
    with pytest.raises(ProblemError, match='model "empty": variables: the model has no variables'):
        m.problem()
    x = m.variable(0, 1)
    with pytest.raises(ProblemError, match="no objective"):
        m.problem()
    m.minimize(x)
    with pytest.raises(ProblemError, match="already set"):
        m.minimize(x)
    other = Model("other")
    stranger = other.variable(0, 1, name="z")
    m.subject_to(x + stranger <= 1)
    expected = r'inequalities\[0\] "\(\(x\[0\] \+ z\) - 1\.0\)": variable z belongs to another model \(other\)'
    with pytest.raises(ProblemError, match=expected):
        m.problem()
    with pytest.raises(ProblemError) as error:
        x / 0
    assert str(error.value) == 'model: division "x[0] / 0": division by zero'
    long = x
    for _ in range(100):
        long = long + x
    with pytest.raises(ProblemError) as error:
        long**0.5
    message = str(error.value)
    assert "\n" not in message and "..." in message and len(message) < 140


def test_problem_source_round_trips_through_json():
    m, x, y = two_variables()
    m.minimize(sin(x) * pi + y**2)
    m.subject_to(x + y <= 1)
    m.subject_to(x * y == 0.5)
    problem = m.problem("round trip", optimum=-1.5, x_optimum=[0.1, 0.2], origin="test")
    source = json.loads(json.dumps(problem.source))
    again = Problem.from_source(source)
    assert again.source == problem.source
    assert (again.name, again.names, again.optimum, again.origin) == ("round trip", ("x", "y"), -1.5, "test")
    assert again.x_optimum.tolist() == [0.1, 0.2]
    for field in ("op", "arg0", "arg1", "const_lo", "const_hi", "outputs"):
        assert np.array_equal(getattr(again.tape, field), getattr(problem.tape, field))
    broken = json.loads(json.dumps(problem.source))
    broken["tape"]["op"][0] = 99
    with pytest.raises(ProblemError, match="unknown code 99"):
        Problem.from_source(broken)
    with pytest.raises(ProblemError, match='"format": "tape"'):
        Problem.from_source({"name": "x"})


def test_problem_validates_its_box():
    m, x, _ = two_variables()
    m.minimize(x)
    tape: Tape = m.problem().tape
    with pytest.raises(ProblemError, match="domain has 3 variables but the tape has 2"):
        Problem("p", np.zeros(3), np.ones(3), tape)
    with pytest.raises(ProblemError, match="lower bound 2.0 > upper bound 1.0"):
        Problem("p", [0.0, 2.0], [1.0, 1.0], tape)
    with pytest.raises(ProblemError, match="must be finite"):
        Problem("p", [0.0, -math.inf], [1.0, 1.0], tape)
    with pytest.raises(ProblemError, match="x_optimum has 1 values"):
        Problem("p", [0.0, 0.0], [1.0, 1.0], tape, x_optimum=[0.5])
    problem = Problem("p", [0.0, 0.0], [1.0, 1.0], tape, optimum=3)
    assert problem.optimum == 3.0 and problem.dimension == 2
    with pytest.raises(ValueError):
        problem.lower[0] = -1.0  # the box is read-only


@pytest.mark.parametrize("activation", ["tanh", "sigmoid", "relu", "linear"])
def test_dense_layers_and_scaling_match_numpy(activation):
    rng = np.random.default_rng(7)
    w1, b1 = rng.normal(size=(4, 3)), rng.normal(size=4)
    w2, b2 = rng.normal(size=(1, 4)), rng.normal(size=1)
    lo, hi, mean, sd = np.array([-1.0, 0.0, 2.0]), np.array([1.0, 5.0, 2.5]), 0.3, 1.7
    m = Model("net")
    x = [m.variable(a, b) for a, b in zip(lo, hi)]
    hidden = dense(scale_inputs(x, lo.tolist(), hi.tolist()), w1, b1, activation)
    m.minimize(unscale_outputs(dense(hidden, w2, b2), mean, sd)[0])
    tape = m.problem().tape
    act = {
        "tanh": np.tanh,
        "sigmoid": lambda z: 1 / (1 + np.exp(-z)),
        "relu": lambda z: np.maximum(z, 0),
        "linear": lambda z: z,
    }[activation]
    for point in rng.uniform(lo, hi, size=(30, 3)):
        a = 2 * (point - lo) / (hi - lo) - 1
        expected = (w2 @ act(w1 @ a + b1) + b2)[0] * sd + mean
        assert evaluate_float(tape, point)[0] == pytest.approx(expected, rel=1e-12, abs=1e-12)
    corners = Model("corners")
    u = corners.variable(-3.0, 7.0)
    scaled = scale_inputs([u], -3.0, 7.0)[0]
    corners.minimize(scaled)
    assert [evaluate_float(corners.problem().tape, [v])[0] for v in (-3.0, 2.0, 7.0)] == [-1.0, 0.0, 1.0]


def test_dense_checks_shapes_and_activation():
    m = Model("bad")
    x = [m.variable(0, 1), m.variable(0, 1)]
    with pytest.raises(ProblemError, match=r"W has shape \(3, 3\), expected \(3, 2\)"):
        dense(x, np.ones((3, 3)), np.ones(3))
    with pytest.raises(ProblemError, match="b must be a vector"):
        dense(x, np.ones((3, 2)), np.ones((3, 1)))
    with pytest.raises(ProblemError, match="W must be finite"):
        dense(x, [[1.0, math.nan]], [0.0])
    with pytest.raises(ProblemError, match="expected one of tanh"):
        dense(x, np.ones((1, 2)), np.ones(1), "softmax")
    with pytest.raises(ProblemError, match="2 finite numbers"):
        scale_inputs(x, [0.0, 0.0, 0.0], 1.0)


def test_the_float_evaluator_checks_the_point_and_never_raises_on_domain_errors():
    m = Model("domain")
    x = m.variable(-1.0, 1.0)
    m.minimize(log(x) + sqrt(x) + 1 / x)
    tape = m.problem().tape
    assert math.isnan(evaluate_float(tape, [-0.5])[0])
    assert math.isnan(evaluate_float(tape, [0.0])[0])  # -inf + 0 + inf
    assert evaluate_float(tape, [1.0])[0] == 2.0
    with pytest.raises(ValueError, match="shape"):
        evaluate_float(tape, [0.0, 1.0])
