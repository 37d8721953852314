"""The JSON problem format: expressions in Python syntax, parsed with :mod:`ast` (never evaluated).

A file (``docs/problem-format.md`` describes the format)::

    {"name": "Hartmann 3", "variables": 3, "domain": [[0, 1], [0, 1], [0, 1]],
     "objective": "expr", "inequalities": ["expr", ...], "equalities": ["expr", ...],
     "optimum": -3.86, "x_optimum": [...], "source": "...", "notes": "..."}

``networks``, when given, names ONNX files in the problem file's folder (``{"net": "net.onnx"}``,
read by :mod:`.onnx_network`): an expression uses output k of one as ``net(a, b, ...)[k]``, one
argument per network input.

``domain`` and ``objective`` are required; ``name`` defaults to the file's stem; ``variables``, when
given, must equal the number of domain pairs. Unknown keys are refused (a misspelt
``inequalities`` would silently drop constraints), as is a key given twice in one object (JSON
readers keep one of them silently).

Expressions: ``x[0] ... x[d-1]``, numbers, ``+ - * /``, unary ``-``/``+``, ``**`` with an integer
literal exponent (``x[0] ** -2``), parentheses, the functions ``sin cos tan exp log sqrt tanh abs
atan2 sigmoid relu min max`` (min and max take two or more arguments) and the constants ``pi`` and
``e``. A float literal means its nearest double; an int literal means itself, enclosed by the two
neighbouring doubles when no double is it. Everything else in the syntax tree is refused by name.
"""

from __future__ import annotations

import ast
import json
import keyword
import math
import os
from pathlib import Path

from ..core import files
from . import model as api
from .model import Expr, Model
from .network import Network
from .onnx_network import read_onnx
from .problem import Problem, ProblemError, shorten
from .tape import MAX_EXPONENT

MAX_EXPRESSION_CHARS = 2**20
PROBLEM_KEYS = {
    "name",
    "variables",
    "domain",
    "objective",
    "inequalities",
    "equalities",
    "optimum",
    "x_optimum",
    "networks",
    "source",
    "notes",
}
FUNCTIONS = {  # name -> (function, least and most arguments)
    "sin": (api.sin, 1, 1),
    "cos": (api.cos, 1, 1),
    "tan": (api.tan, 1, 1),
    "exp": (api.exp, 1, 1),
    "log": (api.log, 1, 1),
    "sqrt": (api.sqrt, 1, 1),
    "tanh": (api.tanh, 1, 1),
    "abs": (api.abs_, 1, 1),
    "sigmoid": (api.sigmoid, 1, 1),
    "relu": (api.relu, 1, 1),
    "atan2": (api.atan2, 2, 2),
    "min": (api.minimum, 2, None),
    "max": (api.maximum, 2, None),
}
CONSTANTS = {"pi": api.pi, "e": api.e}
_BINARY = {ast.Add: "__add__", ast.Sub: "__sub__", ast.Mult: "__mul__", ast.Div: "__truediv__"}
_REFUSED = {  # readable names for common syntax that is not allowed
    ast.Attribute: "attribute access",
    ast.Lambda: "a lambda",
    ast.NamedExpr: "an assignment (:=)",
    ast.ListComp: "a comprehension",
    ast.GeneratorExp: "a comprehension",
    ast.SetComp: "a comprehension",
    ast.DictComp: "a comprehension",
    ast.JoinedStr: "an f-string",
    ast.Starred: "unpacking (*)",
    ast.Compare: "a comparison",
    ast.BoolOp: "and/or",
    ast.IfExp: "a conditional expression",
    ast.List: "a list",
    ast.Tuple: "a tuple",
    ast.Dict: "a dict",
    ast.Set: "a set",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
    ast.Slice: "a slice",
}


def read_json(path: str | os.PathLike, where: str) -> dict:
    """The JSON object in the file at ``path``: size-limited, strict UTF-8, no NaN/Infinity, no
    repeated key (``core.files.read_json``)."""
    try:
        document = files.read_json(path, kind="a problem file")
    except files.FileRefused as error:
        raise ProblemError(f"{where}: {error.reason}") from None
    if not isinstance(document, dict):
        raise ProblemError(f"{where}: expected a JSON object, not {type(document).__name__}")
    return document


def problem_from_dict(
    document: dict, where: str, default_name: str = "problem", origin: str = "", folder: Path | None = None
) -> Problem:
    """The problem a parsed JSON problem file describes (``where`` names it in messages; ``folder``
    is the file's, where its ``networks`` lie)."""
    unknown = sorted(set(document) - PROBLEM_KEYS)
    if unknown:
        allowed = ", ".join(sorted(PROBLEM_KEYS))
        raise ProblemError(f"{where}: unknown keys {', '.join(map(repr, unknown))} (allowed: {allowed})")
    name = document.get("name", default_name)
    if not isinstance(name, str) or not name.strip():
        raise ProblemError(f"{where}: name must be a non-empty string")
    where = f"{where} ({shorten(name, 40)})"
    lower, upper = parse_domain(document.get("domain"), where)
    d = len(lower)
    declared = document.get("variables", d)
    if isinstance(declared, bool) or not isinstance(declared, int) or declared != d:
        raise ProblemError(f"{where}: variables is {declared!r} but the domain has {d} pairs")
    networks = _networks(document.get("networks", {}), where, folder)
    model = Model(name)
    x = [model.variable(lo, hi) for lo, hi in zip(lower, upper)]
    if "objective" not in document:
        raise ProblemError(f"{where}: no objective")
    model.minimize(parse_expression(document["objective"], x, where, "objective", networks))
    for key, add in (("inequalities", model.inequality), ("equalities", model.equality)):
        items = document.get(key, [])
        if not isinstance(items, list):
            raise ProblemError(f"{where}: {key} must be a list of expression strings")
        for i, text in enumerate(items):
            add(parse_expression(text, x, where, f"{key}[{i}]", networks))
    optimum = document.get("optimum")
    if optimum is not None and (isinstance(optimum, bool) or not isinstance(optimum, (int, float))):
        raise ProblemError(f"{where}: optimum must be a number or null")
    x_optimum = document.get("x_optimum")
    if x_optimum is not None and (
        not isinstance(x_optimum, list) or len(x_optimum) != d or not all(_is_number(v) for v in x_optimum)
    ):
        raise ProblemError(f"{where}: x_optimum must be a list of {d} numbers or null")
    try:
        return model.problem(name, optimum=optimum, x_optimum=x_optimum, origin=origin)
    except ProblemError as error:
        raise ProblemError(f"{where}: {error.reason}") from None


def _networks(spec, where: str, folder: Path | None) -> dict[str, Network]:
    """The networks a problem file names: ONNX files beside it, each under a name of its own."""
    if not isinstance(spec, dict):
        raise ProblemError(f'{where}: networks must be an object {{"name": "file.onnx", ...}}')
    if spec and folder is None:
        raise ProblemError(f"{where}: networks are read from a problem file's folder; this problem has none")
    networks = {}
    for name, file in spec.items():
        if not name.isidentifier() or keyword.iskeyword(name) or name in FUNCTIONS or name in CONSTANTS or name == "x":
            raise ProblemError(f"{where}: networks: {shorten(name, 30)!r} is not a free name for a network")
        if not (isinstance(file, str) and file == Path(file).name and file.lower().endswith(".onnx")):
            found = shorten(json.dumps(file), 60)
            raise ProblemError(
                f"{where}: networks: {name} must name an .onnx file in the problem file's folder, not {found}"
            )
        try:
            networks[name] = read_onnx(folder / file)
        except ProblemError as error:
            raise ProblemError(f"{where}: networks: {name}: {error}") from None
    return networks


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def parse_domain(domain, where: str) -> tuple[list[float], list[float]]:
    """Lower and upper bounds from ``[[lo, hi], ...]``: finite doubles, lo <= hi, at least one pair."""
    if not isinstance(domain, list) or not domain:
        raise ProblemError(f"{where}: domain must be a non-empty list of [lo, hi] pairs")
    lower, upper = [], []
    for i, pair in enumerate(domain):
        if not (isinstance(pair, list) and len(pair) == 2 and all(_is_number(v) for v in pair)):
            found = shorten(json.dumps(pair))
            raise ProblemError(f"{where}: domain[{i}] must be a pair of numbers [lo, hi], not {found}")
        lo, hi = (_exact_double(v, where, f"domain[{i}]") for v in pair)
        if lo > hi:
            raise ProblemError(f"{where}: domain[{i}] is empty: lo {lo!r} > hi {hi!r}")
        lower.append(lo)
        upper.append(hi)
    return lower, upper


def _exact_double(value: int | float, where: str, part: str) -> float:
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise ProblemError(f"{where}: {part}: {shorten(str(value))} is not a finite number")
    if isinstance(value, int) and int(number) != value:
        number = shorten(str(value))
        raise ProblemError(f"{where}: {part}: the integer {number} is not a double; write the bound as a float")
    return number


def parse_expression(
    text, variables: list[Expr], where: str, part: str, networks: dict[str, Network] | None = None
) -> Expr:
    """The expression ``text`` over ``x[0] .. x[d-1]`` (= ``variables``) and the ``networks``
    called by name, checked node by node."""
    if not isinstance(text, str):
        raise ProblemError(f"{where}: {part} must be an expression string, not {type(text).__name__}")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ProblemError.at(where, part, text, f"longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as error:
        raise ProblemError.at(where, part, text, f"not a Python expression ({shorten(error.msg, 80)})") from None
    except (RecursionError, MemoryError):
        raise ProblemError.at(
            where,
            part,
            text,
            "nested too deeply for Python's parser (about 3,000 levels; "
            "group long sums in parentheses or write a Python model)",
        ) from None
    except ValueError as error:  # e.g. null bytes
        raise ProblemError.at(where, part, text, str(error)) from None
    return _Converter(text.strip(), variables, where, part, networks or {}).convert(tree.body)


class _Converter:
    """Turns a whitelisted syntax tree into model expressions, iteratively (no recursion limit)."""

    def __init__(self, text: str, variables: list[Expr], where: str, part: str, networks: dict[str, Network]):
        self.text = text
        self.variables = variables
        self.where = where
        self.part = part
        self.networks = networks

    def refuse(self, node: ast.AST, reason: str) -> ProblemError:
        segment = ast.get_source_segment(self.text, node) or self.text
        return ProblemError.at(self.where, self.part, segment, reason)

    def convert(self, root: ast.AST) -> Expr:
        done: dict[int, Expr] = {}
        stack: list[tuple[ast.AST, list[ast.AST] | None]] = [(root, None)]
        while stack:
            node, children = stack.pop()
            if children is None:
                children = self.children(node)
                stack.append((node, children))
                stack.extend((child, None) for child in children)
            else:
                try:
                    done[id(node)] = self.build(node, [done[id(child)] for child in children])
                except ProblemError as error:
                    raise self.refuse(node, error.reason) from None
        return done[id(root)]

    def children(self, node: ast.AST) -> list[ast.AST]:
        """The operands to convert first; raises for anything outside the whitelist."""
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Pow):
                self.exponent(node)
                return [node.left]
            if type(node.op) not in _BINARY:
                raise self.refuse(node, f"the operator {type(node.op).__name__} is not allowed (use + - * / **)")
            return [node.left, node.right]
        if isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, (ast.USub, ast.UAdd)):
                raise self.refuse(node, f"the unary operator {type(node.op).__name__} is not allowed (only - and +)")
            return [node.operand]
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name):
                raise self.refuse(node, "only the listed functions may be called")
            name = node.func.id
            if name in self.networks:
                raise self.refuse(node, f"{name}(...) is a vector: pick one output, as in {name}(...)[0]")
            if name not in FUNCTIONS:
                raise self.refuse(node, f"unknown function {shorten(name, 30)!r} (allowed: {', '.join(FUNCTIONS)})")
            if node.keywords or any(isinstance(arg, ast.Starred) for arg in node.args):
                raise self.refuse(node, f"{name}() takes plain positional arguments")
            _, least, most = FUNCTIONS[name]
            if len(node.args) < least or (most is not None and len(node.args) > most):
                count = str(least) if least == most else f"at least {least}"
                raise self.refuse(node, f"{name}() takes {count} argument{'s' if least > 1 else ''}")
            return list(node.args)
        if isinstance(node, ast.Constant):
            self.number(node)
            return []
        if isinstance(node, ast.Name):
            if node.id not in CONSTANTS:
                hint = " (write x[i])" if node.id == "x" else ""
                raise self.refuse(node, f"unknown name {shorten(node.id, 30)!r}{hint}")
            return []
        if isinstance(node, ast.Subscript):
            if self.network_call(node) is not None:
                return list(node.value.args)
            self.index(node)
            return []
        what = _REFUSED.get(type(node), type(node).__name__)
        raise self.refuse(node, f"{what} is not allowed in an expression")

    def build(self, node: ast.AST, args: list[Expr]) -> Expr:
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Pow):
                return api.power(args[0], self.exponent(node))
            return getattr(args[0], _BINARY[type(node.op)])(args[1])
        if isinstance(node, ast.UnaryOp):
            return -args[0] if isinstance(node.op, ast.USub) else args[0]
        if isinstance(node, ast.Call):
            return FUNCTIONS[node.func.id][0](*args)
        if isinstance(node, ast.Constant):
            return api.constant(self.number(node))
        if isinstance(node, ast.Name):
            return CONSTANTS[node.id]
        network = self.network_call(node)
        if network is not None:
            return network(args)[node.slice.value]
        return self.variables[self.index(node)]

    def network_call(self, node: ast.Subscript) -> Network | None:
        """The network of ``net(a, b, ...)[k]`` (checked: one argument per input, k an output), or
        None where the subscript is not such a call."""
        call = node.value
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in self.networks):
            return None
        name, network = call.func.id, self.networks[call.func.id]
        if call.keywords or any(isinstance(arg, ast.Starred) for arg in call.args):
            raise self.refuse(call, f"{name}() takes plain positional arguments")
        if len(call.args) != network.n_inputs:
            raise self.refuse(call, f"{name}() takes {network.n_inputs} arguments, one per network input")
        index = node.slice
        if not (isinstance(index, ast.Constant) and isinstance(index.value, int) and not isinstance(index.value, bool)):
            raise self.refuse(node, f"the output must be an integer literal, as in {name}(...)[0]")
        if not 0 <= index.value < network.n_outputs:
            raise self.refuse(node, f"{name} has outputs 0 to {network.n_outputs - 1}")
        return network

    def number(self, node: ast.Constant) -> int | float:
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.refuse(node, f"{type(value).__name__} literals are not allowed (numbers only)")
        if isinstance(value, float) and not math.isfinite(value):
            raise self.refuse(node, "the number is not finite as a double")
        return value

    def exponent(self, node: ast.BinOp) -> int:
        """The integer literal exponent of ``base ** exponent`` (possibly signed)."""
        sign = 1
        literal = node.right
        if isinstance(literal, ast.UnaryOp) and isinstance(literal.op, (ast.USub, ast.UAdd)):
            sign = -1 if isinstance(literal.op, ast.USub) else 1
            literal = literal.operand
        if not (
            isinstance(literal, ast.Constant) and isinstance(literal.value, int) and not isinstance(literal.value, bool)
        ):
            raise self.refuse(node, "the exponent must be an integer literal, as in x[0] ** 2")
        value = sign * literal.value
        if abs(value) > MAX_EXPONENT:
            raise self.refuse(node, f"the exponent must be within +-{MAX_EXPONENT}")
        return value

    def index(self, node: ast.Subscript) -> int:
        if not (isinstance(node.value, ast.Name) and node.value.id == "x"):
            raise self.refuse(node, "only x[i] may be indexed")
        index = node.slice
        if not (isinstance(index, ast.Constant) and isinstance(index.value, int) and not isinstance(index.value, bool)):
            raise self.refuse(node, "the index must be a non-negative integer literal, as in x[0]")
        if not 0 <= index.value < len(self.variables):
            raise self.refuse(node, f"x has indices 0 to {len(self.variables) - 1}")
        return index.value
