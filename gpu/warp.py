"""Warp-level primitives for the kernels, with stand-ins for the numba CUDA simulator.

On a GPU these are the shuffle intrinsics (``FULL_MASK``: every kernel keeps whole warps
converged).  The simulator has no shuffles and no ``syncwarp``: there the same functions go
through a per-block shared buffer and ``syncthreads``, which is only correct when a block is
exactly one warp, so the kernels are launched that way under the simulator (``WARPS_PER_BLOCK``).
The kernels take the warp size from ``WARP``; nothing in them assumes 32.
"""

from __future__ import annotations

from numba import config, cuda, int32, int64

SIMULATED = bool(config.ENABLE_CUDASIM)
# Under the simulator a "warp" is 4 threads: every barrier costs Python thread switches, and
# instances with more than 4 jobs or machines then take the kernels' multi-chunk paths too.
WARP = 4 if SIMULATED else 32
FULL_MASK = 0xFFFFFFFF
WARPS_PER_BLOCK = 1 if SIMULATED else 4
SHIFTS = tuple(1 << i for i in range(WARP.bit_length() - 1))  # 1, 2, 4, ... WARP / 2


def shared_body(function):
    """A ``numba.njit`` body shared with the CPU code, callable from a kernel.

    numba-cuda compiles it for the device; the simulator runs kernels in Python on its
    own array type, which a CPU-compiled function cannot take, so it gets the Python body.
    """
    return function.py_func if SIMULATED else function


if SIMULATED:

    @cuda.jit(device=True)
    def sync_lanes():
        cuda.syncthreads()

    @cuda.jit(device=True)
    def shfl(value, source):
        """``value`` as held by lane ``source``."""
        buffer = cuda.shared.array(WARP, int64)
        lane = cuda.threadIdx.x % WARP
        cuda.syncthreads()
        buffer[lane] = value
        cuda.syncthreads()
        out = buffer[source % WARP]
        cuda.syncthreads()
        return type(value)(out)

    @cuda.jit(device=True)
    def shfl_up(value, delta):
        """``value`` of lane ``lane - delta`` (own value for the first ``delta`` lanes)."""
        lane = cuda.threadIdx.x % WARP
        got = shfl(value, lane - delta if lane >= delta else lane)
        return got

    @cuda.jit(device=True)
    def shfl_xor(value, mask):
        lane = cuda.threadIdx.x % WARP
        return shfl(value, lane ^ mask)

else:

    @cuda.jit(device=True, inline="always")
    def sync_lanes():
        cuda.syncwarp(FULL_MASK)

    @cuda.jit(device=True, inline="always")
    def shfl(value, source):
        return cuda.shfl_sync(FULL_MASK, value, source)

    @cuda.jit(device=True, inline="always")
    def shfl_up(value, delta):
        return cuda.shfl_up_sync(FULL_MASK, value, delta)

    @cuda.jit(device=True, inline="always")
    def shfl_xor(value, mask):
        return cuda.shfl_xor_sync(FULL_MASK, value, mask)


# The reductions and scans work in int32: numba widens an int32 sum to int64, which costs a
# GPU two instructions per operation and two shuffles per exchange.


@cuda.jit(device=True)
def warp_min(value):
    value = int32(value)
    for shift in SHIFTS:
        value = min(value, shfl_xor(value, shift))
    return value


@cuda.jit(device=True)
def warp_max(value):
    value = int32(value)
    for shift in SHIFTS:
        value = max(value, shfl_xor(value, shift))
    return value


@cuda.jit(device=True)
def warp_sum(value):
    value = int32(value)
    for shift in SHIFTS:
        value = int32(value + shfl_xor(value, shift))
    return value


@cuda.jit(device=True)
def warp_sum64(value):
    value = int64(value)
    for shift in SHIFTS:
        value += shfl_xor(value, shift)
    return value


@cuda.jit(device=True)
def scan_sum(value, lane):
    """Inclusive prefix sum over the lanes."""
    value = int32(value)
    for shift in SHIFTS:
        got = shfl_up(value, shift)
        if lane >= shift:
            value = int32(value + got)
    return value


@cuda.jit(device=True)
def scan_max(value, lane):
    """Inclusive prefix maximum over the lanes."""
    value = int32(value)
    for shift in SHIFTS:
        got = shfl_up(value, shift)
        if lane >= shift:
            value = max(value, got)
    return value


if SIMULATED:

    @cuda.jit(device=True)
    def first_lane(predicate):
        """The lowest lane whose ``predicate`` holds; ``WARP`` when none does."""
        return warp_min(cuda.threadIdx.x % WARP if predicate else WARP)

else:

    @cuda.jit(device=True, inline="always")
    def first_lane(predicate):
        """The lowest lane whose ``predicate`` holds; ``WARP`` (32) when none does: one vote, and the
        count of leading zeros of the reversed mask."""
        return cuda.clz(cuda.brev(cuda.ballot_sync(FULL_MASK, predicate)))
