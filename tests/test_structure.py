"""The house's structure, read from the source with ``ast``: every import of every module of the
package (also those inside functions, relative ones resolved), checked against issue 34's floors.

- the ground floor ``core/`` imports no other folder of the package, nor Dask;
- ``storage/``, ``workflow/``, ``cli/`` and ``viz/`` import no family module (``flowshop/``,
  ``spatial/``, ``gpu/``);
- no import circles between modules;
- the floors, from the ground up: ``core/``, ``storage/``, ``workflow/``, ``viz/``, ``cli/``, the
  families, ``gpu/``; the only imports that run up a floor are the families' of ``gpu/`` (their
  engines' device twins: two folder edges, issue 34's "at most two"), and no family imports another.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the repository root is the package ``pbbflow``
PACKAGE = "pbbflow"
FAMILIES = ("flowshop", "spatial", "gpu")
ABOVE_THE_FAMILIES = ("core", "storage", "workflow", "cli", "viz")
DASK = ("dask", "distributed", "dask_cuda", "dask_jobqueue")
FLOOR = {"core": 0, "storage": 1, "workflow": 2, "viz": 3, "cli": 4, "flowshop": 5, "spatial": 5, "gpu": 6}
UPWARD = {("flowshop", "gpu"), ("spatial", "gpu")}  # the only folder edges allowed to run up a floor


def _modules() -> dict[str, Path]:
    """Every module of the package: its dotted name -> its file (packages: folders with an
    ``__init__.py`` down from the root, as setup.py finds them; setup.py is not one)."""
    found: dict[str, Path] = {}

    def walk(folder: Path, name: str) -> None:
        for path in sorted(folder.iterdir()):
            if path.is_dir() and (path / "__init__.py").is_file():
                walk(path, f"{name}.{path.name}")
            elif path.suffix == ".py" and path != ROOT / "setup.py":
                found[name if path.name == "__init__.py" else f"{name}.{path.stem}"] = path

    walk(ROOT, PACKAGE)
    return found


MODULES = _modules()


def _imports(module: str, path: Path) -> list[tuple[str, int]]:
    """``(imported, line)`` for each module imported in ``module``: a module of the package where
    it names one (``from .x import f`` -> ``pbbflow.<...>.x``; ``from . import x`` -> the module
    ``x``), else the top-level name of the outside package."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                child = f"{base}.{alias.name}"
                found.append((child if child in MODULES else base, node.lineno))
    named = {
        (name if name in MODULES or name.startswith(PACKAGE + ".") else name.split(".")[0], line)
        for name, line in found
    }
    return sorted(named, key=lambda item: (item[1], item[0]))  # one per module named in a statement


IMPORTS = {module: _imports(module, path) for module, path in MODULES.items()}


def _folder(module: str) -> str:
    """The package's top folder that holds ``module`` ("" for the package's ``__init__``)."""
    return module.split(".")[1] if module.count(".") else ""


def _listing(edges: list[tuple[str, str, int]]) -> str:
    return "\n".join(f"  {a} -> {b} ({MODULES[a].relative_to(ROOT)}:{line})" for a, b, line in edges)


def test_the_modules_are_read():
    assert {"pbbflow", "pbbflow.core.family", "pbbflow.workflow.cluster", "pbbflow.gpu.spatial.bnb"} <= set(MODULES)
    assert not any(_folder(m) in ("setup", "tests", "benchmarks", "docs", "notebooks", "examples") for m in MODULES)


def test_the_ground_floor_imports_no_other_folder_and_no_dask():
    wrong = [
        (module, name, line)
        for module in MODULES
        if _folder(module) == "core"
        for name, line in IMPORTS[module]
        if (name.startswith(PACKAGE) and _folder(name) != "core") or name in DASK
    ]
    assert not wrong, "core/ imports another folder of the package or Dask:\n" + _listing(wrong)


def test_no_floor_above_the_families_imports_a_family_module():
    wrong = [
        (module, name, line)
        for module in MODULES
        if _folder(module) in ABOVE_THE_FAMILIES
        for name, line in IMPORTS[module]
        if name.startswith(PACKAGE + ".") and _folder(name) in FAMILIES
    ]
    assert not wrong, f"{', '.join(ABOVE_THE_FAMILIES)} import family modules:\n" + _listing(wrong)


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circles():
    graph = {m: {name for name, _ in IMPORTS[m] if name in MODULES and name != m} for m in MODULES}
    circles = _circles(graph)
    lines = []
    for component in circles:
        members = set(component)
        lines.append("circle of " + ", ".join(component) + ":")
        lines += [
            f"  {m} -> {name} ({MODULES[m].relative_to(ROOT)}:{line})"
            for m in component
            for name, line in IMPORTS[m]
            if name in members and name != m
        ]
    assert not circles, "import circles between modules:\n" + "\n".join(lines)


def test_only_the_families_reach_up_a_floor_to_their_gpu_code():
    assert set(FLOOR) == {_folder(m) for m in MODULES} - {""}, "a new top folder needs its floor here"
    edges = [
        (module, name, line)
        for module in MODULES
        if _folder(module)
        for name, line in IMPORTS[module]
        if name.startswith(PACKAGE + ".") and _folder(name) != _folder(module)
    ]
    wrong = [
        (module, name, line)
        for module, name, line in edges
        if FLOOR[_folder(name)] >= FLOOR[_folder(module)] and (_folder(module), _folder(name)) not in UPWARD
    ]
    assert not wrong, "imports that run up a floor, or from one family into another:\n" + _listing(wrong)
