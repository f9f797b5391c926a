"""`runtime.threads.elastic`: every task once, on the caller's thread and on the threads the
budget lets in; a task's error raised to the caller; and no wait for a pool thread that
never started (its pool busy with another launch's)."""
from __future__ import annotations

import functools
import threading
import time

import pytest

from zktensor.runtime import threads


def tasks(n, fn):
    """A take() that hands out fn(0) .. fn(n-1) as tasks, once each."""
    it = iter(range(n))

    def take():
        k = next(it, None)
        return None if k is None else functools.partial(fn, k)
    return take


def test_every_task_once_and_the_threads_the_budget_lets_in():
    done, who = [], set()

    def task(k):
        who.add(threading.get_ident())
        time.sleep(0.002)
        done.append(k)
    threads.elastic(tasks(40, task), threads=1)
    assert done == list(range(40)) and who == {threading.get_ident()}
    done.clear(), who.clear()
    threads.elastic(tasks(40, task), threads=3)
    assert sorted(done) == list(range(40)) and len(who) > 1
    done.clear(), who.clear()
    threads.elastic(tasks(40, task), threads=3, most=1)
    assert done == list(range(40)) and who == {threading.get_ident()}


def test_a_tasks_error_reaches_the_caller():
    def task(k):
        time.sleep(0.001)
        if k == 7:
            raise KeyError("task 7")
    for t in (1, 2):
        with pytest.raises(KeyError, match="task 7"):
            threads.elastic(tasks(20, task), threads=t)


def test_no_wait_for_a_thread_that_never_started():
    """A thread of the pool still busy (here: blocked) when the work is all done is not
    waited for: its task is cancelled."""
    release = threading.Event()
    blockers = [threads.pool(2, "test-busy").submit(release.wait, 10) for _ in range(2)]
    try:
        done = []
        t = time.perf_counter()
        threads.elastic(tasks(5, done.append), threads=2, kind="test-busy")
        assert done == list(range(5)) and time.perf_counter() - t < 5
    finally:
        release.set()
        for b in blockers:
            b.result()
