"""``load_problem(spec)``: a built-in name, a JSON file (problem or ANN), or a Python model file.

- Built-in names (bundled in ``spatial/data``): ``peaks`` (MATLAB's peaks on [-3, 3]^2),
  ``peaks-ann`` (the 2-10-8-1 network trained on it), and the network's error against peaks, built
  from those two files (:mod:`.surrogate`): ``peaks-ann-error-min`` minimizes ANN(x) - peaks(x),
  ``peaks-ann-error-max`` minimizes peaks(x) - ANN(x), so its optimum is minus the maximum of
  ANN - peaks.
- ``*.json``: a problem file (:mod:`.parse`) or an ANN file (:mod:`.ann`), told apart by their
  keys. Reading them never runs code.
- ``*.onnx``: refused with a pointer to :func:`.onnx_network.onnx_problem`, which takes the box.
- ``*.py``: a model file. It IS code, run like a script you chose to run: it is imported from its
  path and must define, at module level, ``problem`` (a :class:`Problem` or a :class:`Model`) or a
  function ``model()`` returning one. A Model is compiled with the file's stem as default name.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import sys
import uuid
from pathlib import Path

from .ann import ann_problem, is_ann
from .model import Model
from .parse import problem_from_dict, read_json
from .problem import Problem, ProblemError, shorten
from .surrogate import surrogate_error_problem

BUILTINS = {"peaks": "peaks.json", "peaks-ann": "peaks-ann-2-10-8-1.json"}
# name -> the sign of ANN - peaks minimized, the known optimum and its point (an 801 x 801 grid and a
# local polish; proved to 1e-6 by pbbflow minimize and MAiNGO: spatial_vs_maingo_peaks_ann_error_*.json)
ERROR_BUILTINS = {
    "peaks-ann-error-min": (1, -0.08162083068936776, [-3.0, -0.3031954969380638]),
    "peaks-ann-error-max": (-1, -0.0568754840047907, [-0.08649871132837303, 1.217805459621546]),
}


def builtin_names() -> list[str]:
    """Every name ``load_problem`` takes for a bundled problem."""
    return sorted([*BUILTINS, *ERROR_BUILTINS])


def load_problem(spec: str) -> Problem:
    """The problem ``spec`` names: a built-in name, a ``.json`` file or a ``.py`` model file."""
    spec = str(spec)
    if spec in BUILTINS:
        return _from_document(_bundled_json(BUILTINS[spec]), spec, default_name=spec, origin=f"builtin:{spec}")
    if spec in ERROR_BUILTINS:
        sign, optimum, x_optimum = ERROR_BUILTINS[spec]
        network, function = (_bundled_json(BUILTINS[name]) for name in ("peaks-ann", "peaks"))
        return surrogate_error_problem(
            network, function, sign, spec, spec, optimum=optimum, x_optimum=x_optimum, origin=f"builtin:{spec}"
        )
    path = Path(spec)
    if path.suffix.lower() == ".json":
        document = read_json(path, path.name)
        return _from_document(document, path.name, default_name=path.stem, origin=str(path), folder=path.parent)
    if path.suffix.lower() == ".py":
        return _load_model_file(path)
    if path.suffix.lower() == ".onnx":
        raise ProblemError(f"{spec}: an ONNX network needs its input box: onnx_problem(path, domain), or --domain")
    raise ProblemError(f"{spec}: not a built-in problem ({', '.join(builtin_names())}) nor a .json or .py file")


def _bundled_json(file: str) -> dict:
    """The JSON object of a file in ``spatial/data``."""
    resource = importlib.resources.files(__package__) / "data" / file
    with importlib.resources.as_file(resource) as path:
        return read_json(path, file)


def _from_document(document: dict, where: str, default_name: str, origin: str, folder: Path | None = None) -> Problem:
    if is_ann(document):
        return ann_problem(document, where, default_name, origin)
    return problem_from_dict(document, where, default_name, origin, folder)


def _load_model_file(path: Path) -> Problem:
    where = path.name
    if not path.exists():
        raise ProblemError(f"{where}: no such file")
    if not path.is_file():
        raise ProblemError(f"{where}: not a regular file")
    module_name = f"_pbbflow_model_{uuid.uuid4().hex}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # while it runs: dataclasses and pickling look modules up here
    try:
        spec.loader.exec_module(module)
        if hasattr(module, "problem"):
            result = module.problem
        elif callable(getattr(module, "model", None)):
            result = module.model()
        else:
            raise ProblemError(f"{where}: defines neither `problem` (a Problem or Model) nor a function `model()`")
    except ProblemError:
        raise
    except Exception as error:  # the user's code failed: say so in one line, keep the traceback chained
        message = f"{type(error).__name__}: {shorten(str(error), 200)}"
        raise ProblemError(f"{where}: the model file raised {message}") from error
    finally:
        sys.modules.pop(module_name, None)
    if isinstance(result, Model):
        if result.name == "model":
            result.name = path.stem
        return result.problem(origin=str(path))
    if isinstance(result, Problem):
        return result
    raise ProblemError(f"{where}: `problem` must be a Problem or Model, not {type(result).__name__}")
