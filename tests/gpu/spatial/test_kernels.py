"""The spatial family's device interval operations and ``bound_boxes_gpu`` against arb and the CPU.

Under numba's CUDA simulator (CI) libdevice's directed rounding is the exact stand-in of
``libdevice_shim`` and the device ``math`` is the host's libm, widened by the CPU's 4 ulps: there
every result equals the CPU's, except that the device is one float tighter where the CPU widens
unconditionally because its error-free transformation could underflow (magnitudes below
2**-960). On a GPU (``PBBFLOW_TEST_GPU=1``) + - * / sqrt and integer powers still equal the CPU's;
library functions are only checked against arb and, for bounds, to 1e-12 relative.
"""

from __future__ import annotations

import math

import flint
import numpy as np
import pytest
from numba import cuda
from spatial_helpers import (
    Undecidable,
    arb_binary,
    arb_outputs,
    arb_unary,
    check_enclosure,
    encloses,
    long_tape,
    random_expression,
    random_interval,
    sample_points,
)

from pbbflow.gpu.spatial import interval as giv
from pbbflow.gpu.spatial.kernels import MAX_VARS, DeviceTape, TooManyVariables, bound_boxes_gpu
from pbbflow.gpu.warp import SIMULATED
from pbbflow.spatial import Model
from pbbflow.spatial import interval as iv
from pbbflow.spatial.bounds import BoxBounds, Mode, bound_boxes
from pbbflow.spatial.load import load_problem
from pbbflow.spatial.parse import problem_from_dict
from pbbflow.spatial.tape import Op, TapeBuilder

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("simulated_libdevice", "arb_precision")]

MODES = (Mode.NIE, Mode.MVF, Mode.BOTH)
TINY = 2.0**-900  # below this the CPU may widen by one more float than the exact directed rounding
UNARY = {
    Op.NEG: (iv.neg, giv.neg),
    Op.SQRT: (iv.sqrt, giv.sqrt),
    Op.EXP: (iv.exp, giv.exp),
    Op.LOG: (iv.log, giv.log),
    Op.TANH: (iv.tanh, giv.tanh),
    Op.SIN: (iv.sin, giv.sin),
    Op.COS: (iv.cos, giv.cos),
    Op.TAN: (iv.tan, giv.tan),
    Op.ABS: (iv.abs_, giv.abs_),
    Op.SIGMOID: (iv.sigmoid, giv.sigmoid),
    Op.RELU: (iv.relu, giv.relu),
}
BINARY = {
    Op.ADD: (iv.add, giv.add),
    Op.SUB: (iv.sub, giv.sub),
    Op.MUL: (iv.mul, giv.mul),
    Op.DIV: (iv.div, giv.div),
    Op.ATAN2: (iv.atan2, giv.atan2),
    Op.MIN: (iv.min_, giv.min_),
    Op.MAX: (iv.max_, giv.max_),
}
EXACT = {Op.NEG, Op.SQRT, Op.ABS, Op.RELU, Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.MIN, Op.MAX, Op.POWI}


# ---------------------------------------------------------------- primitives


def _kernel(function, arity: int):
    """A kernel applying the device ``function`` to rows of ``arity`` arrays (one thread per row)."""
    if arity == 2:

        @cuda.jit
        def kernel(a, b, lo, hi):
            i = cuda.grid(1)
            if i < lo.size:
                lo[i], hi[i] = function(a[i], b[i])

    elif arity == 3:

        @cuda.jit
        def kernel(a, b, k, lo, hi):
            i = cuda.grid(1)
            if i < lo.size:
                lo[i], hi[i] = function(a[i], b[i], k[i])

    else:

        @cuda.jit
        def kernel(a, b, c, d, lo, hi):
            i = cuda.grid(1)
            if i < lo.size:
                lo[i], hi[i] = function(a[i], b[i], c[i], d[i])

    return kernel


def _run(function, *columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``function`` on every row of the columns in one launch."""
    n = len(columns[0])
    lo, hi = np.empty(n), np.empty(n)
    _kernel(function, len(columns))[-(-n // 32), 32](*columns, lo, hi)
    return lo, hi


def _pair(down, up):
    @cuda.jit(device=True)
    def both(x, y):
        return down(x, y), up(x, y)

    return both


def _tiny(*values: float) -> bool:
    return any(0.0 < abs(v) < TINY for v in values if not math.isnan(v))


def _compare_with_cpu(code: Op, device: tuple[float, float], host: tuple[float, float], operands) -> None:
    """Equal to the CPU, or (tiny operands or results) inside it; library functions on a GPU: skipped."""
    if not (SIMULATED or code in EXACT):
        return
    same = (device[0] == host[0] and device[1] == host[1]) or (all(math.isnan(v) for v in (*device, *host)))
    if same:
        return
    assert _tiny(*operands, *host), (code.name, operands, device, host)
    assert host[0] <= device[0] <= device[1] <= host[1], (code.name, operands, device, host)


@pytest.mark.parametrize("code", list(UNARY), ids=lambda c: c.name)
def test_unary_device_operations_enclose_arb_and_equal_the_cpu(code):
    rng = np.random.default_rng(int(code))
    cpu_function, device_function = UNARY[code]
    intervals = [random_interval(rng) for _ in range(300)]
    a = np.array([i[0] for i in intervals])
    b = np.array([i[1] for i in intervals])
    lo, hi = _run(device_function, a, b)
    violations = 0
    for alo, ahi, rlo, rhi in zip(a.tolist(), b.tolist(), lo.tolist(), hi.tolist()):
        assert rlo <= rhi or (math.isnan(rlo) and math.isnan(rhi))
        _compare_with_cpu(code, (rlo, rhi), cpu_function(alo, ahi), (alo, ahi))
        for x in sample_points(rng, alo, ahi):
            violations += check_enclosure((rlo, rhi), lambda: arb_unary(code, flint.arb(x)), (code.name, alo, ahi, x))
    assert violations == 0


@pytest.mark.parametrize("code", list(BINARY), ids=lambda c: c.name)
def test_binary_device_operations_enclose_arb_and_equal_the_cpu(code):
    rng = np.random.default_rng(100 + int(code))
    cpu_function, device_function = BINARY[code]
    pairs = [(*random_interval(rng), *random_interval(rng)) for _ in range(250)]
    columns = [np.array(column) for column in zip(*pairs)]
    lo, hi = _run(device_function, *columns)
    violations = 0
    for (alo, ahi, blo, bhi), rlo, rhi in zip(pairs, lo.tolist(), hi.tolist()):
        assert rlo <= rhi or (math.isnan(rlo) and math.isnan(rhi))
        _compare_with_cpu(code, (rlo, rhi), cpu_function(alo, ahi, blo, bhi), (alo, ahi, blo, bhi))
        for x in sample_points(rng, alo, ahi):
            for y in sample_points(rng, blo, bhi)[:4]:
                violations += check_enclosure(
                    (rlo, rhi),
                    lambda: arb_binary(code, flint.arb(x), flint.arb(y)),
                    (code.name, alo, ahi, blo, bhi, x, y),
                )
    assert violations == 0


def test_device_integer_powers_enclose_arb_and_equal_the_cpu():
    rng = np.random.default_rng(7)
    intervals = [random_interval(rng) for _ in range(300)]
    a = np.array([i[0] for i in intervals])
    b = np.array([i[1] for i in intervals])
    k = rng.choice([-7, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 8, 31, 2**31 - 1], size=len(a)).astype(np.int64)
    lo, hi = _run(giv.powi, a, b, k)
    violations = 0
    for alo, ahi, e, rlo, rhi in zip(a.tolist(), b.tolist(), k.tolist(), lo.tolist(), hi.tolist()):
        _compare_with_cpu(Op.POWI, (rlo, rhi), iv.powi(alo, ahi, e), (alo, ahi))
        for x in sample_points(rng, alo, ahi):
            if abs(e) > 100 and x not in (0.0, 1.0, -1.0) and abs(x) > 1e-300:
                continue  # arb's x ** (2^31 - 1) of a general x is too slow
            violations += check_enclosure((rlo, rhi), lambda: arb_unary(Op.POWI, flint.arb(x), e), (e, alo, ahi, x))
    assert violations == 0


def test_directed_scalar_operations_are_exact_directed_rounding():
    """_down/_up bracket the exact value one float apart at most, everywhere (subnormals too)."""
    flint.ctx.prec = 4000
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(2, 400)) * 10.0 ** rng.integers(-320, 300, (2, 400))
    operations = [
        (giv.add_down, giv.add_up, lambda x, y: x + y),
        (giv.mul_down, giv.mul_up, lambda x, y: x * y),
        (giv.div_down, giv.div_up, lambda x, y: x / y),
    ]
    for down, up, exact in operations:
        lo, hi = _run(_pair(down, up), a, b)
        for x, y, rlo, rhi in zip(a.tolist(), b.tolist(), lo.tolist(), hi.tolist()):
            assert encloses(rlo, rhi, exact(flint.arb(x), flint.arb(y))), (down, x, y)
            if math.isfinite(rlo) and math.isfinite(rhi):
                assert rlo <= rhi <= math.nextafter(rlo, math.inf)


# ---------------------------------------------------------------- bound_boxes_gpu


def _assert_same_bounds(gpu: BoxBounds, cpu: BoxBounds, exact: bool) -> None:
    """Identical results; for library functions on a GPU, lb to 1e-12 relative and the rest consistent."""
    if exact or SIMULATED:
        for field in ("lb", "best_point", "n_kept", "n_fallback", "hull_lo", "hull_hi"):
            assert np.array_equal(getattr(gpu, field), getattr(cpu, field), equal_nan=True), field
        return
    assert np.array_equal(np.isinf(gpu.lb), np.isinf(cpu.lb))
    finite = np.isfinite(cpu.lb)
    assert np.allclose(gpu.lb[finite], cpu.lb[finite], rtol=1e-12, atol=1e-12)
    assert np.array_equal(gpu.n_kept, cpu.n_kept)


def _boxes(rng: np.random.Generator, lower, upper, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The root box and ``count - 1`` random sub-boxes of it."""
    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    ends = np.sort(lower + (upper - lower) * rng.random((count - 1, 2, len(lower))), axis=1)
    return np.vstack([lower, ends[:, 0]]), np.vstack([upper, ends[:, 1]])


def _random_polynomial(rng: np.random.Generator, constrained: bool):
    """A Model of + - * / and integer powers in 2 or 3 variables (with constraints when asked)."""
    m = Model("random")
    xs = m.variables(int(rng.integers(2, 4)), -2.0, 2.0)
    terms = [float(rng.integers(-5, 6)) * xs[rng.integers(len(xs))] ** int(rng.integers(1, 5)) for _ in range(4)]
    objective = terms[0] * terms[1] - terms[2] / (1.5 + xs[0] ** 2) + terms[3]
    m.minimize(objective)
    if constrained:
        m.inequality(xs[0] ** 2 + xs[1] ** 2 - 2.0)
        m.equality(xs[0] - xs[-1] ** 3 + 0.25)
    return m.problem().tape


@pytest.mark.parametrize("constrained", [False, True], ids=["unconstrained", "constrained"])
def test_bounds_equal_the_cpu_on_arithmetic_tapes(constrained):
    rng = np.random.default_rng(11 + constrained)
    for _ in range(3):
        tape = _random_polynomial(rng, constrained)
        lo, hi = _boxes(rng, [-2.0] * tape.n_vars, [2.0] * tape.n_vars, 3)
        threshold = np.array([np.inf, 0.0, -1.0])
        for n in (1, 3):
            for mode in MODES:
                cpu = bound_boxes(tape, lo, hi, n, mode, feas_tol=1e-3, parallel=False, threshold=threshold)
                gpu = bound_boxes_gpu(tape, lo, hi, n, mode, feas_tol=1e-3, threshold=threshold)
                _assert_same_bounds(gpu, cpu, exact=True)


@pytest.mark.parametrize("name", ["peaks", "peaks-ann"])
def test_bounds_match_the_cpu_on_the_peaks_problems(name):
    problem = load_problem(name)
    lo, hi = _boxes(np.random.default_rng(5), problem.lower, problem.upper, 3)
    threshold = np.array([0.0, np.inf, -2.0])
    n_values, modes = ((1, 3), MODES) if name == "peaks" else ((2,), (Mode.BOTH,))  # the ANN is slow simulated
    for n in n_values:
        for mode in modes:
            cpu = bound_boxes(problem.tape, lo, hi, n, mode, parallel=False, threshold=threshold)
            gpu = bound_boxes_gpu(problem.tape, lo, hi, n, mode, threshold=threshold)
            _assert_same_bounds(gpu, cpu, exact=False)


def test_bounds_of_random_expressions_are_below_arb():
    """Every opcode: lb(f) <= f(x) at sample points (arb) for each mode on 1 and 2^d subdomains."""
    rng = np.random.default_rng(2)
    checked = 0
    for _ in range(12):
        d = int(rng.integers(1, 4))
        builder, slot = random_expression(rng, d, int(rng.integers(3, 10)))
        tape = builder.build(slot)
        centre = rng.uniform(-3, 3, d)
        half = 10.0 ** rng.uniform(-4, 0.5, d)
        lo, hi = centre - half, centre + half
        samples = [lo, hi, (lo + hi) / 2] + [lo + (hi - lo) * rng.random(d) for _ in range(4)]
        values = []
        for x in samples:
            try:
                values.append(arb_outputs(tape, x)[0])
            except Undecidable:
                values.append(None)
        for n in (1, 2):
            for mode in MODES:
                gpu = bound_boxes_gpu(tape, lo[None], hi[None], n, mode)
                cpu = bound_boxes(tape, lo[None], hi[None], n, mode, parallel=False)
                _assert_same_bounds(gpu, cpu, exact=False)
                for value in values:
                    if value is not None:
                        assert encloses(gpu.lb[0], math.inf, value) is not False, (tape.to_json(), lo, hi, value)
                        checked += 1
    assert checked > 100


def test_a_tape_beyond_the_old_caps_bounds_as_on_the_cpu():
    """The kernels are generic over the tape: one of 1,200+ slots and 70 outputs is bounded exactly as
    the CPU bounds it (the workspace grows with the tape)."""
    tape = long_tape()
    assert tape.size > 1200 and len(tape.outputs) == 70
    lo, hi = _boxes(np.random.default_rng(11), [-1.0, -1.0], [1.0, 1.0], 3)
    for mode in MODES:
        gpu = bound_boxes_gpu(tape, lo, hi, 2, mode)
        _assert_same_bounds(gpu, bound_boxes(tape, lo, hi, 2, mode, parallel=False), exact=True)


def test_problems_of_more_variables_than_the_kernels_take_are_refused():
    wide = TapeBuilder(MAX_VARS + 1)
    with pytest.raises(TooManyVariables, match=f"at most {MAX_VARS} variables; this one has {MAX_VARS + 1}"):
        bound_boxes_gpu(wide.build(wide.var(MAX_VARS)), np.zeros((1, MAX_VARS + 1)), np.ones((1, MAX_VARS + 1)), 1)


def test_requests_are_checked_like_the_cpu():
    tape = load_problem("peaks").tape
    with pytest.raises(ValueError, match="mode"):
        bound_boxes_gpu(tape, np.zeros((1, 2)), np.ones((1, 2)), 2, mode=4)
    with pytest.raises(ValueError, match="finite"):
        bound_boxes_gpu(tape, np.zeros((1, 2)), np.full((1, 2), np.inf), 2)


# ---------------------------------------------------------------- PTX


def test_every_spatial_kernel_compiles_for_sm90(sm90_ptx):
    """numba-cuda types and compiles each kernel of the bounds, the contraction and the B&B phase."""
    names = {path.stem for path in sm90_ptx.glob("*.ptx")}
    assert {"bound_subdomains", "contract", "branch", "keep", "offer_candidates", "claim"} <= names


def test_kernel_compiles_to_directed_rounding_instructions(sm90_ptx):
    """Where NVVM is installed: the bounding kernel in sm_90 PTX uses the rounding-mode instructions."""
    ptx = (sm90_ptx / "bound_subdomains.ptx").read_text()
    for instruction in (
        "add.rm.f64",
        "add.rp.f64",
        "mul.rm.f64",
        "mul.rp.f64",
        "div.rm.f64",
        "div.rp.f64",
        "sqrt.rm.f64",
        "sqrt.rp.f64",
    ):
        assert instruction in ptx, instruction


@pytest.mark.skipif(not SIMULATED, reason="the simulator's libdevice stubs")
def test_the_simulator_without_exact_stand_ins_refuses_to_upload_a_tape(monkeypatch):
    """Without ``libdevice_shim`` the simulator's directed rounding returns None and every bound
    would be NaN, silently: uploading a tape says so instead."""
    from numba.cuda import libdevice

    monkeypatch.setattr(libdevice, "dmul_rd", lambda a, b: None)
    tape = problem_from_dict({"variables": 1, "domain": [[0, 1]], "objective": "x[0] * x[0]"}, "t").tape
    with pytest.raises(RuntimeError, match="libdevice_shim"):
        DeviceTape.upload(tape)
