"""The multi-process runtime: one OS process per partition (a single thread running its site:
partition, co-located schedulers, command log), the driver in this process, messages over
Unix sockets (transport.Net). A crash is real: the partition's process is killed with
SIGKILL, the survivors drop their volatile state, a new process takes the dead one's place,
and the driver recovers them all from the snapshot and the command logs on disk.
"""
from __future__ import annotations

import ctypes
import multiprocessing as mp
import os
import shutil
import signal
import socket
import sys
import threading
import time
from pathlib import Path

from costmodel.errors import DISK_ERRNOS, describe_os_error
from costmodel.files import errno_of
from costmodel.signals import deferred as signals_deferred
from costmodel.temp_dirs import owned_temp_dir
from engine_sim.engine import messages as m
from engine_sim.engine.driver import Driver, DriverConfig
from engine_sim.engine.crash import start_recovery
from engine_sim.engine.errors import EngineFailure
from engine_sim.engine.forkserver import forkserver_context, forkserver_end, main_module_hidden
from engine_sim.engine.payload import StreamPayload
from engine_sim.engine.plan import DRIVER
from engine_sim.engine.site import SiteConfig
from engine_sim.engine.transport import Net, connect_with_hello, longest_socket_name, socket_path

IDLE_WAIT_S = 0.05  # longest sleep of an idle loop (a message wakes it at once)


PHASE_WORDS = {"run": "running the batches", "finish": "finishing the run", "recover": "recovering"}


def _own_cpu_share() -> None:
    """Run this partition in a session of its own. Linux shares the CPU fairly between
    sessions (autogroup), not between processes: left in the driver's session, every partition
    of a run would split one session's share on a busy host, so a design on more machines
    could not get more CPU, as separate machines would. Off the terminal's session, a Ctrl-C
    reaches only the driver, which stops its partitions."""
    try:
        os.setsid()
    except OSError:  # already a session leader
        pass


def site_main(node: int, args: dict) -> None:
    """A partition process (see `_serve`). A disk error (a full or read-only log directory)
    ends it with one line naming the file (or, where the error does not say which, the run's
    log directory) and the errno, sent to the driver, which ends the run with it; so does a
    failure it says in a line (a command log or snapshot changed on disk, found recovering:
    it reached multiprocessing's traceback, and the driver said only "exited with status 1")."""
    try:
        _serve(node, args)
    except OSError as exc:
        number = errno_of(exc)
        if number not in DISK_ERRNOS:
            raise
        where = exc.filename or args["site_cfg"].run_dir
        _tell_driver(args, f"partition {node}: {describe_os_error(OSError(number, os.strerror(number), where))}")
    except EngineFailure as exc:
        _tell_driver(args, f"partition {node}: {exc}")


def _tell_driver(args: dict, line: str) -> None:
    """End this partition with `line`, sent to the driver (which ends the run with it)."""
    try:
        args["failures"].send(line)
    except OSError:  # no driver to tell: say it here
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    os._exit(1)


def _serve(node: int, args: dict) -> None:
    """Build the plan, serve messages until told to stop."""
    _own_cpu_share()
    from engine_sim.engine.plan import build_plan
    from engine_sim.engine.recovery import FileLogStore
    from engine_sim.engine.site import Site

    _die_with_parent(args["sock_dir"], args["site_cfg"].secret)
    plans = []  # the plan of each era: the run's design, and the design it migrates to
    for design in args["designs"]:
        plans.append(build_plan(args["workload"], design, **args["plan"]))
        plans[-1].abort_rate = args["abort_rate"]
        plans[-1].restart_limit = args["restart_limit"]
        plans[-1].crash_at = args["crash_at"]
    plan_of = plans.__getitem__
    plan = plan_of(args["era"])
    cfg: SiteConfig = args["site_cfg"]
    net = Net(node, args["sock_dir"], plan.machine, args["delay_s"], secret=cfg.secret,
              payload=StreamPayload(plan.workload.streams))
    store = FileLogStore(Path(cfg.run_dir) / f"p{node}.log", cfg.fsync, secret=cfg.secret)
    site = Site(node, plan, cfg, net, store, epoch=args["epoch"], clock=args["clock"], era=args["era"],
                plan_of=plan_of)
    net.send(DRIVER, m.Ready(node, os.getpid(), site.epoch))
    net.flush(site.clock, site.epoch)
    busy_wait = 0.0
    while True:
        due = net.next_due()
        timeout = busy_wait
        if due is not None:
            timeout = min(timeout, max(0.0, due - time.perf_counter()))
        bundles = net.poll(timeout)
        got = False
        for b in bundles:
            if b.epoch < site.epoch:
                continue  # sent before a crash: void
            site.observe(b.clock)
            for msg in b.messages:
                if type(msg) is m.Reset:
                    net.reset()
                    site = Site(node, plan_of(msg.era), cfg, net, store, epoch=msg.epoch,
                                clock=max(msg.clock, site.clock), era=msg.era, plan_of=plan_of)
                    net.send(DRIVER, m.Ready(node, os.getpid(), site.epoch))
                    break
                if type(msg) is m.Stop:
                    net.flush(site.clock, site.epoch)
                    _drain(net)
                    store.close()
                    net.close()
                    return
                site.handle(msg, b.src)
                got = True
        did = work_turn(site, net, got)
        # after work, look once more without waiting; otherwise sleep in the poll until a
        # message comes: never spin on a core the other partitions need. An idle turn has
        # written the log group and sent acknowledgements and history (on_idle), so no timer
        # is due; output a full socket holds back is retried shortly.
        busy_wait = 0.0 if (did or got) else (0.0005 if net.has_output() else IDLE_WAIT_S)


def work_turn(site, net, got: bool) -> bool:
    """A loop turn's work once its messages (`got`: any) are handled; True if it did any.

    What handling the messages produced goes out first: a COMMIT held back behind the next
    serving slice kept its participants locked, and idle, for up to a slice more (2 ms), and
    a lock reply or a vote kept its coordinator (holding its own partition) waiting as long.
    Then a slice of the queue, and what the slice produced."""
    if got:
        net.flush(site.clock, site.epoch)
    did = site.poll()
    if not got and not did:
        site.on_idle()
        did = site.runnable()  # the log group it wrote may have released work here
    net.flush(site.clock, site.epoch)
    return did


PR_SET_PDEATHSIG = 1
WATCH_INTERVAL_S = 0.2


def _die_with_parent(sock_dir: str, secret: bytes) -> None:
    """A partition must not outlive its driver. On Linux the kernel kills it when its parent
    (the forkserver) dies (PR_SET_PDEATHSIG); but the forkserver outlives the driver while any
    partition lives, so a watchdog thread also holds a connection to the driver's socket: the
    driver's death closes it (EOF), and the partition exits at once. The watchdog also exits
    when the parent changed (portable, where prctl is missing). Its connection says the run's
    hello first: unheard, the driver counted it among strangers, and past 32 partitions closed
    the oldest such, ending its partition ("exited with status 1 while starting partitions").
    An end before the driver answers that it heard the hello (HEARD) is such a close, not the
    driver's death (a flood of strangers on the driver's socket): it connects again."""
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass  # the watchdog below still works
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)

    def connect() -> socket.socket:
        try:
            sock = connect_with_hello(socket_path(sock_dir, DRIVER), secret)
        except OSError:
            os._exit(1)  # no driver to serve
        sock.settimeout(WATCH_INTERVAL_S)
        return sock

    sock = connect()

    def watch() -> None:
        nonlocal sock
        heard = False
        while True:
            try:
                answer = sock.recv(1)
            except socket.timeout:
                answer = None
            except OSError:  # (closed with the hello unread: ECONNRESET)
                answer = b""
            if answer:
                heard = True  # HEARD
            elif answer is not None:
                if heard:
                    os._exit(1)  # the end: the driver is gone
                sock.close()  # closed unheard, among strangers
                sock = connect()
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="driver-watchdog", daemon=True).start()


def _drain(net: Net, seconds: float = 0.5) -> None:
    end = time.perf_counter() + seconds
    while net.has_output() and time.perf_counter() < end:
        net.flush(0, 0)
        time.sleep(0.001)


class MultiProcessRuntime:
    def __init__(self, plan, site_cfg: SiteConfig, driver_cfg: DriverConfig, delay_s: float, *,
                 workload, design, options: dict, next_plan=None):
        self.plan = plan
        self.ctx = forkserver_context()
        self.sock_dir = str(owned_temp_dir("engs-", longest_socket_name=longest_socket_name(plan.n_partitions)))
        # until `run` takes it over, the socket directory is removed here on any exception:
        # Ctrl-C while the runtime was built (a pipe, the driver) left it in TMPDIR
        try:
            self.net = Net(DRIVER, self.sock_dir, plan.machine, delay_s, secret=site_cfg.secret,
                           payload=StreamPayload(plan.workload.streams))
            plan_opts = {k: options[k] for k in ("seed", "batch_size", "scheduler", "move", "recovery",
                                                 "data_parallel")}
            designs = (design,) if next_plan is None else (design, next_plan.design)
            # the one line a partition that hit a disk error says, for the driver to end the run with
            self.failures, failures = self.ctx.Pipe(duplex=False)
            self.args = dict(failures=failures, workload=workload, designs=designs, plan=plan_opts, era=0,
                             abort_rate=float(options["abort_rate"]), restart_limit=int(options["restart_limit"]),
                             site_cfg=site_cfg, sock_dir=self.sock_dir, delay_s=delay_s, epoch=0, clock=0,
                             crash_at=options.get("crash_at"))
            self.driver = Driver(plan, driver_cfg, self, next_plan)
            self.procs: dict[int, mp.Process] = {}
            self.pids: list[int] = []  # every partition process this run started
            self.killed: set[int] = set()  # pids this driver killed on purpose (a requested crash)
            self.deadline: float | None = None  # perf_counter time the run must end by
            self.messages = 0
            self.refused = 0  # frames refused by any process of the run: not sealed by it
            self.payload_bytes = 0  # padding the run's processes sent (payload.py)
            self.log_stats: list = []
            self.finals_log = {}
        except BaseException:
            shutil.rmtree(self.sock_dir, ignore_errors=True)
            raise

    # -- processes ---------------------------------------------------------------------------------
    def _spawn(self, node: int, epoch: int, clock: int, era: int | None = None) -> None:
        args = dict(self.args, epoch=epoch, clock=clock, era=self.driver.era if era is None else era)
        p = self.ctx.Process(target=site_main, args=(node, args), name=f"partition-{node}", daemon=True)
        with main_module_hidden():
            p.start()
        self.procs[node] = p
        self.pids.append(p.pid)

    def send(self, dst: int, msg) -> None:
        self.net.send(dst, msg)

    def crash(self, node: int, epoch: int, clock: int) -> None:
        """Kill the partition's process (SIGKILL: no goodbye), reset the others, restart it."""
        proc = self.procs[node]
        self.killed.add(proc.pid)
        if proc.exitcode is None:
            try:
                os.kill(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass  # it killed itself (a crash point)
        proc.join(self._left(10.0))
        if proc.exitcode is None:
            raise EngineFailure(f"partition {node} process {proc.pid} did not die after SIGKILL")
        self.net.drop(node)
        for k in self.procs:
            if k != node:
                self.net.send(k, m.Reset(epoch, clock, self.driver.era))
        self._spawn(node, epoch, clock)

    def restart(self, era: int, clock: int) -> None:
        """A migration's stop and restart: every partition process stops (each dumped its
        state), and a new one per partition starts under design `era`; back once all are up."""
        d = self.driver
        for k in self.procs:
            self.net.send(k, m.Stop())
        self.net.flush(d.clock, d.epoch)
        _drain(self.net)
        for k, p in list(self.procs.items()):
            p.join(self._left(10.0))
            if p.exitcode is None:
                raise EngineFailure(f"partition {k} process {p.pid} did not stop for the restart")
            self.killed.add(p.pid)
            self.net.drop(k)
        for k in list(self.procs):
            self._spawn(k, d.epoch, clock, era)
        self._await_ready("restarting partitions")

    # -- the loop ----------------------------------------------------------------------------------
    def run(self, deadline_s: float | None = None) -> Driver:
        d = self.driver
        started = self.started = time.perf_counter()
        self.deadline_s = deadline_s
        self.deadline = None if deadline_s is None else started + deadline_s
        try:
            for k in range(self.plan.n_partitions):
                self._spawn(k, 0, 0)
            self._await_ready("starting partitions")
            d.t_started = time.perf_counter()
            cpu_started = time.process_time()
            idle = 0.0
            checked = 0.0
            while not d.finished:
                due = self.net.next_due()
                timeout = idle if due is None else min(idle, max(0.0, due - time.perf_counter()))
                got = d.handle_bundles(self.net.poll(timeout))
                did = d.poll()
                self.net.flush(d.clock, d.epoch)
                idle = 0.0 if (got or did) else (0.0005 if self.net.has_output() else IDLE_WAIT_S)
                now = time.perf_counter()
                if now - checked > 0.1:  # the processes' health, 10 times a second: not per message
                    checked = now
                    self._check(started, deadline_s, PHASE_WORDS.get(d.phase, d.phase))
            d.cpu_s = time.process_time() - cpu_started
            self.messages = self.net.sent + sum(r.sent for r in d.finals.values())
            self.refused = self.net.refused + sum(r.refused for r in d.finals.values())
            self.payload_bytes = self.net.payload_sent + sum(r.payload_bytes for r in d.finals.values())
            return d
        finally:
            self._stop()

    def _await_ready(self, what: str) -> None:
        """Until every partition process said Ready (anything else goes to the driver)."""
        d = self.driver
        ready: set[int] = set()
        while len(ready) < self.plan.n_partitions:
            for b in self.net.poll(0.05):
                for msg in b.messages:
                    if type(msg) is m.Ready:
                        ready.add(msg.node)
                    elif b.epoch >= d.epoch:
                        d.handle(msg, b.src)
            self._check(self.started, self.deadline_s, what)

    def _left(self, most: float) -> float:
        """Seconds a blocking step may take: at most `most`, never past the run's deadline."""
        if self.deadline is None:
            return most
        return max(0.0, min(most, self.deadline - time.perf_counter()))

    def _check(self, started: float, deadline_s, what: str) -> None:
        """Every turn of every wait: a partition process that died unasked ends the run (or,
        when a crash point was asked for, starts recovery); so does the deadline."""
        for k, p in list(self.procs.items()):
            if p.is_alive() or p.pid in self.killed:
                continue
            d = self.driver
            point = p.exitcode == -signal.SIGKILL and self.args["crash_at"] is not None
            if point and not d.crashed and d.phase == "run":
                start_recovery(d, k)  # a crash point fired: the partition killed itself
                continue
            if point and d.recovery is not None and d.recovery.step == "ready":
                # a second partition reached the crash point before the Reset reached it: it is
                # part of the same crash, restart it too
                self.killed.add(p.pid)
                self.net.drop(k)
                self._spawn(k, d.epoch, d.clock)
                continue
            if self.failures.poll():
                raise EngineFailure(self.failures.recv())
            server = forkserver_end()
            if server is not None:  # the partitions died with it (their parent): it is the cause
                raise EngineFailure(f"the engine's forkserver (multiprocessing's, pid {server[0]}, the parent of "
                                    f"every partition process) {server[1]} while {what}; the partitions "
                                    "died with it")
            how = "was killed by signal %d" % -p.exitcode if (p.exitcode or 0) < 0 else \
                f"exited with status {p.exitcode}"
            raise EngineFailure(f"partition {k} process {how} while {what}")
        if deadline_s is not None and time.perf_counter() - started > deadline_s:
            raise EngineFailure(f"engine run exceeded its {deadline_s:g} s deadline while {what} "
                                f"(timeout_s)")

    def _stop(self, grace_s: float = 5.0) -> None:
        """Stop every partition: ask, wait at most `grace_s` in all, then SIGKILL the rest; the
        socket directory goes last. A signal meanwhile waits for the end (cut short, the stop
        left the socket directory in TMPDIR)."""
        with signals_deferred():
            self._stop_all(grace_s)

    def _stop_all(self, grace_s: float) -> None:
        for k in self.procs:
            self.net.send(k, m.Stop())
        try:
            self.net.flush(self.driver.clock, self.driver.epoch)
            _drain(self.net)
        except Exception:  # noqa: BLE001 - shutting down anyway
            pass
        end = time.perf_counter() + grace_s
        for p in self.procs.values():
            p.join(max(0.0, end - time.perf_counter()))
        for p in self.procs.values():
            if p.is_alive():
                p.kill()
        for p in self.procs.values():
            p.join(1.0)
        self.net.close()
        self.failures.close()
        self.args["failures"].close()
        shutil.rmtree(self.sock_dir, ignore_errors=True)
        self.log_stats = [(r.log_records, r.log_flushes) for r in self.driver.finals.values()]
