"""Compile kernels to sm_90 PTX on a machine without a GPU or driver (NVVM only).

For the tests (``tests/sm90_ptx.py``: numba-cuda types every kernel, which the simulator does more
leniently) and ``benchmarks/kernel_resources.py`` (registers and spills through ``ptxas``).
numba-cuda asks the current device for its compute capability and NVRTC for the architectures it
supports; :func:`without_a_driver` answers both for sm_90.
"""

from __future__ import annotations

from collections.abc import Callable

SM90 = (9, 0)


class _Device:
    """Stands in for the current device: device functions ask it for the compute capability."""

    compute_capability = SM90


def without_a_driver() -> None:
    """Let numba-cuda compile for sm_90 here: the device and, where NVRTC is missing, its answers."""
    import numba.cuda.dispatcher
    from numba.cuda.cudadrv import nvrtc

    numba.cuda.dispatcher.get_current_device = _Device
    try:
        nvrtc.get_supported_ccs()
    except Exception:  # noqa: BLE001 (NVRTC only picks the closest architecture; we name sm_90 ourselves)
        from numba.cuda import cuda_paths

        nvrtc.get_supported_ccs = lambda: (SM90,)
        cuda_paths._get_nvrtc_path = lambda: ("none", None)


def kernel_ptx(function: Callable, signature) -> str:
    """The sm_90 PTX of a kernel's Python function for one signature (numba types or a string)."""
    from numba import cuda

    without_a_driver()
    ptx, _ = cuda.compile_ptx(function, signature, cc=SM90)
    return ptx
