"""Rigorous interval arithmetic on float64 pairs, as numba functions callable from other jitted code.

An interval is a pair ``(lo, hi)`` of floats with ``lo <= hi``; the endpoints may be infinite
(``lo = -inf`` or ``hi = +inf``: the set is unbounded on that side, it never contains infinity).
Every operation takes endpoints as plain floats and returns a tuple, so it allocates nothing.

- **EMPTY** is ``(nan, nan)``: an interval is empty when an endpoint is NaN (:func:`is_empty`).
  Every operation returns EMPTY for an empty operand. Domains are set-based (IEEE 1788): an
  operand partly outside an operation's domain uses the part inside (``log([-1, 2]) = [-inf,
  log 2]``); entirely outside gives EMPTY. A NaN met inside an operation never leaks: a lower
  end becomes ``-inf``, an upper end ``+inf``.
- **Rounding** is outward without touching the FPU mode. Sums, products, quotients and square
  roots are computed in round-to-nearest, then an error-free transformation (TwoSum, or the
  fma residual of a product, quotient or square root) tells the sign of the rounding error and
  the result steps one float outward only when it was inexact: results are the correctly
  directed-rounded values. Where underflow could spoil the residual, the result steps outward
  unconditionally. Overflow of a finite result rounds down to the largest double.
- **Library transcendentals** (exp, log, tanh, sin, cos, tan, atan2) are widened by
  :data:`LIBRARY_ULPS` floats on each side and clamped to the function's true range.
"""

from __future__ import annotations

import math

import numba
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

INF = math.inf
NAN = math.nan
EMPTY = (NAN, NAN)
ENTIRE = (-INF, INF)
LIBRARY_ULPS = 4

# The neighbouring doubles of pi and e (math.pi < pi and math.e < e; the tests check it with arb).
PI_LO = 3.141592653589793
PI_HI = 3.1415926535897936
E_LO = 2.718281828459045
E_HI = 2.7182818284590455
HALF_PI_LO = PI_LO / 2  # exact halvings
HALF_PI_HI = PI_HI / 2

# Below these magnitudes an fma residual may underflow: the result is widened without looking.
_SAFE_RESIDUAL = 2.0**-960
# Beyond this magnitude sin, cos and tan do not rely on the library's argument reduction.
LARGE_TRIG_ARGUMENT = 2.0**30
_ORDINAL_INF = 0x7FF0000000000000
_ABS_MASK = 0x7FFFFFFFFFFFFFFF
_SIGN_BIT = -0x8000000000000000

jit = numba.njit(cache=True, nogil=True)
inline = numba.njit(cache=True, nogil=True, inline="always")


@intrinsic
def _float_bits(typingctx, x):
    """The IEEE bit pattern of a float64 as an int64 (a bitcast, no conversion)."""
    if x != types.float64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


@intrinsic
def _bits_float(typingctx, x):
    """The float64 whose IEEE bit pattern is the int64 ``x``."""
    if x != types.int64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


@intrinsic
def fma(typingctx, a, b, c):
    """a * b + c rounded once (LLVM's fma: a hardware instruction where the CPU has one)."""
    if not (a == types.float64 and b == types.float64 and c == types.float64):
        return None

    def codegen(context, builder, signature, args):
        return builder.fma(*args)

    return types.float64(types.float64, types.float64, types.float64), codegen


@intrinsic
def _choose(typingctx, condition, a, b):
    """``a if condition else b`` as an LLVM select (no branch to mispredict)."""
    if not (condition == types.boolean and a == types.float64 and b == types.float64):
        return None

    def codegen(context, builder, signature, args):
        return builder.select(args[0], args[1], args[2])

    return types.float64(types.boolean, types.float64, types.float64), codegen


@inline
def step(x: float, n: int) -> float:
    """The float ``n`` places above ``x`` in the ordered doubles (below for n < 0), saturating at
    +-inf; -0.0 and 0.0 are one place. ``x`` must not be NaN. Branch-free."""
    bits = _float_bits(x)
    sign = bits >> 63  # 0 or -1
    ordinal = ((bits & _ABS_MASK) ^ sign) - sign + n
    ordinal = min(max(ordinal, -_ORDINAL_INF), _ORDINAL_INF)
    sign = ordinal >> 63
    return _bits_float(((ordinal ^ sign) - sign) | (sign & _SIGN_BIT))


@inline
def is_empty(lo: float, hi: float) -> bool:
    return lo != lo or hi != hi


@inline
def _down_of_inexact(y: float) -> float:
    """A lower bound for a real that rounds to ``y`` (one float below; NaN gives -inf)."""
    return step(y, -1) if y == y else -INF


@inline
def _up_of_inexact(y: float) -> float:
    return step(y, 1) if y == y else INF


@inline
def widen_down(y: float, ulps: int) -> float:
    """``ulps`` floats below a library result (NaN gives -inf)."""
    return step(y, -ulps) if y == y else -INF


@inline
def widen_up(y: float, ulps: int) -> float:
    return step(y, ulps) if y == y else INF


# ---------------------------------------------------------------- directed scalar operations


@inline
def _two_sum_error(a: float, b: float, s: float) -> float:
    """The exact a + b - s for s = fl(a + b) (Knuth's TwoSum); NaN if an intermediate overflowed."""
    z = s - a
    return (a - (s - z)) + (b - z)


@inline
def two_sum(a: float, b: float) -> tuple[float, float]:
    """s = fl(a + b) and the exact a + b - s; the error is NaN when s is not finite."""
    s = a + b
    if s - s == 0.0:
        return s, _two_sum_error(a, b, s)
    return s, NAN


@inline
def two_product(a: float, b: float) -> tuple[float, float]:
    """p = fl(a * b) and the exact a * b - p (the fma residual); the error is NaN when p is not
    finite or the residual could underflow."""
    p = a * b
    if p - p != 0.0:
        return p, NAN
    if a == 0.0 or b == 0.0:
        return p, 0.0
    if abs(p) >= _SAFE_RESIDUAL:
        return p, fma(a, b, -p)
    return p, NAN


@inline
def add_down(a: float, b: float) -> float:
    s = a + b
    if s - s == 0.0:
        return _choose(_two_sum_error(a, b, s) >= 0.0, s, step(s, -1))
    return _down_of_inexact(s)


@inline
def add_up(a: float, b: float) -> float:
    s = a + b
    if s - s == 0.0:
        return _choose(_two_sum_error(a, b, s) <= 0.0, s, step(s, 1))
    return _up_of_inexact(s)


@inline
def mul_down(a: float, b: float) -> float:
    """A lower bound of a * b, with 0 * inf = 0 (the endpoint convention of interval products)."""
    if a == 0.0 or b == 0.0:
        return 0.0
    p = a * b
    if p - p == 0.0 and abs(p) >= _SAFE_RESIDUAL:
        return _choose(fma(a, b, -p) >= 0.0, p, step(p, -1))
    return _down_of_inexact(p)


@inline
def mul_up(a: float, b: float) -> float:
    if a == 0.0 or b == 0.0:
        return 0.0
    p = a * b
    if p - p == 0.0 and abs(p) >= _SAFE_RESIDUAL:
        return _choose(fma(a, b, -p) <= 0.0, p, step(p, 1))
    return _up_of_inexact(p)


@jit
def _quotient_error_sign(a: float, b: float, q: float) -> float:
    """A number with the sign of a / b - q (q = fl(a / b)), or NaN when the residual may be inexact."""
    if abs(a) >= _SAFE_RESIDUAL and abs(q) >= _SAFE_RESIDUAL and q - q == 0.0 and b - b == 0.0:
        r = fma(-q, b, a)  # a - q b, exact here
        return r if b > 0.0 else -r
    return NAN


@jit
def div_down(a: float, b: float) -> float:
    """A lower bound of a / b for b != 0 (b may be infinite; a / inf = 0 for finite a)."""
    q = a / b
    if a == 0.0 or (b - b != 0.0 and a - a == 0.0):
        return q
    sign = _quotient_error_sign(a, b, q)
    if sign == sign:
        return q if sign >= 0.0 else step(q, -1)
    return _down_of_inexact(q)


@jit
def div_up(a: float, b: float) -> float:
    q = a / b
    if a == 0.0 or (b - b != 0.0 and a - a == 0.0):
        return q
    sign = _quotient_error_sign(a, b, q)
    if sign == sign:
        return q if sign <= 0.0 else step(q, 1)
    return _up_of_inexact(q)


@jit
def sqrt_down(x: float) -> float:
    """A lower bound of sqrt(x) for x >= 0."""
    s = math.sqrt(x)
    if x == 0.0 or x == INF:
        return s
    if x >= _SAFE_RESIDUAL:
        return s if fma(s, s, -x) <= 0.0 else step(s, -1)
    return max(step(s, -1), 0.0)


@jit
def sqrt_up(x: float) -> float:
    s = math.sqrt(x)
    if x == 0.0 or x == INF:
        return s
    if x >= _SAFE_RESIDUAL:
        return s if fma(s, s, -x) >= 0.0 else step(s, 1)
    return step(s, 1)


@jit
def _power_down(x: float, k: int) -> float:
    """A lower bound of x ** k for x >= 0 and k >= 1 (binary powering; every factor is >= 0)."""
    result = 1.0
    base = x
    while k > 0:
        if k & 1:
            result = max(mul_down(result, base), 0.0)
        k >>= 1
        if k > 0:
            base = max(mul_down(base, base), 0.0)
    return result


@jit
def _power_up(x: float, k: int) -> float:
    result = 1.0
    base = x
    while k > 0:
        if k & 1:
            result = mul_up(result, base)
        k >>= 1
        if k > 0:
            base = mul_up(base, base)
    return result


# ---------------------------------------------------------------- interval operations


@jit
def intersect(alo: float, ahi: float, blo: float, bhi: float) -> tuple[float, float]:
    if is_empty(alo, ahi) or is_empty(blo, bhi):
        return EMPTY
    lo = max(alo, blo)
    hi = min(ahi, bhi)
    if lo > hi:
        return EMPTY
    return lo, hi


@jit
def neg(alo: float, ahi: float) -> tuple[float, float]:
    return -ahi, -alo  # EMPTY stays (nan, nan)


@jit
def add(alo: float, ahi: float, blo: float, bhi: float) -> tuple[float, float]:
    if is_empty(alo, ahi) or is_empty(blo, bhi):
        return EMPTY
    return add_down(alo, blo), add_up(ahi, bhi)


@jit
def sub(alo: float, ahi: float, blo: float, bhi: float) -> tuple[float, float]:
    if is_empty(alo, ahi) or is_empty(blo, bhi):
        return EMPTY
    return add_down(alo, -bhi), add_up(ahi, -blo)


@jit
def mul(alo: float, ahi: float, blo: float, bhi: float) -> tuple[float, float]:
    if is_empty(alo, ahi) or is_empty(blo, bhi):
        return EMPTY
    if alo >= 0.0:
        if blo >= 0.0:
            return mul_down(alo, blo), mul_up(ahi, bhi)
        if bhi <= 0.0:
            return mul_down(ahi, blo), mul_up(alo, bhi)
        return mul_down(ahi, blo), mul_up(ahi, bhi)
    if ahi <= 0.0:
        if blo >= 0.0:
            return mul_down(alo, bhi), mul_up(ahi, blo)
        if bhi <= 0.0:
            return mul_down(ahi, bhi), mul_up(alo, blo)
        return mul_down(alo, bhi), mul_up(alo, blo)
    if blo >= 0.0:
        return mul_down(alo, bhi), mul_up(ahi, bhi)
    if bhi <= 0.0:
        return mul_down(ahi, blo), mul_up(alo, blo)
    lo = min(mul_down(alo, bhi), mul_down(ahi, blo))
    hi = max(mul_up(alo, blo), mul_up(ahi, bhi))
    return lo, hi


@jit
def div(alo: float, ahi: float, blo: float, bhi: float) -> tuple[float, float]:
    """a / b as a set: the hull of {x / y : x in a, y in b, y != 0} (EMPTY for b = [0, 0])."""
    if is_empty(alo, ahi) or is_empty(blo, bhi):
        return EMPTY
    if blo > 0.0:
        if alo >= 0.0:
            return div_down(alo, bhi), div_up(ahi, blo)
        if ahi <= 0.0:
            return div_down(alo, blo), div_up(ahi, bhi)
        return div_down(alo, blo), div_up(ahi, blo)
    if bhi < 0.0:
        if alo >= 0.0:
            return div_down(ahi, bhi), div_up(alo, blo)
        if ahi <= 0.0:
            return div_down(ahi, blo), div_up(alo, bhi)
        return div_down(ahi, bhi), div_up(alo, bhi)
    # 0 is in b
    if blo == 0.0 and bhi == 0.0:
        return EMPTY
    if alo <= 0.0 <= ahi or (blo < 0.0 < bhi):
        return ENTIRE
    if alo > 0.0:
        if blo == 0.0:
            return div_down(alo, bhi), INF
        return -INF, div_up(alo, blo)
    if blo == 0.0:
        return -INF, div_up(ahi, bhi)
    return div_down(ahi, blo), INF


@jit
def _positive_power(alo: float, ahi: float, k: int) -> tuple[float, float]:
    """a ** k for k >= 2 and a non-empty."""
    if k % 2 == 0:
        if alo >= 0.0:
            return _power_down(alo, k), _power_up(ahi, k)
        if ahi <= 0.0:
            return _power_down(-ahi, k), _power_up(-alo, k)
        return 0.0, _power_up(max(-alo, ahi), k)
    lo = _power_down(alo, k) if alo >= 0.0 else -_power_up(-alo, k)
    hi = _power_up(ahi, k) if ahi >= 0.0 else -_power_down(-ahi, k)
    return lo, hi


@jit
def powi(alo: float, ahi: float, k: int) -> tuple[float, float]:
    """a ** k for an integer k (k < 0: 1 / a ** -k as a set; 0 ** 0 = 1)."""
    if is_empty(alo, ahi):
        return EMPTY
    if k == 0:
        return 1.0, 1.0
    if k == 1:
        return alo, ahi
    if k == -1:
        return div(1.0, 1.0, alo, ahi)
    if k < 0:
        plo, phi = _positive_power(alo, ahi, -k)
        return div(1.0, 1.0, plo, phi)
    return _positive_power(alo, ahi, k)


@jit
def sqrt(alo: float, ahi: float) -> tuple[float, float]:
    if is_empty(alo, ahi) or ahi < 0.0:
        return EMPTY
    return sqrt_down(max(alo, 0.0)), sqrt_up(ahi)


@jit
def exp(alo: float, ahi: float) -> tuple[float, float]:
    if is_empty(alo, ahi):
        return EMPTY
    lo = max(widen_down(math.exp(alo), LIBRARY_ULPS), 0.0)
    return lo, widen_up(math.exp(ahi), LIBRARY_ULPS)


@jit
def log(alo: float, ahi: float) -> tuple[float, float]:
    if is_empty(alo, ahi) or ahi <= 0.0:
        return EMPTY
    lo = -INF if alo <= 0.0 else widen_down(math.log(alo), LIBRARY_ULPS)
    return lo, widen_up(math.log(ahi), LIBRARY_ULPS)


@jit
def tanh(alo: float, ahi: float) -> tuple[float, float]:
    if is_empty(alo, ahi):
        return EMPTY
    lo = max(widen_down(math.tanh(alo), LIBRARY_ULPS), -1.0)
    return lo, min(widen_up(math.tanh(ahi), LIBRARY_ULPS), 1.0)


@jit
def sigmoid(alo: float, ahi: float) -> tuple[float, float]:
    """1 / (1 + exp(-a)), increasing; each end from rigorous exp, add and div (no cancellation)."""
    if is_empty(alo, ahi):
        return EMPTY
    lo = div_down(1.0, add_up(1.0, widen_up(math.exp(-alo), LIBRARY_ULPS)))
    e_lo = max(widen_down(math.exp(-ahi), LIBRARY_ULPS), 0.0)
    hi = div_up(1.0, add_down(1.0, e_lo))
    return max(lo, 0.0), min(hi, 1.0)


@jit
def _multiples_of_pi(alo: float, ahi: float, offset: float) -> tuple[bool, bool]:
    """Whether (n + offset) pi may lie in [alo, ahi] for an even n, and for an odd n.

    A superset: n ranges over the integers in a rigorous enclosure of a / pi - offset.
    """
    t_lo = add_down(div_down(alo, PI_HI if alo >= 0.0 else PI_LO), -offset)
    t_hi = add_up(div_up(ahi, PI_LO if ahi >= 0.0 else PI_HI), -offset)
    first = math.ceil(t_lo)
    last = math.floor(t_hi)
    if first > last:
        return False, False
    if last > first:
        return True, True
    odd = first % 2 != 0
    return not odd, odd


@jit
def _trig_is_wild(alo: float, ahi: float) -> bool:
    """No endpoint analysis: infinite ends or arguments beyond LARGE_TRIG_ARGUMENT."""
    return not (-LARGE_TRIG_ARGUMENT <= alo and ahi <= LARGE_TRIG_ARGUMENT)


@jit
def _periodic(alo: float, ahi: float, v_lo: float, v_hi: float, offset: float) -> tuple[float, float]:
    """Range of cos (offset 0) or sin (offset 1/2) given its values at the ends: their hull, widened,
    with the maximum 1 where an extremum (n + offset) pi with n even may lie inside, -1 for n odd."""
    has_max, has_min = _multiples_of_pi(alo, ahi, offset)
    lo = -1.0 if has_min else max(widen_down(min(v_lo, v_hi), LIBRARY_ULPS), -1.0)
    hi = 1.0 if has_max else min(widen_up(max(v_lo, v_hi), LIBRARY_ULPS), 1.0)
    return lo, hi


@jit
def cos(alo: float, ahi: float) -> tuple[float, float]:
    if is_empty(alo, ahi):
        return EMPTY
    if _trig_is_wild(alo, ahi):
        return -1.0, 1.0
    return _periodic(alo, ahi, math.cos(alo), math.cos(ahi), 0.0)


@jit
def sin(alo: float, ahi: float) -> tuple[float, float]:
    if is_empty(alo, ahi):
        return EMPTY
    if _trig_is_wild(alo, ahi):
        return -1.0, 1.0
    return _periodic(alo, ahi, math.sin(alo), math.sin(ahi), 0.5)


@jit
def tan(alo: float, ahi: float) -> tuple[float, float]:
    """ENTIRE when a pole (n + 1/2) pi may lie in a; tan is increasing between poles."""
    if is_empty(alo, ahi):
        return EMPTY
    if _trig_is_wild(alo, ahi):
        return ENTIRE
    even_pole, odd_pole = _multiples_of_pi(alo, ahi, 0.5)
    if even_pole or odd_pole:
        return ENTIRE
    return widen_down(math.tan(alo), LIBRARY_ULPS), widen_up(math.tan(ahi), LIBRARY_ULPS)


@jit
def abs_(alo: float, ahi: float) -> tuple[float, float]:
    if is_empty(alo, ahi):
        return EMPTY
    if alo >= 0.0:
        return alo, ahi
    if ahi <= 0.0:
        return -ahi, -alo
    return 0.0, max(-alo, ahi)


@jit
def min_(alo: float, ahi: float, blo: float, bhi: float) -> tuple[float, float]:
    if is_empty(alo, ahi) or is_empty(blo, bhi):
        return EMPTY
    return min(alo, blo), min(ahi, bhi)


@jit
def max_(alo: float, ahi: float, blo: float, bhi: float) -> tuple[float, float]:
    if is_empty(alo, ahi) or is_empty(blo, bhi):
        return EMPTY
    return max(alo, blo), max(ahi, bhi)


@jit
def relu(alo: float, ahi: float) -> tuple[float, float]:
    if is_empty(alo, ahi):
        return EMPTY
    return max(alo, 0.0), max(ahi, 0.0)


@jit
def _atan2_upper(ylo: float, yhi: float, xlo: float, xhi: float) -> tuple[float, float]:
    """Library values of atan2's extremes on a box with y >= 0 that avoids the origin.

    There atan2 decreases in x; along the right edge it increases in y when x > 0 and decreases
    when x < 0 (and mirrored on the left edge), so the extremes are at corners.
    """
    lo = math.atan2(ylo, xhi) if xhi > 0.0 else math.atan2(yhi, xhi)
    hi = math.atan2(ylo, xlo) if xlo < 0.0 else math.atan2(yhi, xlo)
    return lo, hi


@jit
def atan2(ylo: float, yhi: float, xlo: float, xhi: float) -> tuple[float, float]:
    """atan2(y, x) in [-pi, pi] as a set (undefined at the origin; the cut y = 0, x < 0 gives pi)."""
    if is_empty(ylo, yhi) or is_empty(xlo, xhi):
        return EMPTY
    ylo += 0.0  # -0.0 -> 0.0: the library's atan2 tells signed zeros apart
    yhi += 0.0
    xlo += 0.0
    xhi += 0.0
    if ylo <= 0.0 <= yhi and xlo <= 0.0 <= xhi:  # the origin is in the box
        if ylo == 0.0 and yhi == 0.0 and xlo == 0.0 and xhi == 0.0:
            return EMPTY
        if ylo == 0.0:
            if xlo == 0.0:
                return 0.0, HALF_PI_HI
            if xhi == 0.0:
                return HALF_PI_LO, PI_HI
            return 0.0, PI_HI
        if yhi == 0.0 and xlo == 0.0:
            return -HALF_PI_HI, 0.0
        return -PI_HI, PI_HI
    if ylo >= 0.0:
        lo, hi = _atan2_upper(ylo, yhi, xlo, xhi)
        lo_bound = 0.0
        hi_bound = PI_HI
    elif yhi <= 0.0:
        if yhi == 0.0 and xlo < 0.0:  # pi on the cut, values near -pi below it
            return -PI_HI, PI_HI
        mlo, mhi = _atan2_upper(-yhi + 0.0, -ylo, xlo, xhi)
        lo, hi = -mhi, -mlo
        lo_bound = -PI_HI
        hi_bound = 0.0
    elif xlo > 0.0:  # y straddles 0 on the right of the origin
        lo = math.atan2(ylo, xlo)
        hi = math.atan2(yhi, xlo)
        lo_bound = -HALF_PI_HI
        hi_bound = HALF_PI_HI
    else:  # y straddles 0 left of the origin: the cut is inside
        return -PI_HI, PI_HI
    return max(widen_down(lo, LIBRARY_ULPS), lo_bound), min(widen_up(hi, LIBRARY_ULPS), hi_bound)
