"""The coordinator's ledger (``workflow/ledger.py``) on its own: intersection, hand-outs, splitting,
termination, worker loss, late and duplicated reports."""

import numpy as np
import pytest
from workflow_helpers import CONTINUE, EMPTY, FULL, REPLACE, STOP, TOTAL, WAIT, N, unit

from pbbflow.core.family import work_space
from pbbflow.flowshop.factoradic import factorial
from pbbflow.flowshop.intervals import WorkUnit
from pbbflow.flowshop.packed import PackedUnit
from pbbflow.workflow.ledger import Ledger


def test_first_checkpoints_share_the_initial_pieces():
    ledger = Ledger(FULL, ub=100, pieces=3)
    works = [ledger.checkpoint(f"e{i}", "w", EMPTY) for i in range(3)]
    assert all(r.action == REPLACE for r in works)
    parts = [r.work for r in works]
    assert PackedUnit.union_of_disjoint(N, parts) == FULL  # raises if two parts overlap
    assert ledger.remaining() == FULL


def test_report_is_intersected_with_the_coordinators_copy():
    ledger = Ledger(unit((0, 100)), ub=100)
    assert ledger.checkpoint("e", "w", EMPTY).work == unit((0, 100))
    # progress inside the copy: continue
    assert ledger.checkpoint("e", "w", unit((40, 100)), nodes=7).action == CONTINUE
    # intervals it never had are ignored: the reply says what to explore instead
    reply = ledger.checkpoint("e", "w", unit((50, 100), (200, 300)))
    assert reply.action == REPLACE and reply.work == unit((50, 100))
    assert ledger.nodes == 7


def test_a_waiting_explorer_gets_half_of_a_busy_one_at_its_next_checkpoint():
    ledger = Ledger(unit((0, 400)), ub=100)
    ledger.checkpoint("busy", "w1", EMPTY)
    assert ledger.checkpoint("idle", "w2", EMPTY).action == WAIT
    reply = ledger.checkpoint("busy", "w1", unit((100, 400)))
    assert reply.action == REPLACE and reply.work == unit((100, 250)) and reply.hurry is False
    stolen = ledger.checkpoint("idle", "w2", EMPTY)
    assert stolen.action == REPLACE and stolen.work == unit((250, 400))
    assert ledger.remaining() == unit((100, 400))  # nothing lost, nothing twice


def test_busy_explorer_is_hurried_while_waiters_outnumber_the_pool():
    ledger = Ledger(unit((0, 400)), ub=100)
    ledger.checkpoint("busy", "w1", EMPTY)
    ledger.checkpoint("idle1", "w2", EMPTY)
    ledger.checkpoint("idle2", "w3", EMPTY)
    reply = ledger.checkpoint("busy", "w1", unit((0, 400)))  # one half for one waiter; one still waits
    assert reply.action == REPLACE and reply.hurry is True
    ledger.checkpoint("idle1", "w2", EMPTY)
    reply = ledger.checkpoint("busy", "w1", unit((0, 200)))  # serves idle2: nobody left waiting
    assert reply.hurry is False
    assert ledger.checkpoint("idle2", "w3", EMPTY).action == REPLACE


def test_termination_when_everything_is_explored():
    ledger = Ledger(unit((0, 10)), ub=100)
    ledger.checkpoint("a", "w", EMPTY)
    assert ledger.checkpoint("b", "w", EMPTY).action == WAIT
    assert not ledger.finished
    assert ledger.checkpoint("a", "w", EMPTY, nodes=3, leaves=1).action == STOP
    assert ledger.finished and ledger.checkpoint("b", "w", EMPTY).action == STOP
    assert (ledger.nodes, ledger.leaves) == (3, 1)


def test_worker_loss_returns_its_last_checkpoint_to_the_pool():
    ledger = Ledger(FULL, ub=100, pieces=2)
    ledger.checkpoint("a", "w1", EMPTY)
    ledger.checkpoint("b", "w2", EMPTY)
    ledger.checkpoint("a", "w1", unit((100, 360)))  # a explored [0, 100)
    ledger.remove_worker("w1")
    assert ledger.remaining() == unit((100, TOTAL))
    # the re-run of a's task starts empty and gets a's work back
    assert ledger.checkpoint("a", "w3", EMPTY).work == unit((100, 360))
    # a late report from the lost task's old incarnation cannot resurrect anything else
    assert ledger.remaining() == unit((100, TOTAL))


def test_incumbent_only_improves():
    ledger = Ledger(FULL, ub=100)
    ledger.improve(90, (0, 1, 2, 3, 4, 5))
    ledger.improve(95, (5, 4, 3, 2, 1, 0))
    assert ledger.ub == 90 and ledger.solution == (0, 1, 2, 3, 4, 5)
    assert ledger.checkpoint("e", "w", EMPTY).ub == 90


def test_stop_keeps_every_copy():
    ledger = Ledger(FULL, ub=100, pieces=2)
    ledger.checkpoint("a", "w", EMPTY)
    ledger.stop()
    assert ledger.checkpoint("a", "w", unit((50, 360))).action == STOP
    assert ledger.remaining() == unit((50, TOTAL))


def test_the_node_limit_gives_each_explorer_what_is_left_and_stops_the_run_once_reached():
    ledger = Ledger(FULL, ub=100, pieces=2, nodes=10, node_limit=50)
    assert ledger.nodes_left() == 40
    assert ledger.checkpoint("a", "w", EMPTY).action == REPLACE
    assert ledger.checkpoint("a", "w", unit((20, 360)), nodes=30).action == CONTINUE
    assert ledger.nodes_left() == 10 and not ledger.stopping
    assert ledger.checkpoint("b", "w", EMPTY).action == REPLACE  # a first report: nothing counted
    assert ledger.checkpoint("b", "w", unit((400, TOTAL)), nodes=15).action == STOP
    assert ledger.stopping and ledger.nodes == 55 and ledger.nodes_left() == 1
    assert ledger.checkpoint("a", "w", unit((30, 360)), nodes=3).action == STOP  # its nodes still count
    assert ledger.nodes == 58 and ledger.remaining() == unit((30, 360), (400, TOTAL))
    assert Ledger(FULL, ub=100).nodes_left() is None


def test_capacity_takes_several_pool_intervals_and_the_fraction_is_exact():
    ledger = Ledger(FULL, ub=100, pieces=4)
    assert ledger.remaining_fraction() == 1.0
    work = ledger.checkpoint("e", "w", EMPTY, capacity=3).work
    assert work.size * 4 == 3 * TOTAL  # three of the four pieces (adjacent, so merged)
    explored = work.to_work_unit().difference(WorkUnit(N, [(0, 120)]))
    ledger.checkpoint("e", "w", PackedUnit.from_work_unit(explored))  # explored [0, 120)
    assert ledger.remaining_fraction() == (TOTAL - 120) / TOTAL


def test_a_many_interval_explorer_gives_half_its_work_to_a_waiter():
    ledger = Ledger(unit((0, 600)), ub=100)
    ledger.checkpoint("gpu", "w1", EMPTY, capacity=64)
    assert ledger.checkpoint("idle", "w2", EMPTY).action == WAIT
    report = unit(*[(a, a + 10) for a in range(0, 600, 20)])  # 30 equal intervals left
    reply = ledger.checkpoint("gpu", "w1", report, capacity=64)
    assert reply.action == REPLACE and len(reply.work) == 15
    stolen = ledger.checkpoint("idle", "w2", EMPTY, capacity=64)
    assert stolen.action == REPLACE and stolen.work.size == 150
    assert PackedUnit.union_of_disjoint(N, [reply.work, stolen.work]) == report


def test_all_stopped_once_every_present_explorer_was_told():
    """After ``stop``, the driver may write its final checkpoint once every explorer on a worker
    still present has checkpointed (and heard STOP); a lost worker's explorers count as answered."""
    ledger = Ledger(unit((0, factorial(6))), pieces=2, ub=100)
    for explorer in ("e1", "e2"):
        assert ledger.checkpoint(explorer, f"w-{explorer}", unit()).action == REPLACE
    assert not ledger.all_stopped  # not stopping yet
    ledger.stop()
    assert not ledger.all_stopped
    assert ledger.checkpoint("e1", "w-e1", ledger.active["e1"]).action == STOP
    assert not ledger.all_stopped  # e2 may still hold work beyond its last checkpoint
    ledger.remove_worker("w-e2")
    assert ledger.all_stopped


def test_pieces_are_cut_and_taken_from_the_pool_by_size_not_by_order():
    ledger = Ledger(unit((0, 10), (20, 400)), ub=100, pieces=3)  # the large interval is cut, twice
    assert [len(p) for p in ledger.pool] == [1, 1, 1] and ledger.remaining() == unit((0, 10), (20, 400))
    assert [int(p.size) for p in ledger.pool] == [10, 190, 190]


def test_waiting_explorers_never_cut_a_spatial_box_the_explorers_have_not_bounded():
    """Boxes are cut by explorers, which bound the halves: the ledger hands out a single box whole
    however many explorers wait and ask again (it once cut it at each request, unbounded, until it
    was too small to split in floating point with its first bound, and the run ended as limit)."""
    from pbbflow.spatial.boxes import BoxSet

    space = work_space("spatial", {"lower": [-1.0, -1.0], "upper": [1.0, 1.0]})
    box = space.decode(BoxSet(np.array([[-1.0, -1.0]]), np.array([[1.0, 1.0]]), np.array([-5.0])).to_bytes())

    def same(a, b) -> bool:
        return all(np.array_equal(getattr(a.boxes, k), getattr(b.boxes, k)) for k in ("lo", "hi", "lb"))

    ledger = Ledger(box, ub=0.0, pieces=3)
    first = [ledger.checkpoint(f"e{i}", f"w{i}", space.empty()) for i in range(3)]
    assert [r.action for r in first] == [REPLACE, WAIT, WAIT] and same(first[0].work, box)
    for _ in range(200):  # the holder reports its box unexplored; the others wait and ask again
        assert ledger.checkpoint("e0", "w0", box).action == CONTINUE
        assert [ledger.checkpoint(e, w, space.empty()).action for e, w in (("e1", "w1"), ("e2", "w2"))] == [WAIT] * 2
    assert not ledger.pool and same(ledger.remaining(), box)
    two = space.decode(
        BoxSet(
            np.array([[-1.0, -1.0], [0.0, -1.0]]), np.array([[0.0, 1.0], [1.0, 1.0]]), np.array([-5.0, -4.0])
        ).to_bytes()
    )
    reply = ledger.checkpoint("e0", "w0", two)  # two bounded boxes: one goes to a waiting explorer
    assert reply.action == REPLACE and len(reply.work) == 1 and reply.hurry
    given = ledger.checkpoint("e1", "w1", space.empty())
    assert given.action == REPLACE and len(given.work) == 1
    assert sorted(np.concatenate([reply.work.boxes.lb, given.work.boxes.lb])) == [-5.0, -4.0]


# ---------------------------------------------------------------------- late and duplicated reports

BOXES = work_space("spatial", {"lower": [0.0, 0.0], "upper": [4.0, 4.0]})


def boxes(*rows):
    """Boxes ``(x0, x1, y0, y1, lb)`` of [0, 4]^2 as the coordinator's work."""
    from pbbflow.spatial.boxes import BoxSet

    lo = np.array([[r[0], r[2]] for r in rows], dtype=float).reshape(-1, 2)
    hi = np.array([[r[1], r[3]] for r in rows], dtype=float).reshape(-1, 2)
    return BOXES.decode(BoxSet(lo, hi, np.array([r[4] for r in rows], dtype=float)).to_bytes())


def rows(work) -> list:
    b = work.boxes
    return sorted((*b.lo[i], *b.hi[i], b.lb[i]) for i in range(len(b)))


QUARTERS = boxes((0, 2, 0, 2, -4), (2, 4, 0, 2, -3), (0, 2, 2, 4, -2), (2, 4, 2, 4, -1))


def test_a_spatial_report_counts_only_the_boxes_inside_the_copy():
    copy = boxes((0, 2, 0, 4, -5), (2, 4, 0, 4, -4))
    assert copy.accept(QUARTERS) is QUARTERS  # refined: every box inside one of the copy's
    shrunk = boxes((0, 1, 0, 1, -5), (2.5, 4, 3, 4, -1))  # contracted, some pruned
    assert copy.accept(shrunk) is shrunk
    across = boxes((1, 3, 0, 1, -5), (0, 2, 0, 4, -5), (2, 4, 0, 4.5, -4), (3, 4, 1, 2, -4))
    assert rows(copy.accept(across)) == rows(boxes((0, 2, 0, 4, -5), (3, 4, 1, 2, -4)))
    assert len(copy.accept(BOXES.empty())) == 0 and len(BOXES.empty().accept(QUARTERS)) == 0


def test_the_check_of_many_boxes_is_the_brute_force_one():
    """Thousands of boxes at many scales (bisected around a point, as a search closes in on its
    minimum), contracted, moved, flat: ``BoxSet.inside`` (a tree) agrees with comparing every pair."""
    from pbbflow.spatial.boxes import BoxSet, bisect_many

    rng = np.random.default_rng(7)
    lo, hi, scale = np.zeros((1, 3)), np.ones((1, 3)), np.ones(3)
    for _ in range(40):
        near = np.all((lo <= 0.3) & (0.3 <= hi), axis=1) | (rng.random(len(lo)) < 0.15)
        halves_lo, halves_hi, _ = bisect_many(lo[near], hi[near], scale)
        lo, hi = np.concatenate([lo[~near], halves_lo]), np.concatenate([hi[~near], halves_hi])
    copy = BoxSet(lo, hi, np.zeros(len(lo)))
    width = hi - lo
    shift = rng.choice([0.0, 0.0, 0.2, -0.2], size=lo.shape) * width
    flat = rng.random(len(lo)) < 0.1
    rep_lo = lo + 0.25 * width * rng.random(lo.shape) + shift
    rep_hi = np.where(flat[:, None], rep_lo, hi - 0.25 * width * rng.random(lo.shape) + shift)
    report = BoxSet(rep_lo, np.maximum(rep_lo, rep_hi), np.zeros(len(lo)))
    brute = [
        bool(np.any(np.all(lo <= report.lo[i], axis=1) & np.all(report.hi[i] <= hi, axis=1)))
        for i in range(len(report))
    ]
    assert len(copy) > 100 and 0.2 < np.mean(brute) < 0.9
    assert report.inside(copy).tolist() == brute
    assert copy.inside(copy).all() and not BoxSet.empty(3).inside(copy).size


def test_a_spatial_report_delivered_twice_doubles_no_box():
    """E holds the square; it checkpoints four quarters while another explorer waits: half go to the
    pool.  The same message again (no generation: unchecked) sets E's copy back to all four quarters
    unless the report is checked against the copy: the pool's two would then be held twice."""
    ledger = Ledger(boxes((0, 4, 0, 4, -9)), ub=0.0)
    ledger.checkpoint("e", "w1", BOXES.empty())
    assert ledger.checkpoint("idle", "w2", BOXES.empty()).action == WAIT
    kept = ledger.checkpoint("e", "w1", QUARTERS, nodes=5)
    assert kept.action == REPLACE and len(kept.work) == 2 and len(ledger.pool) == 1
    ledger.checkpoint("e", "w1", QUARTERS, nodes=5)  # the same message again
    assert ledger.pieces() == 4 and ledger.remaining_fraction() == 1.0
    assert rows(ledger.remaining()) == rows(QUARTERS)


def test_a_duplicated_checkpoint_counts_once_and_the_explorer_goes_on_with_its_copy():
    ledger = Ledger(boxes((0, 4, 0, 4, -9)), ub=0.0)
    first = ledger.checkpoint("e", "w1", BOXES.empty(), generation=0)
    assert first.action == REPLACE and ledger.checkpoint("idle", "w2", BOXES.empty(), generation=0).action == WAIT
    kept = ledger.checkpoint("e", "w1", QUARTERS, nodes=5, generation=first.generation)
    assert kept.action == REPLACE and len(kept.work) == 2 and kept.generation != first.generation
    again = ledger.checkpoint("e", "w1", QUARTERS, nodes=5, generation=first.generation)  # a retry
    assert again.action == REPLACE and rows(again.work) == rows(kept.work) and again.generation == kept.generation
    assert ledger.nodes == 5 and ledger.pieces() == 4 and rows(ledger.remaining()) == rows(QUARTERS)
    given = ledger.checkpoint("idle", "w2", BOXES.empty(), generation=0)  # a task that lost its first reply
    assert given.action == REPLACE and rows(ledger.remaining()) == rows(QUARTERS)
    assert ledger.checkpoint("e", "w1", kept.work, nodes=1, generation=again.generation).action == CONTINUE
    assert ledger.nodes == 6


def test_a_late_report_resurrects_nothing_and_counts_nothing():
    """An explorer's earlier report arriving after a later one: today's copy is a refinement of it
    (a box bisected, a half pruned), so taking it back would explore the pruned half again, and
    checking it against the copy alone would lose the bisected box's other half."""
    ledger = Ledger(boxes((0, 4, 0, 4, -9)), ub=0.0)
    g0 = ledger.checkpoint("e", "w", BOXES.empty(), generation=0).generation
    halves = boxes((0, 2, 0, 4, -5), (2, 4, 0, 4, -4))
    early = ledger.checkpoint("e", "w", halves, nodes=1, generation=g0)
    assert early.action == CONTINUE
    later = boxes((0, 2, 0, 4, -5), (2, 4, 0, 2, -3))  # the right half bisected, its upper quarter pruned
    latest = ledger.checkpoint("e", "w", later, nodes=2, generation=early.generation)
    late = ledger.checkpoint("e", "w", halves, nodes=1, generation=g0)
    assert late.action == REPLACE and rows(late.work) == rows(later) and late.generation == latest.generation
    assert ledger.nodes == 3 and ledger.remaining_fraction() == 0.75 and rows(ledger.remaining()) == rows(later)


def test_a_task_run_again_takes_over_its_explorers_work_and_the_old_ones_reports_count_for_nothing():
    ledger = Ledger(FULL, ub=100, pieces=2)
    g = ledger.checkpoint("a", "w1", EMPTY, generation=0).generation  # [0, 360)
    ledger.checkpoint("b", "w2", EMPTY, generation=0)
    held = ledger.checkpoint("a", "w1", unit((100, 360)), nodes=5, generation=g)
    # the task again (before its worker's loss was seen): it starts empty and takes the copy over
    again = ledger.checkpoint("a", "w3", EMPTY, generation=0)
    assert again.action == REPLACE and again.work == unit((100, 360)) and ledger.worker_of["a"] == "w3"
    late = ledger.checkpoint("a", "w1", unit((200, 360)), nodes=7, generation=held.generation)  # the old task
    assert late.action == REPLACE and late.work == unit((100, 360)) and ledger.worker_of["a"] == "w3"
    # its worker lost: the copy returns to the pool; a late report of that task counts for nothing
    ledger.remove_worker("w3")
    late = ledger.checkpoint("a", "w3", unit((300, 360)), nodes=7, generation=again.generation)
    assert late.action == WAIT and "a" not in ledger.worker_of
    assert ledger.nodes == 5 and ledger.remaining() == unit((100, TOTAL))
    rerun = ledger.checkpoint("a", "w4", EMPTY, generation=0)
    assert rerun.action == REPLACE and rerun.work == unit((100, 360)) and ledger.nodes == 5
    ledger.stop()
    assert ledger.checkpoint("a", "w4", unit((300, 360)), generation=again.generation).action == STOP
    assert ledger.remaining() == unit((100, TOTAL))


@pytest.mark.parametrize(
    "whole, progress, same",
    [
        (unit((0, 100)), unit((40, 100)), lambda a, b: a == b),
        (boxes((0, 4, 0, 4, -9)), boxes((0, 2, 0, 4, -5), (2, 4, 0, 2, -3)), lambda a, b: rows(a) == rows(b)),
    ],
    ids=["flowshop", "spatial"],
)
def test_a_duplicated_or_late_report_first_or_later_is_dropped(whole, progress, same):
    """A task's first report (generation 0) names its attempt: the same one again, duplicated or late,
    counts for nothing, as a later report of an older generation does, so that the explorer's next
    report still counts, nothing is counted twice, and a lost task's late first report takes no work."""
    ledger = Ledger(whole, ub=0.0)
    empty = whole.space.empty()
    first = ledger.checkpoint("e", "w1", empty, generation=0, attempt="t1")
    assert first.action == REPLACE and same(first.work, whole)
    again = ledger.checkpoint("e", "w1", empty, generation=0, attempt="t1")  # the first report delivered twice
    assert again.action == REPLACE and same(again.work, whole) and again.generation == first.generation
    report = {"nodes": 5, "leaves": 1, "generation": first.generation, "attempt": "t1"}
    counted = ledger.checkpoint("e", "w1", progress, **report)
    assert counted.action == CONTINUE and ledger.nodes == 5  # the explorer's next report still counts
    assert ledger.checkpoint("e", "w1", progress, **report).generation == counted.generation  # twice: dropped
    late = ledger.checkpoint("e", "w1", empty, generation=0, attempt="t1")  # the first report, late
    assert late.action == REPLACE and same(late.work, progress) and late.generation == counted.generation
    assert (ledger.nodes, ledger.leaves, ledger.checkpoints) == (5, 1, 2) and same(ledger.remaining(), progress)
    rerun = ledger.checkpoint("e", "w2", empty, generation=0, attempt="t2")  # the task run again: takes over
    assert rerun.action == REPLACE and same(rerun.work, progress) and rerun.generation > counted.generation
    ledger.remove_worker("w2")  # its copy returns to the pool; its first report, late, takes none of it
    assert ledger.checkpoint("e", "w2", empty, generation=0, attempt="t2").action == WAIT
    assert not ledger.active and same(ledger.remaining(), progress) and ledger.nodes == 5
    assert ledger.checkpoint("e", "w3", empty, generation=0, attempt="t3").action == REPLACE  # its next attempt
