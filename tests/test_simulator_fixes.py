"""The tests' fixes to numba's CUDA simulator (``simulator_fixes``): what a block's threads write
before ``syncthreads`` is seen after it, a thread that has returned does not hold the others, an
exception in one thread is raised by the launch, and threads that reach a shared array's line
together get one array."""

import sys

import numpy as np
import pytest
from numba import cuda

from pbbflow.gpu.warp import SIMULATED

pytestmark = pytest.mark.skipif(not SIMULATED, reason="the simulator's barrier")


@cuda.jit
def _reverse_twice(out):
    buffer = cuda.shared.array(8, np.int64)
    i = cuda.threadIdx.x
    buffer[i] = i * 10
    cuda.syncthreads()
    value = buffer[7 - i]
    cuda.syncthreads()
    buffer[i] = value + 1
    cuda.syncthreads()
    out[cuda.blockIdx.x, i] = buffer[7 - i]


@cuda.jit
def _some_return_early(out):
    i = cuda.threadIdx.x
    if i < 3:
        return
    cuda.syncthreads()
    out[i] = cuda.syncthreads_count(1)


@cuda.jit
def _one_fails(out):
    i = cuda.threadIdx.x
    cuda.syncthreads()
    if i == 2:
        raise ValueError("lane two")
    cuda.syncthreads()
    out[i] = 1


def test_writes_before_a_barrier_are_seen_after_it():
    out = np.zeros((3, 8), np.int64)
    _reverse_twice[3, 8](out)
    assert (out == np.arange(8) * 10 + 1).all()


def test_threads_that_returned_do_not_hold_the_others():
    out = np.zeros(6, np.int64)
    _some_return_early[1, 6](out)
    assert out.tolist() == [0, 0, 0, 3, 3, 3]


def test_an_exception_in_one_thread_is_raised_by_the_launch():
    with pytest.raises(ValueError, match="lane two"):
        _one_fails[1, 4](np.zeros(4, np.int64))


@cuda.jit
def _sum_through_shared(out):
    cuda.syncthreads()  # every thread reaches the shared array's line at once
    buffer = cuda.shared.array(32, np.int64)
    i = cuda.threadIdx.x
    buffer[i] = i
    cuda.syncthreads()
    total = 0
    for j in range(32):
        total += buffer[j]
    out[cuda.blockIdx.x, i] = total


def test_threads_reaching_a_shared_array_together_get_one_array():
    """Before the fix, 2-3 launches in 40 gave some threads an array of their own."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # thread switches inside the lookup, as often as they come
    try:
        for _ in range(30):
            out = np.zeros((2, 32), np.int64)
            _sum_through_shared[2, 32](out)
            assert (out == sum(range(32))).all()
    finally:
        sys.setswitchinterval(before)
