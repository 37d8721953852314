"""The coordinator (``workflow/coordinator.py``), a Dask scheduler plugin: its handlers called directly
and on a gen_cluster, and every route's answer for a run that is over."""

import asyncio
import math

import pytest
from distributed.utils_test import gen_cluster
from workflow_helpers import CONTINUE, FULL, REPLACE, SPACE, STOP, WAIT, N, unit

from pbbflow.core.family import work_space
from pbbflow.flowshop.packed import PackedUnit
from pbbflow.workflow.coordinator import Coordinator
from pbbflow.workflow.ledger import Ledger
from pbbflow.workflow.protocol import Checkpoint, CheckpointReply, Route, RunClosed, RunHandle, closed_reply

ROUTE_CALLS = {  # every route but open, with its arguments
    Route.CHECKPOINT: {"explorer": "e", "worker": "w", "remaining": b"", "generation": 0},
    Route.IMPROVE: {"best": 90, "solution": [0, 1, 2, 3, 4, 5]},
    Route.WAITING: {"explorer": "e"},
    Route.STATUS: {},
    Route.STATE: {"intervals": True},
    Route.STOP: {},
    Route.CLOSE: {},
    Route.ESTIMATE: {"nodes": 10, "estimate": [100.0, 50.0, 200.0]},
}


@gen_cluster(client=True, nthreads=[("127.0.0.1", 1)] * 2)
async def test_plugin_handlers_keep_runs_apart_and_requeue_a_lost_worker(c, s, a, b):
    await c.register_plugin(Coordinator())
    full = FULL
    s.handlers["pbbflow_open"](run="r1", **SPACE, work=full.to_bytes(), ub=100, pieces=2)  # plain, synchronous
    await c.scheduler.pbbflow_open(run="r2", **SPACE, work=unit((0, 10)).to_bytes(), ub=50)
    first = await c.scheduler.pbbflow_checkpoint(run="r1", explorer="x", worker=a.address, remaining=b"")
    second = await c.scheduler.pbbflow_checkpoint(run="r1", explorer="y", worker=b.address, remaining=b"")
    assert first["action"] == second["action"] == REPLACE
    other = await c.scheduler.pbbflow_checkpoint(run="r2", explorer="x", worker=a.address, remaining=b"")
    assert PackedUnit.from_bytes(N, other["work"]) == unit((0, 10)) and other["ub"] == 50  # run r2's own ledger
    x_work = PackedUnit.from_bytes(N, first["work"])
    with pytest.raises(ValueError, match="already open"):
        await c.scheduler.pbbflow_open(run="r1", **SPACE, work=full.to_bytes(), ub=100)
    await a.close()  # worker loss: x's copy (r1) and r2's whole unit go back to their pools
    for _ in range(100):
        state = await c.scheduler.pbbflow_state(run="r1", intervals=True)
        if state["active_explorers"] == 1:
            break
        await asyncio.sleep(0.05)
    assert PackedUnit.from_bytes(N, state["remaining"]) == full
    again = await c.scheduler.pbbflow_checkpoint(run="r1", explorer="x2", worker=b.address, remaining=b"")
    assert PackedUnit.from_bytes(N, again["work"]) == x_work
    closed = await c.scheduler.pbbflow_checkpoint(run="gone", explorer="x", worker=b.address, remaining=b"")
    assert closed["action"] == STOP


def test_plugin_tells_a_busy_explorer_whether_others_wait_and_takes_improvements():
    coordinator = Coordinator()
    coordinator.open_run("r", **SPACE, work=unit((0, 100)).to_bytes(), ub=100)
    coordinator.checkpoint("r", "busy", "w1", b"")
    assert coordinator.waiting("r", "busy") == {"waiting": 0, "stopping": False}
    assert coordinator.checkpoint("r", "idle", "w2", b"")["action"] == WAIT
    assert coordinator.waiting("r", "busy")["waiting"] == 1 and coordinator.waiting("r", "idle")["waiting"] == 0
    assert coordinator.improve("r", best=90, solution=[5, 4, 3, 2, 1, 0]) == {"ub": 90}
    assert coordinator.improve("r", best=95, solution=[0, 1, 2, 3, 4, 5]) == {"ub": 90}
    coordinator.stop_run("r")  # an explorer cuts its run short once the run stops
    assert coordinator.waiting("r", "busy") == {"waiting": 1, "stopping": True}
    assert coordinator.waiting("gone", "x") == {"waiting": 0, "stopping": True}
    assert coordinator.improve("gone", 1, [0]) == {"ub": 0}


def test_a_run_names_its_work_space_by_kind_and_an_unknown_kind_is_refused():
    space = work_space("flowshop", {"n": N})
    assert space.decode(FULL.to_bytes()) == FULL and space.params() == {"n": N}
    assert space.remaining_fraction([unit((0, 180)), unit((360, 540))]) == 0.5
    with pytest.raises(ValueError, match="unknown run kind 'knapsack'"):
        Coordinator().open_run("r", kind="knapsack", space={}, work=b"", ub=1)
    with pytest.raises(ValueError, match="not a whole number of intervals"):
        Coordinator().open_run("r", **SPACE, work=b"\x01\x02\x03", ub=1)


def test_the_settled_bound_is_the_lowest_reported_and_survives_a_reopening():
    coordinator = Coordinator()
    coordinator.open_run("r", **SPACE, work=unit((0, 100)).to_bytes(), ub=100, settled=7.5)
    coordinator.checkpoint("r", "e", "w", b"")
    assert coordinator.state("r")["settled"] == 7.5
    coordinator.checkpoint("r", "e", "w", unit((50, 100)).to_bytes(), settled=3.25)
    coordinator.checkpoint("r", "e", "w", unit((60, 100)).to_bytes(), settled=9.0)
    assert coordinator.state("r")["settled"] == 3.25
    assert Ledger(FULL, ub=100).settled == math.inf  # flow shop reports none


def test_the_plugin_carries_the_generation_and_drops_a_stale_report():
    coordinator = Coordinator()
    coordinator.open_run("r", **SPACE, work=unit((0, 100)).to_bytes(), ub=100)
    first = coordinator.checkpoint("r", "e", "w", b"", generation=0)
    report = {"remaining": unit((40, 100)).to_bytes(), "nodes": 7, "generation": first["generation"]}
    assert coordinator.checkpoint("r", "e", "w", **report)["action"] == CONTINUE
    stale = coordinator.checkpoint("r", "e", "w", **report)
    assert stale["action"] == REPLACE and PackedUnit.from_bytes(N, stale["work"]) == unit((40, 100))
    assert coordinator.state("r")["nodes"] == 7


def test_every_route_answers_a_closed_or_unknown_run_as_over():
    assert set(ROUTE_CALLS) == set(Route) - {Route.OPEN}
    coordinator = Coordinator()
    handlers = {h.route: h for h in coordinator.route_handlers()}
    assert set(handlers) == set(ROUTE_CALLS)
    coordinator.open_run("r", **SPACE, work=unit((0, 100)).to_bytes(), ub=100)
    coordinator.close_run("r")
    for run in ("r", "never-opened"):
        for route, kwargs in ROUTE_CALLS.items():
            assert handlers[route](run, **kwargs) == closed_reply(route, run), route
    assert closed_reply(Route.CHECKPOINT, "r")["action"] == STOP and closed_reply(Route.WAITING, "r")["stopping"]
    assert closed_reply(Route.STATE, "r") == {"closed": True}
    with pytest.raises(ValueError, match="answers no closed run"):
        closed_reply(Route.OPEN, "r")


@gen_cluster(client=True, nthreads=[("127.0.0.1", 1)])
async def test_a_run_handle_calls_every_route_and_raises_a_closed_runs_state(c, s, a):
    """Through the scheduler (the wire: routes and actions travel as strings), from a client's thread."""
    await c.register_plugin(Coordinator())
    assert set(Route) <= set(s.handlers)

    def calls() -> None:
        handle = RunHandle("r", c.scheduler, c.loop, timeout=30)
        assert handle.call(Route.OPEN, **SPACE, work=unit((0, 100)).to_bytes(), ub=100) == {"run": "r"}
        reply = handle.call(Route.CHECKPOINT, **ROUTE_CALLS[Route.CHECKPOINT])
        assert reply["action"] == REPLACE and reply["generation"] == 1
        assert handle.call(Route.STATE)["nodes"] == 0
        for route, kwargs in ROUTE_CALLS.items():  # the run open, then closed (by the CLOSE route itself)
            if route is not Route.STATE:
                handle.call(route, **kwargs)
        for route, kwargs in ROUTE_CALLS.items():
            if route is Route.STATE:
                with pytest.raises(RunClosed, match="run r is not open"):
                    handle.call(route, **kwargs)
            else:
                assert handle.call(route, **kwargs) == closed_reply(route, "r"), route

    await asyncio.get_running_loop().run_in_executor(None, calls)


def test_checkpoint_messages_travel_as_plain_dicts():
    coordinator = Coordinator()
    coordinator.open_run("r", **SPACE, work=unit((0, 100)).to_bytes(), ub=100)
    reply = CheckpointReply.from_wire(coordinator.checkpoint("r", **Checkpoint("e", "w", b"", 0).to_wire()))
    assert reply.action is REPLACE and reply.generation == 1 and PackedUnit.from_bytes(N, reply.work) == unit((0, 100))
    report = Checkpoint("e", "w", unit((50, 100)).to_bytes(), reply.generation, nodes=3, best=90, solution=[0, 1])
    assert CheckpointReply.from_wire(coordinator.checkpoint("r", **report.to_wire())) == CheckpointReply(
        CONTINUE, 90, solution=[0, 1], generation=2
    )
    assert CheckpointReply.from_wire(closed_reply(Route.CHECKPOINT, "r")) == CheckpointReply(STOP, 0)


def test_the_plugin_drops_a_first_report_of_an_attempt_it_heard():
    coordinator = Coordinator()
    coordinator.open_run("r", **SPACE, work=unit((0, 100)).to_bytes(), ub=100)
    first = Checkpoint("e", "w", b"", 0, attempt="t1").to_wire()
    reply = coordinator.checkpoint("r", **first)
    assert coordinator.checkpoint("r", **first) == reply  # delivered twice: the same answer, counted once
    report = Checkpoint("e", "w", unit((40, 100)).to_bytes(), reply["generation"], nodes=7, attempt="t1")
    assert coordinator.checkpoint("r", **report.to_wire())["action"] == CONTINUE
    assert coordinator.state("r")["nodes"] == 7 and coordinator.state("r")["checkpoints"] == 2
