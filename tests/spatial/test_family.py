"""The spatial family through the family-neutral workflow: its work space in the coordinator's
ledger (hand-outs, splits, worker loss: no box lost), then a whole run of explorer tasks and a
local-solve task on a Dask cluster, proving what ``minimize`` proves."""

import math
import os
import signal
import time

import numpy as np
import pytest
from distributed import Client, LocalCluster, wait
from spatial_helpers import circle_problem

from pbbflow.core.family import work_space
from pbbflow.spatial.bnb import minimize
from pbbflow.spatial.boxes import BoxSet
from pbbflow.spatial.family import SpatialRun
from pbbflow.spatial.load import load_problem
from pbbflow.spatial.options import MinimizeOptions
from pbbflow.spatial.work import BoxSpace, BoxWork
from pbbflow.workflow.cluster import connected_workers
from pbbflow.workflow.coordinator import Coordinator
from pbbflow.workflow.ledger import Ledger
from pbbflow.workflow.protocol import Action
from pbbflow.workflow.tasks import explorer_task, heuristic_task
from pbbflow.workflow.worker_code import submit_warm_workers

CONTINUE, REPLACE, WAIT = Action.CONTINUE, Action.REPLACE, Action.WAIT

PEAKS = load_problem("peaks")
OPTIONS = MinimizeOptions(subdomains=16, parallel=False)


def _space() -> BoxSpace:
    return work_space("spatial", {"lower": PEAKS.lower.tolist(), "upper": PEAKS.upper.tolist()})


def _boxes(*rows) -> BoxWork:
    """Boxes ``(x0, x1, y0, y1, lb)`` of peaks' domain."""
    lo = np.array([[r[0], r[2]] for r in rows], dtype=float).reshape(-1, 2)
    hi = np.array([[r[1], r[3]] for r in rows], dtype=float).reshape(-1, 2)
    return BoxWork(BoxSet(lo, hi, np.array([r[4] for r in rows], dtype=float)), _space())


def test_the_ledger_hands_out_splits_and_recovers_boxes_without_losing_volume():
    space = _space()
    assert len(Ledger(space.decode(BoxSet.root(PEAKS).to_bytes()), ub=math.inf, pieces=4).pool) == 1  # boxes
    # are cut by explorers (which bound the halves), never by the ledger: start from the root's quadrants
    quadrants = _boxes((-3, 0, -3, 0, -6.0), (0, 3, -3, 0, -6.0), (-3, 0, 0, 3, -6.0), (0, 3, 0, 3, -6.0))
    ledger = Ledger(quadrants, ub=math.inf, pieces=4)
    assert len(ledger.pool) == 4 and ledger.remaining_fraction() == 1.0
    works = [ledger.checkpoint(f"e{i}", f"w{i}", space.empty()) for i in range(3)]
    assert all(r.action == REPLACE and len(r.work) == 1 for r in works)
    # e0 refines its box into four with bounds; an idle explorer waits, then gets half of them
    x0, x1 = works[0].work.boxes.lo[0, 0], works[0].work.boxes.hi[0, 0]
    y0, y1 = works[0].work.boxes.lo[0, 1], works[0].work.boxes.hi[0, 1]
    xm, ym = (x0 + x1) / 2, (y0 + y1) / 2
    refined = _boxes((x0, xm, y0, ym, -3.0), (xm, x1, y0, ym, -1.0), (x0, xm, ym, y1, -2.0), (xm, x1, ym, y1, 0.5))
    assert ledger.checkpoint("e3", "w3", space.empty()).action == REPLACE  # the fourth piece
    assert ledger.checkpoint("e4", "w4", space.empty()).action == WAIT
    reply = ledger.checkpoint("e0", "w0", refined, nodes=4, settled=1.5)
    assert reply.action == REPLACE and len(reply.work) == 2 and reply.work.boxes.lowest() == -3.0
    given = ledger.checkpoint("e4", "w4", space.empty())
    assert given.action == REPLACE and len(given.work) == 2 and given.work.boxes.lowest() == -2.0
    assert math.isclose(ledger.remaining_fraction(), 1.0) and ledger.settled == 1.5
    # a worker lost: its boxes, as last reported, go back to the pool; nothing is lost
    ledger.remove_worker("w0")
    assert math.isclose(ledger.remaining_fraction(), 1.0)
    assert space.lower_bound(ledger.pool) == -3.0 and ledger.checkpoint("e5", "w5", space.empty()).action == REPLACE
    assert ledger.checkpoint("e1", "w1", works[1].work).action == CONTINUE


def test_the_wire_format_and_the_measures_of_the_space():
    space = _space()
    work = _boxes((-3, 0, -3, 0, -1.0), (0, 3, 0, 3, -2.0))
    assert space.decode(work.to_bytes()).boxes.lb.tolist() == [-1.0, -2.0]
    assert len(space.decode(b"")) == 0 and space.remaining_log10([space.empty()]) is None
    assert space.remaining_fraction([work]) == 0.5 and math.isclose(space.remaining_log10([work]), math.log10(0.5))
    assert space.lower_bound([work, space.empty()]) == -2.0 and space.lower_bound([]) == math.inf
    assert [len(p) for p in work.pieces()] == [1, 1] and space.union(work.pieces()).weight() == 0.5


def _run_on_a_cluster(
    problem, options, explorers: int, heuristics: int, patience, *, kill_one_explorer: bool = False
) -> dict:
    """Open a spatial run on a Coordinator, run its tasks to the end, return the final state and
    the state seen when one explorer's worker process was killed (``kill_one_explorer``).  The
    workers load their code first, as a command's start-up has them do (on a first run numba
    compiles it, in every worker process)."""
    space = BoxSpace(problem.lower, problem.upper)
    run = SpatialRun.new(problem, options, subdomains=options.subdomains)
    with (
        LocalCluster(
            n_workers=explorers + heuristics, threads_per_worker=1, processes=kill_one_explorer, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        wait(list(submit_warm_workers(client, *run.worker_code()).values()), timeout=patience(300))
        client.register_plugin(Coordinator())
        client.sync(
            client.scheduler.pbbflow_open,
            run="r",
            kind=space.kind,
            space=space.params(),
            work=BoxSet.root(problem).to_bytes(),
            ub=math.inf,
            pieces=explorers,
            label=problem.name,
        )
        spec = run.engine_options()
        workers = list(connected_workers(client))
        futures = [
            client.submit(
                explorer_task,
                "r",
                f"e{i}",
                space.kind,
                spec,
                0.05,
                workers=[workers[i]],
                allow_other_workers=True,
                pure=False,
            )
            for i in range(explorers)
        ]
        futures += [
            client.submit(
                heuristic_task,
                "r",
                space.kind,
                spec,
                i,
                workers=[workers[explorers + i]],
                allow_other_workers=True,
                pure=False,
            )
            for i in range(heuristics)
        ]
        killed = None
        deadline = time.monotonic() + patience(120)
        while not (state := client.sync(client.scheduler.pbbflow_state, run="r", intervals=True))["finished"]:
            assert time.monotonic() < deadline, state
            if kill_one_explorer and killed is None and state["nodes"] > 0 and state["active_explorers"] == explorers:
                pid = client.run(os.getpid, workers=[workers[0]])[workers[0]]
                os.kill(pid, signal.SIGKILL)
                killed = state
            time.sleep(0.05)
        client.sync(client.scheduler.pbbflow_stop, run="r")
        results = client.gather(futures)
    assert all("error" not in r for r in results), results
    return {**state, "space": space, "killed": killed}


def _certified(state: dict, problem, options) -> tuple[float, float]:
    """(the run's certified lower bound, its incumbent value), checked against the known optimum."""
    space = state["space"]
    left = space.decode(state["remaining"])
    lower, ub = min(state["settled"], space.lower_bound([left])), state["ub"]
    assert len(left) == 0 and state["nodes"] > 0
    assert lower <= problem.optimum <= ub  # certified: the bound never above the optimum
    assert ub - lower <= max(options.eps_abs, options.eps_rel * abs(ub)) * (1 + 1e-9)
    x = np.asarray(state["solution"])
    assert x.shape == (problem.dimension,) and np.all(problem.lower <= x) and np.all(x <= problem.upper)
    return lower, ub


def test_a_spatial_run_on_dask_proves_what_minimize_proves(patience):
    problem = load_problem("peaks-ann")
    alone = minimize(problem, OPTIONS)
    state = _run_on_a_cluster(problem, OPTIONS, explorers=2, heuristics=1, patience=patience)
    _, ub = _certified(state, problem, OPTIONS)
    assert abs(ub - alone.objective) <= 2 * OPTIONS.eps_abs


def test_killing_an_explorers_worker_loses_no_box(patience):
    """SIGKILL the worker process of one explorer mid-run: its boxes (as of its last checkpoint)
    return to the pool, the other explorer takes them, and the run is still proved."""
    problem = load_problem("peaks-ann-error-max")  # about 2 s on one core
    state = _run_on_a_cluster(problem, OPTIONS, explorers=2, heuristics=1, patience=patience, kill_one_explorer=True)
    assert state["killed"] is not None and not state["killed"]["finished"]
    _certified(state, problem, OPTIONS)


def test_an_explorer_bounds_with_the_multipliers_of_the_runs_incumbent():
    """The coordinator's incumbent point goes to the explorers with each reply: an engine verifies
    a better one and, for a constrained problem, bounds with the Lagrangian of its multipliers
    from then on (without it a workflow run of hs071 explored 11 % more boxes than ``minimize``)."""
    from pbbflow.spatial.family import make_engine

    problem = circle_problem()
    run = SpatialRun.new(problem, OPTIONS, subdomains=OPTIONS.subdomains)
    engine = make_engine(run.engine_options(), gpu=False, threads=1)
    assert not engine.exploration._lagrangians
    point = [-1 / math.sqrt(2)] * 2
    value = float(np.sum(point))
    engine.offer(value, point)
    assert engine.exploration.incumbent.value == pytest.approx(-math.sqrt(2))
    assert engine.exploration._lagrangians
    engine.offer(value + 1.0, [1.0, 0.0])  # no better: ignored
    assert engine.exploration.incumbent.value == pytest.approx(-math.sqrt(2))
    engine.load(BoxSet.root(problem).to_bytes())
    nodes, _, best = engine.run(value, 5.0, None, lambda: False)
    assert nodes > 0 and (best is None or best[0] < value)  # the offered point is not reported back
