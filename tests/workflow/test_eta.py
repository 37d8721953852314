"""A run's ETA (``workflow.eta``): texts, JSON fields, series of old and new stores, the driver's
estimator, the progress bar and the dashboard page."""

import io
import math
import shutil
import socket
import time
import types
from pathlib import Path

import numpy as np

from pbbflow.cli.progress import ProgressBar
from pbbflow.cli.results import estimate_text
from pbbflow.core.progress import Eta, Progress
from pbbflow.core.text import duration
from pbbflow.flowshop.family import FlowShopRun, create_flowshop_run
from pbbflow.flowshop.intervals import WorkUnit
from pbbflow.flowshop.taillard import taillard_instance
from pbbflow.storage.runstore import RunStore
from pbbflow.workflow.cluster import threads_here
from pbbflow.workflow.eta import (
    BUSY_SHARE,
    COLUMNS,
    FINAL_SECONDS,
    MAX_THREADS,
    REFRESH_SECONDS,
    SPARE_SHARE,
    Estimator,
    estimate_threads,
    eta_curve,
    eta_of,
    left_after,
    recent_rate,
)
from pbbflow.workflow.run import _Session, result_of

FORMAT_2 = Path(__file__).parents[1] / "data" / "format2-ta021-stopped.zarr"
FIELDS = {
    "estimated_nodes_left",
    "estimated_nodes_low",
    "estimated_nodes_high",
    "nodes_per_s",
    "eta_s",
    "eta_low_s",
    "eta_high_s",
}


def test_durations_and_texts():
    assert [duration(s) for s in (0, 45.4, 190, 7500, 3 * 86400 + 4 * 3600, 40 * 365.25 * 86400)] == [
        "0s",
        "45s",
        "3m10s",
        "2h05m",
        "3d04h",
        "40y",
    ]
    eta = Eta(1.9e9, 6.2e8, 7.2e9, 1e7)
    assert eta.text() == "ETA 3m10s (1m02s-12m00s)"
    fields = eta.as_json()
    assert set(fields) == FIELDS and fields["eta_s"] == 190.0 and fields["eta_high_s"] == 720.0
    assert estimate_text(fields) == "~1.9e+09 nodes left (6.2e+08-7.2e+09), ETA 3m10s (1m02s-12m00s) at 10.0 M nodes/s"
    assert Eta().text() is None and all(v is None for v in Eta().as_json().values())
    assert Eta(5.0, 1.0, 9.0).as_json()["eta_s"] is None  # no rate yet


def test_recent_rates():
    t = np.arange(0.0, 200.0)
    nodes = np.where(t < 100, 10 * t, 1000 + 100 * (t - 100))
    assert recent_rate(t, nodes) == 100.0  # the last 60 s only
    assert recent_rate(t[:1], nodes[:1]) is None
    eta, low, high = eta_curve(t, nodes, np.full(200, 1000.0), np.full(200, 500.0), np.full(200, 2000.0))
    assert np.isnan(eta[0]) and eta[-1] == 10.0 and low[-1] == 5.0 and high[-1] == 20.0


def test_a_store_without_estimates_has_an_unknown_eta(tmp_path):
    """Stores written before the ETA lack its series columns: read, the estimate is null."""
    path = tmp_path / "old.zarr"
    shutil.copytree(FORMAT_2, path)
    store = RunStore.open(path)
    assert not set(COLUMNS) & set(store.latest().series)
    assert result_of(store)["estimate"] == dict.fromkeys(FIELDS)


def test_a_resumed_old_store_gets_estimate_columns_padded_with_nan(tmp_path):
    path = tmp_path / "old.zarr"
    shutil.copytree(FORMAT_2, path)
    series = {k: list(v) for k, v in RunStore.open(path).latest().series.items()}
    length = len(series["t"])
    estimator = types.SimpleNamespace(enabled=True, left=lambda nodes: (100.0, 50.0, 200.0))
    session = types.SimpleNamespace(series=series, estimator=estimator, elapsed=lambda: 99.0)
    state = {
        "nodes": 5,
        "leaves": 0,
        "remaining_fraction": 0.5,
        "ub": 2298,
        "lower_bound": None,
        "pieces": 1,
        "active_explorers": 1,
        "activity": {},
    }
    _Session.sample(session, state)
    assert all(len(column) == length + 1 for column in series.values())
    assert np.isnan(series["estimate_nodes"][:-1]).all() and series["estimate_nodes"][-1] == 100.0
    assert np.isnan(series["pieces"][:-1]).all() and series["pieces"][-1] == 1  # format 2 had no pieces column
    eta = eta_of(series)
    assert (eta.nodes_left, eta.nodes_low, eta.nodes_high) == (100.0, 50.0, 200.0)


def test_the_estimator_of_a_flow_shop_run(tmp_path):
    p = taillard_instance(21).p
    store = create_flowshop_run(tmp_path / "run.zarr", taillard_instance(21), ub=2297, bound="lb1", branch="minmin")
    estimator = Estimator(store.instance, seconds=0.1, every=10.0)
    assert estimator.enabled and estimator.due(0.0) and estimator.left(0) is None
    half = WorkUnit(20, [(0, WorkUnit.full(20).size // 2)])
    estimator.refresh(0.0, {"remaining": half.to_bytes(), "ub": 2297, "nodes": 1000})
    assert not estimator.due(5.0)
    estimator.pending.result()
    nodes, low, high = estimator.left(1000)
    assert 0 < low <= nodes <= high
    assert estimator.left(1000 + int(low) + 1)[1] == 0.0  # never below 0
    assert estimator.left(1000 + int(nodes) * 2) is None  # outgrown: unknown, not an ETA of 0
    assert estimator.fresh()[0] == 1000 and estimator.fresh() is None  # handed out once
    estimator.final({"remaining": WorkUnit.empty(20).to_bytes(), "ub": 2297, "nodes": 7})
    assert estimator.left(7) == (0.0, 0.0, 0.0)
    estimator.close()
    assert isinstance(store.instance, FlowShopRun) and p.shape == (20, 20)


def test_an_estimate_the_run_has_outgrown_says_nothing():
    assert left_after((100.0, 40.0, 300.0), 0) == (100.0, 40.0, 300.0)
    assert left_after((100.0, 40.0, 300.0), 60) == (40.0, 0.0, 240.0)
    assert left_after((100.0, 40.0, 300.0), 100) is None and left_after((100.0, 40.0, 300.0), 10**12) is None
    assert left_after((0.0, 0.0, 0.0), 0) == (0.0, 0.0, 0.0)  # nothing left (or none under the UB)
    assert left_after((0.0, 0.0, 0.0), 5) is None  # yet nodes came: the estimate was wrong


def test_estimates_use_the_cores_that_the_explorers_leave(monkeypatch):
    assert estimate_threads(busy=2, cores=2) == 1  # a laptop's CPU run: one thread, its share of a core
    assert estimate_threads(busy=2, cores=16) == 6  # one GPU worker of two threads on a 16-core host
    assert estimate_threads(busy=0, cores=128) == MAX_THREADS
    monkeypatch.setattr(socket, "gethostname", lambda: "node-a")
    monkeypatch.setattr(socket, "getaddrinfo", lambda host, port: [(None, None, None, "", ("10.1.2.3", 0))])
    workers = {
        "inproc://10.0.0.1/1/2": {"nthreads": 2},  # in this process
        "tcp://127.0.0.1:4000": {"nthreads": 3},  # a local cluster's process
        "tcp://10.1.2.3:4001": {"nthreads": 4},  # at this host's address
        "tcp://node-a:4002": {"nthreads": 1},  # by its name
        "tcp://10.1.2.4:4000": {"nthreads": 64},  # another node's
    }
    assert threads_here(workers) == 10
    assert Estimator(types.SimpleNamespace(), threads=1).seconds == BUSY_SHARE * REFRESH_SECONDS
    assert Estimator(types.SimpleNamespace(), threads=4).seconds == SPARE_SHARE * REFRESH_SECONDS


def test_the_final_estimate_of_a_stopped_run_is_short():
    """Its checkpoint waits for it: at most FINAL_SECONDS, whatever the share of a refresh."""
    asked = []

    class Recording:
        def decode_work(self, data):
            return [data] if data else []

        def estimate_left(self, work, ub, seconds, threads=1):
            asked.append((seconds, threads))
            return (100.0, 50.0, 200.0)

    estimator = Estimator(Recording(), threads=3, every=60.0)
    estimator.final({"remaining": b"work", "ub": 1, "nodes": 20})
    estimator.refresh(0.0, {"remaining": b"work", "ub": 1, "nodes": 20})
    estimator.pending.result()
    estimator.close()
    assert asked == [(FINAL_SECONDS, 3), (SPARE_SHARE * 60.0, 3)]


def test_a_family_without_estimates_has_no_estimator():
    estimator = Estimator(types.SimpleNamespace())
    assert not estimator.enabled and not estimator.due(1e9)
    estimator.final({"remaining": b"", "ub": 0, "nodes": 0})
    assert estimator.left(0) is None
    estimator.close()


def test_the_progress_bar_shows_the_eta(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    stream = io.StringIO()
    bar = ProgressBar(stream, every=0)
    bar(
        Progress(
            elapsed_s=10.0,
            nodes=10,
            nodes_per_s=1e7,
            ub=2297,
            remaining_fraction=0.5,
            remaining_log10=math.log10(0.5),
            active_explorers=2,
            eta=Eta(1.9e9, 6.2e8, 7.2e9, 1e7),
        )
    )
    assert "50.00% left  ETA 3m10s (1m02s-12m00s)  10.0 M nodes/s  UB 2297" in stream.getvalue()
    monkeypatch.setenv("COLUMNS", "50")
    narrow = io.StringIO()
    ProgressBar(narrow, every=0)(
        Progress(
            elapsed_s=10.0,
            nodes=10,
            nodes_per_s=1e7,
            ub=2297,
            remaining_fraction=0.5,
            remaining_log10=math.log10(0.5),
            active_explorers=2,
            eta=Eta(1.9e9, 6.2e8, 7.2e9, 1e7),
        )
    )
    assert "ETA" not in narrow.getvalue()  # the rate and the UB go last


def test_the_dashboard_shows_the_eta():
    from pbbflow.flowshop.dashboard import FlowShopView
    from pbbflow.flowshop.packed import PackedUnit
    from pbbflow.workflow.history import RunHistory
    from pbbflow.workflow.ledger import Ledger

    ledger = Ledger(PackedUnit.from_work_unit(WorkUnit.full(6)), ub=100)
    history = RunHistory("ta000", "flowshop")
    history.record(ledger, now=history.opened)
    history.estimate = (0, (3000.0, 1000.0, 9000.0))
    for step in range(1, 4):
        ledger.nodes = 100 * step
        history.record(ledger, now=history.opened + step)
    assert np.isnan(history.estimate_nodes[0]) and history.estimate_nodes[1:] == [2900.0, 2800.0, 2700.0]
    view = FlowShopView()
    header = view.draw(history)
    assert "ETA 27s (7s-1m27s)" in header
    assert view.etas.data["eta"][-1] == 27.0 and np.isnan(view.etas.data["eta"][0])
    ledger.nodes = 3000  # past the estimate: unknown until the next one
    history.record(ledger, now=history.opened + 4)
    assert np.isnan(history.estimate_nodes[-1]) and "ETA unknown (the run outgrew" in view.draw(history)


def test_the_final_estimate_of_a_finished_run_does_not_wait_and_is_not_overwritten(patience):
    """No work left: the final estimate is 0 at once, and one still under way is dropped when it ends."""

    class Slow:
        def decode_work(self, data):
            return [data] if data else []

        def estimate_left(self, work, ub, seconds, threads=1):
            time.sleep(patience(0.5))
            return (100.0, 50.0, 200.0)

    estimator = Estimator(Slow(), seconds=0.0, every=0.0)
    estimator.refresh(0.0, {"remaining": b"work", "ub": 1, "nodes": 10})
    started = time.monotonic()
    estimator.final({"remaining": b"", "ub": 1, "nodes": 20})
    assert time.monotonic() - started < patience(0.3) and estimator.left(20) == (0.0, 0.0, 0.0)
    estimator.close()  # waits for the slow estimate, which ends after the final one
    assert estimator.left(20) == (0.0, 0.0, 0.0)
