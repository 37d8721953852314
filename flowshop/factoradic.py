"""Exact conversions between integers of [0, n!) and factoradic digit vectors.

Digit ``V[l]`` at level ``l`` has radix ``n - l`` (so ``0 <= V[l] <= n-1-l``;
the last digit is always 0) and weight ``(n-1-l)!``. The map is monotonic:
lexicographic order of digit vectors equals integer order.
"""

from __future__ import annotations

import operator
from functools import lru_cache

import gmpy2
import numpy as np
from gmpy2 import mpz


@lru_cache(maxsize=1024)
def factorial(n: int) -> mpz:
    """Return ``n!`` as an ``mpz``."""
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"factorial of negative number {n}")
    return gmpy2.fac(n)


def digits_to_int(digits: np.ndarray) -> mpz:
    """Return the integer whose factoradic digits (length ``n``) are ``digits``."""
    v = np.asarray(digits)
    if v.ndim != 1 or (v.size and not np.issubdtype(v.dtype, np.integer)):
        raise ValueError("digits must be a 1-D integer array")
    n = v.shape[0]
    if np.any(v < 0) or np.any(v >= np.arange(n, 0, -1)):
        raise ValueError("factoradic digit out of range")
    # Horner scheme: x_l = x_{l-1} * (n - l) + V[l].
    x = mpz(0)
    for radix, d in zip(range(n, 0, -1), v.tolist()):
        x = x * radix + d
    return x


def int_to_digits(x: int | mpz, n: int) -> np.ndarray:
    """Return the length-``n`` int32 factoradic digits of ``x``; ``x`` must lie in ``[0, n!)``."""
    x = mpz(operator.index(x))
    if not 0 <= x < factorial(n):
        raise ValueError(f"{x} is not in [0, {n}!)")
    out = np.zeros(n, dtype=np.int32)
    for level in range(n - 1, -1, -1):
        x, out[level] = gmpy2.f_divmod(x, n - level)
    return out
