"""The engine on one host: its threads share the host's cores with each other and with the
host's other jobs, so every CPU cost is stretched by how crowded the cores are.

The bundled engine runs every emulated machine on the host that measures it: each partition
is a process (one thread doing the partition's and its site's work), the driver another. When
more of them want to run than there are cores, each runs at a fraction of a core. The
simulator has no CPU scheduler; it stretches every CPU cost by one factor, the slow-down a
unit of work sees on average, found as a fixed point (a run's busy shares give the factor,
the factor changes the busy shares). Two models of that factor (`SimParams.crowding`):

- "mean", a mean field: B engine threads busy on average beside L other runnable jobs
  (`background_jobs`; each a session, which Linux shares fairly like each partition process)
  on n cores run at n / (B + L) of a core: a stretch of max(1, (B + L) / n).
- "occupancy" (the default): each thread is runnable, independently, with the probability of
  its busy share u (stretched work included: waiting for a core counts); a thread that runs
  while k others are runnable runs at min(1, n / (1 + k + L)) of a core. The stretch is the
  expected slow-down of a unit of work (averaged over the threads by their busy shares), and
  never less than the mean field's, which is what the cores can deliver at all. Four threads
  each busy half the time on two cores are slowed (often three or four want to run at
  once), where the mean field slows them not at all.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from costmodel.sim_params import SimParams
from engine_sim.sim.result import SimResult

ITERATIONS = 8
SETTLED = 0.03  # relative change of the factor at which the fixed point is taken


def thread_busy_shares(r: SimResult, params: SimParams) -> list[float]:
    """Share of the run each engine thread was busy: one per site (its partition's and its
    coordinator's work: one thread in the engine) and the driver (the client, and the central
    schedulers when it hosts them). Without `site_per_partition` partitions and coordinators
    are threads of their own."""
    span = max(r.sim_time_s, 1e-12)
    parts = [b / span for b in r.partition_busy_s]
    coord = list(r.coordinator_utilisation)
    if params.site_per_partition:
        threads = [p + c for p, c in zip(parts, coord)]
        driver = r.client_utilisation + sum(coord[len(parts):])  # the central schedulers' node
    else:
        threads, driver = parts + coord, r.client_utilisation
    return [min(1.0, u) for u in threads + [driver] if u > 0]


def runnable_others(shares: list[float], i: int) -> np.ndarray:
    """P(k of the threads other than i are runnable), k = 0..len(shares)-1 (Poisson binomial)."""
    dist = np.zeros(len(shares))
    dist[0] = 1.0
    for j, u in enumerate(shares):
        if j != i:
            dist[1:] = dist[1:] * (1 - u) + dist[:-1] * u
            dist[0] *= 1 - u
    return dist


def crowding_slowdown(shares: list[float], cores: int, others: float, model: str = "occupancy") -> float:
    """The stretch of every CPU cost when engine threads busy `shares` of the time and `others`
    other jobs share `cores` cores (see the module's docstring)."""
    mean_field = max(1.0, (sum(shares) + others) / cores)
    if model == "mean" or not shares:
        return mean_field
    k = np.arange(len(shares))
    per_thread = [float(runnable_others(shares, i) @ np.maximum(1.0, (1 + k + others) / cores))
                  for i in range(len(shares))]
    return max(mean_field, float(np.average(per_thread, weights=shares)))


def run_host_shared(params: SimParams, attempt: Callable[[SimParams], SimResult]) -> SimResult:
    """Run `attempt` with CPU costs stretched for a host of `host_cores` cores shared with
    `background_jobs` other jobs (the engine on the host that measured it); a real cluster
    (`host_cores` = 0) gives every thread its own core."""
    cores = params.host_cores
    if cores <= 0:
        return attempt(params)
    others = params.background_jobs
    dilation = max(1.0, others / cores)
    for _ in range(ITERATIONS):
        r = attempt(params.cpu_scaled(dilation))
        target = crowding_slowdown(thread_busy_shares(r, params), cores, others, params.crowding)
        r.cpu_dilation = dilation
        if abs(target - dilation) <= SETTLED * dilation:
            break
        dilation = max(1.0, (dilation + 2 * target) / 3)
    return r
