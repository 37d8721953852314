"""The tasks on the workers (``workflow/tasks.py``), against a coordinator in this process: what an explorer
and a side heuristic send on the wire, and what they do with the answers."""

import threading
import types

import numpy as np
import pytest

from pbbflow.flowshop.explorer import explore
from pbbflow.flowshop.intervals import WorkUnit
from pbbflow.workflow import tasks
from pbbflow.workflow.coordinator import Coordinator
from pbbflow.workflow.protocol import Checkpoint, Improve, Message, Open, Status

P = np.random.default_rng(3).integers(1, 100, size=(7, 5)).astype(np.int32)  # 7 jobs, 5 machines
UB = 10**6  # no pruning by the bound: the tree is fixed


class Wire:
    """A run handle that calls a coordinator in this process, as the scheduler would (through dicts),
    and keeps every request."""

    def __init__(self, coordinator: Coordinator, run: str) -> None:
        self.handlers = {h.route: h for h in coordinator.route_handlers()}
        self.run, self.sent = run, []

    def ask(self, request: Message) -> Message:
        self.sent.append(request)
        return request.reply.from_wire(self.handlers[request.route](self.run, **request.to_wire()))


@pytest.fixture
def wire(monkeypatch):
    coordinator = Coordinator()
    work = WorkUnit.full(P.shape[0]).to_bytes()
    coordinator.open_run("r", **Open("flowshop", {"n": P.shape[0]}, work, UB).to_wire())
    handle = Wire(coordinator, "r")
    worker = types.SimpleNamespace(address="w", state=types.SimpleNamespace(total_resources={}, nthreads=1))
    monkeypatch.setattr(tasks, "get_worker", lambda: worker)
    monkeypatch.setattr(tasks, "_coordinator", lambda run: handle)
    return coordinator, handle


def test_an_explorer_echoes_each_generation_under_one_attempt_and_counts_the_fixed_tree(wire):
    coordinator, handle = wire
    options = {"p": P, "bound": "lb1", "branch": "minmin", "ivms": 1}
    totals = tasks.explorer_task("r", "e", "flowshop", options, 0.01)
    expected = explore(P, WorkUnit.full(P.shape[0]), UB).nodes
    assert totals["nodes"] == expected == coordinator.state("r")["nodes"] and coordinator.state("r")["finished"]
    reports = [m for m in handle.sent if isinstance(m, Checkpoint)]
    assert len(reports) >= 2 and reports[0].generation == 0 and reports[0].remaining == b""
    assert len({r.attempt for r in reports}) == 1 and reports[0].attempt
    assert [r.generation for r in reports[1:]] == list(range(1, len(reports)))  # each echoes the last reply's


def test_a_task_run_again_reports_under_a_new_attempt(wire):
    coordinator, handle = wire
    options = {"p": P, "bound": "lb1", "branch": "minmin", "ivms": 1}
    coordinator.stop_run("r")  # both tasks hear STOP at their first checkpoint
    for _ in range(2):
        assert tasks.explorer_task("r", "e", "flowshop", options, 0.01)["nodes"] == 0
    first, again = (m for m in handle.sent if isinstance(m, Checkpoint))
    assert first.generation == again.generation == 0 and first.attempt != again.attempt


def test_a_side_heuristic_sends_its_improvements_until_the_run_stops(wire):
    coordinator, handle = wire
    coordinator.checkpoint("r", "e", "w", b"")  # the whole space is held: the run goes on
    stop = threading.Timer(0.5, coordinator.stop_run, ["r"])
    stop.start()
    result = tasks.heuristic_task("r", "flowshop", {"p": P}, seed=1)
    stop.join()
    improvements = [m for m in handle.sent if isinstance(m, Improve)]
    assert improvements and coordinator.state("r")["ub"] == improvements[-1].best == result["makespan"]
    assert any(isinstance(m, Status) for m in handle.sent)


def test_an_internal_error_of_a_task_is_returned_to_the_driver(wire):
    result = tasks.explorer_task("r", "e", "knapsack", {}, 0.01)
    assert result["error"].startswith("ValueError: unknown run kind") and "Traceback" in result["traceback"]
