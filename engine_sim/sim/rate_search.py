"""Maximum throughput under a latency bound: search the offered input rate.

The dissertation's metric (section 4.6): the highest input rate the system sustains while the
mean end-to-end batch latency stays within the bound (1 s by default). A probe *meets* the
bound when the engine kept up with the offered rate (measured throughput >= 98 % of it) and
its mean latency is within the bound.

The search starts from a rate the design surely sustains, reads the utilisation of its
busiest resource there, extrapolates the capacity with the utilisation law
(capacity ~ rate / utilisation) and brackets the highest rate it sustains. Inside the bracket
it aims rather than bisects where it can: a probe that could not keep up still measured what
the design delivered while overloaded, about its capacity, so the rate it would just keep up
with (the *edge*: that figure over the 98 % share) is a guess at where the bracket ends. The
next probe goes just below the edge (half the tolerance) where keeping up there closes the
bracket; else just above the edge, to bring the top down, and then below it: two probes when
the guess is right. Where the bracket's midpoint closes it whatever its answer, it bisects.
Where a design delivers less overloaded than it sustains (transactions that hold locks
stretch each other's holds past saturation: some of linear-road's designs), a probe above the
edge keeps up; the search then bisects for the rest. Either way the bracket closes to the
same tolerance, so the answer is as good; it takes fewer probes, and the overloaded ones, which cost the most (their queues grow through the run),
fewer still: 16-19 % fewer probes and 25-26 % less CPU, over 40 random designs of eight
workloads at the pick's screening and final settings, on the set it was worked out on and on
one held out (`bench/rate_search_speed.py`; docs/measurements.md, "Stop 52").

A caller that only asks whether a design beats a figure (`stop_below_bps`) lets the search
stop as soon as the answer is no: a rate the design cannot sustain lies more than the search's
own tolerance below the figure, and no rate it sustained reached the figure. Every later probe
would offer a rate below that one, and a probe that keeps up measures about the rate it is
offered (on the bundled and generated dataflows at most 0.6 % above it at 300 batches, under
the 1 % tolerance the advisor searches with), so none would reach the figure. This is a
measured margin, not a bound: a caller that needs the figure itself leaves `stop_below_bps`
out, and the search is the full one.
"""
from __future__ import annotations

from typing import Callable

from engine_sim.sim.result import KEPT_UP, SimResult

MAX_PROBES = 16


def probe_near_edge(edge: float | None, lo: float, hi: float, tolerance: float) -> float | None:
    """The next probe, aimed by the edge; None: bisect (also where the midpoint closes the
    bracket whatever its answer). Just below the edge (half the tolerance) where keeping up
    there closes the bracket; else just above the edge, to bring the top down to it, where
    that lowers the top by half the tolerance at least (else a run of overloaded probes, each
    edge a little lower, creeps down); else just below it. Only inside the bracket by an
    eighth of the tolerance."""
    if edge is None or hi - lo <= tolerance * (lo + hi):
        return None
    below = (edge * (1 - tolerance / 2), hi * (1 - tolerance / 8))  # (rate, the most it may be)
    above = (edge * (1 + tolerance / 2), hi * (1 - tolerance / 2))
    for rate, most in ((below, above) if hi - below[0] <= tolerance * hi else (above, below)):
        if lo * (1 + tolerance / 8) < rate < most:
            return rate
    return None


def search_rate(run: Callable[[float], SimResult], serial_rate: float, *,
                tolerance: float = 0.02, stop_below_bps: float | None = None,
                aim_at_edge: bool = True) -> SimResult:
    """`run(rate)` simulates one offered rate; `serial_rate` is a rate the design sustains
    if it runs every transaction of a batch one after the other (a safe starting point).
    With `stop_below_bps`, the search ends early once the design is known to fall short of
    it (see the module); the result is then the best rate found so far. `aim_at_edge=False`
    bisects the bracket throughout (the search before it aimed: a bench's baseline)."""
    probes: list[dict] = []

    def probe(rate: float) -> SimResult:
        r = run(rate)
        probes.append({"input_rate": rate, "throughput_bps": r.throughput_bps,
                       "latency_mean_ms": r.latency_mean_ms, "peak_utilisation": r.peak_utilisation,
                       "within_bound": r.within_bound})
        return r

    # 1. a rate it sustains (halve until it does; a design may be slower than serial)
    rate = serial_rate
    r = probe(rate)
    while not r.within_bound and len(probes) < 6:
        rate /= 4
        r = probe(rate)
    if not r.within_bound:
        r.search = probes
        return r
    lo, best = rate, r
    # 2. extrapolate and bracket
    estimate = rate / max(r.peak_utilisation, 1e-9)
    hi: float | None = None
    edge: float | None = None  # where the last overloaded probe says the design just keeps up
    aim = aim_at_edge  # False once a probe above the edge kept up: bisect from then on
    rate = max(estimate * 0.97, lo * 1.05)
    while len(probes) < MAX_PROBES:
        r = probe(rate)
        if r.within_bound:
            if r.throughput_bps >= best.throughput_bps:
                best = r
            lo = rate
            if hi is None:
                rate *= 1.15
                continue
        else:
            hi = rate
            if (stop_below_bps is not None and hi * (1 + tolerance) < stop_below_bps
                    and best.throughput_bps < stop_below_bps):
                break
        if hi is not None and hi - lo <= tolerance * hi:
            break
        if r.within_bound and edge is not None and rate > edge:
            aim = False  # it delivers less overloaded than it sustains
        elif not r.kept_up and r.throughput_bps > 0:
            edge = r.throughput_bps / KEPT_UP
        aimed = probe_near_edge(edge, lo, hi, tolerance) if aim else None
        rate = aimed if aimed is not None else (lo + hi) / 2
    best.search = probes
    return best
