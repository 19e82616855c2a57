"""The engine on one host: its partition processes share the host's cores with each other and
with whatever else the host runs (`host_cores`, `background_jobs`), and the calibration
fits each probe with the other jobs measured when it ran."""
from __future__ import annotations

import json

import numpy as np
import pytest

from costmodel.design import Design
from costmodel.workload import InputSpec, Procedure, Stream, Table, Workload
from engine_sim.calibrate import background_jobs
from engine_sim.sim import Calibration, SimParams, run_once
from engine_sim.sim.host_sharing import crowding_slowdown
from engine_sim.sim.fit import FIT_BASE, GROUPS, fit_parameters, observe, scale_group
from engine_sim.sim.probes import probes, throughput_checks

HOST = SimParams(host_cores=2, site_per_partition=True)


def _chain(partitions: int):
    """Eight SPs of 4 cost units in a chain, dealt in order over `partitions` partitions."""
    procs = tuple(Procedure(f"SP{i + 1}", 4.0, ()) for i in range(8))
    streams = tuple(Stream(f"SP{i + 1}", f"SP{i + 2}", 10, 64) for i in range(7))
    w = Workload("sharing", (Table("T1", 1000, 64, "k"),), procs, streams,
                 input=InputSpec(batch_size=10, fields=("k", "v")))
    d = Design(w.name, 1, partitions, {f"SP{i + 1}": i * partitions // 8 for i in range(8)}, {"T1": 0},
               method="test")
    return w, d


def _tps(partitions: int, params: SimParams) -> float:
    w, d = _chain(partitions)
    return run_once(w, d, in_flight=16, calibration=params, batches=200).throughput_tps


def test_other_jobs_take_their_share_of_the_host():
    """One busy engine thread beside three other runnable jobs on two cores runs at 2/4 of
    a core: half its speed alone. Alone it has a core: host_cores changes nothing."""
    alone = _tps(1, HOST)
    assert _tps(1, HOST.with_(host_cores=0)) == pytest.approx(alone, rel=0.02)
    loaded = _tps(1, HOST.with_(background_jobs=3.0))
    assert 0.42 < loaded / alone < 0.58


def test_one_other_job_slows_a_design_that_needs_both_cores_not_one_that_needs_one():
    """Beside one other runnable job on two cores, a one-partition design still has a core,
    while four busy partitions, which had both cores, now share them with it."""
    other = HOST.with_(background_jobs=1.0)
    assert _tps(1, other) / _tps(1, HOST) > 0.93
    assert _tps(4, other) / _tps(4, HOST) < 0.85


@pytest.mark.process  # records the host (platform asks uname)
def test_a_real_cluster_ignores_this_hosts_other_jobs():
    """A Calibration passed to the simulator predicts a real cluster: no host sharing; the
    same calibration `on_host()` predicts the crowded host, slower."""
    cal = Calibration.from_params(HOST.with_(background_jobs=5.0), {})
    w, d = _chain(4)
    a = run_once(w, d, in_flight=16, calibration=cal, batches=200).throughput_tps
    b = run_once(w, d, in_flight=16, calibration=cal.params.with_(host_cores=0, background_jobs=0.0,
                                                                site_per_partition=False),
                 batches=200).throughput_tps
    assert a == pytest.approx(b, rel=1e-9)
    on_host = run_once(w, d, in_flight=16, calibration=cal.on_host(), batches=200).throughput_tps
    assert on_host == pytest.approx(_tps(4, cal.params), rel=1e-9) and on_host < 0.9 * a


def test_background_jobs_is_a_count_of_runnable_threads():
    n = background_jobs(seconds=0.05, samples=3)
    assert 0.0 <= n < 1000


@pytest.mark.slow
def test_the_fit_recovers_a_quiet_hosts_costs_from_probes_measured_beside_other_jobs():
    """Measurements made by the simulator with known costs, each probe beside a different
    number of other runnable jobs: fitted with those numbers, the costs are the quiet
    host's (a loaded check predicted at no background matches the truth's)."""
    base = FIT_BASE.with_(host_cores=2, site_per_partition=True)
    rng = np.random.default_rng(11)
    truth = base
    for group in GROUPS:
        truth = scale_group(truth, group, float(rng.uniform(0.5, 2.0)))
    plist = probes()
    others = [float(x) for x in rng.uniform(0.0, 3.0, len(plist))]
    measured = [observe(p, truth.with_(background_jobs=o)) for p, o in zip(plist, others)]
    result = fit_parameters(plist, measured, base=base, background=others)
    assert result.median_error < 0.02
    for check in throughput_checks():
        assert observe(check, result.params) == pytest.approx(observe(check, truth), rel=0.08)
    ignored = fit_parameters(plist, measured, base=base)  # the other jobs left out: costs come out inflated
    assert ignored.params.txn_overhead_s > result.params.txn_overhead_s


def test_the_fit_wants_one_background_figure_per_probe():
    plist = probes()[:3]
    with pytest.raises(ValueError, match="one background figure per probe"):
        fit_parameters(plist, [1e-4, 1e-4, 1e-4], background=[0.0])


def test_a_calibration_measured_before_the_occupancy_model_predicts_with_the_mean_field(tmp_path):
    """Files without `crowding` were fitted with the mean field; new ones say which they use."""
    old = Calibration.from_params(HOST, {}, machine={"hostname": "test"}).to_dict()
    del old["simulator"]["crowding"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    assert Calibration.load(path).params.crowding == "mean"
    new = Calibration.from_params(HOST, {}, machine={"hostname": "test"})
    assert Calibration.from_dict(new.to_dict()).params.crowding == "occupancy"


def test_the_occupancy_model_slows_threads_that_crowd_two_cores_below_the_mean_fields_full_load():
    """Four threads each busy 45 % on two cores fill 0.9 of the cores on average: the mean
    field stretches nothing, the occupancy model does (three or four often want to run),
    and neither stretches below what the cores can deliver."""
    shares = [0.45] * 4
    assert crowding_slowdown(shares, 2, 0.0, "mean") == 1.0
    occupied = crowding_slowdown(shares, 2, 0.0, "occupancy")
    assert 1.05 < occupied < 1.6
    assert crowding_slowdown([1.0] * 4, 2, 0.0, "occupancy") == pytest.approx(2.0)
    assert crowding_slowdown([0.9, 0.02], 2, 0.0, "occupancy") == pytest.approx(1.0)
    w, d = _chain(4)
    mean = run_once(w, d, in_flight=16, calibration=HOST.with_(crowding="mean"), batches=200)
    occ = run_once(w, d, in_flight=16, calibration=HOST, batches=200)
    assert occ.cpu_dilation >= mean.cpu_dilation and occ.throughput_tps <= mean.throughput_tps * 1.02
