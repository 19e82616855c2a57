"""The order of a partition process's loop turn (`multiproc.work_turn`): what handling the
turn's messages produced is sent before the next serving slice starts, so a COMMIT does not
keep its participants locked behind up to 2 ms of the coordinator's other work."""
from __future__ import annotations

from engine_sim.engine.multiproc import work_turn


class _Recorder:
    """A site and a transport that write down what the loop asks of them, in order."""

    clock, epoch = 7, 1

    def __init__(self, polled: bool = False, runnable: bool = False):
        self.calls: list[str] = []
        self.polled, self.runnable_now = polled, runnable

    def flush(self, clock: int, epoch: int) -> None:
        assert (clock, epoch) == (self.clock, self.epoch)
        self.calls.append("send")

    def poll(self) -> bool:
        self.calls.append("serve a slice")
        return self.polled

    def on_idle(self) -> None:
        self.calls.append("idle")

    def runnable(self) -> bool:
        self.calls.append("runnable?")
        return self.runnable_now


def test_what_the_messages_produced_is_sent_before_the_next_slice():
    r = _Recorder(polled=True)
    assert work_turn(r, r, got=True) is True
    assert r.calls == ["send", "serve a slice", "send"]


def test_a_turn_without_messages_serves_then_sends_once():
    r = _Recorder(polled=True)
    assert work_turn(r, r, got=False) is True
    assert r.calls == ["serve a slice", "send"]


def test_an_idle_turn_writes_its_log_group_and_says_whether_that_released_work():
    r = _Recorder(polled=False, runnable=True)
    assert work_turn(r, r, got=False) is True
    assert r.calls == ["serve a slice", "idle", "runnable?", "send"]
    quiet = _Recorder()
    assert work_turn(quiet, quiet, got=False) is False
