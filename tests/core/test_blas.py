"""BLAS kept to one thread while pbbflow's threads run."""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_info

from pbbflow.core.blas import one_blas_thread


def _blas_threads() -> list[int]:
    return [entry["num_threads"] for entry in threadpool_info() if entry["user_api"] == "blas"]


def test_blas_runs_on_one_thread_inside_and_as_before_after():
    np.ones((2, 2)) @ np.ones((2, 2))  # numpy's BLAS is loaded
    before = _blas_threads()
    assert before, "numpy's BLAS was not found"
    with one_blas_thread():
        assert _blas_threads() == [1] * len(before)
    assert _blas_threads() == before
