"""Exact stand-ins for ``numba.cuda.libdevice``'s directed-rounding functions under the CUDA simulator.

The simulator's stubs return None (stored as NaN, no error). These compute the exact result as a
Fraction and round it down or up (IEEE 754: overflow rounds to the largest double or to infinity
by direction, an exact zero sum is -0 when rounding down), so simulated kernels get the numbers an
H200 gives (``notes/stack-probe.md`` §5 checked the method against one).
"""

from __future__ import annotations

import contextlib
import math
from fractions import Fraction

from numba.cuda import libdevice

MAX = 1.7976931348623157e308


def _round(exact: Fraction, up: bool) -> float:
    """The float next to ``exact`` (non-zero) in the direction: up (toward +inf) or down."""
    try:
        nearest = exact.numerator / exact.denominator  # correctly rounded to nearest
    except OverflowError:
        nearest = math.inf if exact > 0 else -math.inf
    if math.isinf(nearest):
        if nearest > 0:
            return math.inf if up else MAX
        return -MAX if up else -math.inf
    if up and Fraction(nearest) < exact:
        return math.nextafter(nearest, math.inf)
    if not up and Fraction(nearest) > exact:
        return math.nextafter(nearest, -math.inf)
    return nearest


def _add(a: float, b: float, up: bool) -> float:
    a, b = float(a), float(b)
    if not (math.isfinite(a) and math.isfinite(b)):
        return a + b
    exact = Fraction(a) + Fraction(b)
    if exact == 0:
        if a == 0.0 and b == 0.0 and math.copysign(1.0, a) == math.copysign(1.0, b):
            return a
        return 0.0 if up else -0.0
    return _round(exact, up)


def _mul(a: float, b: float, up: bool) -> float:
    a, b = float(a), float(b)
    if not (math.isfinite(a) and math.isfinite(b)) or a == 0.0 or b == 0.0:
        return a * b
    return _round(Fraction(a) * Fraction(b), up)


def _div(a: float, b: float, up: bool) -> float:
    a, b = float(a), float(b)
    if b == 0.0:
        if a != a or a == 0.0:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    if not (math.isfinite(a) and math.isfinite(b)) or a == 0.0:
        return a / b
    return _round(Fraction(a) / Fraction(b), up)


def _sqrt(x: float, up: bool) -> float:
    x = float(x)
    if x != x or x < 0.0:
        return math.nan
    s = math.sqrt(x)
    if x == 0.0 or math.isinf(x):
        return s
    square = Fraction(s) ** 2
    if up and square < Fraction(x):
        return math.nextafter(s, math.inf)
    if not up and square > Fraction(x):
        return math.nextafter(s, -math.inf)
    return s


def _fma(a: float, b: float, c: float) -> float:
    """a * b + c rounded once to nearest (ties to even, as Python's float of a Fraction)."""
    a, b, c = float(a), float(b), float(c)
    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(c)):
        return a * b + c
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:
        return a * b + c  # the sign of an exact zero as IEEE 754 gives it
    try:
        return exact.numerator / exact.denominator
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


FUNCTIONS = {
    "fma": _fma,
    "dadd_rd": lambda a, b: _add(a, b, False),
    "dadd_ru": lambda a, b: _add(a, b, True),
    "dmul_rd": lambda a, b: _mul(a, b, False),
    "dmul_ru": lambda a, b: _mul(a, b, True),
    "ddiv_rd": lambda a, b: _div(a, b, False),
    "ddiv_ru": lambda a, b: _div(a, b, True),
    "dsqrt_rd": lambda x: _sqrt(x, False),
    "dsqrt_ru": lambda x: _sqrt(x, True),
}


@contextlib.contextmanager
def exact_libdevice():
    """Install the stand-ins on ``numba.cuda.libdevice`` for the duration (simulator only)."""
    saved = {name: getattr(libdevice, name) for name in FUNCTIONS}
    for name, function in FUNCTIONS.items():
        setattr(libdevice, name, function)
    try:
        yield
    finally:
        for name, function in saved.items():
            setattr(libdevice, name, function)
