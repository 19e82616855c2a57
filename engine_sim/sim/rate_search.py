"""Maximum throughput under a latency bound: search the offered input rate.

The dissertation's metric (section 4.6): the highest input rate the system sustains while the
mean end-to-end batch latency stays within the bound (1 s by default). A probe *meets* the
bound when the engine kept up with the offered rate (measured throughput >= 98 % of it) and
its mean latency is within the bound.

The search starts from a rate the design surely sustains, reads the utilisation of its
busiest resource there, extrapolates the capacity with the utilisation law
(capacity ~ rate / utilisation) and bisects around that estimate.

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

from engine_sim.sim.result import SimResult

MAX_PROBES = 16


def search_rate(run: Callable[[float], SimResult], serial_rate: float, *,
                tolerance: float = 0.02, stop_below_bps: float | None = None) -> SimResult:
    """`run(rate)` simulates one offered rate; `serial_rate` is a rate the design sustains
    if it runs every transaction of a batch one after the other (a safe starting point).
    With `stop_below_bps`, the search ends early once the design is known to fall short of
    it (see the module); the result is then the best rate found so far."""
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
        rate = (lo + hi) / 2
    best.search = probes
    return best
