"""The engine model: partitions, coordinators, procedure schedulers, MOVEs and the input.

Resources (all FIFO, single-threaded, as in H-Store/S-Store):
- a *partition* executes one transaction at a time; a distributed transaction holds every
  partition it touches from the grant of its lock to its 2PC commit (see `dtxn.py`);
- a node's *coordinator* thread does the scheduling work: creating transactions, handling
  commit notifications, (de)serialising and sending messages. A node is a machine (one
  S-Store site per machine) or, to model the bundled engine, a partition's own process;
- a *procedure scheduler* (one per SP) creates its SP's transactions in batch order, each
  once every upstream SP committed the batch, and sends it to the base partition without
  waiting for any reply (as the engine's schedulers do: they create a lane's transactions
  ahead of the commits). With DLS it lives on its base partition's node; with the central
  scheduler every SP's scheduler lives in the driver's node, with the client, so every
  transaction request and commit notification crosses the network;
- a node's outgoing *network link* (bandwidth), then a fixed latency;
- the *client* offers batches at a rate (open loop) or keeps a number of them in flight
  (closed loop, as the engine's driver does) and takes their completions.

A FIFO server whose requests are handled in time order needs no events of its own: a request
arriving at `t` starts at `max(t, free_at)`. The loop therefore spends one event per
transaction on its partition and one on its commit notification; a MOVE across machines adds
one for the invocation message. Distributed transactions take one event per message
(`dtxn.py`).

Everything the result reports as a count (transactions, MOVEs, distributed transactions,
completed batches) is counted by the handlers when it happens; `check_finished` refuses a
run in which a batch never completed or a partition was never released.
"""
from __future__ import annotations

from engine_sim.sim.core import Environment
from engine_sim.sim.dtxn import Dtxn, DtxnObserver, bind_distributed_path
from engine_sim.sim.errors import SimError
from engine_sim.sim.hotpath import bind_hot_path, bind_network
from engine_sim.sim.compiled import CompiledPlan


class EngineModel:
    """One simulation run of a compiled plan: its state, the rare paths, the network; the
    per-transaction path is bound in from `hotpath.py`, the distributed one from `dtxn.py`
    (`observer`: see `dtxn.DtxnObserver`)."""

    def __init__(self, plan: CompiledPlan, input_rate: float | None, in_flight: int | None = None,
                 observer: DtxnObserver | None = None):
        self.plan = plan
        P = self.P = plan.params
        self.env = Environment()
        U, E = len(plan.units), len(plan.edges)
        M, NP = plan.nodes, plan.n_partitions
        self.rate = input_rate  # open loop: batches offered at this rate ...
        self.in_flight = in_flight  # ... or closed loop: this many batches in flight (like the engine)
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
            data = e.bytes if (rpc or e.move_txns is None) else 0.0
            self.e_send_cpu.append(P.msg_cpu_s * e.msg_share + data * P.ser_byte_s)
            self.e_recv_cpu.append(P.msg_cpu_s * e.msg_share + data * P.ser_byte_s)
            self.e_bytes.append(P.control_bytes + data)
        self.e_move_txn = [e.move_txns for e in plan.edges]
        self.e_src = [e.src for e in plan.edges]
        self.e_streams = [e.streams if e.crosses_partition else 0 for e in plan.edges]
        # the client's one message a batch; lanes fed by it share it by their key mass
        self.u_source_cpu = [u.share * (P.msg_cpu_s + plan.input_bytes * P.ser_byte_s) for u in units]
        # -- state ---------------------------------------------------------------------------
        self.part_free = [0.0] * NP
        self.part_holder: list[Dtxn | None] = [None] * NP
        self.part_queue: list[list] = [[] for _ in range(NP)]
        # the engine's sites that a distributed transaction may lock serve a queue, a slice at
        # a time (`dtxn.py`); elsewhere work reserves its partition as it arrives
        self.part_serves = [False] * NP
        for specs in ([*self.u_dist, *self.e_move_txn] if P.site_per_partition else ()):
            for spec in specs or ():
                for q in (spec.parts if spec is not None else ()):
                    self.part_serves[q] = True
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
        self.sched_busy = [0.0] * U  # CPU each procedure scheduler used (on its node)
        self.next_batch = [0] * U
        self.pending: list[dict] = [dict() for _ in range(U)]
        self.fanin: list[list[int] | None] = []  # each join's inputs so far per batch (`hotpath.py`)
        B = plan.batches
        self.created = [[-1.0] * B for _ in range(U)]  # -1: not created (yet)
        self.arrival = [-1.0] * B
        self.done_at = [-1.0] * B  # -1: not completed
        self.sinks_left = [len(plan.sinks)] * B
        self.move_left: dict[tuple[int, int], int] = {}  # (edge, batch) -> MOVE txns in flight
        # the client: a timeline of its own, or the driver's node that hosts the central
        # schedulers (the engine's driver is one thread doing both)
        self.client_node = (plan.nodes - 1 if plan.scheduler == "central"
                            and P.central_machine < 0 else None)
        # -- counters: every one is incremented by the handler of the event it counts ---------
        self.completed = 0  # batches every sink committed
        self.dist_txns = 0  # committed transactions that locked several partitions
        self.move_txns = 0  # committed MOVE transactions
        self.committed = [bytearray(B) for _ in range(U)]  # (unit, batch): 1 once committed
        self.u_dist_count = [0] * U
        self.e_moves = [0] * E  # stream batches handed across partitions, per edge
        self.e_move_time = [0.0] * E  # seconds from commit to the downstream invocation
        bind_network(self)  # first: every path below sends and reserves CPU
        bind_distributed_path(self, observer)  # before the hot path, which calls into it
        bind_hot_path(self)

    @property
    def u_commits(self) -> list[int]:
        """Committed transactions per unit: the commit notifications its scheduler took."""
        return [sum(c) for c in self.committed]

    # -- the end of a run ------------------------------------------------------------------------
    def check_finished(self) -> None:
        """A run counts only if every batch completed and every partition was released."""
        plan = self.plan
        if self.completed < plan.batches:
            b = next(i for i, d in enumerate(self.done_at) if d < 0)
            raise SimError(f"simulation of {plan.workload} stalled: {plan.batches - self.completed} of "
                           f"{plan.batches} batches never completed; the first, batch {b}, "
                           f"{self._where_stuck(b)}")
        for q, holder in enumerate(self.part_holder):
            if holder is not None:
                raise SimError(f"simulation of {plan.workload} ended with partition {q} still held by "
                               f"the {holder.describe(plan)}")
            if self.part_queue[q]:
                raise SimError(f"simulation of {plan.workload} ended with {len(self.part_queue[q])} "
                               f"requests still queued at partition {q}")

    def _where_stuck(self, b: int) -> str:
        plan = self.plan
        for u, unit in enumerate(plan.units):
            if self.committed[u][b]:
                continue
            name = f"SP {unit.name!r}"
            if self.created[u][b] < 0:
                return (f"was never started by {name} (its invocation never arrived: an upstream "
                        f"hand-off was lost)")
            p = unit.base
            held = self._lock_chain(p)
            return (f"was created by {name} at t={self.created[u][b]:.6f}s but never committed on "
                    f"partition {p}{held}")
        return "was committed by every SP but its completion never reached the client"

    def _lock_chain(self, p: int) -> str:
        """Who holds partition p, what that transaction waits for, and so on."""
        out, seen = "", set()
        while self.part_holder[p] is not None and p not in seen:
            seen.add(p)
            T = self.part_holder[p]
            out += f"; partition {p} is held by the {T.describe(self.plan)}"
            parts = T.spec.parts
            if not 0 < T.next <= len(parts) or T.grant_t.get(parts[T.next - 1]) is not None:
                break
            p = parts[T.next - 1]
            out += f", which waits for partition {p}"
        return out

    # -- input -----------------------------------------------------------------------------------
    def run(self) -> None:
        if self.in_flight:
            self.next_input = min(self.in_flight, self.plan.batches)
            for b in range(self.next_input):
                self.env.at(0.0, self._arrive, b)
        else:
            self.env.process(self._generator())
        self.env.run()

    def _batch_done(self, t: float, b: int) -> None:
        """The client takes batch b's completion (its CPU: `client_s`, `client_txn_s`, ...); in
        a closed loop it then submits the next batch."""
        P = self.P
        self.completed += 1
        work = (P.client_s + len(self.plan.units) * P.client_txn_s
                + self.plan.batch_rows[b] * P.client_row_s)
        if self.client_node is not None:
            self.client_free = self.cpu(self.client_node, t, work)
        else:
            start = self.client_free if self.client_free > t else t
            self.client_free = start + work
            self.client_busy += work
        if self.in_flight and self.next_input < self.plan.batches:
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
            self._invoke(t, u, b, self.u_source_cpu[u])

    # -- procedure schedulers (the common path is in hotpath.py) -------------------------------
    def _release_pending(self, u: int, b: int, t: float) -> None:
        """Invocations that arrived ahead of batch b (now created) follow it in order."""
        pend = self.pending[u]
        b += 1
        while b in pend:
            self.next_batch[u] = b + 1
            self._create_now(t, u, b, pend.pop(b))
            b += 1

    def _remote_exec(self, t: float, u: int, b: int) -> None:
        """The base partition's node received a transaction request from a remote scheduler
        (nothing is sent back until the transaction commits)."""
        P = self.P
        pm = self.u_machine[u]
        data = self.u_send_bytes[u] - P.control_bytes
        done = self.cpu(pm, t, P.msg_cpu_s + data * P.ser_byte_s)
        self.env.at(done + self.lat_local, self._exec, u, b)
