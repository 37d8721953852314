"""Continuous global optimization: rigorous spatial branch-and-bound with interval bounds on subdomains.

The modelling API (:mod:`.model`), problems (:mod:`.problem`) and their loaders (:mod:`.load`) are
importable from here without loading numba; :func:`evaluate_float` loads it on first use.
"""

import importlib

from .load import builtin_names, load_problem
from .model import (
    Constraint,
    Expr,
    Model,
    Variable,
    activate,
    atan2,
    constant,
    cos,
    dense,
    e,
    exp,
    log,
    maximum,
    minimum,
    pi,
    power,
    relu,
    scale_inputs,
    sigmoid,
    sin,
    sqrt,
    tan,
    tanh,
    unscale_outputs,
)
from .model import abs_ as abs  # noqa: A001 (the expression function; the built-in abs(expr) works too)
from .network import Network
from .onnx_network import onnx_problem, read_onnx
from .problem import Problem, ProblemError
from .tape import Op, Tape, TapeBuilder, TapeError

_LAZY = {"evaluate_float": ".floateval"}  # modules that load numba


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "Constraint",
    "Expr",
    "Model",
    "Network",
    "Op",
    "Problem",
    "ProblemError",
    "Tape",
    "TapeBuilder",
    "TapeError",
    "Variable",
    "abs",
    "activate",
    "atan2",
    "builtin_names",
    "constant",
    "cos",
    "dense",
    "e",
    "evaluate_float",
    "exp",
    "load_problem",
    "log",
    "maximum",
    "minimum",
    "onnx_problem",
    "pi",
    "power",
    "read_onnx",
    "relu",
    "scale_inputs",
    "sigmoid",
    "sin",
    "sqrt",
    "tan",
    "tanh",
    "unscale_outputs",
]
