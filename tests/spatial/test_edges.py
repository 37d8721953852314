"""Every tape operation on closed boxes whose ends sit exactly on its special points, against arb.

The random-box tests sample interiors; a closed box also holds its edges, where the floating-point
path may see another value than real arithmetic (a signed zero, atan2's cut, a domain edge, a
pole, a kink). Here every box is built from the special points of its operation (both signs of
zero, the domain edges of sqrt and log, the neighbours of pi/2 around tan's poles, atan2's cut
and origin, the kinks of abs, relu, min and max, equal ends) and every real value the operation
takes at a point of the box that is a combination of its ends, special points and midpoint
(python-flint ``arb``, where it is defined) must be respected by:

- the subdomain bounds (NIE, MVF and both, 1 to 3 subdomains per axis): no lower bound above a
  value, no box dropped as infeasible while it holds a feasible point (an inequality or an equality
  on the operation);
- the contractor: every such feasible point stays in the contracted box;
- the point evaluation that verifies incumbents: it encloses the value, and is EMPTY exactly where
  the operation is undefined;
- the GPU twins of all three, which must also agree with the CPU (``tests/spatial/test_edges.py``
  runs them under the CUDA simulator in CI).

A constant c of a constraint op(x) <= c travels as an extra variable whose box is the point [c, c],
so that one call bounds every box at once.
"""

from __future__ import annotations

import itertools
import json
import math

import flint
import numpy as np
import pytest
from spatial_helpers import Undecidable, arb_outputs

from pbbflow.spatial.bounds import Mode, _outputs_at, bound_boxes
from pbbflow.spatial.contract import contract_boxes
from pbbflow.spatial.interval import HALF_PI_HI, HALF_PI_LO, PI_HI, PI_LO
from pbbflow.spatial.tape import Op, TapeBuilder

pytestmark = pytest.mark.usefixtures("arb_precision")

FEAS_TOL = 1e-6
TINY = 5e-324
ZERO_POINTS = [-1.0, -TINY, -0.0, 0.0, TINY, 1.0]
UNARY_POINTS = {
    Op.NEG: ZERO_POINTS,
    Op.SQRT: [-1.0, -TINY, -0.0, 0.0, TINY, 1e-300, 2.0],
    Op.LOG: [-1.0, -TINY, -0.0, 0.0, TINY, 1.0, 2.0],
    Op.EXP: [-746.0, -1.0, -0.0, 0.0, 1.0, 709.0, 710.0],
    Op.TANH: [-30.0, -1.0, -0.0, 0.0, TINY, 30.0],
    Op.SIGMOID: [-746.0, -1.0, -0.0, 0.0, 1.0, 40.0],
    Op.SIN: [-PI_HI, -HALF_PI_HI, -0.0, 0.0, HALF_PI_LO, HALF_PI_HI, PI_LO, PI_HI],
    Op.COS: [-PI_HI, -PI_LO, -HALF_PI_LO, -0.0, 0.0, HALF_PI_LO, HALF_PI_HI, PI_HI],
    Op.TAN: [-HALF_PI_HI, -HALF_PI_LO, -1.0, -0.0, 0.0, 1.0, HALF_PI_LO, HALF_PI_HI, PI_LO],
    Op.ABS: ZERO_POINTS,
    Op.RELU: ZERO_POINTS,
}
POWERS = [-3, -2, -1, 0, 1, 2, 3]
BINARY_CODES = [Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.ATAN2, Op.MIN, Op.MAX]
BINARY_POINTS = [-2.0, -1.0, -0.0, 0.0, 1.0]
CASES = (
    [("unary", code) for code in UNARY_POINTS]
    + [("powi", k) for k in POWERS]
    + [("binary", code) for code in BINARY_CODES]
)
MODES = (Mode.NIE, Mode.MVF, Mode.BOTH)


def _case_id(case) -> str:
    kind, what = case
    return f"powi{what}" if kind == "powi" else what.name.lower()


def _intervals(points: list[float]) -> list[tuple[float, float]]:
    """Every interval whose ends are two of the points (equal ends too)."""
    return [(a, b) for i, a in enumerate(points) for b in points[i:] if a <= b]


def _axis_points(lo: float, hi: float, special: list[float]) -> list[float]:
    """The ends, the midpoint and the special points of [lo, hi] (both zeros where 0 is inside)."""
    inside = [p for p in special if lo <= p <= hi]
    middle = min(max(0.5 * lo + 0.5 * hi, lo), hi)  # halving 5e-324 gives 0
    return sorted({lo, hi, middle, *inside}, key=lambda p: (p, math.copysign(1.0, p)))


def _boxes(case) -> tuple[np.ndarray, np.ndarray, list[float]]:
    """The boxes of a case (one or two variables) and the special points along each axis."""
    kind, what = case
    special = BINARY_POINTS if kind == "binary" else UNARY_POINTS.get(what, ZERO_POINTS)
    axis = _intervals(special)
    boxes = list(itertools.product(axis, axis)) if kind == "binary" else [(i,) for i in axis]
    lo = np.array([[i[0] for i in box] for box in boxes])
    hi = np.array([[i[1] for i in box] for box in boxes])
    return lo, hi, special


def _operation(builder: TapeBuilder, case) -> int:
    kind, what = case
    if kind == "unary":
        return builder.unary(what, builder.var(0))
    if kind == "powi":
        return builder.powi(builder.var(0), what)
    return builder.binary(what, builder.var(0), builder.var(1))


def _tape(case, form: str, sign: float):
    """The operation as an objective (``f = sign op``), an inequality (``sign op - c <= 0``) or an
    equality (``op - c == 0``), c the last variable."""
    kind, _ = case
    n = 2 if kind == "binary" else 1
    builder = TapeBuilder(n + (form != "objective"))
    value = _operation(builder, case)
    if sign < 0:
        value = builder.unary(Op.NEG, value)
    if form == "objective":
        return builder.build(value)
    gap = builder.binary(Op.SUB, value, builder.var(n))
    objective = builder.const(0.0)
    return builder.build(objective, [gap]) if form == "inequality" else builder.build(objective, [], [gap])


def _value(case, point) -> flint.arb | None:
    """The operation's real value at the point (None: undefined; Undecidable propagates)."""
    return arb_outputs(_tape(case, "objective", 1.0), point)[0]


def _above(x: flint.arb) -> float:
    """A float at or above the real x."""
    c = float(x.mid())
    while not flint.arb(c) >= x:
        c = math.nextafter(c, math.inf)
    return c


class Edges:
    """A case's boxes, the points of each with a defined value, and those values."""

    def __init__(self, case):
        self.case = case
        self.lo, self.hi, special = _boxes(case)
        self.points: list[list[tuple[tuple[float, ...], flint.arb]]] = []
        self.undefined: list[tuple[float, ...]] = []
        for box_lo, box_hi in zip(self.lo.tolist(), self.hi.tolist()):
            axes = [_axis_points(a, b, special) for a, b in zip(box_lo, box_hi)]
            defined = []
            for point in itertools.product(*axes):
                try:
                    value = _value(case, point)
                except Undecidable:
                    continue
                if value is None:
                    self.undefined.append(point)
                else:
                    defined.append((point, value))
            self.points.append(defined)

    def lowest(self, box: int, sign: float) -> tuple[tuple[float, ...], flint.arb] | None:
        """The point of the box where sign * op is least (a ball compared by its midpoint)."""
        values = [(p, sign * v) for p, v in self.points[box] if (sign * v).is_finite()]
        return min(values, key=lambda pv: float(pv[1].mid()), default=None)

    def with_constant(self, constant) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """The boxes, each with the point [c, c] appended as the last variable (c = constant(box),
        boxes where it is None left out), and the boxes kept."""
        rows = [(box, c) for box in range(len(self.lo)) if (c := constant(box)) is not None]
        keep = [box for box, _ in rows]
        c = np.array([[c] for _, c in rows]).reshape(-1, 1)
        return np.hstack([self.lo[keep], c]), np.hstack([self.hi[keep], c]), keep

    def inequality_boxes(self, sign: float):
        """Boxes where sign * op - c <= 0 holds at the box's lowest point (c just above its value)."""

        def constant(box):
            low = self.lowest(box, sign)
            return None if low is None or not math.isfinite(c := _above(low[1])) else c

        return self.with_constant(constant)

    def equality_boxes(self):
        """Boxes where op - c = 0 holds within the tolerance at a point (c the nearest float)."""

        def constant(box):
            values = [v for _, v in self.points[box] if v.is_finite() and abs(float(v.mid())) < 1e6]
            return float(values[0].mid()) if values else None

        return self.with_constant(constant)


EDGES: dict = {}


def _edges(case) -> Edges:
    if case not in EDGES:
        EDGES[case] = Edges(case)
    return EDGES[case]


def check_bounds(edges: Edges, bound, n_per_dim: int, mode: int) -> None:
    """``bound(tape, lo, hi, n_per_dim, mode)``: no lower bound above a value the box takes, no box
    with a feasible point dropped."""
    for sign in (1.0, -1.0):
        result = bound(_tape(edges.case, "objective", sign), edges.lo, edges.hi, n_per_dim, mode)
        for box, lb in enumerate(result.lb.tolist()):
            low = edges.lowest(box, sign)
            if low is not None:
                assert not flint.arb(lb) > low[1], (edges.case, sign, edges.lo[box], edges.hi[box], lb, low)
        lo, hi, _ = edges.inequality_boxes(sign)
        result = bound(_tape(edges.case, "inequality", sign), lo, hi, n_per_dim, mode)
        dropped = [(lo[i], hi[i]) for i in np.flatnonzero(np.isinf(result.lb))]
        assert not dropped, (edges.case, sign, "inequality", dropped[:3])
    lo, hi, _ = edges.equality_boxes()
    result = bound(_tape(edges.case, "equality", 1.0), lo, hi, n_per_dim, mode)
    dropped = [(lo[i], hi[i]) for i in np.flatnonzero(np.isinf(result.lb))]
    assert not dropped, (edges.case, "equality", dropped[:3])


def check_contraction(edges: Edges, contract, each_box: bool = True) -> None:
    """``contract(tape, lo, hi, ub, feas_tol)``: every box keeps its feasible lowest point (as an
    inequality, and with ``each_box`` as the objective under an incumbent, one call per box)."""
    for sign in (1.0, -1.0):
        lo, hi, boxes = edges.inequality_boxes(sign)
        new_lo, new_hi, empty = contract(_tape(edges.case, "inequality", sign), lo, hi, math.inf, FEAS_TOL)
        for row, box in enumerate(boxes):
            point = np.array([*edges.lowest(box, sign)[0], lo[row, -1]])
            assert not empty[row], (edges.case, sign, lo[row], hi[row])
            assert np.all(new_lo[row] <= point) and np.all(point <= new_hi[row]), (edges.case, sign, point)
        bounded = contract(_tape(edges.case, "objective", sign), edges.lo, edges.hi, math.inf, FEAS_TOL)
        for box in range(len(edges.lo) if each_box else 0):
            low = edges.lowest(box, sign)
            if low is None or not math.isfinite(ub := _above(low[1])):
                continue
            new_lo, new_hi, empty = contract(
                _tape(edges.case, "objective", sign), edges.lo[box : box + 1], edges.hi[box : box + 1], ub, FEAS_TOL
            )
            assert not empty[0] and np.all(new_lo[0] <= low[0]) and np.all(np.array(low[0]) <= new_hi[0]), (
                edges.case,
                sign,
                edges.lo[box],
                edges.hi[box],
                ub,
            )
        assert not np.any(bounded[2][[bool(p) for p in edges.points]]), edges.case


def check_points(edges: Edges, outputs_at) -> None:
    """``outputs_at(tape, points) -> (lo, hi)``: an enclosure of the value at every point, EMPTY
    exactly where the operation is undefined."""
    tape = _tape(edges.case, "objective", 1.0)
    defined = [pv for box in edges.points for pv in box]
    lo, hi = outputs_at(tape, np.array([p for p, _ in defined]))
    for (point, value), a, b in zip(defined, lo[0].tolist(), hi[0].tolist()):
        assert not math.isnan(a) and not math.isnan(b), (edges.case, point)
        assert (a == -math.inf or flint.arb(a) <= value) and (b == math.inf or value <= flint.arb(b)), (
            edges.case,
            point,
            a,
            b,
            value,
        )
    if edges.undefined:
        lo, hi = outputs_at(tape, np.array(edges.undefined))
        assert np.all(np.isnan(lo)) and np.all(np.isnan(hi)), (edges.case, np.array(edges.undefined)[~np.isnan(lo[0])])


def _bound_cpu(tape, lo, hi, n_per_dim, mode):
    return bound_boxes(tape, lo, hi, n_per_dim, mode, FEAS_TOL, parallel=False)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_subdomain_bounds_respect_every_value_on_the_edges(case):
    edges = _edges(case)
    for n_per_dim, mode in itertools.product((1, 2, 3), MODES):
        check_bounds(edges, _bound_cpu, n_per_dim, mode)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_contraction_keeps_every_feasible_point_on_the_edges(case):
    check_contraction(_edges(case), contract_boxes)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_point_evaluation_on_the_edges(case):
    check_points(_edges(case), _outputs_at)


# ---------------------------------------------------------------- the GPU twins (the CUDA simulator in CI)

# Under the simulator the GPU gives the CPU's results, but a float tighter where the CPU widens
# unconditionally because an error-free transformation could underflow (operands below 2**-960).


def _same(got: np.ndarray, expected: np.ndarray) -> None:
    """Equal, or within two floats (NaN and infinite ends equal)."""
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(expected))
    finite = np.isfinite(got)
    np.testing.assert_array_equal(got[~finite], expected[~finite])
    spacing = np.spacing(np.maximum(np.abs(got[finite]), np.abs(expected[finite])))
    assert np.all(np.abs(got[finite] - expected[finite]) <= 2 * spacing), (got, expected)


def _bound_gpu(tape, lo, hi, n_per_dim, mode):
    from pbbflow.gpu.spatial.kernels import bound_boxes_gpu
    from pbbflow.gpu.warp import SIMULATED

    result = bound_boxes_gpu(tape, lo, hi, n_per_dim, mode, FEAS_TOL)
    if SIMULATED:  # the host's libm and exact directed rounding: the CPU's own results
        expected = _bound_cpu(tape, lo, hi, n_per_dim, mode)
        _same(result.lb, expected.lb)
    return result


def _contract_gpu(tape, lo, hi, ub, feas_tol):
    from pbbflow.gpu.spatial.contract import contract_boxes_gpu
    from pbbflow.gpu.warp import SIMULATED

    result = contract_boxes_gpu(tape, lo, hi, ub, feas_tol)
    if SIMULATED:  # a float's difference near underflow may change how far a side contracts
        np.testing.assert_array_equal(result[2], contract_boxes(tape, lo, hi, ub, feas_tol)[2])
    return result


def _candidates_gpu(tape, points: np.ndarray) -> np.ndarray:
    """The GPU's verification of incumbents (``candidate_kernel``) at the points: f's upper end
    where the point is feasible, else +inf."""
    from numba import cuda

    from pbbflow.gpu.spatial import phase
    from pbbflow.gpu.spatial.kernels import DeviceTape

    dtape = DeviceTape.upload(tape)
    candidate = cuda.device_array(len(points), np.float64)
    real = cuda.to_device(np.full(phase.N_REAL, math.inf))
    phase.offer_candidates(
        dtape, len(points), cuda.to_device(np.ascontiguousarray(points, np.float64)), FEAS_TOL, candidate, real
    )
    return candidate.copy_to_host()


def _outputs_gpu(tape, points):
    """(lo, hi) as :func:`_outputs_at` gives them, the upper end from the GPU (the lower end is
    not read back by the GPU's verification: the CPU's stands in)."""
    from pbbflow.gpu.warp import SIMULATED

    lo, hi = _outputs_at(tape, points)
    upper = _candidates_gpu(tape, points)
    defined = ~np.isnan(hi[0])
    assert np.all(np.isinf(upper[~defined]))
    if SIMULATED:
        _same(upper[defined], hi[0][defined])
    hi = hi.copy()
    hi[0][defined] = upper[defined]
    return lo, hi


@pytest.mark.gpu
@pytest.mark.usefixtures("simulated_libdevice")
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_gpu_twins_on_the_edges(case):
    edges = _edges(case)
    check_bounds(edges, _bound_gpu, 1, Mode.BOTH)  # a thread per box: the simulator runs ~6,000 a second
    check_contraction(edges, _contract_gpu, each_box=False)  # a launch per box is slow in the simulator
    check_points(edges, _outputs_gpu)


# ---------------------------------------------------------------- the adversarial pass's cases


ATAN2_CUT = {"name": "atan2-cut", "domain": [[-2, -1], [-1, 0]], "objective": "-atan2(x[1], x[0])"}
ATAN2_CUT_CONSTRAINT = {
    "name": "atan2-cut-constraint",
    "domain": [[-2, -1], [-1, 0]],
    "objective": "x[0]",
    "inequalities": ["3 - atan2(x[1], x[0])"],
}


def _problem(document):
    from pbbflow.spatial.parse import problem_from_dict

    return problem_from_dict(json.loads(json.dumps(document)), document["name"])


def test_mean_value_form_stops_at_atan2s_cut():
    """Below the cut atan2 is near -pi; on it (y = 0, x < 0) it is pi: the box [-2, -1] x [-1, 0]
    holds both, and its mean value form must not bound f = -atan2 above -pi (it gave 2.356)."""
    tape = _problem(ATAN2_CUT).tape
    for mode in MODES:
        lb = bound_boxes(tape, np.array([[-2.0, -1.0]]), np.array([[-1.0, 0.0]]), 8, mode).lb[0]
        assert lb <= -math.pi, (mode, lb)


def test_atan2s_cut_is_neither_a_wrong_optimum_nor_infeasible():
    from pbbflow.spatial.bnb import minimize
    from pbbflow.spatial.options import MinimizeOptions

    options = MinimizeOptions(node_limit=200_000)
    result = minimize(_problem(ATAN2_CUT), options)
    assert result.status == "optimal" and result.lower_bound <= -math.pi
    assert result.objective == pytest.approx(-math.pi, abs=1e-5) and result.x[1] == 0.0
    result = minimize(_problem(ATAN2_CUT_CONSTRAINT), options)
    assert result.status == "optimal" and result.lower_bound <= -2.0
    assert result.objective == pytest.approx(-2.0, abs=1e-5) and list(result.x) == [-2.0, 0.0]


@pytest.mark.gpu
@pytest.mark.usefixtures("simulated_libdevice")
def test_atan2s_cut_on_the_gpu():
    from pbbflow.gpu.spatial.bnb import minimize_gpu
    from pbbflow.spatial.options import MinimizeOptions

    options = MinimizeOptions(node_limit=64)  # the whole proofs take minutes in the simulator
    for document, optimum in ((ATAN2_CUT, -math.pi), (ATAN2_CUT_CONSTRAINT, -2.0)):
        result = minimize_gpu(_problem(document), options, phase_subdomains=16, capacity=64)
        assert result.status in ("optimal", "limit") and result.lower_bound <= optimum, (document["name"], result)
        assert result.objective is None or result.objective >= optimum - 1e-9


def test_atan2s_cut_through_the_command_and_a_run_store(capsys, tmp_path):
    """``minimize`` in this process, and ``minimize --run`` with ``info`` on its store."""
    from pbbflow.cli.main import main

    for document, optimum in ((ATAN2_CUT, -math.pi), (ATAN2_CUT_CONSTRAINT, -2.0)):
        problem = tmp_path / f"{document['name']}.json"
        problem.write_text(json.dumps(document))
        assert main(["minimize", str(problem), "--json"]) == 0
        result = json.loads(capsys.readouterr().out)
        assert result["status"] == "optimal" and result["lower_bound"] <= optimum <= result["objective"] + 1e-5
    store = tmp_path / "cut.zarr"
    assert (
        main(
            [
                "minimize",
                str(problem),
                "--json",
                "--run",
                str(store),
                "--workers",
                "1",
                "--gpus",
                "0",
                "--heuristic-workers",
                "0",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["status"] == "optimal"
    assert main(["info", str(store), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["status"] == "optimal" and info["lower_bound"] <= -2.0 <= info["objective"] + 1e-5
