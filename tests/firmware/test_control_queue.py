"""The bus adapter's requests to the firmware simulator's loop (a twin query, a scramble) wake
that loop's select at once: an idle loop otherwise sleeps up to its poll interval first, and
every cycle's verification waited for it."""

from __future__ import annotations

import queue
import select

from robocell.services.firmware.serial_server import ControlQueue, run_control


def readable(control: ControlQueue) -> bool:
    return bool(select.select([control], [], [], 0)[0])


def test_a_request_makes_the_loop_readable_and_running_it_quiets_it():
    control = ControlQueue()
    assert not readable(control)
    reply: queue.Queue = queue.Queue()
    control.put((lambda target: target * 2, reply))
    assert readable(control)  # the select the loop sleeps in returns now
    run_control(control, 21)
    assert reply.get_nowait() == 42 and not readable(control)


def test_many_requests_before_the_loop_runs_are_all_answered():
    control = ControlQueue()
    replies = [queue.Queue() for _ in range(3)]
    for n, reply in enumerate(replies):
        control.put((lambda target, n=n: target + n, reply))
    run_control(control, 10)
    assert [r.get_nowait() for r in replies] == [10, 11, 12] and not readable(control)
