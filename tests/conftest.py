"""Test-session glue for the repository layout (the repository root is the package).

pytest >= 8 collects the repository root, which holds ``__init__.py``, as a Package and
imports that file under a name derived from the folder (``__init__`` when the folder name
is not an identifier, as in a clone into ``ci-check``), where its relative imports fail.
Point that name at the installed ``pbbflow`` (the same file), so nothing is imported twice.

GPU kernels run under numba's CUDA simulator unless ``PBBFLOW_TEST_GPU=1`` (on a machine
with a GPU); the variable must be set before numba is imported.
"""

import faulthandler
import os
import subprocess
import sys
from pathlib import Path

if os.environ.get("PBBFLOW_TEST_GPU") != "1":
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
    from simulator_fixes import install  # the simulator's barrier and shared arrays, fixed

    install()

import dask.config  # noqa: E402
import pbbflow  # noqa: E402
import pytest  # noqa: E402

# In-process Dask workers sample every thread's frame (``sys._current_frames``) every 10 ms to
# profile.  Beside the CUDA simulator, which starts threads all the time, and hypothesis' gc
# callback, that deadlocked CPython once in CI (py-spy: the worker's IO loop inside
# ``_PyThread_CurrentFrames`` running a gc callback, a starting thread waiting for the runtime
# lock, every other thread waiting for the GIL).  The tests do not need the profiler.
dask.config.set({"distributed.worker.profile.enabled": False})

# distributed's gen_cluster (tests/test_ledger.py) puts back the Dask config as it was when
# distributed.utils_test was imported, at collection: dask_jobqueue's defaults, added to the config
# when it is imported, must be in it by then, or the Slurm tests after it find no "jobqueue" config.
from pbbflow.workflow.cluster import import_jobqueue  # noqa: E402

import_jobqueue()

_ROOT = Path(__file__).resolve().parents[1]
if Path(pbbflow.__file__).resolve().parent == _ROOT:
    sys.modules.setdefault(_ROOT.name if _ROOT.name.isidentifier() else "__init__", pbbflow)


HANG_SECONDS = 900  # far above any test's time (the slowest takes about a minute on 2 cores)


@pytest.fixture(autouse=True)
def _no_hang():
    """A test that hangs (e.g. a deadlock) ends the session after ``HANG_SECONDS`` with every
    thread's stack, instead of blocking CI: faulthandler's watchdog works without the GIL."""
    faulthandler.dump_traceback_later(HANG_SECONDS, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


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
    environment["PYTHONPATH"] = os.pathsep.join([str(Path(pbbflow.__file__).resolve().parents[1]),
                                                 environment.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, str(Path(__file__).with_name("sm90_ptx.py")), str(out)],
                          capture_output=True, text=True, env=environment, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    if done.stdout.startswith("SKIP"):
        pytest.skip(f"no CUDA toolchain to compile with ({done.stdout[5:].strip()})")
    return out
