"""Test-session glue for the repository layout (the repository root is the package).

pytest >= 8 collects the repository root, which holds ``__init__.py``, as a Package and
imports that file under a name derived from the folder (``__init__`` when the folder name
is not an identifier, as in a clone into ``ci-check``), where its relative imports fail.
Point that name at the installed ``pbbflow`` (the same file), so nothing is imported twice.

GPU kernels run under numba's CUDA simulator unless ``PBBFLOW_TEST_GPU=1`` (on a machine
with a GPU); the variable must be set before numba is imported.
"""

import faulthandler
import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

if os.environ.get("PBBFLOW_TEST_GPU") != "1":
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
    from simulator_fixes import install  # the simulator's barrier and shared arrays, fixed

    install()

import dask.config  # noqa: E402
import pytest  # noqa: E402

import pbbflow  # noqa: E402

# In-process Dask workers sample every thread's frame (``sys._current_frames``) every 10 ms to
# profile.  Beside the CUDA simulator, which starts threads all the time, and hypothesis' gc
# callback, that deadlocked CPython once in CI (py-spy: the worker's IO loop inside
# ``_PyThread_CurrentFrames`` running a gc callback, a starting thread waiting for the runtime
# lock, every other thread waiting for the GIL).  The tests do not need the profiler.
dask.config.set({"distributed.worker.profile.enabled": False})

# distributed's gen_cluster (tests/workflow/test_coordinator.py) puts back the Dask config as it was when
# distributed.utils_test was imported, at collection: dask_jobqueue's defaults, added to the config
# when it is imported, must be in it by then, or the Slurm tests after it find no "jobqueue" config.
from pbbflow.workflow.cluster import import_jobqueue  # noqa: E402

import_jobqueue()

_ROOT = Path(__file__).resolve().parents[1]
_NAME = _ROOT.name if _ROOT.name.isidentifier() else "__init__"
if Path(pbbflow.__file__).resolve().parent == _ROOT:
    _SPEC = importlib.util.find_spec(_NAME) if _NAME not in sys.modules else None
    if _SPEC is not None and _SPEC.origin and Path(_SPEC.origin).resolve().parent != _ROOT:
        importlib.import_module(_NAME)  # a clone into a folder named like a package (onnx): the package keeps its name
    sys.modules.setdefault(_NAME, pbbflow)


HANG_SECONDS = 900  # far above any test's time (the slowest takes about a minute on 2 cores)


@pytest.fixture(autouse=True)
def _no_hang():
    """A test that hangs (e.g. a deadlock) ends the session after ``HANG_SECONDS`` with every
    thread's stack, instead of blocking CI: faulthandler's watchdog works without the GIL."""
    faulthandler.dump_traceback_later(HANG_SECONDS, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


# CPU seconds of ``_busy_loop`` on an idle core of the machines the tests' times were set on (0.11-0.13 s
# on the 2-core AMD EPYC development machine); a slower core stretches the tests' times by its ratio.
REFERENCE_LOOP_S = 0.12


def _busy_loop() -> int:
    x = 0
    for i in range(1_500_000):
        x = (x + i * i) % 1_000_003
    return x


def slowness() -> float:
    """How many times longer than on an idle machine work takes here now (at least 1): a fixed
    pure-Python loop's wall time over its CPU time (the share of a core this process gets beside
    the other processes that want one) or over ``REFERENCE_LOOP_S`` (a slower core), whichever
    is larger."""
    wall, cpu = time.perf_counter(), time.thread_time()
    _busy_loop()
    wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
    return max(1.0, wall / min(max(cpu, 1e-3), REFERENCE_LOOP_S))


@pytest.fixture
def patience() -> Callable[[float], float]:
    """``patience(seconds)``: a wall-clock time set for an idle machine (a deadline, a time limit a
    run must outlast, a bound on how long something may take), stretched by this machine's
    :func:`slowness`, measured as the test starts.  The one home of the tests' wall-clock times:
    beside other CPU-bound processes, or while numba compiles, everything takes longer.  The hang
    watchdog (``_no_hang``) is stretched alike."""
    factor = slowness()
    # replaces _no_hang's timer; the real stderr, as sys.stderr may be capsys' by now (no file descriptor)
    faulthandler.dump_traceback_later(HANG_SECONDS * factor, exit=True, file=sys.__stderr__)
    return lambda seconds: seconds * factor


@pytest.fixture
def arb_precision():
    """python-flint's working precision at the spatial oracle's (``spatial_helpers.PRECISION``)
    during a test, restored after it."""
    import flint
    from spatial_helpers import PRECISION

    old = flint.ctx.prec
    flint.ctx.prec = PRECISION
    yield
    flint.ctx.prec = old


@pytest.fixture(scope="module")
def simulated_libdevice():
    """Under the CUDA simulator, whose libdevice stubs return None, exact directed rounding instead
    (``libdevice_shim``) for a test module's kernels; nothing on a GPU."""
    from pbbflow.gpu.warp import SIMULATED

    if not SIMULATED:
        yield
        return
    from libdevice_shim import exact_libdevice

    with exact_libdevice():
        yield


@pytest.fixture(scope="session")
def sm90_ptx(tmp_path_factory) -> Path:
    """Every GPU kernel compiled to sm_90 PTX by ``tests/sm90_ptx.py`` in a process without the
    simulator (which types more leniently); skips where there is no CUDA toolchain."""
    out = tmp_path_factory.mktemp("ptx")
    environment = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(Path(pbbflow.__file__).resolve().parents[1]), environment.get("PYTHONPATH", "")]
    )
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("sm90_ptx.py")), str(out)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    if done.stdout.startswith("SKIP"):
        pytest.skip(f"no CUDA toolchain to compile with ({done.stdout[5:].strip()})")
    return out
