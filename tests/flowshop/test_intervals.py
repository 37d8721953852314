"""Property tests for factoradic conversions and WorkUnit interval sets."""

import math

import numpy as np
import pytest
from gmpy2 import mpz
from hypothesis import given, settings
from hypothesis import strategies as st

from pbbflow.flowshop.factoradic import digits_to_int, factorial, int_to_digits
from pbbflow.flowshop.intervals import WorkUnit, split_interval

settings.register_profile("pbbflow", max_examples=150, deadline=None)
settings.load_profile("pbbflow")


@st.composite
def n_and_int(draw, max_n=60):
    n = draw(st.integers(1, max_n))
    return n, draw(st.integers(0, math.factorial(n) - 1))


def raw_intervals(n, max_size=6):
    total = math.factorial(n)
    pair = st.tuples(st.integers(0, total), st.integers(0, total)).map(sorted).map(tuple)
    return st.lists(pair, max_size=max_size)


@st.composite
def unit(draw, n):
    return WorkUnit(n, draw(raw_intervals(n)))


@st.composite
def n_and_units(draw, max_n=5, count=2):
    n = draw(st.integers(1, max_n))
    return (n, *(draw(unit(n)) for _ in range(count)))


def as_set(u: WorkUnit) -> set[int]:
    return {x for a, b in u for x in range(int(a), int(b))}


def assert_normalized(u: WorkUnit) -> None:
    total = factorial(u.n)
    prev_b = None
    for a, b in u:
        assert isinstance(a, type(mpz(0))) and isinstance(b, type(mpz(0)))
        assert 0 <= a < b <= total
        assert prev_b is None or prev_b < a  # disjoint and non-adjacent
        prev_b = b
    assert u.size == sum((b - a for a, b in u), mpz(0))


# --- factoradic -------------------------------------------------------------


@given(n_and_int())
def test_digits_round_trip(nx):
    n, x = nx
    d = int_to_digits(x, n)
    assert d.dtype == np.int32 and d.shape == (n,)
    assert np.all(d >= 0) and np.all(d <= np.arange(n - 1, -1, -1))
    assert d[-1] == 0
    assert digits_to_int(d) == x
    assert digits_to_int(d) == sum(int(v) * math.factorial(n - 1 - l) for l, v in enumerate(d))


@given(st.integers(1, 60).flatmap(lambda n: st.tuples(st.just(n), *[st.integers(0, math.factorial(n) - 1)] * 2)))
def test_digits_monotonic(nxy):
    n, x, y = nxy
    dx, dy = tuple(int_to_digits(x, n)), tuple(int_to_digits(y, n))
    assert (dx < dy) == (x < y) and (dx == dy) == (x == y)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 20, 60, 500])
def test_digits_extremes(n):
    assert np.array_equal(int_to_digits(factorial(n) - 1, n), np.arange(n - 1, -1, -1))
    assert np.array_equal(int_to_digits(0, n), np.zeros(n))
    assert digits_to_int(np.arange(n - 1, -1, -1, dtype=np.int32)) == factorial(n) - 1


def test_digits_errors():
    with pytest.raises(ValueError):
        int_to_digits(factorial(5), 5)
    with pytest.raises(ValueError):
        int_to_digits(-1, 5)
    with pytest.raises(ValueError):
        digits_to_int(np.array([0, 2, 0], dtype=np.int32))  # radix at level 1 is 2
    with pytest.raises(ValueError):
        digits_to_int(np.array([-1, 0], dtype=np.int32))


# --- WorkUnit construction ---------------------------------------------------


@given(st.integers(1, 5).flatmap(lambda n: st.tuples(st.just(n), raw_intervals(n, 10))))
def test_normalisation_matches_set_model(n_raw):
    n, raw = n_raw
    u = WorkUnit(n, raw)
    assert_normalized(u)
    assert as_set(u) == {x for a, b in raw for x in range(a, b)}
    assert u == WorkUnit(n, list(u)) and hash(u) == hash(WorkUnit(n, reversed(raw)))
    assert bool(u) == (not u.is_empty()) == (u.size > 0) == (len(u) > 0)


def test_basic_units():
    full, empty = WorkUnit.full(4), WorkUnit.empty(4)
    assert full.size == 24 and list(full) == [(0, 24)] and len(full) == 1
    assert full.fraction_of_space() == 1.0 and empty.fraction_of_space() == 0.0
    assert not empty and len(empty) == 0 and empty.size == 0
    assert WorkUnit(4, [(0, 3), (3, 5), (10, 10), (7, 9), (8, 12)]).intervals == ((0, 5), (7, 12))
    assert WorkUnit(3, [(0, 3)]).fraction_of_space() == 0.5
    assert repr(WorkUnit(3, [(0, 3)])) == "WorkUnit(n=3, 1 interval, 50% of space)"
    assert WorkUnit.full(500).fraction_of_space() == 1.0


def test_construction_errors():
    with pytest.raises(ValueError):
        WorkUnit(3, [(0, 7)])
    with pytest.raises(ValueError):
        WorkUnit(3, [(-1, 2)])
    with pytest.raises(ValueError):
        WorkUnit(3, [(4, 2)])
    with pytest.raises(ValueError):
        WorkUnit(0)
    a, b = WorkUnit.full(3), WorkUnit.full(4)
    for op in (a.intersect, a.union, a.difference):
        with pytest.raises(ValueError):
            op(b)
    with pytest.raises(ValueError):
        split_interval(5, 5)


# --- set algebra ---------------------------------------------------------------


@given(n_and_units())
def test_set_ops_match_model(nab):
    _, a, b = nab
    sa, sb = as_set(a), as_set(b)
    for res, expected in ((a.intersect(b), sa & sb), (a.union(b), sa | sb), (a.difference(b), sa - sb)):
        assert_normalized(res)
        assert as_set(res) == expected
        assert res.size == len(expected)


@given(st.integers(1, 60).flatmap(lambda n: st.tuples(unit(n), unit(n))))
def test_inclusion_exclusion(ab):
    a, b = ab
    assert a.union(b).size + a.intersect(b).size == a.size + b.size
    assert a.difference(b).size == a.size - a.intersect(b).size
    assert a.difference(b).union(a.intersect(b)) == a


# --- splitting -----------------------------------------------------------------


def assert_partition(u: WorkUnit, left: WorkUnit, right: WorkUnit) -> None:
    assert_normalized(left)
    assert_normalized(right)
    assert not left.intersect(right)
    assert left.union(right) == u
    assert left.size + right.size == u.size


@given(st.integers(1, 60).flatmap(unit))
def test_halve(u):
    left, right = u.halve()
    assert_partition(u, left, right)
    assert left.size == u.size // 2 and right.size - left.size in (0, 1)
    cut = {a for a, _ in u} ^ {a for a, _ in left} ^ {a for a, _ in right}
    assert len(cut) <= 1  # at most one interval is cut


@given(st.integers(1, 60).flatmap(unit))
def test_split_largest(u):
    kept, stolen = u.split_largest()
    assert_partition(u, kept, stolen)
    if u:
        longest = max(b - a for a, b in u)
        assert len(stolen) == 1 and stolen.size == longest - longest // 2
    else:
        assert not kept and not stolen


@given(st.integers(0, 10**40), st.integers(1, 10**40))
def test_split_interval(a, length):
    (la, lb), (ra, rb) = split_interval(a, a + length)
    assert la == a and lb == ra and rb == a + length
    assert rb - ra >= 1 and 0 <= (rb - ra) - (lb - la) <= 1
    if length == 1:
        assert la == lb


# --- digit arrays ----------------------------------------------------------------


@given(st.integers(1, 60).flatmap(unit))
def test_digit_arrays_round_trip(u):
    starts, ends, flags = u.to_digit_arrays()
    k = len(u)
    assert starts.shape == ends.shape == (k, u.n) and flags.shape == (k,)
    assert starts.dtype == ends.dtype == np.int32 and flags.dtype == bool
    assert WorkUnit.from_digit_arrays(u.n, starts, ends, flags) == u


def test_digit_arrays_end_at_total():
    n = 30
    u = WorkUnit(n, [(5, 17), (factorial(n) - 3, factorial(n))])
    starts, ends, flags = u.to_digit_arrays()
    assert flags.tolist() == [False, True]
    assert digits_to_int(ends[0]) == 17
    assert WorkUnit.from_digit_arrays(n, starts, ends, flags) == u
    assert WorkUnit.from_digit_arrays(n, *WorkUnit.full(n).to_digit_arrays()) == WorkUnit.full(n)
    with pytest.raises(ValueError):
        WorkUnit.from_digit_arrays(n + 1, starts, ends, flags)


@given(st.integers(1, 60), st.data())
def test_bytes_round_trip(n, data):
    total = int(factorial(n))
    cuts = sorted(data.draw(st.lists(st.integers(0, total), max_size=8)))
    unit = WorkUnit(n, zip(cuts[0::2], cuts[1::2]))
    assert WorkUnit.from_bytes(n, unit.to_bytes()) == unit
    with pytest.raises(ValueError):
        WorkUnit.from_bytes(n, unit.to_bytes() + b"\x00")
