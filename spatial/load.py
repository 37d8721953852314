"""``load_problem(spec)``: a built-in name, a JSON file (problem or ANN), or a Python model file.

- Built-in names (bundled in ``spatial/data``): ``peaks`` (MATLAB's peaks on [-3, 3]^2) and
  ``peaks-ann`` (the 2-10-8-1 network trained on it).
- ``*.json``: a problem file (:mod:`.parse`) or an ANN file (:mod:`.ann`), told apart by their
  keys. Reading them never runs code.
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

BUILTINS = {"peaks": "peaks.json", "peaks-ann": "peaks-ann-2-10-8-1.json"}


def builtin_names() -> list[str]:
    return sorted(BUILTINS)


def load_problem(spec: str) -> Problem:
    """The problem ``spec`` names: a built-in name, a ``.json`` file or a ``.py`` model file."""
    spec = str(spec)
    if spec in BUILTINS:
        resource = importlib.resources.files(__package__) / "data" / BUILTINS[spec]
        with importlib.resources.as_file(resource) as path:
            return _load_json(path, spec, default_name=spec, origin=f"builtin:{spec}")
    path = Path(spec)
    if path.suffix.lower() == ".json":
        return _load_json(path, path.name, default_name=path.stem, origin=str(path))
    if path.suffix.lower() == ".py":
        return _load_model_file(path)
    raise ProblemError(f"{spec}: not a built-in problem ({', '.join(builtin_names())}) nor a .json or .py file")


def _load_json(path: Path, where: str, default_name: str, origin: str) -> Problem:
    document = read_json(path, where)
    if is_ann(document):
        return ann_problem(document, where, default_name, origin)
    return problem_from_dict(document, where, default_name, origin)


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
