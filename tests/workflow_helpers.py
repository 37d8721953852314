"""Flow-shop work for the tests of the wire (``tests/workflow``): intervals of [0, 6!) as a run's work."""

from pbbflow.flowshop.factoradic import factorial
from pbbflow.flowshop.intervals import WorkUnit
from pbbflow.flowshop.packed import PackedUnit
from pbbflow.workflow.protocol import Action

CONTINUE, REPLACE, STOP, WAIT = Action.CONTINUE, Action.REPLACE, Action.STOP, Action.WAIT

N = 6
TOTAL = int(factorial(N))  # 720


def unit(*intervals):
    return PackedUnit.from_work_unit(WorkUnit(N, intervals))


EMPTY = unit()
FULL = unit((0, TOTAL))
SPACE = {"kind": "flowshop", "space": {"n": N}}  # how a run names its work space to the coordinator
