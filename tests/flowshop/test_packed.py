"""PackedUnit against WorkUnit (the exact mpz oracle): same sets, same sizes, same splits."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pbbflow.flowshop.factoradic import factorial
from pbbflow.flowshop.intervals import WorkUnit, byte_width
from pbbflow.flowshop.packed import PackedUnit

settings.register_profile("pbbflow", max_examples=150, deadline=None)
settings.load_profile("pbbflow")


@st.composite
def units(draw, count: int, max_n: int = 60):
    """``count`` random work units over one space; n up to 60 makes bounds up to 35 bytes wide."""
    n = draw(st.integers(1, max_n))
    total = math.factorial(n)
    bound = st.one_of(st.integers(0, total), st.integers(0, min(30, total)), st.integers(max(0, total - 30), total))
    pair = st.tuples(bound, bound).map(sorted).map(tuple)
    return n, *(WorkUnit(n, draw(st.lists(pair, max_size=8))) for _ in range(count))


@given(units(1))
def test_round_trips_and_size(case):
    n, unit = case
    packed = PackedUnit.from_work_unit(unit)
    assert packed.to_work_unit() == unit and len(packed) == len(unit) and bool(packed) == bool(unit)
    assert packed.to_bytes() == unit.to_bytes()  # one wire format
    assert PackedUnit.from_bytes(n, unit.to_bytes()) == packed
    assert WorkUnit.from_bytes(n, packed.to_bytes()) == unit
    assert packed.size == unit.size


@given(units(2))
def test_intersection_matches_the_exact_one(case):
    n, x, y = case
    got = PackedUnit.from_work_unit(x).intersect(PackedUnit.from_work_unit(y))
    assert got.to_work_unit() == x.intersect(y)


@given(units(3))
def test_union_of_disjoint_units(case):
    n, x, y, z = case
    parts = [x, y.difference(x), z.difference(x).difference(y)]  # pairwise disjoint
    got = PackedUnit.union_of_disjoint(n, [PackedUnit.from_work_unit(p) for p in reversed(parts)])
    assert got.to_work_unit() == x.union(y).union(z)


@given(units(1))
def test_split_largest_matches_the_exact_one(case):
    n, unit = case
    kept, given_interval = PackedUnit.from_work_unit(unit).split_largest()
    exact_kept, exact_given = unit.split_largest()
    assert kept.to_work_unit() == exact_kept
    assert (given_interval is None) == (not unit)
    if unit:
        assert WorkUnit(n, [given_interval]) == exact_given


def test_overlapping_units_are_refused_in_a_union():
    a = PackedUnit.from_work_unit(WorkUnit(5, [(0, 10)]))
    b = PackedUnit.from_work_unit(WorkUnit(5, [(9, 20)]))
    with pytest.raises(ValueError, match="overlap"):
        PackedUnit.union_of_disjoint(5, [a, b])


def pack(n, *values):
    return b"".join(int(v).to_bytes(byte_width(n), "big") for v in values)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (pack(5, 3, 3), "empty or reversed"),
        (pack(5, 4, 3), "empty or reversed"),
        (pack(5, 0, 10, 5, 20), "not sorted"),  # overlapping
        (pack(5, 0, 10, 10, 20), "not sorted"),  # adjacent: not normalised
        (pack(5, 20, 30, 0, 10), "not sorted"),
        (pack(5, 0, 121), "beyond n!"),
        (pack(5, 0, 10) + b"\x00", "whole number"),
    ],
)
def test_malformed_messages_are_refused(data, problem):
    with pytest.raises(ValueError, match=problem):
        PackedUnit.from_bytes(5, data)


def test_large_n_and_many_intervals():
    n, k = 500, 3000  # 500! needs 59 limbs per bound
    total = int(factorial(n))
    step = total // k
    unit = WorkUnit(n, [(i * step + 1, i * step + step // 3) for i in range(k)])
    packed = PackedUnit.from_bytes(n, unit.to_bytes())
    assert packed.bounds.shape == (k, 2, byte_width(n) // 8)
    assert packed.size == unit.size
    half = WorkUnit(n, [(0, total // 2)])
    assert packed.intersect(PackedUnit.from_work_unit(half)).to_work_unit() == unit.intersect(half)


def test_packed_units_are_read_only():
    packed = PackedUnit.from_work_unit(WorkUnit(4, [(0, 5)]))
    with pytest.raises(ValueError):
        packed.bounds[0, 0, 0] = 1
    assert np.array_equal(PackedUnit.empty(4).bounds, np.zeros((0, 2, 1), dtype=np.uint64))


@given(units(1))
def test_split_half_partitions_the_unit(case):
    n, unit = case
    kept, given_away = PackedUnit.from_work_unit(unit).split_half()
    assert kept.to_work_unit().union(given_away.to_work_unit()) == unit
    assert kept.to_work_unit().intersect(given_away.to_work_unit()).is_empty()
    assert len(kept) - len(given_away) in (0, 1)


def test_split_half_shares_the_work_of_many_intervals():
    n = 30
    step = int(factorial(n)) // 1000
    sizes = [(i % 7 + 1) * 1000 for i in range(1000)]
    unit = WorkUnit(n, [(i * step, i * step + s) for i, s in enumerate(sizes)])
    kept, given_away = PackedUnit.from_work_unit(unit).split_half()
    assert abs(int(kept.size) - int(given_away.size)) <= 7000  # at most one interval's worth apart
