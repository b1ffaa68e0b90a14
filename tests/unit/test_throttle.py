"""The one throttle of the views: bounded update rate, a last update after the last change, none
after close. Waits on conditions, with deadlines only to fail a hung test."""

from __future__ import annotations

import threading
import time

from rlm_kernel.jupyter.throttle import Throttle


def test_many_pokes_make_few_updates_and_the_last_change_is_shown():
    shown, done = [], threading.Event()
    value = {"n": 0}

    def update():
        shown.append(value["n"])
        if value["n"] == 1000:
            done.set()

    throttle = Throttle(update, interval=0.05)
    for i in range(1, 1001):
        value["n"] = i
        throttle.poke()
    assert done.wait(10)
    assert shown[-1] == 1000 and len(shown) < 1000


def test_no_update_after_close_even_from_a_timer_that_already_fired():
    fired = threading.Event()
    throttle = Throttle(fired.set, interval=60)
    throttle._last = time.monotonic()  # an update just now: the next one waits its interval
    throttle.poke()
    throttle.close()
    throttle.poke()
    throttle._fire()  # what a timer that had already started would do
    assert not fired.is_set() and throttle._timer is None
