"""Rigorous interval arithmetic as CUDA device functions: :mod:`pbbflow.spatial.interval` on the GPU.

The semantics are the CPU module's by construction: every interval operation whose result depends
on rounding is the CPU function's own Python body, compiled for the device with its global names
bound to this module's directed scalar operations (:func:`device_twin`), and the rest (EMPTY
tests, ``step``, widening, intersect, neg, abs, min, max, relu) are the CPU's ``numba.njit``
functions called from device code. So the EMPTY convention, the set-based domains, the clamps and
the treatment of pi and of large trigonometric arguments are the CPU's.

- **Rounding**: sums, products, quotients and square roots are ``numba.cuda.libdevice``'s
  correctly directed-rounded ``dadd/dmul/ddiv/dsqrt_rd/_ru`` (the error-free ``two_product`` uses
  its ``fma``) (there is no ``dsub``: the operation
  adds the negation); a NaN from inf - inf or inf / inf becomes -inf (lower) or +inf (upper) as on
  the CPU. Where the CPU widens unconditionally because its error-free transformation could
  underflow (results below 2**-960), the device is one float tighter, still rigorous.
- **Library functions** (exp, log, tanh, sin, cos, tan, atan2) are the device's ``math`` (libdevice
  on a GPU, measured tanh error 1.34 ulp on an H200) widened by :data:`LIBRARY_ULPS` = 3 floats:
  the CUDA Programming Guide bounds sin, cos, tan, atan2 (and atanh, which contraction uses) by
  2 ulps of the correctly rounded result, so up to 2.5 ulps of the exact value, beyond 2 floats.
  Under numba's CUDA simulator the device ``math`` is the host's libm (glibc tanh 2.05 ulp), so
  there it is 4, the CPU's value, and the results equal the CPU's.
- The simulator's ``libdevice`` stubs return None: tests install exact stand-ins first.
"""

from __future__ import annotations

import math
import types as pytypes

from numba import cuda
from numba.cuda import libdevice

from ...spatial import interval as cpu
from ..warp import SIMULATED

INF = cpu.INF
NAN = cpu.NAN
EMPTY = cpu.EMPTY
ENTIRE = cpu.ENTIRE
LIBRARY_ULPS = cpu.LIBRARY_ULPS if SIMULATED else 3


def device_twin(function, namespace: dict):
    """The Python body of the ``numba.njit`` ``function`` as a CUDA device function whose global
    names are looked up in ``namespace`` (the same code, other callees)."""
    body = function.py_func
    twin = pytypes.FunctionType(body.__code__, namespace, body.__name__, body.__defaults__, body.__closure__)
    twin.__qualname__ = body.__qualname__
    twin.__doc__ = body.__doc__
    return cuda.jit(device=True)(twin)


# ---------------------------------------------------------------- directed scalar operations


@cuda.jit(device=True)
def add_down(a, b):
    s = libdevice.dadd_rd(a, b)
    return s if s == s else -INF


@cuda.jit(device=True)
def add_up(a, b):
    s = libdevice.dadd_ru(a, b)
    return s if s == s else INF


@cuda.jit(device=True)
def mul_down(a, b):
    """A lower bound of a * b, with 0 * inf = 0 (the endpoint convention of interval products)."""
    if a == 0.0 or b == 0.0:
        return 0.0
    return libdevice.dmul_rd(a, b)


@cuda.jit(device=True)
def mul_up(a, b):
    if a == 0.0 or b == 0.0:
        return 0.0
    return libdevice.dmul_ru(a, b)


@cuda.jit(device=True)
def div_down(a, b):
    q = libdevice.ddiv_rd(a, b)
    return q if q == q else -INF


@cuda.jit(device=True)
def div_up(a, b):
    q = libdevice.ddiv_ru(a, b)
    return q if q == q else INF


@cuda.jit(device=True)
def sqrt_down(x):
    return libdevice.dsqrt_rd(x)


@cuda.jit(device=True)
def sqrt_up(x):
    return libdevice.dsqrt_ru(x)


@cuda.jit(device=True)
def fma(a, b, c):
    """a * b + c rounded once."""
    return libdevice.fma(a, b, c)


def _host_exp(x: float) -> float:
    """The simulator's device exp: the host's, +inf past the overflow threshold as on a device
    (Python's math.exp raises there)."""
    try:
        return math.exp(x)
    except OverflowError:
        return INF


# ---------------------------------------------------------------- the CPU's interval operations, on the device

_NAMESPACE = dict(vars(cpu))
_NAMESPACE.update(
    LIBRARY_ULPS=LIBRARY_ULPS,
    add_down=add_down,
    add_up=add_up,
    mul_down=mul_down,
    mul_up=mul_up,
    div_down=div_down,
    div_up=div_up,
    sqrt_down=sqrt_down,
    sqrt_up=sqrt_up,
    fma=fma,
)
if SIMULATED:
    _NAMESPACE["math"] = pytypes.SimpleNamespace(**{**vars(math), "exp": _host_exp})
_TWINS = (
    "two_sum",
    "two_product",
    "_power_down",
    "_power_up",
    "add",
    "sub",
    "mul",
    "div",
    "_positive_power",
    "powi",
    "sqrt",
    "exp",
    "log",
    "tanh",
    "sigmoid",
    "_multiples_of_pi",
    "_periodic",
    "cos",
    "sin",
    "tan",
    "atan2",
)
for _name in _TWINS:
    _NAMESPACE[_name] = device_twin(getattr(cpu, _name), _NAMESPACE)
del _name

is_empty = cpu.is_empty
step = cpu.step
widen_down = cpu.widen_down
widen_up = cpu.widen_up
intersect = cpu.intersect
neg = cpu.neg
abs_ = cpu.abs_
min_ = cpu.min_
max_ = cpu.max_
relu = cpu.relu
two_sum = _NAMESPACE["two_sum"]
two_product = _NAMESPACE["two_product"]
add = _NAMESPACE["add"]
sub = _NAMESPACE["sub"]
mul = _NAMESPACE["mul"]
div = _NAMESPACE["div"]
powi = _NAMESPACE["powi"]
sqrt = _NAMESPACE["sqrt"]
exp = _NAMESPACE["exp"]
log = _NAMESPACE["log"]
tanh = _NAMESPACE["tanh"]
sigmoid = _NAMESPACE["sigmoid"]
cos = _NAMESPACE["cos"]
sin = _NAMESPACE["sin"]
tan = _NAMESPACE["tan"]
atan2 = _NAMESPACE["atan2"]
