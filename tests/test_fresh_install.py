"""A fresh machine: the wheel, installed non-editable into a brand-new virtual environment with only
its declared dependencies, imports every module and runs both families end to end.

An undeclared import (scipy, once) passes every other test wherever the test Python happens to have
it; here it fails.  Slow (a few minutes: the dependencies' install and the first compiles), and run
by CI like every other test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STEP_SECONDS = 900

IMPORT_EVERY_MODULE = """
import importlib, pkgutil, pbbflow
names = [m.name for m in pkgutil.walk_packages(pbbflow.__path__, "pbbflow.")]
for name in names:
    importlib.import_module(name)
print(len(names))
"""


def _run(argv: list[str], cwd: Path, env: dict[str, str], expect: tuple[int, ...] = (0,)) -> str:
    return _process(argv, cwd, env, expect).stdout


def _process(
    argv: list[str], cwd: Path, env: dict[str, str], expect: tuple[int, ...] = (0,)
) -> subprocess.CompletedProcess:
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=STEP_SECONDS)
    assert proc.returncode in expect, (argv, proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:])
    return proc


def _told_first_run(stderr: str, what: str) -> bool:
    """Whether stderr gave the first run's notice for ``what`` (its first line), then the figure."""
    lines = stderr.splitlines()
    figures = [line for line in lines if line.startswith("pbbflow: compiled in ")]
    return (
        lines[0].startswith(f"pbbflow: compiling {what} for this machine: first run only, about ") and len(figures) == 1
    )


@pytest.mark.slow
def test_the_wheel_runs_both_families_in_a_fresh_venv(tmp_path):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "NUMBA_ENABLE_CUDASIM", "VIRTUAL_ENV", "PYTHONHOME", "NUMBA_CACHE_DIR")
    }
    wheels = tmp_path / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(ROOT)], tmp_path, env)
    (wheel,) = wheels.glob("pbbflow-*.whl")
    home = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False, clear=True).create(home)
    python = home / "bin" / "python"
    env["PATH"] = f"{home / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    _run([str(python), "-m", "pip", "install", "-q", str(wheel)], tmp_path, env)
    work = tmp_path / "work"
    work.mkdir()
    assert int(_run([str(python), "-c", IMPORT_EVERY_MODULE], work, env)) > 40
    pbbflow = str(home / "bin" / "pbbflow")
    first = _process([pbbflow, "solve", "ta001", "--json", "--run", "ta001.zarr"], work, env)  # numba's cache is new
    solved = json.loads(first.stdout)
    assert solved["status"] == "optimal" and solved["makespan"] == 1278
    assert _told_first_run(first.stderr, "the flow-shop solver"), first.stderr
    first = _process([pbbflow, "minimize", "peaks", "--json"], work, env)
    peaks = json.loads(first.stdout)
    assert peaks["status"] == "optimal" and peaks["objective"] == pytest.approx(-6.5511, abs=1e-3)
    assert _told_first_run(first.stderr, "the continuous solver"), first.stderr
    again = _process([pbbflow, "minimize", "peaks", "--json"], work, env)
    assert "compil" not in again.stderr  # the cache holds it now
    problem = work / "camel.json"
    problem.write_text(
        json.dumps(
            {
                "name": "six-hump-camel",
                "domain": [[-3, 3], [-2, 2]],
                "objective": "(4 - 2.1*x[0]**2 + x[0]**4/3)*x[0]**2 + x[0]*x[1] + (-4 + 4*x[1]**2)*x[1]**2",
            }
        )
    )
    _run(
        [pbbflow, "minimize", str(problem), "--run", "camel.zarr", "--node-limit", "1", "--workers", "1", "--json"],
        work,
        env,
        expect=(3, 0),
    )  # (0: done before the limit was checked, on a loaded machine)
    resumed = json.loads(_run([pbbflow, "resume", "camel.zarr", "--workers", "1", "--json"], work, env))
    assert resumed["status"] == "optimal" and resumed["objective"] == pytest.approx(-1.0316, abs=1e-4)
    info = json.loads(_run([pbbflow, "info", "camel.zarr", "--json"], work, env))
    assert info["status"] == "optimal"
    _run([pbbflow, "plot", "camel.zarr", "--out", "plots"], work, env)
    assert {p.name for p in (work / "plots").iterdir()} >= {"history.png", "boxes.png"}
