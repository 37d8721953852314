"""The VNN-LIB reader: exact numbers, regions equal to the formula at random points (a direct
evaluator of the text as oracle), and each construct outside the subset refused with its line."""

from __future__ import annotations

import os
import random
from fractions import Fraction

import pytest

from pbbflow.spatial import ProblemError
from pbbflow.spatial.vnnlib import MAX_REGIONS, parse_vnnlib, read_vnnlib

DECLARE = "\n".join(
    [*(f"(declare-const X_{i} Real)" for i in range(3)), *(f"(declare-const Y_{j} Real)" for j in range(3))]
)

ONE_OUTPUT_ABOVE = f"""; an ACAS-style property: output 0 above a level somewhere in a box
{DECLARE}
(assert (<= X_0 0.6))
(assert (>= X_0 -0.3))   ; comment after a command
(assert (<= X_1 0.5))
(assert (>= X_1 0.45))
(assert (and (<= X_2 1e-1) (>= X_2 -.5)))
(assert (>= Y_0 3.9911256459))
"""

NOT_LARGEST = f"""{DECLARE}
(assert (and (>= X_0 0) (<= X_0 1) (>= X_1 0) (<= X_1 1) (>= X_2 0) (<= X_2 1)))
(assert (or
    (and (>= Y_0 Y_1) (>= Y_0 Y_2))
    (and (<= (+ Y_1 (* 2 Y_2) -1) (- Y_0)) (>= (- Y_0 (* 0.5 Y_1)) 0.25))))
"""


def test_exact_numbers_and_one_region():
    prop = parse_vnnlib(ONE_OUTPUT_ABOVE, "p1.vnnlib")
    assert (prop.n_inputs, prop.n_outputs, len(prop.regions)) == (3, 3, 1)
    (region,) = prop.regions
    assert region.lower == (Fraction("-0.3"), Fraction("0.45"), Fraction("-0.5"))
    assert region.upper == (Fraction("0.6"), Fraction("0.5"), Fraction("0.1"))
    (atom,) = region.atoms  # Y_0 >= c: c - Y_0 <= 0
    assert atom.coefficients == {0: Fraction(-1)} and atom.constant == Fraction("3.9911256459")


def _evaluate(node, values):
    """The text's own meaning at ``values`` (an independent reading of the s-expression)."""
    if isinstance(node, str):
        return values[node] if node in values else Fraction(node)
    head, *rest = node
    if head in ("and", "or"):
        results = [_evaluate(r, values) for r in rest]
        return all(results) if head == "and" else any(results)
    if head in ("<=", ">="):
        a, b = (_evaluate(r, values) for r in rest)
        return a <= b if head == "<=" else a >= b
    terms = [_evaluate(r, values) for r in rest]
    if head == "*":
        product = Fraction(1)
        for t in terms:
            product *= t
        return product
    if head == "-":
        return -terms[0] if len(terms) == 1 else terms[0] - sum(terms[1:])
    return sum(terms)


def _sexpr(text):
    tokens = text.replace("(", " ( ").replace(")", " ) ").split()
    stack = [[]]
    for token in tokens:
        if token == "(":
            stack.append([])
        elif token == ")":
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(token)
    return stack[0]


def _in_property(prop, x, y) -> bool:
    for region in prop.regions:
        inside = all(a <= v <= b for a, v, b in zip(region.lower, x, region.upper))
        if inside and all(sum(c * y[j] for j, c in a.coefficients.items()) + a.constant <= 0 for a in region.atoms):
            return True
    return False


@pytest.mark.parametrize("text", [ONE_OUTPUT_ABOVE, NOT_LARGEST])
def test_regions_mean_what_the_text_says(text):
    prop = parse_vnnlib(text)
    commands = [c for c in _sexpr("\n".join(line.split(";")[0] for line in text.splitlines())) if c[0] == "assert"]
    rng = random.Random(7)
    grid = [Fraction(k, 8) for k in range(-8, 9)] + [Fraction("0.6"), Fraction("0.45"), Fraction("3.9911256459")]
    agree = {True: 0, False: 0}
    for _ in range(4000):
        region = rng.choice(prop.regions)  # half of the points in a region's box, its ends included
        inner = [a + (b - a) * Fraction(rng.randint(0, 4), 4) for a, b in zip(region.lower, region.upper)]
        x = inner if rng.random() < 0.5 else [rng.choice(grid) for _ in range(3)]
        y = [rng.choice(grid) * 5 for _ in range(3)]
        values = {**{f"X_{i}": v for i, v in enumerate(x)}, **{f"Y_{j}": v for j, v in enumerate(y)}}
        expected = all(_evaluate(c[1], values) for c in commands)
        assert _in_property(prop, x, y) == expected, (x, y)
        agree[expected] += 1
    assert agree[True] > 20 and agree[False] > 20  # both sides sampled


def test_or_of_ands_gives_one_region_per_disjunct_and_and_distributes():
    prop = parse_vnnlib(NOT_LARGEST)
    assert len(prop.regions) == 2
    first, second = prop.regions
    assert [a.coefficients for a in first.atoms] == [{0: -1, 1: 1}, {0: -1, 2: 1}]
    assert [(a.coefficients, a.constant) for a in second.atoms] == [
        ({0: 1, 1: 1, 2: 2}, Fraction(-1)),
        ({0: -1, 1: Fraction(1, 2)}, Fraction(1, 4)),
    ]
    text = f"{DECLARE}\n(assert (and (>= X_0 0) (<= X_0 1) (>= X_1 0) (<= X_1 1) (>= X_2 0) (<= X_2 1)))\n"
    text += "(assert (or (<= Y_0 1) (<= Y_1 1)))\n(assert (or (<= Y_2 1) (>= Y_2 2) (<= Y_0 0)))\n"
    assert len(parse_vnnlib(text).regions) == 6


def test_empty_regions_are_dropped_and_inputs_may_differ_by_region():
    text = f"""{DECLARE}
(assert (or (and (>= X_0 0) (<= X_0 1) (>= X_1 0) (<= X_1 1) (>= X_2 0) (<= X_2 1))
            (and (>= X_0 2) (<= X_0 1) (>= X_1 0) (<= X_1 1) (>= X_2 0) (<= X_2 1))
            (and (>= X_0 5) (<= X_0 6) (>= X_1 0) (<= X_1 1) (>= X_2 0) (<= X_2 1) (<= 1 0))
            (and (>= X_0 -2) (<= X_0 -1) (>= X_1 0) (<= X_1 1) (>= X_2 0) (<= X_2 1) (<= (* 2 X_0) 7))))
(assert (<= Y_0 Y_1))"""
    prop = parse_vnnlib(text)
    assert [r.lower[0] for r in prop.regions] == [0, -2] and [r.upper[0] for r in prop.regions] == [1, -1]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "(declare-const X_0 Real)\n(declare-const Y_0 Int)",
            r"p\.vnnlib:2: declare-const takes a name and the sort Real",
        ),
        ("(declare-const X_0 Real)\n(declare-const X_0 Real)", r"p\.vnnlib:2: X_0 is declared twice"),
        ("(declare-const Z_0 Real)", r"p\.vnnlib:1: 'Z_0' is no input X_i or output Y_j"),
        ("(declare-const X_0 Real)\n(declare-const Y_0 Real)\n\n(assert (< X_0 1))", r"p\.vnnlib:4: '<' is not in"),
        ("(declare-const X_0 Real)\n(declare-const Y_0 Real)\n(assert (<= (exp X_0) 1))", r":3: 'exp' is not in"),
        ("(declare-const X_0 Real)\n(declare-const Y_0 Real)\n(assert (<= (* X_0 Y_0) 1))", r":3: a product of"),
        ("(declare-const X_0 Real)\n(declare-const Y_0 Real)\n(assert (<= Y_1 1))", r":3: 'Y_1' is neither"),
        ("(declare-const X_0 Real)\n(declare-const Y_0 Real)\n(assert (<= (+ X_0 Y_0) 1))", r":3: only atoms on one"),
        ("(declare-const X_0 Real)\n(declare-const Y_0 Real)\n(assert (<= X_0 1))", r"X_0 has no lower bound"),
        ("(declare-const X_0 Real)\n(declare-const Y_0 Real)\n(assert (<= X_0 1)", r":3: a '\(' is never closed"),
        ("(declare-const X_0 Real))", r":1: a '\)' closes nothing"),
        ("(declare-const X_1 Real)\n(declare-const Y_0 Real)", r"X_0 is not declared, but X_1 is"),
        ("(declare-const X_0 Real)", r"declares 1 inputs X_i and 0 outputs Y_j"),
        ("(check-sat)", r":1: 'check-sat' is not in the VNN-LIB subset"),
        ("(declare-const X_0 Real)\n(declare-const Y_0 Real)\n(assert (and))", r":3: \(and\) needs at least one"),
    ],
)
def test_constructs_outside_the_subset_name_their_line(text, message):
    with pytest.raises(ProblemError, match=message):
        parse_vnnlib(text, "p.vnnlib")


def test_too_many_regions_are_refused():
    text = "(declare-const X_0 Real)\n(declare-const Y_0 Real)\n(assert (and (>= X_0 0) (<= X_0 1)))\n"
    text += (
        "(assert (or (<= Y_0 1) (<= Y_0 2) (<= Y_0 3) (<= Y_0 4) (<= Y_0 5) (<= Y_0 6) (<= Y_0 7) (<= Y_0 8)))\n" * 5
    )
    assert 8**5 > MAX_REGIONS
    with pytest.raises(ProblemError, match="more than 10,000 regions"):
        parse_vnnlib(text)


def test_a_file_that_cannot_be_read_is_one_line(tmp_path):
    with pytest.raises(ProblemError, match=r"^missing\.vnnlib: cannot read it"):
        read_vnnlib(tmp_path / "missing.vnnlib")
    path = tmp_path / "p.vnnlib"
    path.write_text(ONE_OUTPUT_ABOVE)
    assert read_vnnlib(path) == parse_vnnlib(ONE_OUTPUT_ABOVE)


def test_a_fifo_or_a_folder_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "p.vnnlib"
    os.mkfifo(fifo)
    with pytest.raises(ProblemError, match=r"^p\.vnnlib: cannot read it \(.*not a regular file"):
        read_vnnlib(fifo)
    folder = tmp_path / "p.d"
    folder.mkdir()
    with pytest.raises(ProblemError, match=r"^p\.d: cannot read it \(is a directory, not a VNN-LIB file\)"):
        read_vnnlib(folder)
