"""`pbbflow plot`: PNGs of finished, interrupted and fresh runs of both families."""

import json
import math

import matplotlib.image as mpimg
import numpy as np
import pytest
from distributed import Client, LocalCluster

from pbbflow.cli.main import main
from pbbflow.flowshop.family import create_flowshop_run
from pbbflow.flowshop.taillard import taillard_instance
from pbbflow.spatial.boxes import BoxSet
from pbbflow.spatial.family import SpatialRun, first_work
from pbbflow.spatial.load import load_problem
from pbbflow.spatial.options import MinimizeOptions
from pbbflow.spatial.plots import boxes
from pbbflow.storage.runstore import RunStore
from pbbflow.viz.plots import plot_run
from pbbflow.workflow.run import create_run, drive


def assert_picture(path):
    image = mpimg.imread(path)
    assert path.stat().st_size > 10_000 and image.shape[0] > 300 and image.shape[1] > 300
    assert image[..., :3].std() > 0.05  # not blank


@pytest.fixture(scope="module")
def client():
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster,
        Client(cluster) as c,
    ):
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


def spatial_run(path, problem, **options) -> RunStore:
    """A new spatial run store of ``problem``, its root bounded as ``pbbflow minimize --run`` starts."""
    run = SpatialRun.new(problem, MinimizeOptions(subdomains=16, **options))
    first = first_work(run)
    return create_run(
        path, run, work=first.boxes, incumbent=first.value, solution=first.x, settled=first.settled, nodes=first.nodes
    )


def open_box_pixels(path) -> tuple[np.ndarray, np.ndarray]:
    """Masks of a ``boxes.png``: its pixels coloured by an open box (chromatic, not the incumbent's
    red) within its domain panels, and those panels (the rows and columns where the pruned or
    settled grey is dense)."""
    rgb = mpimg.imread(path)[..., :3]
    grey = np.all(np.abs(rgb - 0.82) < 0.01, axis=-1)
    panels = np.outer(grey.sum(axis=1) > 100, grey.sum(axis=0) > 100)
    chromatic = np.ptp(rgb, axis=-1) > 0.15
    red = (rgb[..., 0] - rgb[..., 1:].max(axis=-1) > 0.1) & (np.abs(rgb[..., 1] - rgb[..., 2]) < 0.1)
    return panels & chromatic & ~red, panels


def test_a_finished_spatial_run(tmp_path, client):
    store = spatial_run(tmp_path / "run.zarr", load_problem("peaks"))
    assert drive(store, client)["status"] == "optimal"
    written = plot_run(RunStore.open(tmp_path / "run.zarr"), tmp_path / "plots")
    assert [p.name for p in written] == ["boxes.png", "history.png"]
    for path in written:
        assert_picture(path)
    drawn, panel = open_box_pixels(tmp_path / "plots" / "boxes.png")
    assert panel.sum() > 100_000 and drawn.sum() == 0  # all pruned or settled, the incumbent marked


def test_an_interrupted_spatial_run_through_the_cli(tmp_path, client, capsys):
    # no tolerance: a run that does not end in seconds (1e-6: about 2.5 s on 2 workers)
    store = spatial_run(tmp_path / "run.zarr", load_problem("peaks-ann-error-max"), eps_abs=0, eps_rel=0)
    result = drive(store, client, time_limit=1.0)
    assert result["status"] == "limit" and result["open_boxes"] > 0
    series = RunStore.open(tmp_path / "run.zarr").latest().series
    assert np.all(series["lower_bound"] <= series["incumbent"]) and series["pieces"][-1] == result["open_boxes"]
    assert main(["plot", str(tmp_path / "run.zarr"), "--out", str(tmp_path / "plots")]) == 0
    assert capsys.readouterr().out.split() == [str(tmp_path / "plots" / n) for n in ("boxes.png", "history.png")]
    for name in ("boxes.png", "history.png"):
        assert_picture(tmp_path / "plots" / name)
    drawn, _ = open_box_pixels(tmp_path / "plots" / "boxes.png")
    assert drawn.sum() > 100  # the open boxes, coloured by their bound


def test_100000_boxes_are_drawn_where_they_are(tmp_path):
    """The square [-1.5, 1.5]^2 of peaks' domain [-3, 3]^2 as 400 x 250 boxes, bounds rising
    outwards: the coloured share of the panel is the square's, a quarter."""
    xs, ys = np.linspace(-1.5, 1.5, 401), np.linspace(-1.5, 1.5, 251)
    x0, y0 = (a.ravel() for a in np.meshgrid(xs[:-1], ys[:-1]))
    x1, y1 = (a.ravel() for a in np.meshgrid(xs[1:], ys[1:]))
    lb = np.hypot(x0 + x1, y0 + y1) - 6.0
    many = BoxSet(np.column_stack([x0, y0]), np.column_stack([x1, y1]), lb)
    assert len(many) == 100_000
    path = boxes(load_problem("peaks"), many, [0.0, 0.0], tmp_path / "boxes.png", "100,000 boxes")
    assert_picture(path)
    drawn, panel = open_box_pixels(path)
    assert math.isclose(drawn.sum() / panel.sum(), 0.25, abs_tol=0.02)


def test_a_3d_problem_has_no_boxes_picture(tmp_path):
    problem = tmp_path / "waves3.json"
    objective = "sin(3 * x[0] * x[1]) + cos(2 * x[1] * x[2]) + x[0] * x[2]"
    problem.write_text(
        json.dumps({"name": "waves3", "variables": 3, "domain": [[-1, 1.5]] * 3, "objective": objective})
    )
    assert len(spatial_run(tmp_path / "run.zarr", load_problem(problem)).latest().remaining) > 0  # open boxes
    assert main(["plot", str(tmp_path / "run.zarr"), "--out", str(tmp_path / "plots")]) == 0
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == ["history.png"]
    assert_picture(tmp_path / "plots" / "history.png")  # a fresh run: "no samples yet" panels
