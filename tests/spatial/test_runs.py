"""Spatial runs through the workflow (``pbbflow minimize P --run r.zarr``): the run store, stops and
``resume`` on other cluster shapes, a killed driver, tampered stores, a flow-shop run beside a
spatial run on one cluster, and the one-line errors of cluster options without ``--run``."""

from __future__ import annotations

import json
import math
import shutil
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import zarr
from distributed import Client, LocalCluster
from runwait import wait_for_committed_nodes

from pbbflow.cli.main import main
from pbbflow.flowshop.family import create_flowshop_run
from pbbflow.flowshop.taillard import taillard_instance
from pbbflow.spatial.boxes import BoxSet
from pbbflow.spatial.family import SpatialRun, first_work
from pbbflow.spatial.load import load_problem
from pbbflow.spatial.options import MinimizeOptions
from pbbflow.storage.runstore import RunStore, RunStoreError
from pbbflow.workflow.run import create_run, drive, result_of

CLI = [sys.executable, "-m", "pbbflow.cli.main"]
LOCAL = ["--gpus", "0", "--workers", "2", "--quiet"]
# about 40,000 boxes: 13 s on one CPU worker, so that a run can be stopped in its middle
SLOW = ["peaks-ann-error-max", "--eps-abs", "1e-11", "--eps-rel", "0", "--subdomains", "4"]


def certified(result: dict, problem: str) -> None:
    """An ``optimal`` result whose bound is at or below the known optimum and its value above it."""
    optimum = load_problem(problem).optimum
    assert result["status"] == "optimal" and result["open_boxes"] == 0 and result["remaining_fraction"] == 0, result
    assert result["lower_bound"] <= optimum <= result["objective"] + 1e-12
    x = np.array(result["x"])
    spec = load_problem(problem)
    assert x.shape == (2,) and np.all(spec.lower <= x) and np.all(x <= spec.upper)


def new_store(path, problem: str = "peaks", **options) -> RunStore:
    instance = SpatialRun.new(load_problem(problem), MinimizeOptions(**options), subdomains=options.get("subdomains"))
    first = first_work(instance)
    return create_run(
        path,
        instance,
        work=first.boxes,
        incumbent=first.value,
        solution=first.x,
        settled=first.settled,
        nodes=first.nodes,
    )


def test_minimize_run_proves_the_problem_into_a_store_that_info_and_resume_read(capsys, tmp_path):
    path = tmp_path / "p.zarr"
    assert main(["minimize", "peaks", "--run", str(path), "--json", *LOCAL]) == 0
    result = json.loads(capsys.readouterr().out)
    certified(result, "peaks")
    assert result["run"] == str(path) and result["nodes"] > 0 and "startup" in result
    store = RunStore.open(path)
    assert store.kind == "spatial" and store.instance.name == "peaks" and store.options["subdomains"] is None
    assert main(["info", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert {k: info[k] for k in result if k != "startup"} == {k: v for k, v in result.items() if k != "startup"}
    history = info["history"]  # LB and UB over time, at most 100 samples
    assert history["lower_bound"][-1] == result["lower_bound"] and history["incumbent"][-1] == result["objective"]
    assert len(history["t"]) == len(history["lower_bound"]) == len(history["pieces"]) <= 100
    assert history["pieces"][-1] == 0 and all(lb is None or lb <= result["objective"] for lb in history["lower_bound"])
    assert main(["resume", str(path), "--json"]) == 0  # finished: answered without a cluster
    assert json.loads(capsys.readouterr().out)["status"] == "optimal"
    assert main(["info", str(path)]) == 0
    text = capsys.readouterr().out
    assert "problem      peaks (2 variables)" in text and "status       optimal" in text and "boxes bounded" in text
    assert "\nhistory      0:00:" in text and f"LB {result['lower_bound']:.10g}  UB " in text


def same_keys(a: dict, b: dict, path: str = "") -> None:
    """``a`` and ``b`` name the same keys, and so do their values that are both dicts."""
    assert set(a) == set(b), f"{path or 'top level'}: only in one: {sorted(set(a) ^ set(b))}"
    for key in a:
        if isinstance(a[key], dict) and isinstance(b[key], dict):
            same_keys(a[key], b[key], f"{path}{key}.")


@pytest.mark.parametrize("threshold", [[], ["--prove-above", "-7"]])
def test_minimize_json_has_the_same_keys_with_and_without_a_run(capsys, tmp_path, threshold):
    """A key that has no value in one mode is null there (the run's counters, this process's start-up);
    a threshold question's answer is one more extra in both."""
    minimize = ["minimize", "peaks", "--json", "--subdomains", "64", *threshold]
    assert main([*minimize, "--gpus", "0", "--quiet"]) == 0
    here = json.loads(capsys.readouterr().out)
    assert main([*minimize, "--run", str(tmp_path / "p.zarr"), *LOCAL]) == 0
    run = json.loads(capsys.readouterr().out)
    same_keys(here, run)
    assert here["threshold"] == run["threshold"] == ({"prove_above": -7.0, "holds": True} if threshold else None)
    assert here["subdomains"] == run["subdomains"] == 64 and here["backend"] == "cpu" and run["backend"] is None
    assert here["run"] is None and here["estimate"] is None and here["startup"] is None
    assert run["local_solves"] is None and isinstance(run["startup"], dict) and isinstance(run["estimate"], dict)


def test_a_stopped_run_resumes_on_another_cluster_shape(capsys, tmp_path):
    path = tmp_path / "s.zarr"
    code = main(
        [
            "minimize",
            *SLOW,
            "--run",
            str(path),
            "--json",
            "--node-limit",
            "5000",
            "--checkpoint-every",
            "1",
            "--gpus",
            "0",
            "--workers",
            "1",
            "--quiet",
        ]
    )
    stopped = json.loads(capsys.readouterr().out)
    assert code == 3 and stopped["status"] == "limit" and stopped["open_boxes"] > 0
    assert stopped["lower_bound"] <= load_problem("peaks-ann-error-max").optimum
    assert 0 < stopped["remaining_fraction"] < 1
    cp = RunStore.open(path).latest()
    assert len(cp.remaining) == stopped["open_boxes"] and cp.remaining.lo.dtype == np.float64
    assert main(["resume", str(path), "--json", *LOCAL]) == 0
    result = json.loads(capsys.readouterr().out)
    certified(result, "peaks-ann-error-max")
    assert result["nodes"] > stopped["nodes"] and result["elapsed_s"] > stopped["elapsed_s"]


def test_the_store_round_trips_boxes_bit_exactly_and_checks_incumbents(tmp_path):
    store = new_store(tmp_path / "r.zarr", subdomains=16)
    problem = store.instance.problem
    rng = np.random.default_rng(5)
    lo = problem.lower + rng.random((7, 2)) * (problem.upper - problem.lower) / 2
    hi = lo + rng.random((7, 2)) * (problem.upper - lo)
    boxes = BoxSet(lo, hi, np.array([-np.inf, -7.1, -6.6, 1e300, -6.0, np.nextafter(-6.5, 0), -6.55]))
    cp = store.latest()
    store.commit(
        remaining=boxes,
        incumbent=cp.incumbent,
        solution=cp.solution,
        settled=-6.54,
        nodes=9,
        leaves=0,
        elapsed_s=1.5,
        series={"t": [0.5], "lower_bound": [-7.1]},
    )
    again = RunStore.open(store.path).latest()
    for a, b in ((again.remaining.lo, lo), (again.remaining.hi, hi), (again.remaining.lb, boxes.lb)):
        assert a.tobytes() == np.asarray(b, dtype=np.float64).tobytes()
    assert (again.settled, again.incumbent, again.solution) == (-6.54, cp.incumbent, cp.solution)
    assert result_of(RunStore.open(store.path))["lower_bound"] is None  # a box not bounded yet: no finite bound
    outside = [problem.upper[0] + 1.0, 0.0]
    for value, point, message in (
        (cp.incumbent, outside, "not a point of the domain"),
        (cp.incumbent - 1.0, cp.solution, "objective is in"),
        (cp.incumbent, None, "it has no point"),
        (math.nan, cp.solution, "finite"),
    ):
        with pytest.raises(ValueError, match=message):
            store.commit(remaining=boxes, incumbent=value, solution=point, nodes=9, leaves=0, elapsed_s=1.5, series={})
    with pytest.raises(ValueError, match="reaches outside the problem's domain"):
        store.commit(
            remaining=BoxSet(lo - 10.0, hi, boxes.lb),
            incumbent=None,
            solution=None,
            nodes=9,
            leaves=0,
            elapsed_s=1.5,
            series={},
        )


def _tamper(path, change) -> None:
    root = zarr.open_group(path, mode="r+")
    change(root)


@pytest.mark.parametrize(
    ("where", "change", "message"),
    [
        ("problem", lambda root: root["instance/source"].__setitem__(slice(10, 11), ord("X")), "sha256"),
        ("boxes", lambda root: root[root.attrs["current"] + "/lb"].__setitem__(0, -1e9), "sha256"),
        ("point", lambda root: root[root.attrs["current"] + "/x"].__setitem__(0, 0.25), "sha256"),
        (
            "options",
            lambda root: root.update_attributes({"options": {**root.attrs["options"], "eps_abs": 0.5}}),
            "sha256",
        ),
    ],
)
def test_a_tampered_spatial_store_is_refused_in_one_line(capsys, tmp_path, where, change, message):
    path = tmp_path / "t.zarr"
    new_store(path, subdomains=16).release()
    _tamper(path, change)
    with pytest.raises(RunStoreError, match=message):
        RunStore.open(path).latest()
    assert main(["resume", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pbbflow: error:" in err and "Traceback" not in err


def test_a_killed_driver_then_resume_proves_the_problem(tmp_path, patience):
    """SIGKILL to ``minimize --run`` in its search: the last checkpoint stands, ``resume`` (on a
    cluster of another shape) proves the problem from there."""
    path = tmp_path / "k.zarr"
    driver = subprocess.Popen(
        [
            *CLI,
            "minimize",
            *SLOW,
            "--run",
            str(path),
            "--checkpoint-every",
            "0.5",
            "--gpus",
            "0",
            "--workers",
            "1",
            "--quiet",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    wait_for_committed_nodes(path, patience(120))
    time.sleep(0.5)
    assert driver.poll() is None, driver.stderr.read().decode()
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    before = RunStore.open(path).latest()
    assert before.nodes > 0 and len(before.remaining) > 0
    proc = subprocess.run(
        [*CLI, "resume", str(path), "--json", *LOCAL], capture_output=True, text=True, timeout=patience(300)
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    certified(result, "peaks-ann-error-max")
    assert result["nodes"] > before.nodes


def test_a_flow_shop_run_beside_a_spatial_run_on_one_cluster(tmp_path):
    """Two drivers, one cluster: each run keeps its own ledger, explorers and store."""
    flowshop = create_flowshop_run(tmp_path / "f.zarr", taillard_instance(11), ub=None, bound="lb1", branch="minmin")
    spatial = new_store(tmp_path / "s.zarr", "peaks-ann-error-min", subdomains=16)
    results = {}
    with LocalCluster(n_workers=3, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:

        def run(name: str, store: RunStore) -> None:
            with Client(cluster) as client:
                results[name] = drive(store, client, budget_s=0.2, checkpoint_every=0.5)

        threads = [threading.Thread(target=run, args=args) for args in (("f", flowshop), ("s", spatial))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(300)
    assert results["f"]["status"] == "optimal" and results["f"]["makespan"] == 1582
    certified(results["s"], "peaks-ann-error-min")
    assert results == {"f": result_of(RunStore.open(flowshop.path)), "s": result_of(RunStore.open(spatial.path))}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--scheduler", "tcp://127.0.0.1:1"], "--scheduler drives a run on a cluster: add --run PATH"),
        (["--workers", "2"], "--workers drives a run on a cluster: add --run PATH"),
        (["--gpus", "2"], "minimize runs on one GPU in this process"),
    ],
)
def test_cluster_options_without_a_run_are_one_line_errors(capsys, arguments, message):
    assert main(["minimize", "peaks", *arguments]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_an_existing_store_is_refused_and_no_store_is_left_after_a_bad_problem(capsys, tmp_path):
    path = tmp_path / "e.zarr"
    new_store(path, subdomains=16).release()
    assert main(["minimize", "peaks", "--run", str(path), *LOCAL]) == 2
    assert "already exists; pass --overwrite" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text('{"variables": 1, "domain": [[0, 1]], "objective": "x[0] +"}')
    assert main(["minimize", str(bad), "--run", str(tmp_path / "b.zarr"), *LOCAL]) == 2
    assert not (tmp_path / "b.zarr").exists()
    shutil.rmtree(path)


def test_the_progress_bar_of_a_spatial_run_shows_its_bounds_and_open_boxes():
    import io

    from pbbflow.cli.progress import ProgressBar
    from pbbflow.core.progress import Progress

    stream = io.StringIO()
    bar = ProgressBar(stream, every=0)
    bar(Progress(61.0, 5000, 2500.0, -6.55, 0.01, -2.0, 2, -6.5601, 42))
    bar(Progress(62.0, 5000, 2500.0, math.inf, 1.0, 0.0, 2, -math.inf, 1))
    assert [line.rstrip() for line in stream.getvalue().split("\r")[1:]] == [
        "LB -6.5601  UB -6.55  42 open  2.50 k boxes/s  0:01:01  2 explorers",
        "LB -inf  UB -  1 open  2.50 k boxes/s  0:01:02  2 explorers",
    ]


@pytest.mark.slurm
def test_minimize_on_slurm_workers_proves_the_problem(tmp_path, capsys):
    """`pbbflow minimize --run --cluster slurm`: explorer tasks on SLURMCluster workers prove it."""
    from slurm import slurm_idle

    reason = slurm_idle()
    if reason:
        pytest.skip(reason)
    code = main(
        [
            "minimize",
            "peaks-ann-error-min",
            "--run",
            str(tmp_path / "run.zarr"),
            "--cluster",
            "slurm",
            "--jobs",
            "2",
            "--cores",
            "1",
            "--memory",
            "1GB",
            "--walltime",
            "00:10:00",
            "--log-directory",
            str(tmp_path),
            "--json",
            "--quiet",
        ]
    )
    result = json.loads(capsys.readouterr().out)
    assert code == 0
    certified(result, "peaks-ann-error-min")


def test_minimize_run_on_a_running_scheduler(capsys, tmp_path):
    """`--scheduler ADDRESS`: the run's tasks on the workers of a scheduler started elsewhere."""
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1", dashboard_address=None
    ) as cluster:
        code = main(
            [
                "minimize",
                "peaks-ann-error-min",
                "--run",
                str(tmp_path / "a.zarr"),
                "--scheduler",
                cluster.scheduler_address,
                "--json",
                "--quiet",
            ]
        )
    result = json.loads(capsys.readouterr().out)
    assert code == 0
    certified(result, "peaks-ann-error-min")


@pytest.mark.gpu
@pytest.mark.usefixtures("simulated_libdevice")
def test_a_gpu_worker_and_a_cpu_worker_prove_a_spatial_run_together(tmp_path):
    """A worker with the resource GPU explores on its device (GpuExploration; the simulator in CI),
    a local-solve task beside it, a CPU worker's exploration beside them: one ledger of boxes."""
    from distributed import Scheduler, SpecCluster, Worker

    workers = {
        f"w{i}": {"cls": Worker, "options": {"nthreads": 1, "resources": r}} for i, r in enumerate([{"GPU": 1}, {}])
    }
    store = new_store(tmp_path / "g.zarr", "peaks", subdomains=16)
    with (
        SpecCluster(workers=workers, scheduler={"cls": Scheduler, "options": {"dashboard_address": None}}) as cluster,
        Client(cluster) as client,
    ):
        client.wait_for_workers(2)
        result = drive(store, client, checkpoint_every=0.5, budget_s=0.5)
    certified(result, "peaks")
    assert result == result_of(RunStore.open(store.path))
