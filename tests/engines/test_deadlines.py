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


def test_a_duplicate_kept_with_its_connection_is_cut_off_and_outlives_the_call():
    """PostgreSQL's calls watch a duplicate of their connection's socket made once per connection: a
    cutoff shuts it down like its own, leaves it open when disarmed (the next call watches it
    again), and it is closed when the connection is released or collected."""
    import gc
    import socket

    from mcpgen.engines.deadlines import Cutoff, kept_duplicate, release_duplicate

    class Owner:  # stands for a driver's connection object
        pass

    a, b = socket.socketpair()
    owner, other = Owner(), Owner()
    try:
        kept = kept_duplicate(owner, a.fileno())
        assert kept_duplicate(owner, a.fileno()) is kept and kept.fileno() != a.fileno()
        with Cutoff(5) as cutoff:
            cutoff.attach(kept)
        assert kept.fileno() >= 0 and not cutoff.fired  # disarmed: the kept duplicate stays open
        with Cutoff(0.05) as cutoff:
            cutoff.attach(kept)
            assert a.recv(1) == b"" and cutoff.fired  # the deadline shut the socket down
        release_duplicate(owner)
        assert kept.fileno() == -1
        collected = kept_duplicate(other, b.fileno())
        del other
        gc.collect()
        assert collected.fileno() == -1
    finally:
        a.close()
        b.close()
