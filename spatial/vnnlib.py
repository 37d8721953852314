"""VNN-LIB properties in: the common subset that the verification benchmarks (ACAS Xu and most of
VNN-COMP) are written in, read exactly, with no code run.

The subset: ``(declare-const X_i Real)`` and ``(declare-const Y_j Real)`` (inputs and outputs of
the network, numbered from 0), and ``(assert F)`` where F is built from ``and``, ``or``, ``<=`` and
``>=`` of linear terms (numbers, variables, ``+``, ``-``, and ``*`` with a number); ``;`` starts a
comment. Anything else is refused with its line.

All the asserts together state the *counterexample*: the property holds (``unsat``) when no input
satisfies them. :func:`read_vnnlib` gives it in disjunctive form: a :class:`Region` for each
disjunct, with its input box (the atoms on one input alone: every input needs both bounds) and its
output atoms ``c . Y + d <= 0``. A counterexample is an input in some region's box whose outputs
satisfy all of that region's atoms. Numbers stay exact (``Fraction``): how they round is the
consumer's choice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from ..core.files import FileRefused, read_text
from .problem import ProblemError

MAX_REGIONS = 10_000  # disjuncts after distributing and over or
_TOKEN = re.compile(r"\s*(?:(;[^\n]*)|(\()|(\))|([^\s();]+))")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_VARIABLE = re.compile(r"([XY])_(\d+)")


@dataclass(frozen=True)
class Atom:
    """``sum(coefficients[j] * Y_j) + constant <= 0``: one linear condition on the outputs."""

    coefficients: dict[int, Fraction]
    constant: Fraction


@dataclass(frozen=True)
class Region:
    """One disjunct of the counterexample: inputs in [lower, upper], outputs satisfying every atom."""

    lower: tuple[Fraction, ...]
    upper: tuple[Fraction, ...]
    atoms: tuple[Atom, ...]


@dataclass(frozen=True)
class Property:
    """A VNN-LIB property: ``n_inputs`` X's, ``n_outputs`` Y's, and the counterexample's regions."""

    n_inputs: int
    n_outputs: int
    regions: tuple[Region, ...]


@dataclass(frozen=True)
class _Node:
    """An s-expression: an atom's text, or a list; ``line``: where it starts."""

    text: str | None
    items: tuple[_Node, ...]
    line: int


def read_vnnlib(path: str | Path) -> Property:
    """The property in the VNN-LIB file at ``path``; ProblemError naming the file and line for
    anything outside the subset (the module doc)."""
    path = Path(path)
    try:
        text = read_text(path, kind="a VNN-LIB file")  # a regular file of bounded size: a FIFO never blocks
    except FileRefused as error:
        raise ProblemError(f"{path.name}: cannot read it ({error.reason})") from None
    return parse_vnnlib(text, path.name)


def parse_vnnlib(text: str, where: str = "property") -> Property:
    """The property that VNN-LIB ``text`` states (``where`` names it in messages)."""
    reader = _Reader(where)
    for command in _parse(text, where):
        reader.command(command)
    return reader.finish()


def _parse(text: str, where: str) -> list[_Node]:
    """The top-level s-expressions of ``text``."""
    stack: list[tuple[int, list[_Node]]] = [(1, [])]
    line, position = 1, 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:  # trailing whitespace
            break
        line += text.count("\n", position, match.start(match.lastindex))
        position = match.end()
        comment, opening, closing, word = match.groups()
        if comment is not None:
            continue
        if opening:
            stack.append((line, []))
        elif closing:
            if len(stack) == 1:
                raise ProblemError(f"{where}:{line}: a ')' closes nothing")
            start, items = stack.pop()
            stack[-1][1].append(_Node(None, tuple(items), start))
        else:
            stack[-1][1].append(_Node(word, (), line))
    if len(stack) > 1:
        raise ProblemError(f"{where}:{stack[-1][0]}: a '(' is never closed")
    return stack[0][1]


class _Reader:
    """The declarations and asserts of one property, checked as they come."""

    def __init__(self, where: str):
        self.where = where
        self.declared: set[tuple[str, int]] = set()
        self.asserts: list[_Node] = []

    def fail(self, node: _Node, message: str):
        raise ProblemError(f"{self.where}:{node.line}: {message}")

    def command(self, node: _Node) -> None:
        if node.text is not None or not node.items or node.items[0].text is None:
            self.fail(node, "expected a command such as (declare-const X_0 Real) or (assert ...)")
        head = node.items[0].text
        if head == "declare-const":
            if len(node.items) != 3 or node.items[1].text is None or node.items[2].text != "Real":
                self.fail(node, "declare-const takes a name and the sort Real: (declare-const X_0 Real)")
            name = _VARIABLE.fullmatch(node.items[1].text)
            if name is None:
                self.fail(node, f"'{node.items[1].text}' is no input X_i or output Y_j")
            key = (name.group(1), int(name.group(2)))
            if key in self.declared:
                self.fail(node, f"{node.items[1].text} is declared twice")
            self.declared.add(key)
        elif head == "assert":
            if len(node.items) != 2:
                self.fail(node, "assert takes one formula")
            self.asserts.append(node.items[1])
        else:
            self.fail(node, f"'{head}' is not in the VNN-LIB subset pbbflow reads (declare-const, assert)")

    def finish(self) -> Property:
        n_inputs, n_outputs = (self._count(kind) for kind in "XY")
        if n_inputs == 0 or n_outputs == 0:
            raise ProblemError(f"{self.where}: declares {n_inputs} inputs X_i and {n_outputs} outputs Y_j")
        disjuncts: list[list[tuple[_Node, dict, Fraction]]] = [[]]
        for formula in self.asserts:
            disjuncts = self._product(disjuncts, self._dnf(formula), formula)
        regions = (self._region(atoms, n_inputs) for atoms in disjuncts)
        return Property(n_inputs, n_outputs, tuple(r for r in regions if r is not None))

    def _count(self, kind: str) -> int:
        numbers = sorted(i for k, i in self.declared if k == kind)
        if numbers != list(range(len(numbers))):
            missing = next(i for i in range(len(numbers) + 1) if i not in numbers)
            raise ProblemError(f"{self.where}: {kind}_{missing} is not declared, but {kind}_{numbers[-1]} is")
        return len(numbers)

    def _product(self, first: list, second: list, node: _Node) -> list:
        if len(first) * len(second) > MAX_REGIONS:
            self.fail(node, f"the property spreads into more than {MAX_REGIONS:,} regions")
        return [a + b for a in first for b in second]

    def _dnf(self, node: _Node) -> list[list[tuple[_Node, dict, Fraction]]]:
        """``node`` as a disjunction of conjunctions of atoms ``(node, coefficients, constant)``
        meaning ``sum(coefficients[v] * v) + constant <= 0``."""
        if node.text is not None or not node.items or node.items[0].text is None:
            self.fail(node, "expected a formula: (and ...), (or ...), (<= a b) or (>= a b)")
        head, arguments = node.items[0].text, node.items[1:]
        if head in ("and", "or") and not arguments:
            self.fail(node, f"({head}) needs at least one formula")
        if head == "and":
            result = [[]]
            for argument in arguments:
                result = self._product(result, self._dnf(argument), node)
            return result
        if head == "or":
            result = [conjunct for argument in arguments for conjunct in self._dnf(argument)]
            if len(result) > MAX_REGIONS:
                self.fail(node, f"the property spreads into more than {MAX_REGIONS:,} regions")
            return result
        if head in ("<=", ">="):
            if len(arguments) != 2:
                self.fail(node, f"{head} compares two terms")
            left, right = (self._linear(a) for a in arguments)
            if head == ">=":
                left, right = right, left
            coefficients = dict(left[0])
            for key, value in right[0].items():
                coefficients[key] = coefficients.get(key, Fraction(0)) - value
            return [[(node, {k: v for k, v in coefficients.items() if v}, left[1] - right[1])]]
        self.fail(node, f"'{head}' is not in the VNN-LIB subset pbbflow reads (and, or, <=, >=)")

    def _linear(self, node: _Node) -> tuple[dict[tuple[str, int], Fraction], Fraction]:
        """A linear term as (coefficients by variable, constant)."""
        if node.text is not None:
            if _NUMBER.fullmatch(node.text):
                return {}, Fraction(node.text)
            name = _VARIABLE.fullmatch(node.text)
            if name is None or (name.group(1), int(name.group(2))) not in self.declared:
                self.fail(node, f"'{node.text}' is neither a number nor a declared X_i or Y_j")
            return {(name.group(1), int(name.group(2))): Fraction(1)}, Fraction(0)
        if not node.items or node.items[0].text not in ("+", "-", "*"):
            head = node.items[0].text if node.items and node.items[0].text else "(...)"
            self.fail(node, f"'{head}' is not in the VNN-LIB subset pbbflow reads (+, -, * in linear terms)")
        head, terms = node.items[0].text, [self._linear(a) for a in node.items[1:]]
        if not terms:
            self.fail(node, f"({head}) needs a term")
        if head == "-" and len(terms) == 1:
            terms = [({}, Fraction(0)), terms[0]]
        if head == "*":
            constants = [t for t in terms if not t[0]]
            if len(terms) - len(constants) > 1:
                self.fail(node, "a product of variables is not linear")
            factor = Fraction(1)
            for _, value in constants:
                factor *= value
            variable = next((t for t in terms if t[0]), ({}, Fraction(1)))
            return {k: v * factor for k, v in variable[0].items()}, variable[1] * factor
        coefficients: dict[tuple[str, int], Fraction] = {}
        constant = Fraction(0)
        for k, (term, value) in enumerate(terms):
            sign = -1 if head == "-" and k > 0 else 1
            for key, v in term.items():
                coefficients[key] = coefficients.get(key, Fraction(0)) + sign * v
            constant += sign * value
        return coefficients, constant

    def _region(self, atoms: list[tuple[_Node, dict, Fraction]], n_inputs: int) -> Region | None:
        """One conjunction as a box of inputs and atoms on the outputs; None where it holds no
        input (an empty box, a false constant atom)."""
        lower: list[Fraction | None] = [None] * n_inputs
        upper: list[Fraction | None] = [None] * n_inputs
        outputs = []
        for node, coefficients, constant in atoms:
            kinds = {kind for kind, _ in coefficients}
            if kinds == {"Y"}:
                outputs.append(Atom({j: v for (_, j), v in sorted(coefficients.items())}, constant))
            elif kinds == {"X"} and len(coefficients) == 1:
                (((_, i), a),) = coefficients.items()
                bound = -constant / a
                if a > 0:  # a x + constant <= 0: x <= -constant / a
                    upper[i] = bound if upper[i] is None else min(upper[i], bound)
                else:
                    lower[i] = bound if lower[i] is None else max(lower[i], bound)
            elif not kinds:
                if constant > 0:  # a false constant atom
                    return None
            else:
                self.fail(node, "only atoms on one input alone (its bounds) or on outputs alone are supported")
        for i in range(n_inputs):
            if lower[i] is None or upper[i] is None:
                raise ProblemError(f"{self.where}: X_{i} has no {'lower' if lower[i] is None else 'upper'} bound")
        if any(a > b for a, b in zip(lower, upper)):
            return None
        return Region(tuple(lower), tuple(upper), tuple(outputs))
