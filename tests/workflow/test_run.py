"""The Dask workflow end to end: coordinator plugin, explorer tasks, checkpoints, resume, faults."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import zarr
from distributed import Client, LocalCluster
from runwait import wait_for_committed_nodes

from pbbflow.flowshop.explorer import explore
from pbbflow.flowshop.family import create_flowshop_run
from pbbflow.flowshop.intervals import WorkUnit
from pbbflow.flowshop.taillard import taillard_instance
from pbbflow.storage.runstore import RunStore
from pbbflow.workflow.run import drive

TA011_NODES = explore(taillard_instance(11).p, WorkUnit.full(20), 1582).nodes  # fixed tree, one process
TA030_NODES = 2_797_731  # ta030's fixed tree (UB 2178) in one process (explore)
TA017_NODES = 38_400_745  # ta017's fixed tree (UB 1484) in one process: benchmarks/cpu_explorer.py


def cluster(workers, processes=False):
    """Workers in this process (in-memory transport) unless ``processes`` (TCP on 127.0.0.1)."""
    network = {"host": "127.0.0.1"} if processes else {}
    return LocalCluster(n_workers=workers, threads_per_worker=1, processes=processes, dashboard_address=None, **network)


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_fixed_tree_node_count_is_the_single_process_count(tmp_path, workers):
    with cluster(workers) as c, Client(c) as client:
        store = create_flowshop_run(tmp_path / "run.zarr", taillard_instance(11), ub=1582, bound="lb1", branch="minmin")
        result = drive(store, client, checkpoint_every=0.5)
    assert result["status"] == "bound_proved" and result["lower_bound"] == 1582
    assert result["nodes"] == TA011_NODES
    assert result["remaining_fraction"] == 0.0
    assert result["estimate"]["estimated_nodes_left"] == 0  # a finished proof: nothing left
    assert RunStore.open(tmp_path / "run.zarr").latest().result == {k: v for k, v in result.items() if k != "estimate"}


def test_two_runs_side_by_side_on_one_cluster(tmp_path):
    results = {}
    with cluster(2) as c, Client(c) as client:

        def run(number):
            store = create_flowshop_run(
                tmp_path / f"ta{number}.zarr", taillard_instance(number), ub=None, bound="lb1", branch="minmin"
            )
            results[number] = drive(store, client, checkpoint_every=1)

        threads = [threading.Thread(target=run, args=(k,)) for k in (1, 12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert results[1]["status"] == "optimal" and results[1]["makespan"] == 1278
    assert results[12]["status"] == "optimal" and results[12]["makespan"] == 1659


def test_limit_then_resume_explores_every_position_once(tmp_path):
    path = tmp_path / "run.zarr"
    with cluster(2) as c, Client(c) as client:
        store = create_flowshop_run(path, taillard_instance(17), ub=1484, bound="lb1", branch="minmin")
        first = drive(store, client, node_limit=2_000_000, checkpoint_every=0.2, budget_s=0.2)
        assert first["status"] == "limit" and 0 < first["remaining_fraction"] < 1
        assert first["nodes"] < TA017_NODES
    with cluster(3) as c, Client(c) as client:  # another cluster shape
        final = drive(RunStore.open(path), client, checkpoint_every=0.5)
    assert final["status"] == "bound_proved" and final["nodes"] == TA017_NODES
    series = RunStore.open(path).latest().series
    assert len(series["t"]) >= 1 and series["remaining_fraction"][-1] == 0.0


def test_stop_event_writes_a_resumable_checkpoint(tmp_path):
    path = tmp_path / "run.zarr"
    stop = threading.Event()

    def searching(progress):  # stop once the explorers have reported nodes
        if progress.nodes > 0:
            stop.set()

    with cluster(2) as c, Client(c) as client:
        store = create_flowshop_run(path, taillard_instance(17), ub=1484, bound="lb1", branch="minmin")
        result = drive(store, client, stop=stop, checkpoint_every=60, on_progress=searching)
    assert result["status"] == "limit"
    cp = RunStore.open(path).latest()
    assert cp.nodes == result["nodes"] > 0 and cp.remaining.fraction_of_space() == result["remaining_fraction"]


def test_workers_that_join_during_a_run_get_explorers(tmp_path):
    with cluster(1) as c, Client(c) as client:
        store = create_flowshop_run(tmp_path / "run.zarr", taillard_instance(17), ub=1484, bound="lb1", branch="minmin")
        scaled = threading.Event()

        def searching(progress):  # a worker joins once the search has begun
            if progress.nodes > 0 and not scaled.is_set():
                scaled.set()
                threading.Thread(target=c.scale, args=(2,)).start()

        result = drive(store, client, node_limit=15_000_000, checkpoint_every=60, on_progress=searching)
    assert result["status"] == "limit"
    assert max(RunStore.open(tmp_path / "run.zarr").latest().series["active_explorers"]) == 2


def test_improvements_found_by_explorers_reach_the_result(tmp_path):
    with cluster(2) as c, Client(c) as client:
        store = create_flowshop_run(tmp_path / "run.zarr", taillard_instance(5), ub=None, bound="lb1", branch="minmin")
        result = drive(store, client)
    assert result["status"] == "optimal" and result["makespan"] == 1235 and result["leaves"] > 0


def test_killing_a_worker_loses_no_interval(tmp_path, patience):
    """SIGKILL one worker process mid-run: its work returns to the pool, the proof completes."""
    with cluster(2, processes=True) as c, Client(c) as client:
        store = create_flowshop_run(tmp_path / "run.zarr", taillard_instance(17), ub=1484, bound="lb1", branch="minmin")
        victims = list(client.run(os.getpid).values())[:1]

        def searching(progress):  # the kill once the explorers have reported nodes
            if progress.nodes > 0 and victims:
                os.kill(victims.pop(), signal.SIGKILL)

        result = drive(store, client, checkpoint_every=1, on_progress=searching)
        # the nanny restarts the killed worker: let it come up before the cluster closes, or
        # closing stops a worker mid-start, which a loaded machine cannot do within the nanny's 5 s
        client.wait_for_workers(2, timeout=patience(60))
    assert result["status"] == "bound_proved" and result["remaining_fraction"] == 0.0
    assert result["nodes"] >= TA017_NODES  # the lost worker's last seconds are explored again


def test_killing_the_solve_process_then_resume(tmp_path, patience):
    """SIGKILL `pbbflow solve` mid-run: `pbbflow resume` finishes the proof from the last checkpoint."""
    path = tmp_path / "run.zarr"
    command = [sys.executable, "-m", "pbbflow.cli.main"]
    solve = subprocess.Popen(
        command
        + [
            "solve",
            "ta017",
            "--ub",
            "1484",
            "--run",
            str(path),
            "--checkpoint-every",
            "1",
            "--quiet",
            "--workers",
            "2",
            "--threads",
            "1",
        ],
        cwd=tmp_path,
        start_new_session=True,
    )
    wait_for_committed_nodes(path, patience(60))
    os.killpg(solve.pid, signal.SIGKILL)  # the solve process and its local workers
    solve.wait()
    before = RunStore.open(path).latest()
    assert 0 < before.remaining.fraction_of_space() < 1
    resume = subprocess.run(
        command + ["resume", str(path), "--json", "--quiet"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=patience(300),
    )
    assert resume.returncode == 0, resume.stderr
    result = json.loads(resume.stdout)
    assert result["status"] == "bound_proved" and result["lower_bound"] == 1484
    assert result["nodes"] >= TA017_NODES and result["remaining_fraction"] == 0.0


def test_sigterm_checkpoints_and_exits_3_then_a_tampered_store_is_refused(tmp_path, patience):
    path = tmp_path / "run.zarr"
    command = [sys.executable, "-m", "pbbflow.cli.main"]
    solve = subprocess.Popen(
        command
        + ["solve", "ta017", "--ub", "1484", "--run", str(path), "--json", "--quiet", "--checkpoint-every", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    wait_for_committed_nodes(path, patience(60))  # searching
    solve.send_signal(signal.SIGTERM)
    out, err = solve.communicate(timeout=patience(120))
    assert solve.returncode == 3, (out, err)
    result = json.loads(out)
    assert result["status"] == "limit" and 0 < result["remaining_fraction"] < 1
    assert f"pbbflow resume {path}" in err
    info = subprocess.run(command + ["info", str(path), "--json"], capture_output=True, text=True, timeout=patience(60))
    assert info.returncode == 0 and json.loads(info.stdout)["nodes"] == result["nodes"]

    root = zarr.open_group(str(path), mode="r+")
    starts = root[f"{root.attrs['current']}/starts"]
    starts[0, 0] = (int(starts[0, 0]) + 1) % 20
    info = subprocess.run(command + ["info", str(path)], capture_output=True, text=True, timeout=patience(60))
    assert info.returncode == 2 and "checksum" in info.stderr and "Traceback" not in info.stderr
    resume = subprocess.run(command + ["resume", str(path)], capture_output=True, text=True, timeout=patience(60))
    assert resume.returncode == 2 and "checksum" in resume.stderr


def test_a_heuristic_worker_improves_the_incumbent_during_the_search(tmp_path):
    with cluster(2) as c, Client(c) as client:
        store = create_flowshop_run(tmp_path / "run.zarr", taillard_instance(11), ub=None, bound="lb1", branch="minmin")
        neh_makespan = store.latest().incumbent
        result = drive(store, client, checkpoint_every=0.5, heuristics=1)  # one explorer, one iterated greedy
    assert result["status"] == "optimal" and result["makespan"] == 1582 < neh_makespan
    incumbents = list(RunStore.open(tmp_path / "run.zarr").latest().series["incumbent"])
    assert len(incumbents) > 0 and incumbents[-1] == 1582 and all(a >= b for a, b in zip(incumbents, incumbents[1:]))


def test_heuristic_tasks_never_take_the_last_explorer(tmp_path):
    with cluster(2) as c, Client(c) as client:
        store = create_flowshop_run(
            tmp_path / "run.zarr", taillard_instance(1), ub=None, bound="lb1", branch="minmin", initial="ig"
        )
        result = drive(store, client, checkpoint_every=0.5, heuristics=5)
    assert result["status"] == "optimal" and result["makespan"] == 1278
    assert RunStore.open(tmp_path / "run.zarr").options["initial"] == "ig"


def test_a_failing_heuristic_task_stops_the_run_with_a_checkpoint(tmp_path, monkeypatch):
    """A heuristic task that raises: drive checkpoints the ledger and raises RunFailed with the
    task's traceback; a resume explores the rest to the fixed tree's exact count."""
    from pbbflow.flowshop import family
    from pbbflow.workflow.run import RunFailed

    def failing_greedy(*args, **kwargs):
        time.sleep(0.3)  # the explorer gets going first
        raise ValueError("injected heuristic failure")

    monkeypatch.setattr(family, "iterated_greedy", failing_greedy)
    path = tmp_path / "run.zarr"
    with cluster(2) as c, Client(c) as client:
        store = create_flowshop_run(path, taillard_instance(30), ub=2178, bound="lb1", branch="minmin")  # 3 s
        with pytest.raises(RunFailed, match="pbbflow-heuristic-.*ValueError: injected heuristic failure") as failed:
            drive(store, client, checkpoint_every=60, heuristics=1, budget_s=0.01)
    assert failed.value.checkpointed and "Traceback" in failed.value.details
    cp = RunStore.open(path).latest()
    assert cp.seq > 0 and cp.remaining
    monkeypatch.undo()
    with cluster(2) as c, Client(c) as client:
        result = drive(RunStore.open(path), client)
    assert result["status"] == "bound_proved" and result["nodes"] == TA030_NODES


def test_an_explorer_that_does_not_answer_the_stop_keeps_its_work_in_the_checkpoint(tmp_path, monkeypatch, patience):
    """drive waits STOP_SECONDS for the explorers' last checkpoints, then writes the ledger's
    state, where a silent explorer's work stands as of its last checkpoint."""
    from pbbflow.flowshop.family import CpuEngine as _CpuEngine
    from pbbflow.workflow import run as run_module

    release, real_run = threading.Event(), _CpuEngine.run

    def stuck_run(self, ub, seconds, report, waiting, max_nodes=None):
        result = real_run(self, ub, 0.05, report, waiting, max_nodes)
        release.wait(patience(60))  # far longer than the stop may take
        return result

    monkeypatch.setattr(run_module, "STOP_SECONDS", 1.0)
    monkeypatch.setattr(_CpuEngine, "run", stuck_run)
    path = tmp_path / "run.zarr"
    with cluster(1) as c, Client(c) as client:
        store = create_flowshop_run(path, taillard_instance(30), ub=2178, bound="lb1", branch="minmin")
        started = time.monotonic()
        first = drive(store, client, time_limit=0.5, checkpoint_every=60)
        assert time.monotonic() - started < patience(15)
        release.set()
    monkeypatch.undo()
    assert first["status"] == "limit" and first["nodes"] == 0 and first["remaining_fraction"] == 1.0
    with cluster(2) as c, Client(c) as client:
        result = drive(RunStore.open(path), client)
    assert result["status"] == "bound_proved" and result["nodes"] == TA030_NODES


def test_a_scheduler_that_stops_answering_fails_the_run_instead_of_hanging(tmp_path, monkeypatch, patience):
    """Every call of the driver to the coordinator has a timeout: a handler that never answers
    ends ``drive`` with RunFailed (the store keeps its last checkpoint) instead of a hang."""
    import asyncio

    from pbbflow.workflow import run as run_module
    from pbbflow.workflow.coordinator import Coordinator
    from pbbflow.workflow.run import RunFailed

    async def never(**kwargs):
        await asyncio.sleep(3600)

    monkeypatch.setattr(run_module, "CALL_SECONDS", 1.0)
    monkeypatch.setattr(run_module, "STOP_SECONDS", 1.0)
    path = tmp_path / "run.zarr"
    with cluster(1) as c, Client(c) as client:
        store = create_flowshop_run(path, taillard_instance(30), ub=2178, bound="lb1", branch="minmin")
        client.register_plugin(Coordinator())  # drive registers it again: idempotent, keeps this one
        c.scheduler.handlers["pbbflow_state"] = never
        started = time.monotonic()
        with pytest.raises(RunFailed, match="the driver"):
            drive(store, client, checkpoint_every=60)
        assert time.monotonic() - started < patience(30)
    assert RunStore.open(path).latest().remaining  # the first checkpoint stands
