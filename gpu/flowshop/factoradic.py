"""Factoradic arithmetic on digit vectors, for work stealing on the device and for the host.

A position of ``[0, n!]`` is a vector ``D`` of ``n + 1`` int32 digits: ``D[0]`` (0 or 1) has
weight ``n!`` (so that ``n!`` itself, the end of the whole space, is ``[1, 0, ..., 0]``) and
``D[1 + l]`` is the IVM digit of level ``l`` (radix ``n - l``, weight ``(n - 1 - l)!``).
Lexicographic order is numeric order.  The functions are ``numba.njit`` bodies: the CUDA
kernels call them per thread and the tests call them on the CPU against gmpy2.

``to_limbs`` (one vector, per IVM in the kernels) and ``limbs_to_digits`` (whole batches) convert
between digit vectors and the uint64 limbs of ``PackedUnit`` (most significant first), so a GPU's
thousands of intervals reach the coordinator without a Python integer per bound.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(inline="always")
def compare(x, y) -> int:
    """-1, 0 or 1 as ``x`` is below, equal to or above ``y``."""
    for i in range(x.shape[0]):
        if x[i] != y[i]:
            return -1 if x[i] < y[i] else 1
    return 0


@njit(inline="always")
def add(x, y, out) -> None:
    """``out = x + y`` (the sum must not exceed ``n!``)."""
    n = x.shape[0] - 1
    carry = 0
    for i in range(n, 0, -1):
        s = x[i] + y[i] + carry
        r = n - i + 1
        carry = 1 if s >= r else 0
        out[i] = s - r * carry
    out[0] = x[0] + y[0] + carry


@njit(inline="always")
def subtract(x, y, out) -> None:
    """``out = x - y`` for ``x >= y``."""
    n = x.shape[0] - 1
    borrow = 0
    for i in range(n, 0, -1):
        d = x[i] - y[i] - borrow
        borrow = 1 if d < 0 else 0
        out[i] = d + (n - i + 1) * borrow
    out[0] = x[0] - y[0] - borrow


@njit(inline="always")
def halve(x, out) -> None:
    """``out = x // 2``."""
    n = x.shape[0] - 1
    rest = 0
    for i in range(n + 1):
        # the remainder of digit i - 1 is worth (n - i + 1) units of digit i
        current = rest * (n - i + 1) + x[i] if i > 0 else x[0]
        out[i] = current // 2
        rest = current - 2 * out[i]


@njit(inline="always")
def leading_digit(x) -> int:
    """Index of the first non-zero digit of ``x`` (``len(x)`` for zero): smaller is larger."""
    for i in range(x.shape[0]):
        if x[i] != 0:
            return i
    return x.shape[0]


@njit(inline="always")
def to_limbs(digits, words, limbs) -> None:
    """One (n+1)-digit vector into uint64 limbs, most significant first; ``words``: scratch of
    ``2 * len(limbs)`` uint64 (32-bit words, least significant first).  The kernels call it per IVM."""
    n = digits.shape[0] - 1
    width = limbs.shape[0]
    for w in range(2 * width):
        words[w] = 0
    words[0] = digits[0]
    for i in range(1, n + 1):
        carry = np.uint64(digits[i])
        r = np.uint64(n - i + 1)
        for w in range(2 * width):
            t = words[w] * r + carry
            words[w] = t & np.uint64(0xFFFFFFFF)
            carry = t >> np.uint64(32)
    for limb in range(width):
        low = words[2 * (width - 1 - limb)]
        high = words[2 * (width - 1 - limb) + 1]
        limbs[limb] = (high << np.uint64(32)) | low


@njit(cache=True)
def limbs_to_digits(limbs, digits):
    """Rows of limbs into rows of (n+1)-digit vectors: the inverse of :func:`to_limbs` (values must lie
    in ``[0, n!]``)."""
    k, width = limbs.shape
    n = digits.shape[1] - 1
    words = np.zeros(2 * width, dtype=np.uint64)  # most significant first
    for row in range(k):
        for limb in range(width):
            words[2 * limb] = limbs[row, limb] >> np.uint64(32)
            words[2 * limb + 1] = limbs[row, limb] & np.uint64(0xFFFFFFFF)
        for i in range(n, 0, -1):
            r = np.uint64(n - i + 1)
            rest = np.uint64(0)
            for w in range(2 * width):
                t = (rest << np.uint64(32)) | words[w]
                words[w] = t // r
                rest = t - words[w] * r
            digits[row, i] = rest
        digits[row, 0] = words[2 * width - 1]
