"""The flow-shop family's run instance: what its engines are given."""

import pytest

from pbbflow.flowshop.evaluation import neh
from pbbflow.flowshop.family import FlowShopRun
from pbbflow.flowshop.load import load_instance
from pbbflow.gpu import LARGE_IVMS, SMALL_IVMS


@pytest.mark.parametrize(("name", "ivms"), [("ta021", SMALL_IVMS), ("ta056", LARGE_IVMS)])
def test_a_run_gets_the_ivms_of_its_size_class_unless_told(name, ivms):
    instance = load_instance(name)
    run = FlowShopRun.new(instance, ub=None, bound="lb1", branch="minmin", initial="neh", first=neh(instance.p))
    assert run.engine_options()["ivms"] == ivms
    assert run.engine_options(ivms=96)["ivms"] == 96
