"""A first run's compile: seen coming, spread over two processes, told before and after."""

import fcntl
import importlib
import io
import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

from pbbflow.cli.main import main
from pbbflow.core import compiling
from pbbflow.core.compiling import FirstRunNotice, compiled_line, start_apart, wait_apart

warmup = importlib.import_module("pbbflow.flowshop.warmup")  # solve's compile check, imported when solve runs
bnb = importlib.import_module("pbbflow.spatial.bnb")


def lock_is_free(path) -> bool:
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
        return True


def test_a_job_apart_holds_its_lock_from_before_it_starts_until_it_ends(tmp_path):
    lock = tmp_path / "compile.lock"
    process = start_apart("pbbflow.flowshop.warmup:compile_explorer", "lb1", "minmin", lock=lock)
    assert process is not None and not lock_is_free(lock)  # held before the child has even imported numba
    assert start_apart("pbbflow.flowshop.warmup:compile_explorer", "lb1", "minmin", lock=lock) is None  # its turn
    wait_apart(process)
    assert process.returncode == 0 and lock_is_free(lock)


def test_one_core_compiles_nothing_apart(monkeypatch):
    monkeypatch.setattr(compiling, "usable_cores", lambda: 1)
    assert start_apart("pbbflow.spatial.bnb:compile_bounds") is None
    wait_apart(None)  # nothing to wait for


@pytest.mark.parametrize("job", ["os:system", "pbbflow.core.text:printable; import os", "pbbflowx.m:f"])
def test_a_job_apart_runs_only_pbbflows_functions(job):
    code = "from pbbflow.core.compiling import run_job; run_job()"
    proc = subprocess.run(
        [sys.executable, "-c", code, job, json.dumps(["echo ran"])],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode != 0 and "ran" not in proc.stdout and "not a pbbflow compile job" in proc.stderr


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_notice_comes_before_and_the_figure_after():
    stream = io.StringIO()
    notice = FirstRunNotice(stream, "the flow-shop solver", "20 s on 2 cores").start()
    assert stream.getvalue() == (
        "pbbflow: compiling the flow-shop solver for this machine: first run only, about 20 s on 2 cores\n"
    )
    seconds = notice.finish()
    assert notice.finish() == seconds >= 0  # once
    assert stream.getvalue().splitlines()[1:] == [compiled_line(seconds)]


def test_a_terminal_sees_the_seconds_go_by_and_a_clean_line_after():
    stream = Terminal()
    notice = FirstRunNotice(stream, "x", "1 s").start()
    deadline = time.monotonic() + 30
    while "compiling... 1 s" not in stream.getvalue() and time.monotonic() < deadline:
        time.sleep(0.05)
    notice.finish()
    text = stream.getvalue()
    assert "\rpbbflow: compiling... 1 s" in text and text.endswith(f"\r\033[K{compiled_line(notice.seconds)}\n")


def test_a_failed_start_stops_the_ticker_without_a_figure():
    stream = Terminal()
    notice = FirstRunNotice(stream, "x", "1 s").start()
    notice.finish(report=False)
    assert "compiled in" not in stream.getvalue() and not notice._ticker.is_alive()


def test_solve_says_it_compiles_before_it_does_and_compiles_the_explorer_apart(capsys, tmp_path, monkeypatch):
    apart = []
    monkeypatch.setattr(warmup, "code_cached", lambda initial, *where: False)
    monkeypatch.setattr(warmup, "start_worker_code_apart", lambda bound, branch: apart.append((bound, branch)))
    code = main(["solve", "ta001", "--run", str(tmp_path / "r.zarr"), "--json", "--workers", "1"])
    err = capsys.readouterr().err.splitlines()
    assert code == 0 and apart == [("lb1", "minmin")]
    notice = [i for i, line in enumerate(err) if line.startswith("pbbflow: compiling the flow-shop solver")]
    figure = [i for i, line in enumerate(err) if line.startswith("pbbflow: compiled in")]
    assert len(notice) == 1 and len(figure) == 1 and notice[0] < figure[0]


def test_a_warm_solve_says_nothing_of_compiling(capsys, tmp_path, monkeypatch):
    apart = []
    monkeypatch.setattr(warmup, "code_cached", lambda initial, *where: True)
    monkeypatch.setattr(warmup, "start_worker_code_apart", lambda bound, branch: apart.append(bound))
    assert main(["solve", "ta001", "--run", str(tmp_path / "r.zarr"), "--json", "--workers", "1"]) == 0
    assert "compil" not in capsys.readouterr().err and apart == []


def test_a_run_asks_the_cache_for_the_code_of_its_own_explorers(monkeypatch):
    """A GPU machine never compiles the CPU explorer's start (``init_at``): a GPU run that asked for it
    said "compiling, about 20 s" at every start (seen on an H100, where it then loaded in 1.1 s)."""
    from pbbflow.flowshop import ivm, packed
    from pbbflow.gpu.flowshop import kernels

    asked = []
    monkeypatch.setattr(warmup, "in_cache", lambda *functions: asked.append(functions) or True)
    for explorers in ("cpu", "gpu", None):
        assert warmup.code_cached("neh", explorers, (20, 5))
    cpu, gpu, elsewhere = asked
    assert ivm.init_at in cpu and ivm.init_at not in gpu and ivm.init_at not in elsewhere
    assert kernels.explore_kernel(20, 5) in gpu and kernels.steal in gpu
    assert packed._coalesce in elsewhere and set(elsewhere) < set(cpu) and set(elsewhere) < set(gpu)


def test_minimize_says_it_compiles_before_it_does(capsys, monkeypatch):
    monkeypatch.setattr(bnb, "code_cached", lambda options: False)
    assert main(["minimize", "peaks", "--json"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("pbbflow: compiling the continuous solver for this machine: first run only, about")
    assert err[1].startswith("pbbflow: compiled in")


def test_minimize_searches_with_the_very_code_load_code_loaded(tmp_path):
    """After ``load_code``, a whole ``minimize`` (local solves, contraction, bounds, the second-order
    and the network bounds) adds no numba type to any function: nothing compiles inside the
    search's clock (the second-order bound did, on the first problem of a process)."""
    code = """
        import numba
        from pbbflow.spatial import bnb, bounds, contract, floateval, interval, network_bounds, second_order
        from pbbflow.spatial.load import load_problem

        modules = (bounds, contract, floateval, interval, network_bounds, second_order)

        def signatures():
            return {(m.__name__, name): len(f.signatures) for m in modules
                    for name, f in vars(m).items() if isinstance(f, numba.core.registry.CPUDispatcher)}

        for name in ("peaks", "peaks-ann"):
            problem = load_problem(name)
            bnb.load_code(problem, bnb.MinimizeOptions())
            before = signatures()
            bnb.minimize(problem, bnb.MinimizeOptions(node_limit=200))
            after = signatures()
            print({k: (before.get(k, 0), v) for k, v in after.items() if v != before.get(k, 0)})
    """
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=600, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == ["{}", "{}"]


def test_a_job_apart_is_out_of_reach_of_the_terminals_signals(tmp_path):
    """The terminal's Ctrl-C reaches its process group: the run stops once its code is loaded, so
    the compile apart, in a session of its own, goes on (else the run would compile its part again)."""
    process = start_apart("pbbflow.flowshop.warmup:compile_explorer", "lb1", "minmin", lock=tmp_path / "lock")
    assert os.getpgid(process.pid) != os.getpgrp()
    wait_apart(process)
    assert process.returncode == 0
