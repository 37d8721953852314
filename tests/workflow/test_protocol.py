"""The wire (``workflow/protocol.py``): every route's request and reply, as they travel."""

import math

import msgpack

from pbbflow.workflow import protocol
from pbbflow.workflow.protocol import Action, CheckpointReply, Message, Route, closed_reply

REQUESTS = [
    protocol.Open("flowshop", {"n": 6}, b"\x00" * 32, 100, [0, 1, 2], label="ta000", client="c"),
    protocol.Checkpoint("e", "w", b"\x01", 3, capacity=4, nodes=9, settled=-1.5, best=90, solution=[1], attempt="t"),
    protocol.Improve(90, [0, 1, 2]),
    protocol.Waiting("e"),
    protocol.Status(),
    protocol.State(intervals=True),
    protocol.Stop(),
    protocol.Close(),
    protocol.Estimate(10, [100.0, 50.0, 200.0]),
]
REPLIES = [
    protocol.Done("r"),
    CheckpointReply(Action.REPLACE, 90, b"\x02", True, [0, 1], 4),
    protocol.ImproveReply(90),
    protocol.WaitingReply(2, False),
    protocol.StatusReply(True, 90),
    protocol.StateReply(5, 1, 90, [0], math.inf, None, 3, 0.5, -0.3, 2, {"w": 1.0}, 7, False, False, b"\x03"),
]


def test_every_route_has_one_request_and_its_reply():
    assert sorted(r.route for r in REQUESTS) == sorted(Route)
    assert {r.reply for r in REQUESTS} == {type(r) for r in REPLIES}


def test_messages_travel_as_plain_dicts_and_come_back_equal():
    for message in REQUESTS + REPLIES:
        wire = msgpack.unpackb(msgpack.packb(message.to_wire()), strict_map_key=False)  # no pickle needed
        assert type(message).from_wire(wire) == message, message
    assert CheckpointReply.from_wire(REPLIES[1].to_wire()).action is Action.REPLACE


def test_a_closed_runs_answer_is_its_routes_reply():
    for request in REQUESTS:
        if request.route in (Route.OPEN, Route.STATE):
            continue
        assert isinstance(request.reply.from_wire(closed_reply(request.route, "r")), Message)
    assert closed_reply(Route.STATE, "r") == {"closed": True}
