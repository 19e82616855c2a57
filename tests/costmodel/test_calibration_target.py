"""A Calibration says what the simulator predicts with it: a real cluster (the default) or the
measuring host; passing one or the other must not depend on which attribute a caller reads."""
from __future__ import annotations

import json

import pytest

from costmodel.calibration import Calibration, CalibrationError
from costmodel.sim_params import SimParams

MEASURED_HERE = SimParams(host_cores=2, background_jobs=1.5, site_per_partition=True, txn_overhead_s=70e-6)


def _measured() -> Calibration:
    return Calibration(MEASURED_HERE, {"hostname": "box"}, source="measured")


def test_the_two_targets_give_different_parameters():
    cal = _measured()
    cluster, host = cal.sim_params(), cal.on_host().sim_params()
    assert host == MEASURED_HERE  # the host's emulation kept
    assert (cluster.host_cores, cluster.background_jobs, cluster.site_per_partition) == (0, 0.0, False)
    assert cluster.txn_overhead_s == host.txn_overhead_s  # the measured costs are the same
    assert cluster != host


def test_a_copy_with_another_target_leaves_the_original_alone():
    cal = _measured()
    host = cal.on_host()
    assert cal.target == "cluster" and host.target == "host" and host is not cal
    back = host.on_cluster()
    assert host.target == "host" and back.target == "cluster" and back == cal
    assert host.params is cal.params and host.machine == cal.machine


def test_the_target_shows_in_the_repr_and_label():
    cal = _measured()
    assert "target='cluster'" in repr(cal) and "target='host'" in repr(cal.on_host())
    assert cal.label() != cal.on_host().label()


def test_the_target_is_not_written_to_the_file():
    host = _measured().on_host()
    data = host.to_dict()
    assert "target" not in json.dumps(data)
    assert Calibration.from_dict(data).target == "cluster"


def test_an_unknown_target_is_refused():
    with pytest.raises(CalibrationError, match="target"):
        Calibration(target="laptop")
