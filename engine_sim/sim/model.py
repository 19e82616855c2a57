"""The engine model: partitions, coordinators, procedure schedulers, MOVEs and the input.

Resources (all FIFO, single-threaded, as in H-Store/S-Store):
- a *partition* executes one transaction at a time; a distributed transaction holds every
  partition it touches from the grant of its lock to its 2PC commit (see `dtxn.py`);
- a node's *coordinator* thread does the scheduling work: creating transactions, handling
  commit notifications, (de)serialising and sending messages. A node is a machine (one
  S-Store site per machine) or, to model the bundled engine, a partition's own process;
- a *procedure scheduler* (one per SP) creates its SP's transactions in batch order and
  blocks until the base partition confirms each one is queued (Algorithm 1, lines 31-36).
  With DLS it lives on its base partition's node, so the confirmation is a local hop;
  with the central scheduler every SP's scheduler lives on one node (by default its own)
  and the hop crosses the network for every SP;
- a node's outgoing *network link* (bandwidth), then a fixed latency;
- the *client* offers batches at a rate (open loop) or keeps a window of them in flight
  (closed loop, as the engine's driver does) and takes their completions.

A FIFO server whose requests are handled in time order needs no events of its own: a request
arriving at `t` starts at `max(t, free_at)`. The loop therefore spends one event per
transaction on its partition and one on its commit notification; a MOVE across machines adds
one for the invocation message.
"""
from __future__ import annotations

from collections import deque

from engine_sim.sim.core import Environment
from engine_sim.sim.dtxn import DistributedMixin, Dtxn
from engine_sim.sim.hotpath import bind_hot_path
from engine_sim.sim.plan import Plan


class EngineModel(DistributedMixin):
    """One simulation run of a compiled plan: its state, the rare paths, the network; the
    per-transaction path is bound in from `hotpath.py`."""

    def __init__(self, plan: Plan, input_rate: float | None, window: int | None = None):
        self.plan = plan
        P = self.P = plan.params
        self.env = Environment()
        U, E = len(plan.units), len(plan.edges)
        M, NP = plan.nodes, plan.n_partitions
        self.rate = input_rate  # open loop: batches offered at this rate ...
        self.window = window  # ... or closed loop: this many batches in flight (like the engine)
        self.next_input = 0
        self.client_free = 0.0
        self.client_busy = 0.0
        # routing tables (plain lists: indexing them is the hot path)
        units = plan.units
        self.u_base = [u.base for u in units]
        self.u_machine = [u.machine for u in units]
        self.u_sched = [u.sched for u in units]
        self.u_inputs = [u.n_inputs for u in units]
        self.u_out = [tuple(u.out_edges) for u in units]
        self.u_service = [u.service for u in units]
        self.u_post = [u.post for u in units]
        self.u_dist = [u.dist for u in units]
        self.u_sched_local = [u.machine == u.sched for u in units]
        self.e_dst = [e.dst for e in plan.edges]
        self.part_machine = plan.part_machine
        self.lat_local, self.lat_net = P.local_latency_s, P.net_latency_s
        self.node_machine = plan.node_machine
        self.machine_delay = P.machine_delay_s
        self.client_latency = P.client_latency_s
        # -- costs that depend only on the plan, precomputed per unit / edge ----------------
        rpc = plan.move == "rpc"
        # coordinator work to create a transaction and hand it to its base partition
        self.u_create_cpu = []
        self.u_send_bytes = []
        for u in units:
            if u.machine == u.sched:
                self.u_create_cpu.append(P.sched_s + P.local_msg_cpu_s)
                self.u_send_bytes.append(0.0)
            else:
                data = u.in_bytes if rpc else 0.0
                self.u_create_cpu.append(P.sched_s + P.msg_cpu_s + data * P.ser_byte_s)
                self.u_send_bytes.append(P.control_bytes + data)
        # coordinator work to take a commit notification
        self.u_ack_cpu = [P.ack_s + (P.local_msg_cpu_s if u.machine == u.sched else
                                     P.msg_cpu_s + (u.out_bytes * P.ser_byte_s if rpc else 0.0))
                          for u in units]
        self.u_ack_bytes = [0.0 if u.machine == u.sched else
                            P.control_bytes + (u.out_bytes if rpc else 0.0) for u in units]
        # an invocation crossing machines between two schedulers (RPC MOVE carries the data)
        self.e_send_cpu, self.e_recv_cpu, self.e_bytes = [], [], []
        for e in plan.edges:
            data = e.bytes if (rpc or e.move_txn is None) else 0.0
            self.e_send_cpu.append(P.msg_cpu_s + data * P.ser_byte_s)
            self.e_recv_cpu.append(P.msg_cpu_s + data * P.ser_byte_s)
            self.e_bytes.append(P.control_bytes + data)
        self.e_move_txn = [e.move_txn for e in plan.edges]
        self.source_cpu = P.msg_cpu_s + plan.input_bytes * P.ser_byte_s
        # -- state ---------------------------------------------------------------------------
        self.part_free = [0.0] * NP
        self.part_holder: list[Dtxn | None] = [None] * NP
        self.part_queue: list[list] = [[] for _ in range(NP)]
        # single-sited work is added up after the run (every batch runs); these count the
        # distributed transactions' share
        self.part_busy = [0.0] * NP  # executing
        self.part_held = [0.0] * NP  # executing or held by a distributed transaction
        self.coord_free = [0.0] * M
        if P.site_per_partition:  # the engine's site is one thread: partition and coordinator
            self.part_free = self.coord_free  # share one timeline (node n is partition n)
        self.coord_busy = [0.0] * M
        self.nic_free = [0.0] * M
        self.nic_busy = [0.0] * M
        self.sched_free = [0.0] * U
        self.sched_busy = [0.0] * U
        self.sched_wait: list[deque] = [deque() for _ in range(U)]
        self.next_batch = [0] * U
        self.pending: list[dict] = [dict() for _ in range(U)]
        self.fanin: dict[tuple[int, int], int] = {}
        self.created = [[0.0] * plan.batches for _ in range(U)]
        B = plan.batches
        self.arrival = [0.0] * B
        self.done_at = [0.0] * B
        self.sinks_left = [len(plan.sinks)] * B
        # -- counters (what every batch does is counted after the run) ------------------------
        self.dist_txns = 0
        self.move_txns = 0
        self.u_dist_count = [0] * U
        self.e_move_time = [0.0] * E  # seconds from commit to the downstream invocation
        bind_hot_path(self)

    # -- the network ---------------------------------------------------------------------------
    def send(self, src: int, dst: int, nbytes: float, ready: float) -> float:
        """Arrival time of a message handed to the network at `ready`."""
        if src == dst:
            return ready + self.lat_local
        nic = self.nic_free
        start = nic[src] if nic[src] > ready else ready
        busy = nbytes / self.P.bandwidth_Bps
        nic[src] = start + busy
        self.nic_busy[src] += busy
        if self.machine_delay and self.node_machine[src] != self.node_machine[dst]:
            return nic[src] + self.lat_net + self.machine_delay
        return nic[src] + self.lat_net

    def cpu(self, m: int, t: float, work: float) -> float:
        """Reserve `work` seconds of machine m's coordinator from t; returns the finish."""
        cf = self.coord_free
        start = cf[m] if cf[m] > t else t
        cf[m] = start + work
        self.coord_busy[m] += work
        return start + work

    # -- input -----------------------------------------------------------------------------------
    def run(self) -> None:
        if self.window:
            self.next_input = min(self.window, self.plan.batches)
            for b in range(self.next_input):
                self.env.at(0.0, self._arrive, b)
        else:
            self.env.process(self._generator())
        self.env.run()

    def _batch_done(self, t: float, b: int) -> None:
        """The client takes batch b's completion (its CPU: `client_s`, `client_txn_s`, ...); in
        a closed loop it then submits the next batch."""
        P = self.P
        work = (P.client_s + len(self.plan.units) * P.client_txn_s
                + self.plan.batch_rows[b] * P.client_row_s)
        start = self.client_free if self.client_free > t else t
        self.client_free = start + work
        self.client_busy += work
        if self.window and self.next_input < self.plan.batches:
            self.env.at(self.client_free + P.client_turnaround_s, self._arrive, self.next_input)
            self.next_input += 1

    def _generator(self):
        interval = 1.0 / self.rate
        env = self.env
        for b in range(self.plan.batches):
            self._arrive(env.now, b, None)
            yield interval

    def _arrive(self, t: float, b: int, _unused) -> None:
        """The client submits batch b; it reaches the source SPs' schedulers after the
        client's latency."""
        self.arrival[b] = t
        if self.client_latency:
            self.env.at(t + self.client_latency, self._deliver, b)
        else:
            self._deliver(t, b, None)

    def _deliver(self, t: float, b: int, _unused) -> None:
        for u in self.plan.sources:
            self._invoke(t, u, b, self.source_cpu)

    # -- procedure schedulers (the common path is in hotpath.py) -------------------------------
    def _wait(self, u: int, b: int, cpu: float) -> None:
        """The scheduler is blocked on a confirmation: queue the invocation behind it."""
        wait = self.sched_wait[u]
        wait.append((b, cpu))
        if len(wait) == 1:
            self.env.at(self.sched_free[u], self._sched_wake, u)

    def _sched_wake(self, t: float, u: int, _unused) -> None:
        wait = self.sched_wait[u]
        b, cpu = wait.popleft()
        self._create_now(t, u, b, cpu)
        if wait:
            self.env.at(self.sched_free[u], self._sched_wake, u)

    def _fan_in(self, t: float, u: int, b: int, cpu: float) -> bool:
        """Count one upstream input of (u, b); True once all of them are there."""
        key = (u, b)
        got = self.fanin.get(key, 0) + 1
        if got < self.u_inputs[u]:
            self.fanin[key] = got
            self.cpu(self.u_sched[u], t, cpu)
            return False
        self.fanin.pop(key, None)
        return True

    def _release_pending(self, u: int, b: int) -> None:
        """Invocations that arrived ahead of batch b (now created) follow it in order."""
        pend = self.pending[u]
        b += 1
        while b in pend:
            self._wait(u, b, pend.pop(b))
            b += 1
        self.next_batch[u] = b

    def _remote_exec(self, t: float, u: int, b: int) -> None:
        """The base partition's machine received an invocation from a remote scheduler."""
        P = self.P
        pm = self.u_machine[u]
        data = self.u_send_bytes[u] - P.control_bytes
        done = self.cpu(pm, t, 2 * P.msg_cpu_s + data * P.ser_byte_s)  # receive, confirm
        self.env.at(done + self.lat_local, self._exec, u, b)

    def _remote_dtxn(self, t: float, T: Dtxn, _unused) -> None:
        P = self.P
        self.begin_dtxn(self.cpu(T.machine, t, 2 * P.msg_cpu_s), T)

    # -- single-sited transactions (the common path is in hotpath.py) ------------------------
    def _run_single(self, t: float, p: int, u: int, b: int) -> None:
        """Run a queued single-sited transaction once its partition is released."""
        free = self.part_free
        fin = (free[p] if free[p] > t else t) + self.u_service[u][b]
        post = self.u_post[u]
        free[p] = fin if post is None else fin + post[b]
        if self.u_sched_local[u]:
            self.env.at(fin + self.lat_local, self._commit, u, b)
        else:
            self.env.at(self.send(self.u_machine[u], self.u_sched[u], self.u_ack_bytes[u], fin),
                        self._commit, u, b)
