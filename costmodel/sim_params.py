"""The simulator's cost parameters: what every step of the engine model costs, in seconds.

The defaults are the *reference cluster*: a model of the dissertation's 2016 H-Store/S-Store
cluster (64-core Xeon machines, one partition per core, a LAN between machines) with the
orders of magnitude its text gives: a single-sited transaction costs tens of microseconds of
fixed overhead, per-tuple work is about a microsecond, a message between machines costs a
~100 us hop while a hand-off inside a machine costs a few microseconds. They are not
measured; `advisor calibrate` replaces them with values fitted on this machine's engine.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

from costmodel.errors import finite_float


CPU_COSTS = ("txn_overhead_s", "cost_unit_s", "row_read_s", "row_write_s", "tuple_in_s",
             "tuple_out_s", "fragment_s", "prepare_s", "commit_s", "txn_after_commit_s",
             "row_after_commit_s", "sched_s", "ack_s", "msg_cpu_s",
             "local_msg_cpu_s", "ser_byte_s", "client_s", "client_txn_s",
             "client_row_s", "window_insert_s", "window_slide_s", "window_expire_s",
             "window_read_s")
COUNTS = ("central_machine", "host_cores")  # a machine's index, a number of cores: whole numbers
CROWDING = ("occupancy", "mean")
MAX_SECONDS = 1e6  # a price in seconds (a transaction, a message): far beyond any machine's
MIN_BANDWIDTH_BPS = 1.0  # a byte per second: far below any network's
WINDOW_COSTS = ("window_insert_s", "window_slide_s", "window_expire_s", "window_read_s")


ENGINE_SERVE_SLICE_S = 0.002  # the multi-process engine's serving slice (`SiteConfig.serve_budget_s`)
IN_PROCESS_SERVE_SLICE_S = 1.0  # the in-process engine serves a site's whole queue: longer than any backlog


@dataclass(frozen=True)
class SimParams:
    # -- work on a partition (its single execution thread) ---------------------------------
    txn_overhead_s: float = 50e-6  # begin + commit + log of one transaction
    # one unit of a declared procedure's `cost`, per batch, at the workload's `cost_unit_us` of
    # 100 (the engine runs a CPU loop of cost x cost_unit_us on the partition; code procedures
    # get no loop and no cost term here either)
    cost_unit_s: float = 100e-6
    row_read_s: float = 0.5e-6  # one row read
    row_write_s: float = 1.0e-6  # one row written (also: a stream tuple deleted/inserted by a MOVE)
    tuple_in_s: float = 0.3e-6  # one input tuple handed to the procedure
    tuple_out_s: float = 0.5e-6  # one output tuple kept in the stream table (recovery)
    fragment_s: float = 15e-6  # fixed work of a remote fragment of a distributed transaction
    prepare_s: float = 10e-6  # a 2PC participant's prepare (vote)
    commit_s: float = 10e-6  # a 2PC participant's commit
    txn_after_commit_s: float = 0.0  # partition work after the commit is reported (history, log)
    row_after_commit_s: float = 0.0  # ... per row the transaction accessed
    # window maintenance at the owner, per tuple (dissertation 3.3.5); None = derived from the
    # row costs above (see `window_costs`); a calibration measures them (two window probes)
    window_insert_s: float | None = None  # a tuple of the input batch staged in the window
    window_slide_s: float | None = None  # a staged tuple made active by a slide
    window_expire_s: float | None = None  # an expired tuple removed by a slide
    window_read_s: float | None = None  # a tuple of the active window read after a slide
    # -- work on a machine's transaction coordinator (one thread per machine) --------------
    sched_s: float = 3e-6  # a procedure scheduler creating and queueing one transaction
    ack_s: float = 1e-6  # handling one commit notification
    msg_cpu_s: float = 1.5e-6  # sending or receiving one message to/from another machine
    local_msg_cpu_s: float = 0.3e-6  # handing a message to a thread of the same machine
    ser_byte_s: float = 0.5e-9  # serialising (or deserialising) one byte of stream data
    # -- the network ------------------------------------------------------------------------
    net_latency_s: float = 100e-6  # one-way latency between machines
    local_latency_s: float = 5e-6  # one-way latency between threads of one machine
    bandwidth_Bps: float = 125e6  # per machine, outgoing (1 Gbit/s)
    control_bytes: int = 128  # size of a control message (invocation, vote, ack)
    client_latency_s: float = 0.0  # one way between the client (input, completions) and the cluster
    client_turnaround_s: float = 0.0  # closed loop: from a completion to the next submission
    client_s: float = 0.0  # the client's CPU per completed batch
    client_txn_s: float = 0.0  # ... per transaction of the batch
    client_row_s: float = 0.0  # ... per row the batch accessed (the engine's driver collects
    # every transaction and access into the history it checks)
    # -- the model --------------------------------------------------------------------------
    service_cv: float = 0.1  # coefficient of variation of partition service times
    # where the central scheduler lives (scheduler="central"): -1 = a node of its own, with the
    # client (as in the engine, where the driver hosts it); k = on machine k
    central_machine: int = -1
    # the bundled engine runs every partition as a site of its own (one process, one thread for
    # the partition and its schedulers), so two partitions of one machine talk by messages like
    # two machines do; a real S-Store machine is one site with a thread per partition
    site_per_partition: bool = False
    machine_delay_s: float = 0.0  # added to messages between machines (engine: machine_delay_ms)
    # with site_per_partition: how long a site that distributed transactions lock serves its
    # queue (oldest first) before it reads its messages again; the multi-process engine's
    # slice, or IN_PROCESS_SERVE_SLICE_S for the in-process engine (a site's whole queue)
    serve_slice_s: float = ENGINE_SERVE_SLICE_S
    # cores of the one host that runs every emulated machine (the engine on this machine);
    # 0 = a real cluster: every partition and coordinator thread has a core of its own
    host_cores: int = 0
    # other jobs runnable on that host, on average (sessions with a runnable thread: Linux
    # shares the CPU fairly between sessions, and every engine partition is a session of its
    # own); they share the host's cores with the engine's threads. Measured, never fitted: the
    # calibration samples it before every probe, the fidelity bench before every engine run
    background_jobs: float = 0.0
    # how crowded cores stretch CPU costs (engine_sim/sim/host_sharing.py): "occupancy" (threads
    # runnable at the same moment slow each other) or "mean" (only the average load counts);
    # the calibration fits with "mean" first, then refines with "occupancy"
    crowding: str = "occupancy"

    def __post_init__(self) -> None:
        if not isinstance(self.site_per_partition, bool):
            raise ValueError(f"simulator parameter site_per_partition must be true or false, "
                             f"got {self.site_per_partition!r}")
        if self.crowding not in CROWDING:
            raise ValueError(f"simulator parameter crowding must be one of {', '.join(CROWDING)}, "
                             f"got {self.crowding!r}")
        for f in fields(self):
            v = getattr(self, f.name)
            if ((f.name == "central_machine" and v == -1) or f.name in ("site_per_partition", "crowding")
                    or (f.name in WINDOW_COSTS and v is None)):
                continue
            if not finite_float(v) or v < 0:
                raise ValueError(f"simulator parameter {f.name} must be a finite number >= 0, got {v!r}")
            if f.name in COUNTS and not isinstance(v, int):
                raise ValueError(f"simulator parameter {f.name} must be a whole number, got {v!r}")
            if f.name.endswith("_s") and v > MAX_SECONDS:  # summed over a run, they would overflow
                raise ValueError(f"simulator parameter {f.name} must be at most {MAX_SECONDS:g} seconds, got {v!r}")
        if self.bandwidth_Bps < MIN_BANDWIDTH_BPS:  # (0 would divide by zero; 1e-300 overflowed)
            raise ValueError(f"simulator parameter bandwidth_Bps must be at least {MIN_BANDWIDTH_BPS:g} byte/s, "
                             f"got {self.bandwidth_Bps!r}")

    def to_dict(self) -> dict[str, float]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "SimParams":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown simulator parameter {unknown[0]!r}")
        return cls(**data)

    def with_(self, **changes) -> "SimParams":
        return replace(self, **changes)

    def cpu_scaled(self, factor: float) -> "SimParams":
        """Every CPU cost stretched by `factor` (threads sharing fewer cores than they are)."""
        return replace(self, **{name: getattr(self, name) * factor for name in CPU_COSTS
                                if getattr(self, name) is not None})

    def window_costs(self) -> tuple[float, float, float, float]:
        """Seconds per tuple (insert, slide, expire, read) of window maintenance. Unset ones
        follow the row costs, so a calibration prices them too: staging a tuple is a row
        insert (`row_write_s`), a slide flips a staged tuple's flag and an expiry deletes a
        row (`row_write_s` each), reading the active window reads rows (`row_read_s`)."""
        def pick(v, default):
            return default if v is None else v
        return (pick(self.window_insert_s, self.row_write_s),
                pick(self.window_slide_s, self.row_write_s),
                pick(self.window_expire_s, self.row_write_s),
                pick(self.window_read_s, self.row_read_s))

    # -- derived prices, used to explain designs and to derive cost-model weights ----------
    def latency(self, same_machine: bool) -> float:
        return self.local_latency_s if same_machine else self.net_latency_s

    def single_site_txn_s(self, cost: float = 1.0, rows_read: float = 10, rows_written: float = 0,
                          tuples_in: float = 10, tuples_out: float = 10) -> float:
        """Partition time of one single-sited transaction."""
        return (self.txn_overhead_s + cost * self.cost_unit_s + rows_read * self.row_read_s
                + rows_written * self.row_write_s + tuples_in * self.tuple_in_s
                + tuples_out * self.tuple_out_s)

    def two_pc_hold_s(self, exec_s: float, remote_rounds: int, participants: int,
                      same_machine: bool, fragment_rows: float = 10) -> float:
        """How long the base partition is held by a distributed transaction when nothing queues,
        as the engine runs one: the lock request to the other partition carries the remote work
        of a declared SP (a round trip plus that work), then the body runs (`exec_s`), then
        `remote_rounds` dependent fragment rounds (nested groups, MOVE transactions), then 2PC:
        prepare and vote, and the commit (the decision is not acknowledged)."""
        # a round trip: each message costs CPU to send and to receive, and the latency
        rtt = 2 * self.latency(same_machine) + 4 * (self.local_msg_cpu_s if same_machine else self.msg_cpu_s)
        fragment = self.fragment_s + fragment_rows * self.row_read_s
        lock = (rtt + fragment) if participants > 1 else 0.0
        rounds = remote_rounds * (rtt + fragment)
        two_pc = (rtt + self.prepare_s) if participants > 1 else 0.0
        return lock + exec_s + rounds + two_pc + self.commit_s


# The dissertation's 2016 cluster as the published-shape experiments model it (`scenarios.py`,
# bench/sim_shapes.py): the reference costs above with the SP work unit they were set with,
# 40 us per unit of `cost`. `SimParams()` itself uses the bundled engine's unit, 100 us (the
# engine runs cost x cost_unit_us of CPU per declared SP). With 100 us the SPs of the 32-SP
# chain and of TPC-DI weigh 2.5x more against the same messaging: the central scheduler's
# plateau moves from 4 to 8 machines and TPC-DI's big SP falls to 0.52x instead of 0.38x
# across machines (docs/simulator.md).
REFERENCE_2016 = SimParams(cost_unit_s=40e-6)
