"""``contract_boxes_gpu`` and ``contract_boxes_device`` against the CPU's ``contract_boxes``.

Under numba's CUDA simulator (CI) libdevice's directed rounding is the exact stand-in of
``libdevice_shim`` and the device ``math`` is the host's, widened by the CPU's 4 ulps: the GPU runs
the CPU's code with the CPU's numbers, so contracted boxes and empty flags equal bit for bit.

On a GPU (``PBBFLOW_TEST_GPU=1``) library functions are widened by 3 floats instead of 4 and the
k-th root guesses of the power projections come from the device's ``pow``. Neither box need hold
the other: the library values may differ in either direction, a root guess one float off verifies
to another valid bound, and the stopping rule (another sweep only after a 5 % shrink) can turn a
float of difference into a sweep more or less. What holds for both is rigour: every point that
is certainly kept (a rigorous point evaluation satisfies f <= ub, g <= 0, |h| <= feas_tol) stays
inside its contracted box, and a contracted box lies inside its box. That is what the GPU test
asserts, with bit-for-bit equality only for a tape of + - * alone (directed rounding is exact on
both).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest
from numba import cuda
from spatial_helpers import long_tape

from pbbflow.gpu.spatial.contract import contract_boxes_device, contract_boxes_gpu
from pbbflow.gpu.spatial.kernels import DeviceTape
from pbbflow.gpu.warp import SIMULATED
from pbbflow.spatial import Model
from pbbflow.spatial.bounds import evaluate_point, is_feasible
from pbbflow.spatial.contract import contract_boxes
from pbbflow.spatial.load import load_problem

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("simulated_libdevice")]

SPATIAL_DATA = Path(__file__).resolve().parents[4] / "shared" / "data" / "spatial"
CONSTRAINED = (
    "C1-g06-cec2006-g06-floudas-pardalos",
    "C3-g11-cec2006-g11",
    "C9-st-e01-globallib",
    "C17-hs071-hock-schittkowski-71",
)
FEAS_TOL = 1e-6


def _problem(name: str):
    """A built-in problem or one of ../shared/data/spatial (skipped where that is missing)."""
    if name.startswith("C"):
        path = SPATIAL_DATA / f"{name}.json"
        if not path.exists():
            pytest.skip(f"needs {path}")
        return load_problem(str(path))
    return load_problem(name)


def _boxes(rng: np.random.Generator, lower, upper, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The root box and ``count - 1`` random sub-boxes of it."""
    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    ends = np.sort(lower + (upper - lower) * rng.random((count - 1, 2, len(lower))), axis=1)
    return np.vstack([lower, ends[:, 0]]), np.vstack([upper, ends[:, 1]])


def _bits(arrays) -> list[bytes]:
    return [(a.dtype.str, a.shape, np.ascontiguousarray(a).tobytes()) for a in arrays]


def _ring():
    """Two variables, an inequality and an equality with powers: every projection kind of the C problems."""
    m = Model("ring")
    x, y = m.variables(2, -2.0, 2.0)
    m.minimize(x * y + 3.0 * y**2 - x / (1.5 + y**2))
    m.inequality(x**2 + y**2 - 2.0)
    m.equality(x - y**3 + 0.25)
    return m.problem()


def _products():
    """+ - * alone (st_e01 with an equality): directed rounding only, exact on a GPU too."""
    m = Model("products")
    x, y = m.variables(2, [0.0, 0.0], [6.0, 4.0])
    m.minimize(-x - y)
    m.inequality(x * y - 4.0)
    m.equality(x * y - 2.0 * x + y * y - 3.0)
    return m.problem()


# ---------------------------------------------------------------- the simulator: equal to the CPU


@pytest.mark.skipif(not SIMULATED, reason="bit-for-bit equality needs the simulator's host libm")
@pytest.mark.parametrize("name", [*CONSTRAINED, "peaks"])
def test_contracted_boxes_equal_the_cpu(name):
    problem = _problem(name)
    lo, hi = _boxes(np.random.default_rng(len(name)), problem.lower, problem.upper, 12)
    optimum = problem.optimum
    ub = optimum + 1e-3 * (1.0 + abs(optimum))
    emptied = {}
    for bound in (math.inf, ub):
        cpu = contract_boxes(problem.tape, lo, hi, bound, FEAS_TOL)
        gpu = contract_boxes_gpu(problem.tape, lo, hi, bound, FEAS_TOL)
        assert _bits(gpu) == _bits(cpu), (name, bound, gpu, cpu)
        emptied[bound] = int(cpu[2].sum())
    assert emptied[ub] > emptied[math.inf], emptied  # the finite ub empties boxes the constraints keep


@pytest.mark.skipif(not SIMULATED, reason="bit-for-bit equality needs the simulator's host libm")
def test_the_device_entry_contracts_the_first_count_rows_in_place():
    problem = _ring()
    capacity, count = 8, 5
    lo, hi = _boxes(np.random.default_rng(1), problem.lower, problem.upper, capacity)
    ub = 0.5
    empty = cuda.to_device(np.full(capacity, 7, np.uint8))
    d_lo, d_hi = cuda.to_device(lo), cuda.to_device(hi)
    contract_boxes_device(
        DeviceTape.upload(problem.tape), d_lo, d_hi, count, cuda.to_device(np.array([ub])), FEAS_TOL, empty
    )
    new_lo, new_hi, flags = d_lo.copy_to_host(), d_hi.copy_to_host(), empty.copy_to_host()
    cpu_lo, cpu_hi, cpu_empty = contract_boxes(problem.tape, lo[:count], hi[:count], ub, FEAS_TOL)
    assert _bits([new_lo[:count], new_hi[:count]]) == _bits([cpu_lo, cpu_hi])
    assert flags[:count].tolist() == cpu_empty.astype(np.uint8).tolist()
    assert 0 < cpu_empty.sum() < count  # both kinds of box
    assert _bits([new_lo[count:], new_hi[count:], flags[count:]]) == _bits(
        [lo[count:], hi[count:], np.full(3, 7, np.uint8)]
    )


def test_requests_are_checked_and_big_tapes_refused():
    problem = _ring()
    with pytest.raises(ValueError, match="boxes"):
        contract_boxes_gpu(problem.tape, np.zeros((1, 3)), np.ones((1, 3)))
    with pytest.raises(ValueError, match="NaN"):
        contract_boxes_gpu(problem.tape, np.zeros((1, 2)), np.ones((1, 2)), ub=math.nan)
    dtape = DeviceTape.upload(problem.tape)
    with pytest.raises(ValueError, match="count"):
        contract_boxes_device(
            dtape,
            cuda.device_array((2, 2)),
            cuda.device_array((2, 2)),
            3,
            cuda.to_device(np.zeros(1)),
            FEAS_TOL,
            cuda.device_array(2, np.bool_),
        )


def test_a_tape_beyond_the_old_caps_contracts_as_on_the_cpu():
    """One kernel for every tape: 1,200+ slots and 70 outputs (beyond the former caps of 1,024 and 64)
    contract as on the CPU (bit for bit under the simulator's exact libdevice)."""
    tape = long_tape()
    rng = np.random.default_rng(4)
    lo = rng.uniform(-2.0, 0.0, (5, 2))
    hi = lo + rng.uniform(0.0, 2.0, (5, 2))
    for ub in (math.inf, 2.0):
        gpu = contract_boxes_gpu(tape, lo, hi, ub=ub)
        cpu = contract_boxes(tape, lo, hi, ub=ub)
        if SIMULATED:
            for got, expected in zip(gpu, cpu):
                assert np.array_equal(got, expected, equal_nan=True)
        else:
            assert np.array_equal(gpu[2], cpu[2])


# ---------------------------------------------------------------- a GPU: rigorous, not equal


def _certainly_kept(problem, point: np.ndarray, ub: float) -> bool:
    """A rigorous point evaluation shows f <= ub, g <= 0 and |h| <= FEAS_TOL at ``point``."""
    value = evaluate_point(problem.tape, point)
    return is_feasible(value, FEAS_TOL) and value.f_hi <= ub


def _gpu_problems():
    problems = [load_problem("peaks"), load_problem("peaks-ann"), _ring(), _products()]
    problems += [
        load_problem(str(SPATIAL_DATA / f"{name}.json"))
        for name in CONSTRAINED
        if (SPATIAL_DATA / f"{name}.json").exists()
    ]
    return problems


@pytest.mark.skipif(os.environ.get("PBBFLOW_TEST_GPU") != "1", reason="needs a GPU (PBBFLOW_TEST_GPU=1)")
def test_contraction_on_a_gpu_keeps_every_certainly_kept_point():
    rng = np.random.default_rng(3)
    checked = 0
    for problem in _gpu_problems():
        d = problem.tape.n_vars
        lo, hi = _boxes(rng, problem.lower, problem.upper, 256)
        x = None if problem.x_optimum is None else np.asarray(problem.x_optimum, float)
        if x is not None:  # boxes around the best known point, which may be certainly kept
            width = (problem.upper - problem.lower) * 10.0 ** rng.uniform(-6, -1, (64, d))
            lo = np.vstack([lo, np.maximum(problem.lower, x - width * rng.random((64, d)))])
            hi = np.vstack([hi, np.minimum(problem.upper, x + width * rng.random((64, d)))])
        ub = math.inf if problem.optimum is None else problem.optimum + 1e-3 * (1.0 + abs(problem.optimum))
        for bound in (math.inf, ub):
            new_lo, new_hi, empty = contract_boxes_gpu(problem.tape, lo, hi, bound, FEAS_TOL)
            if problem.name == "products":
                assert _bits((new_lo, new_hi, empty)) == _bits(contract_boxes(problem.tape, lo, hi, bound, FEAS_TOL))
            kept = ~empty
            assert np.all(np.isnan(new_lo[empty])) and np.all(np.isnan(new_hi[empty]))
            assert np.all((lo[kept] <= new_lo[kept]) & (new_lo[kept] <= new_hi[kept]) & (new_hi[kept] <= hi[kept]))
            for b in range(len(lo)):
                points = lo[b] + (hi[b] - lo[b]) * rng.random((8, d))
                if x is not None and np.all((lo[b] <= x) & (x <= hi[b])):
                    points = np.vstack([points, x])
                for point in points:
                    if _certainly_kept(problem, point, bound):
                        assert not empty[b], (problem.name, bound, lo[b], hi[b], point)
                        assert np.all((new_lo[b] <= point) & (point <= new_hi[b])), (problem.name, bound, point)
                        checked += 1
    assert checked > 1000
