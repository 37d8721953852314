"""BLAS's own threads, kept to one while pbbflow's threads share the cores.

numpy's OpenBLAS starts a thread a core and, after each call, keeps them spinning for a while. Our
matrices are small (a network's layers), and our parallelism is over boxes: those spinning threads
only take cores from ours (rosenbrock-4-32-32-1-tanh on 2 cores, two threads of network bounds:
7.6 s with BLAS's threads, 4.0 s without).
"""

from __future__ import annotations

import functools
from contextlib import AbstractContextManager

from threadpoolctl import ThreadpoolController


@functools.cache
def _controller() -> ThreadpoolController:
    """The process's BLAS libraries, found once (about 2 ms)."""
    return ThreadpoolController()


def one_blas_thread() -> AbstractContextManager:
    """A context in which BLAS runs each call on its caller's thread alone."""
    return _controller().limit(limits=1, user_api="blas")
