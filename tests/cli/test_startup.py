"""Start-up: numba code loaded before the search's clock starts (a compile told apart from a
cache load, and reported apart), the ``startup`` breakdown of ``pbbflow solve --json``, the
dashboard of runs that last, and the fast exit (the workers' warm-up: tests/flowshop/test_warmup.py)."""

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
import urllib.request

import pytest
from distributed import LocalCluster

from pbbflow.cli import startup as startup_module
from pbbflow.cli.main import main
from pbbflow.cli.startup import Startup, process_age
from pbbflow.core.compiling import CodeLoad
from pbbflow.flowshop import warmup
from pbbflow.flowshop.taillard import taillard_instance
from pbbflow.flowshop.warmup import warm_worker
from pbbflow.workflow.cluster import open_cluster

STARTUP_FIELDS = {
    "imports_s",
    "cluster_s",
    "client_code_s",
    "workers_code_s",
    "store_code_s",
    "initial_heuristic_s",
    "wait_s",
    "search_s",
    "final_checkpoint_s",
    "close_s",
    "compile_s",
    "total_s",
}
COMPILING = "pbbflow: compiled in"
NOTICE = "pbbflow: compiling the flow-shop solver for this machine: first run only, about"


def python(code: str, cache, cwd) -> str:
    """Run ``code`` in a fresh interpreter with numba's cache in ``cache``; its stdout."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_a_compile_is_told_apart_from_a_cache_load(tmp_path):
    (tmp_path / "plus_one.py").write_text(
        "import numba\n\n\n@numba.njit(cache=True)\ndef plus_one(x):\n    return x + 1\n"
    )
    code = """
        from pbbflow.core.compiling import in_cache, recording
        import plus_one
        before = in_cache(plus_one.plus_one)
        with recording() as outcome:
            plus_one.plus_one(1)
        with recording() as again:
            plus_one.plus_one(2)
        print(before, outcome["compiled"], again["compiled"])
    """
    cache = tmp_path / "cache"
    assert python(code, cache, tmp_path).split() == ["False", "True", "False"]  # compiled, then in memory
    assert python(code, cache, tmp_path).split() == ["True", "False", "False"]  # loaded from numba's cache
    (tmp_path / "plus_one.py").write_text(
        "import numba\n\n\n@numba.njit(cache=True)\ndef plus_one(x):\n    return x + 2\n"
    )
    assert python(code, cache, tmp_path).split() == ["False", "True", "False"]  # its source changed: stale


@pytest.fixture(scope="module")
def scheduler():
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster:
        yield cluster.scheduler_address


def solve_ta001(capsys, scheduler, tmp_path) -> tuple[dict, str]:
    code = main(["solve", "ta001", "--run", str(tmp_path / "r.zarr"), "--json", "--scheduler", scheduler])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out), err


@pytest.mark.parametrize(
    ("load", "line"),
    [
        (CodeLoad(11.24, True), f"{COMPILING} 11.2 s; later runs load it from numba's cache"),
        (CodeLoad(0.4, False), None),
    ],
)
def test_the_compile_line_and_the_breakdown(capsys, tmp_path, monkeypatch, scheduler, load, line, patience):
    monkeypatch.setattr(warmup, "warm_client", lambda p, bound, initial: load)
    result, err = solve_ta001(capsys, scheduler, tmp_path)
    startup = result["startup"]
    assert set(startup) == STARTUP_FIELDS and all(v >= 0 for v in startup.values())
    assert startup["client_code_s"] == round(load.seconds, 3)
    assert startup["compile_s"] == (round(load.seconds, 3) if load.compiled else 0.0)
    assert [x for x in err.splitlines() if x.startswith(COMPILING)] == ([line] if line else [])
    assert abs(startup["search_s"] - result["elapsed_s"]) < patience(0.05)  # elapsed_s is the search alone
    assert startup["total_s"] >= startup["imports_s"] + startup["search_s"]


def test_the_run_stores_library_loads_on_the_start_up_thread(monkeypatch):
    """zarr is imported on start-up's thread once the workers' code is loaded (beside the client's
    initial heuristic), not on the client's way to the search, and timed."""
    threads = []
    monkeypatch.setattr(startup_module, "zarr_module", lambda: threads.append(threading.current_thread().name))
    with Startup(
        lambda: open_cluster("local", workers=1, threads_per_worker=1),
        (warm_worker, (taillard_instance(1).p, "lb1", "minmin")),
    ) as startup:
        startup.ready()
    assert threads == ["pbbflow-startup"]
    assert startup.times["store_code_s"] >= 0


def test_process_age():
    assert 0 < process_age() < 1e6
    out = subprocess.run(
        [sys.executable, "-c", "from pbbflow.cli.startup import process_age; print(process_age())"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert 0 < float(out) < 30


def test_collecting_none_pauses_the_collector_then_freezes_what_the_block_made(tmp_path):
    code = """
        import gc
        from pbbflow.workflow.fastexit import collecting_none
        with collecting_none():
            during = gc.isenabled()
            kept = [[i] for i in range(1000)]
        print(during, gc.isenabled(), gc.get_freeze_count() >= 1000, gc.is_tracked(kept))
        gc.disable()
        try:
            with collecting_none():
                raise ValueError
        except ValueError:
            pass
        print(gc.isenabled())  # a collector that was off stays off, an error or not
    """
    assert python(code, tmp_path, tmp_path) == "False True True True\nFalse\n"


def test_the_fast_exit_keeps_the_other_exit_hooks_and_the_output(tmp_path):
    code = """
        import atexit
        atexit.register(print, "an earlier hook ran")
        from pbbflow.workflow.fastexit import exit_without_final_gc
        exit_without_final_gc()
        exit_without_final_gc()
        cycle = []
        cycle.append(cycle)  # garbage the frozen collector leaves to the operating system
        print("done")
    """
    assert python(code, tmp_path, tmp_path) == "done\nan earlier hook ran\n"


@pytest.mark.slow
def test_the_first_run_says_it_compiles_and_keeps_it_out_of_the_search(tmp_path, patience):
    """A real ``pbbflow solve`` on an empty numba cache, then on the filled one."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    command = [sys.executable, "-m", "pbbflow.cli.main", "solve", "ta001", "--run", "r.zarr", "--overwrite", "--json"]
    runs = [
        subprocess.run(
            command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=patience(300), check=False
        )
        for _ in range(2)
    ]
    for proc in runs:
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    (cold, warm) = (json.loads(proc.stdout) for proc in runs)
    lines = [[x for x in proc.stderr.splitlines() if x.startswith((NOTICE, COMPILING))] for proc in runs]
    assert len(lines[0]) == 2 and lines[0][0].startswith(NOTICE) and lines[1] == []  # the notice comes first
    compiled = float(lines[0][1].removeprefix(COMPILING).split()[0])
    assert compiled > 1 and abs(cold["startup"]["compile_s"] - compiled) <= 0.051
    assert warm["startup"]["compile_s"] == 0.0
    for result in (cold, warm):
        assert result["status"] == "optimal" and result["makespan"] == 1278
        assert result["elapsed_s"] < compiled / 2 and abs(
            result["startup"]["search_s"] - result["elapsed_s"]
        ) < patience(0.05)


def test_the_dashboard_comes_only_to_runs_that_last(monkeypatch, patience):
    """The local cluster's dashboard starts ``DASHBOARD_DELAY_S`` after start-up, timed as
    ``dashboard_s``; a run closed before that starts none."""
    monkeypatch.setattr(startup_module, "DASHBOARD_DELAY_S", 0.3)
    instance = taillard_instance(1)

    def cluster():
        return open_cluster("local", workers=1, threads_per_worker=1)

    with Startup(cluster, (warm_worker, (instance.p, "lb1", "minmin"))) as short:
        short.ready()
    assert short.link is None and "dashboard_s" not in short.times
    with Startup(cluster, (warm_worker, (instance.p, "lb1", "minmin"))) as long:
        long.ready()
        deadline = time.monotonic() + patience(60)
        while long.link is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert long.link.startswith("http://127.0.0.1:") and long.link.endswith("/pbbflow")
        with urllib.request.urlopen(long.link, timeout=30) as response:
            assert response.status == 200
    assert long.times["dashboard_s"] > 0
