"""The workflow with GPU explorer tasks: workers with the Dask resource GPU run the GPU
explorer (under the CUDA simulator in CI, like tests/gpu/flowshop/test_explorer.py), beside CPU workers."""

import numpy as np
import pytest
from distributed import Client, Scheduler, SpecCluster, Worker

from pbbflow.cli.main import main
from pbbflow.flowshop.evaluation import brute_force_optimum
from pbbflow.flowshop.explorer import explore
from pbbflow.flowshop.family import create_flowshop_run
from pbbflow.flowshop.instance import FlowShop
from pbbflow.flowshop.intervals import WorkUnit
from pbbflow.workflow.run import drive

pytestmark = pytest.mark.gpu


def instance(seed: int = 10, n: int = 7, m: int = 5) -> FlowShop:
    p = np.random.default_rng(seed).integers(1, 30, size=(n, m)).astype(np.int32)
    return FlowShop(name=f"random-{seed}", p=p)


def run_on(tmp_path, workers_resources: list[dict], flowshop: FlowShop, ub: int) -> dict:
    """Solve on in-process workers with these resources (GPU=1: a GPU explorer of 4 IVMs)."""
    workers = {
        f"w{i}": {"cls": Worker, "options": {"nthreads": 1, "resources": r}} for i, r in enumerate(workers_resources)
    }
    scheduler = {"cls": Scheduler, "options": {"dashboard_address": None}}
    with SpecCluster(workers=workers, scheduler=scheduler) as cluster, Client(cluster) as client:
        client.wait_for_workers(len(workers))
        store = create_flowshop_run(tmp_path / "run.zarr", flowshop, ub=ub, bound="lb1", branch="minmin")
        return drive(store, client, checkpoint_every=0.5, settings={"ivms": 4})


def test_gpu_workers_prove_the_optimum_with_the_cpus_node_count(tmp_path):
    flowshop = instance()
    optimum = brute_force_optimum(flowshop.p)[0]
    result = run_on(tmp_path, [{"GPU": 1}], flowshop, ub=optimum)
    assert result["status"] in ("optimal", "bound_proved") and result["lower_bound"] == optimum
    assert result["nodes"] == explore(flowshop.p, WorkUnit.full(7), optimum).nodes


def test_gpu_and_cpu_workers_together_find_the_optimum(tmp_path):
    flowshop = instance(seed=11, n=6, m=4)
    optimum = brute_force_optimum(flowshop.p)[0]
    result = run_on(tmp_path, [{"GPU": 1}, {}], flowshop, ub=optimum + 40)
    assert result["status"] == "optimal" and result["makespan"] == optimum


def test_a_gpu_request_that_cannot_be_served_is_refused_before_any_store(tmp_path, capsys):
    run = tmp_path / "r.zarr"
    assert main(["solve", "ta001", "--gpus", "3", "--run", str(run), "--quiet"]) == 2
    assert "3 GPU(s) asked for" in capsys.readouterr().err and not run.exists()
    assert main(["solve", "ta001", "--gpus", "all", "--bound", "lb2", "--run", str(run), "--quiet"]) == 2
    assert "lb1 only" in capsys.readouterr().err and not run.exists()


def test_a_gpu_worker_that_cannot_serve_the_run_is_one_clear_error(tmp_path, capsys):
    flowshop = instance(seed=3, n=5, m=3)
    run = tmp_path / "lb2.zarr"
    create_flowshop_run(run, flowshop, ub=None, bound="lb2", branch="minmin")
    workers = {"w0": {"cls": Worker, "options": {"nthreads": 1, "resources": {"GPU": 1}}}}
    scheduler = {"cls": Scheduler, "options": {"dashboard_address": None}}
    with SpecCluster(workers=workers, scheduler=scheduler) as cluster:
        code = main(["resume", str(run), "--scheduler", cluster.scheduler_address, "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "lb1 only" in err and "Traceback" not in err
