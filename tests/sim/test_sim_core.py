"""The event core: time order, first-scheduled-first ties, processes, `until`."""
from engine_sim.sim.core import Environment


def test_events_run_in_time_order_and_ties_in_scheduling_order():
    env = Environment()
    seen = []
    record = lambda t, a, b: seen.append((t, a))  # noqa: E731
    for t, label in [(3.0, "c"), (1.0, "a"), (2.0, "b1"), (2.0, "b2"), (2.0, "b3")]:
        env.at(t, record, label)
    env.run()
    assert seen == [(1.0, "a"), (2.0, "b1"), (2.0, "b2"), (2.0, "b3"), (3.0, "c")]
    assert env.now == 3.0 and env.events == 5


def test_handlers_schedule_more_events_and_the_past_is_clamped_to_now():
    env = Environment()
    seen = []

    def tick(t, n, _):
        seen.append(t)
        if n:
            env.at(t - 5.0, tick, n - 1)  # "in the past": runs now, never goes back in time

    env.at(1.0, tick, 3)
    env.run()
    assert seen == [1.0, 1.0, 1.0, 1.0]


def test_processes_resume_after_each_yielded_delay_and_until_stops_early():
    env = Environment()
    times = []

    def clock():
        for _ in range(5):
            times.append(env.now)
            yield 0.5

    env.process(clock(), start=1.0)
    env.run(until=2.2)
    assert times == [1.0, 1.5, 2.0]
    env.run()
    assert times == [1.0, 1.5, 2.0, 2.5, 3.0]
