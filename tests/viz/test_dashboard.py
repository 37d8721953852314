"""The pbbflow page of the Dask dashboard: the coordinator's history, the page's route and data
sources while a run is live (local, Slurm and local CUDA clusters; flow shop and spatial), and a
headless Chromium screenshot of it.  The Slurm test needs a running Slurm; the CUDA one a real GPU."""

import math
import threading
import time
import urllib.request

import matplotlib.image as mpimg
import numpy as np
import pytest
from bokeh.document import Document
from browser import chromium, screenshot
from slurm import slurm_idle

from pbbflow.core.devices import gpu_count
from pbbflow.flowshop.family import create_flowshop_run
from pbbflow.flowshop.intervals import WorkUnit
from pbbflow.flowshop.packed import PackedUnit
from pbbflow.flowshop.taillard import taillard_instance
from pbbflow.spatial.boxes import BoxSet
from pbbflow.spatial.dashboard import SpatialView
from pbbflow.spatial.family import SpatialRun, first_work
from pbbflow.spatial.load import load_problem
from pbbflow.spatial.options import MinimizeOptions
from pbbflow.spatial.work import BoxSpace
from pbbflow.storage.runstore import RunStore
from pbbflow.viz.dashboard import RunPage, pbbflow_doc
from pbbflow.viz.page import page_url
from pbbflow.workflow.cluster import SlurmOptions, attach_dashboard, dashboard_link, open_cluster
from pbbflow.workflow.coordinator import PLUGIN_NAME
from pbbflow.workflow.history import RunHistory
from pbbflow.workflow.ledger import Ledger
from pbbflow.workflow.run import create_run, drive


def full_ledger(n: int = 6) -> Ledger:
    return Ledger(PackedUnit.from_work_unit(WorkUnit.full(n)), ub=100)


def test_history_keeps_the_whole_run_at_half_resolution_when_full():
    ledger, history = full_ledger(), RunHistory("x", "flowshop", max_samples=8)
    for step in range(9):
        ledger.nodes = step
        history.record(ledger, now=history.opened + step)
    assert history.generation == 1 and len(history) == 5  # 9 samples: every second one dropped
    assert history.t == [0.0, 2.0, 4.0, 6.0, 8.0]  # first and last kept
    assert history.nodes == [0, 2, 4, 6, 8] and history.incumbent == [100] * 5


def test_history_records_activity_per_worker():
    ledger, history = full_ledger(), RunHistory("x", "flowshop")
    assert ledger.checkpoint("e0", "tcp://w0", PackedUnit.empty(6)).action == "replace"  # takes the space
    ledger.checkpoint("e1", "tcp://w1", PackedUnit.empty(6), capacity=4)  # nothing left for it: waits
    history.record(ledger)
    assert history.activity[-1] == {"tcp://w0": 1.0, "tcp://w1": 0.0}
    assert history.workers() == ["tcp://w0", "tcp://w1"]


def test_the_activity_image_stays_small_on_long_runs():
    ledger, history = full_ledger(), RunHistory("x", "flowshop", max_samples=4096)
    ledger.checkpoint("e0", "tcp://w0", PackedUnit.empty(6))
    for step in range(3000):
        history.record(ledger, now=history.opened + step)

    (image,) = sources(showing(lambda: history))["pbbflow-activity"]["image"]
    assert image.shape == (1, 500) and np.all(image == 1.0)  # every 6th of 3,000 samples, all busy


def test_page_url():
    assert page_url("http://127.0.0.1:8787/status") == "http://127.0.0.1:8787/pbbflow"
    assert page_url("https://head/proxy/8787/status") == "https://head/proxy/8787/pbbflow"
    assert page_url(None) is None


FLOWSHOP_SOURCES = ("pbbflow-series", "pbbflow-rates", "pbbflow-activity")
SPATIAL_SOURCES = ("pbbflow-bounds", "pbbflow-boxes", "pbbflow-box-rates", "pbbflow-box-activity")


def page(scheduler) -> Document:
    """The page as a new browser session would get it."""
    doc = Document()
    pbbflow_doc(scheduler, {}, doc)
    return doc


def sources(scheduler, names=FLOWSHOP_SOURCES) -> dict:
    """The page's data sources."""
    doc = page(scheduler)
    return {name: doc.get_model_by_name(name).data for name in names}


def header(scheduler) -> str:
    """The HTML of the page's header."""
    return page(scheduler).get_model_by_name("pbbflow-header").text


def showing(history):
    """A scheduler whose coordinator's latest history is ``history()``."""

    class Scheduler:
        plugins = {PLUGIN_NAME: type("Coordinator", (), {"latest_history": lambda self: history()})()}

    return Scheduler()


def spatial_history() -> RunHistory:
    """Three samples of a spatial run of peaks, a second apart: its root box handed out (LB -inf, no
    incumbent); split into two halves of bounds -7 and -5, -6 settled (LB -7, 100 boxes bounded);
    the incumbent -6.5 found and the halves' bounds raised to -6.6 and -6.55 (LB -6.6, gap 0.1,
    200 more boxes)."""
    problem = load_problem("peaks")
    space = BoxSpace(problem.lower, problem.upper)
    ledger = Ledger(space.decode(BoxSet.root(problem).to_bytes()), ub=math.inf)
    history = RunHistory("peaks", kind="spatial")
    lo, hi = problem.lower, problem.upper
    mid = (lo[0] + hi[0]) / 2

    def halves(*bounds: float):
        boxes = BoxSet(np.array([lo, [mid, lo[1]]]), np.array([[mid, hi[1]], hi]), np.array(bounds))
        return space.decode(boxes.to_bytes())

    history.record(ledger, now=history.opened)
    assert ledger.checkpoint("e0", "tcp://w0", space.empty()).action == "replace"
    ledger.checkpoint("e0", "tcp://w0", halves(-7.0, -5.0), nodes=100, settled=-6.0)
    history.record(ledger, now=history.opened + 1)
    ledger.improve(-6.5, [0.2, -1.6])
    ledger.checkpoint("e0", "tcp://w0", halves(-6.6, -6.55), nodes=200)
    history.record(ledger, now=history.opened + 2)
    return history


def test_the_page_of_a_spatial_history():
    history = spatial_history()
    assert history.lower_bound == [-math.inf, -7.0, -6.6] and history.pieces == [1, 2, 2]
    scheduler = showing(lambda: history)
    data = sources(scheduler, SPATIAL_SOURCES)
    bounds = data["pbbflow-bounds"]
    assert list(bounds["t"]) == [0.0, 1.0, 2.0]
    assert np.isnan(bounds["lower"][0]) and list(bounds["lower"][1:]) == [-7.0, -6.6]  # -inf is not drawn
    assert np.isnan(bounds["upper"][:2]).all() and bounds["upper"][2] == -6.5  # nor is the UB before one is found
    assert list(data["pbbflow-boxes"]["boxes"]) == [1, 2, 2]
    assert list(data["pbbflow-box-rates"]["rate"]) == [100.0, 200.0]
    (image,) = data["pbbflow-box-activity"]["image"]
    assert image.shape == (1, 3) and np.isnan(image[0, 0]) and list(image[0, 1:]) == [1.0, 1.0]
    text = header(scheduler)
    assert "peaks (live)" in text and "LB -6.6, UB -6.5, gap 0.1" in text
    assert "2 open boxes" in text and "200 boxes/s" in text and "300 boxes bounded" in text


def test_a_session_shows_the_family_of_the_latest_run():
    """A notebook's flow-shop run, then a spatial one on the same cluster: an open page switches."""
    ledger, flowshop = full_ledger(), RunHistory("ta000", "flowshop")
    flowshop.record(ledger, now=flowshop.opened)
    ledger.nodes = 2_000_000
    flowshop.record(ledger, now=flowshop.opened + 1)
    shown = [flowshop]
    session = RunPage(showing(lambda: shown[-1]))
    session.update()
    assert "ta000 (live)" in session.header.text and "2.00 M nodes/s" in session.header.text  # today's flow-shop page
    assert not isinstance(session.view, SpatialView)
    shown.append(spatial_history())
    session.update()
    assert isinstance(session.view, SpatialView) and session.layout.children == [session.header, session.view.layout]
    assert "LB -6.6" in session.header.text


def taillard_run(tmp_path, number: int = 21, ub: int = 2297) -> RunStore:
    """A new run store of Taillard's instance ``number`` (UB = optimum: the tree is fixed)."""
    return create_flowshop_run(tmp_path / "run.zarr", taillard_instance(number), ub=ub, bound="lb1", branch="minmin")


def live_page(client, store: RunStore, check, patience, samples: int = 4) -> None:
    """Drive the run in ``store`` on ``client``'s cluster; once its history has ``samples`` samples
    and its node count grew, while it is live, ``check(url)``.  ``patience``: conftest's fixture."""
    stop, outcome = threading.Event(), {}
    limit = patience(120)  # outlasts the wait below
    thread = threading.Thread(target=lambda: outcome.update(drive(store, client, stop=stop, time_limit=limit)))
    thread.start()
    try:
        coordinator = None
        deadline = time.monotonic() + patience(90)
        while time.monotonic() < deadline:
            coordinator = client.cluster.scheduler.plugins.get(PLUGIN_NAME)
            history = None if coordinator is None else coordinator.latest_history()
            if history is not None and len(history) >= samples and history.nodes[-1] > history.nodes[0]:
                break
            time.sleep(0.25)
        else:
            pytest.fail("the run's history got no samples with nodes")
        assert not history.closed  # live
        check(dashboard_link(client))
    finally:
        stop.set()
        thread.join(timeout=patience(120))
    assert outcome["status"] in ("limit", "bound_proved", "optimal")


def assert_page_is_served(client, url: str, workers: int = 2) -> None:
    with urllib.request.urlopen(url, timeout=30) as response:
        assert response.status == 200
        assert "bokeh" in response.read().decode().lower()
    data = sources(client.cluster.scheduler)
    assert len(data["pbbflow-series"]["t"]) >= 4 and np.nanmin(data["pbbflow-series"]["remaining"]) < 1.0
    assert len(data["pbbflow-rates"]["rate"]) >= 1 and max(data["pbbflow-rates"]["rate"]) > 0
    (image,) = data["pbbflow-activity"]["image"]
    assert image.shape[0] == workers and np.nanmax(image) > 0  # a row per worker, someone busy


def test_page_on_a_local_cluster_with_a_chromium_screenshot(tmp_path, patience):
    def check(url: str) -> None:
        assert url.endswith("/pbbflow")
        assert_page_is_served(client, url)
        if chromium() is None:
            return
        deadline = time.monotonic() + patience(60)
        while True:  # a loaded machine draws the page later than the first screenshot: take another
            image = mpimg.imread(screenshot(url, tmp_path / "page.png", wait_s=patience(5)))[..., :3]
            colours = np.unique((image * 255).astype(np.uint8).reshape(-1, 3), axis=0)
            if (image.std() > 0.05 and len(colours) > 50) or time.monotonic() > deadline:
                break
        assert image.shape[0] > 500 and image.shape[1] > 1000
        assert image.std() > 0.05 and len(colours) > 50  # drawn plots, not a blank page

    with open_cluster("local", workers=2, threads_per_worker=1) as client:
        attach_dashboard(client)
        live_page(client, taillard_run(tmp_path), check, patience)
    if chromium() is None:
        pytest.skip("chromium not installed (.ci/run installs it): the screenshot was not taken")


def test_the_page_of_a_live_spatial_run_on_a_local_cluster(tmp_path, patience):
    """peaks-ann-error-max with a tolerance it cannot reach in seconds: live while the page is read."""
    run = SpatialRun.new(load_problem("peaks-ann-error-max"), MinimizeOptions(subdomains=16, eps_abs=0, eps_rel=0))
    first = first_work(run)
    store = create_run(
        tmp_path / "run.zarr",
        run,
        work=first.boxes,
        incumbent=first.value,
        solution=first.x,
        settled=first.settled,
        nodes=first.nodes,
    )

    def check(url: str) -> None:
        with urllib.request.urlopen(url, timeout=30) as response:
            assert response.status == 200 and "bokeh" in response.read().decode().lower()
        data = sources(client.cluster.scheduler, SPATIAL_SOURCES)
        bounds = data["pbbflow-bounds"]
        assert len(bounds["t"]) >= 2 and np.nanmax(bounds["lower"]) <= np.nanmin(bounds["upper"])
        assert np.nanmax(data["pbbflow-boxes"]["boxes"]) > 1 and max(data["pbbflow-box-rates"]["rate"]) > 0
        (image,) = data["pbbflow-box-activity"]["image"]
        assert image.shape[0] == 2 and np.nanmax(image) > 0
        text = header(client.cluster.scheduler)
        assert "peaks-ann-error-max (live)" in text and "open boxes" in text and "boxes/s" in text

    with open_cluster("local", workers=2, threads_per_worker=1) as client:
        attach_dashboard(client)
        live_page(client, store, check, patience, samples=2)


def test_a_cluster_without_a_run_shows_an_empty_page():
    with open_cluster("local", workers=1, threads_per_worker=1) as client:
        data = sources(client.cluster.scheduler)
        assert all(len(v) == 0 for d in data.values() for v in d.values())
        attach_dashboard(client)
        with urllib.request.urlopen(dashboard_link(client), timeout=30) as response:
            assert response.status == 200


@pytest.mark.slurm
def test_page_on_a_slurm_cluster(tmp_path, patience):
    reason = slurm_idle()
    if reason:
        pytest.skip(reason)
    options = SlurmOptions(jobs=2, cores=1, memory="1GB", walltime="00:10:00", log_directory=tmp_path, start_timeout=60)
    with open_cluster("slurm", slurm=options) as client:
        client.wait_for_workers(2, timeout=60)
        live_page(client, taillard_run(tmp_path), lambda url: assert_page_is_served(client, url), patience)


@pytest.mark.gpu
@pytest.mark.skipif(gpu_count() == 0, reason="needs a real GPU")
def test_page_on_a_local_cuda_cluster(tmp_path, patience):
    """ta023 (about 25 s on an H200): long enough to be watched live."""
    with open_cluster("local", gpus=1) as client:
        attach_dashboard(client)
        live_page(
            client,
            taillard_run(tmp_path, number=23, ub=2326),
            lambda url: assert_page_is_served(client, url, workers=1),
            patience,
        )


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def external_scheduler(*preload: str):
    """A `dask scheduler` process on loopback; yields (address, dashboard port)."""
    import contextlib
    import subprocess
    import sys

    @contextlib.contextmanager
    def running():
        port, dashboard = free_port(), free_port()
        args = [
            sys.executable,
            "-m",
            "distributed.cli.dask_scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--dashboard-address",
            f"127.0.0.1:{dashboard}",
            *(f"--preload={p}" for p in preload),
        ]
        process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{dashboard}/status", timeout=5):
                        break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
            yield f"tcp://127.0.0.1:{port}", dashboard
        finally:
            process.terminate()
            process.wait(timeout=30)

    return running()


def test_an_external_scheduler_serves_the_page_with_the_preload():
    with external_scheduler("pbbflow.viz.preload") as (address, dashboard):
        with urllib.request.urlopen(f"http://127.0.0.1:{dashboard}/pbbflow", timeout=10) as response:
            assert response.status == 200 and "bokeh" in response.read().decode().lower()
        with open_cluster("address", scheduler=address) as client:
            assert dashboard_link(client) == f"http://127.0.0.1:{dashboard}/pbbflow"


def test_without_the_preload_the_link_is_the_dask_dashboard():
    with external_scheduler() as (address, dashboard), open_cluster("address", scheduler=address) as client:
        attach_dashboard(client)  # a scheduler in another process: left alone
        assert dashboard_link(client) == f"http://127.0.0.1:{dashboard}/status"
