"""The flow shop's warm-up: workers load the explorer's numba code before the search, taking turns
at compiling, without waiting on a busy worker; the ETA's probes compile in a process of their own."""

import contextlib
import fcntl
import sys
import threading
import time

from distributed import Client, LocalCluster

from pbbflow.core.compiling import CodeLoad
from pbbflow.flowshop import ivm, warmup
from pbbflow.flowshop.family import create_flowshop_run
from pbbflow.flowshop.taillard import taillard_instance
from pbbflow.flowshop.warmup import warm_worker
from pbbflow.workflow import worker_code
from pbbflow.workflow.run import drive
from pbbflow.workflow.worker_code import warm_workers


def test_warmed_workers_search_with_the_code_they_loaded(tmp_path, patience):
    """The warm-up loads the very specializations the explorer tasks run (same array types):
    after a whole run, each worker holds one signature of the IVM's numba functions."""
    instance = taillard_instance(1)
    with (
        LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        first = warm_workers(client, warm_worker, (instance.p, "lb1", "minmin"))
        assert list(first.values())[0].seconds > 0
        assert list(warm_workers(client, warm_worker, (instance.p, "lb1", "minmin")).values()) == [CodeLoad(0.0, False)]
        timings = {}
        store = create_flowshop_run(tmp_path / "run.zarr", instance, ub=None, bound="lb1", branch="minmin")
        result = drive(store, client, timings=timings)
        signatures = client.run(lambda: (len(ivm.init_at.signatures), len(ivm.explore_steps.signatures)))
    assert result["status"] == "optimal" and list(signatures.values()) == [(1, 1)]
    assert set(timings) == {"search_s", "final_checkpoint_s"}
    assert abs(timings["search_s"] - result["elapsed_s"]) < patience(0.05)  # the clock starts after the warm-up


def test_workers_take_turns_and_do_something_useful_while_waiting(tmp_path, monkeypatch, patience):
    monkeypatch.setattr(warmup, "LOCK", tmp_path / "numba.lock")
    events = []
    with open(warmup.LOCK, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another worker is compiling

        def second_worker():
            with warmup._machine_turn(meanwhile=lambda: events.append("meanwhile")):
                events.append("turn")

        thread = threading.Thread(target=second_worker)
        thread.start()
        deadline = time.monotonic() + patience(30)
        while not events and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)  # (a turn taken now would show)
        assert events == ["meanwhile"]  # waits for its turn, having done the other work
        fcntl.flock(held, fcntl.LOCK_UN)
    thread.join(patience(5))
    assert events == ["meanwhile", "turn"]
    with warmup._machine_turn(meanwhile=lambda: events.append("not needed")):
        events.append("free")
    assert events[-1] == "free" and "not needed" not in events


def test_a_busy_worker_does_not_hold_the_warm_up(monkeypatch, patience):
    """A worker whose only thread runs other work: the warm-up returns after WARM_SECONDS without
    its code load (it loads later, before its first task) instead of raising or waiting."""
    monkeypatch.setattr(worker_code, "WARM_SECONDS", 0.3)
    instance = taillard_instance(1)
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        busy_s = patience(3)
        busy = client.submit(time.sleep, busy_s, pure=False)
        while not any(client.processing().values()):
            time.sleep(0.01)
        started = time.monotonic()
        loads = warm_workers(client, warm_worker, (instance.p, "lb1", "minmin"))
        assert loads == {} and time.monotonic() - started < busy_s * 0.8  # not waiting for the busy task
        busy.result()


def test_a_first_run_compiles_the_etas_probes_apart(tmp_path, monkeypatch):
    """Where the client's code compiled (numba's cache was cold), the probes compile in a process of
    their own instead of before the search; a warm client loads them itself."""
    monkeypatch.setattr(warmup, "PROBES_LOCK", tmp_path / "probes.lock")  # not a real run's (CI starts some)
    calls = []
    compiled = iter([True, False, False, False, False, False])

    @contextlib.contextmanager
    def recording():
        yield {"compiled": next(compiled), "seconds": 0.0}

    monkeypatch.setattr(warmup, "recording", recording)
    monkeypatch.setattr(warmup, "_eta_compile", None)
    monkeypatch.setattr(warmup, "_eta_elsewhere", False)
    monkeypatch.setattr(warmup, "compile_eta_apart", lambda: calls.append("apart"))
    monkeypatch.setattr(warmup, "load_probes", lambda: calls.append("here"))
    p = taillard_instance(1).p
    assert warmup.warm_client(p, "lb1", initial=None).compiled
    assert not warmup.warm_client(p, "lb1", initial=None).compiled
    assert calls == ["apart", "here"]
    with open(warmup.PROBES_LOCK, "a") as lock:  # another run's process compiles them: wait for it
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert not warmup.warm_client(p, "lb1", initial=None).compiled
        assert calls == ["apart", "here"] and not warmup.eta_code_ready()
    assert warmup.eta_code_ready()


def test_estimates_wait_for_the_process_that_compiles_the_probes(tmp_path, monkeypatch):
    monkeypatch.setattr(warmup, "PROBES_LOCK", tmp_path / "probes.lock")
    monkeypatch.setattr(warmup, "_eta_compile", None)
    monkeypatch.setattr(warmup, "_eta_elsewhere", False)
    run = create_flowshop_run(tmp_path / "r.zarr", taillard_instance(1), ub=1278, bound="lb1", branch="minmin").instance
    work = run.whole()
    assert warmup.eta_code_ready() and run.estimate_left(work, 1278, 0.01) is not None
    warmup.compile_eta_apart([sys.executable, "-c", "import time; time.sleep(0.5)"])
    assert not warmup.eta_code_ready() and run.estimate_left(work, 1278, 0.01) is None
    warmup._eta_compile.wait(timeout=30)
    assert warmup.eta_code_ready() and run.estimate_left(work, 1278, 0.01) is not None
    warmup.compile_eta_apart([sys.executable, "-c", "raise SystemExit(1)"])
    warmup._eta_compile.wait(timeout=30)
    assert not warmup.eta_code_ready()  # a failed compile: no estimates, never a compile on the driver
    warmup.compile_eta_apart()  # the real command: loads (or compiles) the probes
    assert warmup._eta_compile.wait(timeout=300) == 0 and warmup.eta_code_ready()
