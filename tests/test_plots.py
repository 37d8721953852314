"""`pbbflow plot`: PNGs of finished, interrupted and fresh runs."""

import matplotlib.image as mpimg
import numpy as np
import pytest
from distributed import Client, LocalCluster

from pbbflow.cli.main import main
from pbbflow.flowshop.taillard import taillard_instance
from pbbflow.storage.runstore import RunStore
from pbbflow.viz.plots import plot_run
from pbbflow.search.family import create_flowshop_run
from pbbflow.workflow.run import drive


def assert_picture(path):
    image = mpimg.imread(path)
    assert path.stat().st_size > 10_000 and image.shape[0] > 300 and image.shape[1] > 300
    assert image[..., :3].std() > 0.05  # not blank


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as c:  # fmt: skip
        yield c


def test_finished_run(tmp_path, client):
    store = create_flowshop_run(tmp_path / "run.zarr", taillard_instance(11), ub=None, bound="lb1", branch="minmin")
    drive(store, client)
    written = plot_run(RunStore.open(tmp_path / "run.zarr"), tmp_path / "plots")
    assert [p.name for p in written] == ["gantt.png", "history.png"]
    for path in written:
        assert_picture(path)


def test_interrupted_run_through_the_cli(tmp_path, client, capsys):
    store = create_flowshop_run(tmp_path / "run.zarr", taillard_instance(17), ub=None, bound="lb1", branch="minmin")
    result = drive(store, client, time_limit=2.5)
    assert result["status"] == "limit"
    series = RunStore.open(tmp_path / "run.zarr").latest().series
    activity = [k for k in series if k.startswith("activity:")]
    assert len(activity) == 2 and all(len(series[k]) == len(series["t"]) for k in activity)  # a column per worker
    assert np.nanmax([series[k] for k in activity]) == 1.0  # both single-thread explorers were busy
    assert main(["plot", str(tmp_path / "run.zarr"), "--out", str(tmp_path / "plots")]) == 0
    assert capsys.readouterr().out.split() == [str(tmp_path / "plots" / n) for n in ("gantt.png", "history.png")]
    for name in ("gantt.png", "history.png"):
        assert_picture(tmp_path / "plots" / name)


def test_a_fresh_run_and_a_missing_store(tmp_path, capsys):
    create_flowshop_run(tmp_path / "run.zarr", taillard_instance(1), ub=None, bound="lb1", branch="minmin")
    assert main(["plot", str(tmp_path / "run.zarr"), "--out", str(tmp_path / "plots")]) == 0
    assert_picture(tmp_path / "plots" / "history.png")  # "no samples yet" panels
    assert main(["plot", str(tmp_path / "nothing.zarr"), "--out", str(tmp_path / "x")]) == 2
    assert "Traceback" not in capsys.readouterr().err
