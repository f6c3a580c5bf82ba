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


def test_a_waiter_behind_a_queue_that_moves_waits_past_the_timeout():
    """The timeout is how long the queue may stand still, not how long a call may queue: five calls of
    0.3 s each on one slot with a 1 s timeout all run, the last after waiting 1.2 s, as the message says.
    (Each holder has 0.7 s to spare for a loaded machine's scheduling before the queue would stand still.)"""
    slots, ran, waited = FairSlots(1), [], {}

    def call(name):
        start = time.monotonic()
        with slots.held("duck", timeout=1):
            waited[name] = time.monotonic() - start
            time.sleep(0.3)
            ran.append(name)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(ran) == list(range(5))
    assert max(waited.values()) > 1  # one of them waited past the timeout, and ran


# Admission: the wait in the event loop, before a call takes a worker thread ---------------------


def test_admission_serves_in_order_and_bounds_its_queue():
    import anyio

    from mcpgen.engines.slots import Admission

    gate = Admission("pg", slots=1, timeout=5, queue=2, threads=1)
    order: list[str] = []
    refused: list[str] = []

    async def main():
        go = anyio.Event()

        async def call(name: str):
            try:
                async with gate.admitted():
                    order.append(name)
                    await go.wait()
            except QueryError as exc:
                refused.append(str(exc))

        async with anyio.create_task_group() as tg:
            for i in range(5):  # one runs, two wait, two are refused at once
                tg.start_soon(call, f"c{i}")
                await anyio.wait_all_tasks_blocked()
            assert order == ["c0"] and gate.waiting == 2 and len(refused) == 2
            go.set()

    anyio.run(main)
    assert order == ["c0", "c1", "c2"]
    assert (
        refused
        == [
            "connection 'pg' is busy: 1 queries are running and 2 more are waiting, the most it queues; try again shortly"
        ]
        * 2
    )
    assert gate.waiting == 0 and gate._free == gate.threads  # every slot back


def test_admission_times_out_with_one_sentence_and_leaves_no_slot_behind():
    import anyio

    from mcpgen.engines.slots import Admission

    gate = Admission("duck", slots=1, timeout=0.05, threads=1)

    async def main():
        async with gate.admitted():
            with pytest.raises(QueryError, match=r"connection 'duck' is busy: .* none finished within 0.05 s"):
                async with gate.admitted():
                    pass
            with anyio.move_on_after(0.02):  # a caller cancelled while waiting: no slot kept for it
                async with gate.admitted():
                    raise AssertionError("admitted while the slot was held")
        async with gate.admitted():  # free again
            pass

    anyio.run(main)
    assert gate.waiting == 0 and gate._free == gate.threads


def test_admission_hands_a_slot_to_a_waiter_in_another_event_loop():
    import anyio

    from mcpgen.engines.slots import Admission

    gate = Admission("duck", slots=1, timeout=5, threads=1)
    held, admitted = threading.Event(), []

    async def holder():
        async with gate.admitted():
            held.set()
            await anyio.sleep(0.2)

    async def waiter():
        async with gate.admitted():
            admitted.append(time.monotonic())

    other = threading.Thread(target=anyio.run, args=(holder,))
    other.start()
    held.wait(5)
    started = time.monotonic()
    anyio.run(waiter)  # this loop waits; the holder's loop, in its thread, releases
    other.join(5)
    assert admitted and 0.1 < admitted[0] - started < 2
    assert gate._free == gate.threads


def test_admission_lets_twice_the_slots_into_threads_by_default():
    from mcpgen.engines.slots import Admission

    assert Admission("pg", slots=3, timeout=1).threads == 6


def test_admission_waits_while_calls_keep_ending_and_refuses_once_none_ends():
    import anyio

    from mcpgen.engines.slots import Admission

    gate = Admission("duck", slots=1, timeout=0.25, threads=1)
    ran: list[int] = []
    refused: list[str] = []

    async def call(i: int, seconds: float):
        try:
            async with gate.admitted():
                await anyio.sleep(seconds)
                ran.append(i)
        except QueryError as exc:
            refused.append(str(exc))

    async def main():
        async with anyio.create_task_group() as tg:  # six calls of 0.1 s: the last waits 0.5 s
            for i in range(6):
                tg.start_soon(call, i, 0.1)
        assert sorted(ran) == list(range(6)) and refused == []
        async with anyio.create_task_group() as tg:  # one call that stands still: the next is refused
            tg.start_soon(call, 6, 1.0)
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(call, 7, 0.0)
        assert 7 not in ran and len(refused) == 1 and "none finished within 0.25 s" in refused[0]

    async def bounded():
        with anyio.fail_after(20):
            await main()

    anyio.run(bounded)
    assert gate.waiting == 0 and gate._free == gate.threads
