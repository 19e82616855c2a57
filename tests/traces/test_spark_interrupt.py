"""Ctrl-C and SIGTERM while Spark's JVM starts, and while Spark runs: the command ends in one
line with 130 or 143, no Java output reaches the terminal, and afterwards no process it started
runs and nothing of it is left in the temporary directory. A SIGKILL leaves the JVM's owned
directory, which the next run recognises and removes (the JVM itself exits on its own when
its driver's pipe closes).

Every process of a command carries a marker in its environment, so the test finds them even
after they left the command's process tree (an orphan JVM is adopted by init)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

pytestmark = pytest.mark.process

ADVISOR = [sys.executable, "-m", "advisor"]
MARK = "ADVISOR_INTERRUPT_TEST"


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("trace") / "trace"
    done = subprocess.run([*ADVISOR, "trace", "synth", "move-micro", "-n", "30", "-o", str(out), "-q"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return out


def marked(token: str) -> list[psutil.Process]:
    """Every process whose environment carries `token` (the command and all it started)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get(MARK) == token:
                found.append(proc)
        except (psutil.Error, OSError):
            continue
    return found


class Command:
    """`advisor ARGS` in a session of its own (as a shell runs a foreground job), its
    stderr in a file, every process of it marked."""

    def __init__(self, args: list[str], tmp: Path):
        self.token = uuid.uuid4().hex
        self.tmp = tmp
        self.err_path = tmp.parent / f"{tmp.name}.stderr"
        self.err = open(self.err_path, "wb")
        env = {**os.environ, "TMPDIR": str(tmp), MARK: self.token, "SPARK_LOCAL_IP": "127.0.0.1"}
        env.pop("ADVISOR_SPARK_LOG", None)
        self.proc = subprocess.Popen([*ADVISOR, *args], stdout=subprocess.DEVNULL, stderr=self.err,
                                     env=env, start_new_session=True)

    def started(self, *markers: str) -> bool:
        """Whether a process of the command runs with one of `markers` in its command line."""
        try:
            children = psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return False
        for child in children:
            try:
                line = " ".join(child.cmdline())
            except psutil.Error:
                continue
            if any(m in line for m in markers):
                return True
        return False

    def launching(self) -> bool:
        """Spark's launch scripts run (the JVM's command line is being built)."""
        return self.started("spark-submit", "spark-class", "org.apache.spark.launcher.Main")

    def jvm(self) -> bool:
        """Spark's driver JVM runs (starting up, or serving)."""
        return self.started("org.apache.spark.deploy.SparkSubmit")

    def wait_for(self, ready, what: str, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            assert self.proc.poll() is None, f"the command ended before {what}: {self.stderr()}"
            assert time.monotonic() < deadline, f"no {what} within {timeout} s"
            time.sleep(0.05)

    def signal(self, sig: int) -> None:
        """SIGINT as the terminal's Ctrl-C sends it (to the whole foreground process group),
        SIGTERM and SIGKILL as `kill` does (to the command's process)."""
        if sig == signal.SIGINT:
            os.killpg(self.proc.pid, sig)
        else:
            self.proc.send_signal(sig)

    def finish(self, timeout: float = 120) -> int:
        code = self.proc.wait(timeout)
        self.err.close()
        return code

    def stderr(self) -> str:
        return self.err_path.read_text(errors="replace")

    def survivors(self, within: float = 0.0) -> list[psutil.Process]:
        """The command's processes still running after `within` seconds (then killed)."""
        deadline = time.monotonic() + within
        while True:
            alive = [p for p in marked(self.token) if p.status() != psutil.STATUS_ZOMBIE]
            if not alive or time.monotonic() >= deadline:
                break
            time.sleep(0.2)
        for p in alive:
            p.kill()
        return alive


def leftovers(tmp: Path) -> list[str]:
    return sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*"))


def interrupted(cmd: Command, sig: int) -> None:
    code = cmd.finish()
    time.sleep(0.5)  # anything a stray JVM would still print
    expected = {signal.SIGINT: (130, "interrupted"), signal.SIGTERM: (143, "terminated")}[sig]
    alive = cmd.survivors()  # first: a failed assertion below leaves nothing running either
    lines = [line for line in cmd.stderr().splitlines() if line.strip()]
    assert (code, lines[-1:]) == (expected[0], [expected[1]]), cmd.stderr()[-3000:]
    assert not any("Exception" in line or "\tat " in line or "WARNING" in line for line in lines), lines
    assert not alive, f"left running: {[(p.pid, p.name()) for p in alive]}"
    assert leftovers(cmd.tmp) == []


def aggregate(trace: Path, tmp: Path, *options: str) -> Command:
    return Command(["trace", "aggregate", str(trace), "-o", str(tmp.parent / f"{tmp.name}.stats"), "-q",
                    *options], tmp)


def fresh_tmp(tmp_path: Path, name: str) -> Path:
    tmp = tmp_path / name
    tmp.mkdir()
    return tmp


@pytest.mark.parametrize("sig", [signal.SIGINT, pytest.param(signal.SIGTERM, marks=pytest.mark.slow)],
                         ids=["SIGINT", "SIGTERM"])
def test_a_signal_as_the_jvm_starts_stops_it_and_removes_its_files(trace, tmp_path, sig):
    cmd = aggregate(trace, fresh_tmp(tmp_path, "tmp"))
    cmd.wait_for(cmd.jvm, "JVM")
    time.sleep(0.5)
    cmd.signal(sig)
    interrupted(cmd, sig)
    assert not (tmp_path / "tmp.stats").exists()


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("moment", ["launch scripts", "JVM +0 s", "JVM +1.5 s", "JVM +3 s"])
def test_a_signal_at_any_moment_of_the_jvm_start(trace, tmp_path, sig, moment):
    cmd = aggregate(trace, fresh_tmp(tmp_path, "tmp"))
    if moment == "launch scripts":
        cmd.wait_for(cmd.launching, "Spark launch scripts")
    else:
        cmd.wait_for(cmd.jvm, "JVM")
        time.sleep(float(moment.split("+")[1].split()[0]))
    cmd.signal(sig)
    interrupted(cmd, sig)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_spark_runs_the_jobs(trace, tmp_path, sig):
    """Without -q: the progress line of the started session says when the jobs begin."""
    cmd = Command(["trace", "aggregate", str(trace), "-o", str(tmp_path / "stats")], fresh_tmp(tmp_path, "tmp"))
    cmd.wait_for(lambda: "Spark session: done" in cmd.stderr(), "Spark session")
    time.sleep(0.3)
    cmd.signal(sig)
    interrupted(cmd, sig)
    assert not (tmp_path / "stats").exists()


@pytest.mark.slow
def test_what_a_killed_command_leaves_is_removed_by_the_next(trace, tmp_path):
    """SIGKILL runs no clean-up: the JVM exits by itself (its stdin closes) and its owned
    directory stays; the next command removes it, and leaves one of a live process alone."""
    tmp = fresh_tmp(tmp_path, "tmp")
    cmd = aggregate(trace, tmp)
    cmd.wait_for(cmd.jvm, "JVM")
    time.sleep(2.0)
    cmd.signal(signal.SIGKILL)
    assert cmd.finish() == -signal.SIGKILL
    assert cmd.survivors(within=30) == []  # the JVM saw its pipe close and exited
    left = [p.name for p in tmp.iterdir()]
    assert len(left) == 1 and left[0].startswith("advisor-jvm-"), left
    live = tmp / "advisor-jvm-live"
    live.mkdir()
    (live / ".owner-pid").write_text(f"{os.getpid()}\n")
    after = aggregate(trace, tmp)
    after.wait_for(after.jvm, "JVM")
    assert not (tmp / left[0]).exists()
    after.signal(signal.SIGTERM)
    after.finish()
    assert leftovers(tmp) == ["advisor-jvm-live", "advisor-jvm-live/.owner-pid"]


@pytest.mark.slow
def test_a_ctrl_c_as_the_command_ends_is_no_traceback(trace, tmp_path):
    """A Ctrl-C in the half second after the statistics are written (the JVM killed, its files
    removed, Python finalising): it was a traceback through PySpark's SIGINT handler ("Exception
    ignored in atexit callback"), or a silent death by SIGINT (-2), in 24 of 30 tries. Now the
    command ends as it would have: its statistics written, status 0, nothing more said."""
    for i, delay in enumerate((0.0, 0.05, 0.1, 0.2, 0.3, 0.45)):
        out = tmp_path / f"stats{i}"
        cmd = Command(["trace", "aggregate", str(trace), "-o", str(out)], fresh_tmp(tmp_path, f"tmp{i}"))
        cmd.wait_for(lambda: f"writing statistics to {out}: done" in cmd.stderr(), "statistics written")
        time.sleep(delay)
        cmd.signal(signal.SIGINT)
        code = cmd.finish()
        alive = cmd.survivors()
        lines = [line for line in cmd.stderr().splitlines() if line.strip()]
        noise = [line for line in lines if not line.startswith("aggregate:")]
        # (130 and `interrupted`: the signal came before the command returned, after the write)
        assert (code, noise) in ((0, []), (130, ["interrupted"])), (delay, code, cmd.stderr()[-3000:])
        assert not alive and leftovers(cmd.tmp) == [] and (out / "_stats.json").exists()
