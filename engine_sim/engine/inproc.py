"""The in-process runtime: every site and the driver in this thread, messages delivered in
FIFO order by a deterministic loop (same seed, same history). Semantics are the engine's:
sites still share nothing and talk only by messages (objects handed over, never shared
mutably); a crash discards the sites' in-memory state and unflushed log and builds them anew.
"""
from __future__ import annotations

import time
from collections import deque

from engine_sim.engine.crash import CrashPoint, start_recovery
from engine_sim.engine.driver import Driver, DriverConfig
from engine_sim.engine.errors import EngineFailure
from engine_sim.engine.messages import Ready
from engine_sim.engine.plan import DRIVER
from engine_sim.engine.site import Site, SiteConfig


class _Port:
    """A site's (or the driver's) way out: append to the shared FIFO."""

    def __init__(self, runtime: "InProcessRuntime", node: int):
        self.runtime = runtime
        self.node = node

    def send(self, dst: int, msg) -> None:
        self.runtime.post(self.node, dst, msg)


class InProcessRuntime:
    def __init__(self, plan, site_cfg: SiteConfig, driver_cfg: DriverConfig, log_stores: dict,
                 delay_s: float = 0.0, next_plan=None):
        self.plan = plan
        self.plans = [plan] if next_plan is None else [plan, next_plan]  # the plan of each era
        self.site_cfg = site_cfg
        self.log_stores = log_stores
        self.queue: deque = deque()
        self.delayed: list = []  # (due, seq, src, dst, clock, msg) cross-machine messages
        self.delay_s = delay_s
        self._seq = 0
        self.sites = {k: self._site(k, 0, 0, 0) for k in range(plan.n_partitions)}
        self.driver = Driver(plan, driver_cfg, self, next_plan)
        self.messages = 0

    def _site(self, k: int, epoch: int, clock: int, era: int) -> Site:
        return Site(k, self.plans[era], self.site_cfg, _Port(self, k), self.log_stores[k], epoch=epoch,
                    clock=clock, era=era, plan_of=self.plans.__getitem__)

    # -- transport -------------------------------------------------------------------------------
    def clock_of(self, node: int) -> int:
        return self.driver.clock if node == DRIVER else self.sites[node].clock

    def post(self, src: int, dst: int, msg) -> None:
        self.messages += 1
        item = (src, dst, self.clock_of(src), msg)
        if self.delay_s and self.plan.machine(src) != self.plan.machine(dst):
            import heapq
            self._seq += 1
            heapq.heappush(self.delayed, (time.perf_counter() + self.delay_s, self._seq, item))
        else:
            self.queue.append(item)

    def send(self, dst: int, msg) -> None:  # the driver's port
        self.post(DRIVER, dst, msg)

    # -- crash -----------------------------------------------------------------------------------
    def crash(self, node: int, epoch: int, clock: int) -> None:
        """Kill the cluster's volatile state: every site is rebuilt from nothing but its log
        store (what was flushed); messages in flight are lost."""
        self.queue.clear()
        self.delayed.clear()
        for k in self.sites:
            self.sites[k] = self._site(k, epoch, clock, self.driver.era)
            self.queue.append((k, DRIVER, clock, Ready(k, 0, epoch)))

    def restart(self, era: int, clock: int) -> None:
        """A migration's stop and restart: every site is replaced by a new one running design
        `era`, with its initial state (it loads the real one from the dumps next)."""
        for k in self.sites:
            self.sites[k] = self._site(k, self.driver.epoch, clock, era)

    # -- the loop ----------------------------------------------------------------------------------
    def run(self, deadline_s: float | None = None) -> Driver:
        started = time.perf_counter()
        cpu_started = time.thread_time()  # the driver and every partition run in this thread
        while True:
            try:
                driver = self._run(started, deadline_s)
                driver.cpu_s = time.thread_time() - cpu_started
                return driver
            except CrashPoint as point:  # a partition reached its crash point: recover
                start_recovery(self.driver, point.node)

    def _run(self, started: float, deadline_s: float | None) -> Driver:
        driver, sites = self.driver, self.sites
        driver.poll()
        while not driver.finished:
            progressed = False
            while self.queue:
                src, dst, clock, msg = self.queue.popleft()
                node = driver if dst == DRIVER else self.sites[dst]
                node.observe(clock)
                node.handle(msg, src)
                progressed = True
            if self.delayed:
                progressed |= self._release_delayed()
            for k in range(len(sites)):
                if self.sites[k].poll():
                    progressed = True
            if driver.poll():
                progressed = True
            if not progressed and not self.queue:
                for k in range(len(sites)):
                    self.sites[k].on_idle()
                if not self.queue and not driver.finished:
                    if self.delayed:
                        time.sleep(max(0.0, self.delayed[0][0] - time.perf_counter()))
                        continue
                    raise EngineFailure(f"engine stalled: {self.describe()}")
            if deadline_s is not None and time.perf_counter() - started > deadline_s:
                raise EngineFailure(f"engine run exceeded its {deadline_s:g} s deadline (timeout_s): "
                                    f"{self.describe()}")
        return driver

    def _release_delayed(self) -> bool:
        import heapq
        now = time.perf_counter()
        moved = False
        while self.delayed and self.delayed[0][0] <= now:
            _, _, item = heapq.heappop(self.delayed)
            self.queue.append(item)
            moved = True
        return moved

    def describe(self) -> str:
        d = self.driver
        parts = [f"phase {d.phase}, batches submitted {d.next_batch}, outstanding {sorted(d.outstanding)[:5]}"]
        for k, s in self.sites.items():
            p = s.partition
            parts.append(f"p{k}: holder={p.holder} queue={len(p.queue)} acks={len(s.pending_acks)}")
        return "; ".join(parts)
