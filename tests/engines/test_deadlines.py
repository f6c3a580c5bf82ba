"""Deadlines: one thread calls each callback when its time is up, in order, unless cancelled first."""

import threading
import time

from mcpgen.engines.deadlines import DEADLINES, Deadlines


def test_callbacks_fire_in_deadline_order_and_a_cancelled_one_never():
    deadlines, fired, done = Deadlines(), [], threading.Event()
    deadlines.watch(0.15, lambda: (fired.append("late"), done.set()))
    cancelled = deadlines.watch(0.05, lambda: fired.append("cancelled"))
    deadlines.watch(0.01, lambda: fired.append("early"))
    Deadlines.cancel(cancelled)
    assert done.wait(5)
    assert fired == ["early", "late"]


def test_one_thread_serves_every_deadline():
    deadlines, events = Deadlines(), [threading.Event() for _ in range(20)]
    before = threading.active_count()
    for event in events:
        deadlines.watch(0.01, event.set)
    assert all(event.wait(5) for event in events)
    assert threading.active_count() <= before + 1


def test_a_failing_callback_does_not_stop_the_others():
    fired = threading.Event()

    def broken():
        raise RuntimeError("the cursor is already closed")

    DEADLINES.watch(0.0, broken)
    DEADLINES.watch(0.01, fired.set)
    assert fired.wait(5)
    started = time.monotonic()
    entry = DEADLINES.watch(60, lambda: None)  # a far deadline does not hold a nearer one back
    DEADLINES.cancel(entry)
    again = threading.Event()
    DEADLINES.watch(0.01, again.set)
    assert again.wait(5) and time.monotonic() - started < 5
