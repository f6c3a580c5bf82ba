"""Fair slots: a bound on queries at once, a released slot going to the oldest waiter."""

import threading
import time

import pytest

from mcpgen.engines.slots import FairSlots
from mcpgen.errors import QueryError


def test_a_busy_connection_is_one_sentence_after_the_wait():
    slots = FairSlots(1)
    with slots.held("warehouse", timeout=1), pytest.raises(QueryError) as err, slots.held("warehouse", timeout=0.05):
        pass
    assert str(err.value) == (
        "connection 'warehouse' is busy: 1 queries are already running and none finished within 0.05 s; try again shortly"
    )
    assert slots.acquire(0) is True  # released again on the way out


def test_waiters_are_served_in_arrival_order():
    slots, order = FairSlots(1), []
    assert slots.acquire(1)

    def wait(name):
        assert slots.acquire(5)
        order.append(name)
        slots.release()

    threads = []
    for name in "abcd":
        threads.append(threading.Thread(target=wait, args=(name,)))
        threads[-1].start()
        time.sleep(0.05)  # each is waiting before the next arrives
    slots.release()
    for t in threads:
        t.join(5)
    assert order == list("abcd")


def test_a_waiter_that_gave_up_leaves_no_slot_behind():
    slots = FairSlots(2)
    assert slots.acquire(0) and slots.acquire(0)
    assert slots.acquire(0.01) is False
    slots.release()
    slots.release()
    assert slots.acquire(0) and slots.acquire(0) and not slots.acquire(0)
