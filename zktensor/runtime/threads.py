"""How many threads host work may use, and the pools that run it.

A CPU launch (a compiled kernel, a numpy loop that drops the GIL) splits its work over
`launch_threads()` threads. Work that runs side by side (the nodes of a `runtime.graph`)
sets a smaller budget with `launch_budget`, so that the launches together ask for no more
threads than there are cores.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import functools
import os
import threading

from ..config import env


def num_threads() -> int:
    """Threads a CPU launch may use: ZKTENSOR_NUM_THREADS, else the CPUs this process may
    run on."""
    n = env("ZKTENSOR_NUM_THREADS")
    if n:
        return max(1, int(n))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover
        return os.cpu_count() or 1


_launch_budget: contextvars.ContextVar = contextvars.ContextVar("zktensor_launch_threads", default=None)


def launch_threads() -> int:
    """Threads one CPU launch may use: the budget of the running context (`launch_budget`),
    else num_threads()."""
    b = _launch_budget.get()
    if callable(b):
        return max(1, int(b()))
    return b or num_threads()


@contextlib.contextmanager
def launch_budget(threads):
    """CPU launches made in this context use at most `threads` threads: an int, or a
    function read at every launch (a graph's share of the cores among the nodes running at
    that moment). Tasks that run side by side each take a share of the cores, so that
    their launches do not ask for more threads than there are cores."""
    token = _launch_budget.set(threads if callable(threads) else max(1, int(threads)))
    try:
        yield
    finally:
        _launch_budget.reset(token)


def current_budget():
    """(budget, most): this context's budget as a function read at every call, for threads of
    a launch's own (a pool's threads do not run in the caller's context), and the most it
    can become: every core where a graph's share is read at each launch, else the fixed
    budget itself."""
    b = _launch_budget.get()
    if callable(b):
        return (lambda: max(1, int(b()))), num_threads()
    n = b or num_threads()
    return (lambda: n), n


_budget_changed = threading.Condition()


def _new_condition() -> None:
    global _budget_changed
    _budget_changed = threading.Condition()


# a forked child (the prover's MSM helper) must not inherit the lock held by a parent thread
os.register_at_fork(after_in_child=_new_condition)


def budget_changed() -> None:
    """Wake the threads that wait in `wait_for_share` (a graph calls it when a node ends,
    which may raise the others' shares)."""
    with _budget_changed:
        _budget_changed.notify_all()


def wait_for_share(i: int, budget, done) -> bool:
    """Block thread i (0-based) of a launch until budget() lets it work (True) or done() says
    the launch's work is all taken (False). So a long launch that began beside other work
    with one thread gets a second when that work ends, where it would otherwise keep one
    to its end. Waits are woken by `budget_changed` and time out after a few milliseconds,
    for a budget that changes unannounced."""
    with _budget_changed:
        while not done():
            if i < budget():
                return True
            _budget_changed.wait(0.005)
    return False


def elastic(take, threads: int | None = None, most: int | None = None, kind: str = "elastic") -> None:
    """Run the tasks that take() hands out (callables, in its order; None: none is left) on
    the caller's thread and on up to `most` - 1 (default: all the cores) threads of the
    pool `kind`, thread i taking tasks only while the budget lets it (`wait_for_share`):
    so a launch that began beside other work gains threads when that work ends.
    threads: a fixed budget instead of the caller's (`current_budget`). take() is called
    under no lock: it must be safe to call from several threads. A task's exception is
    raised here once the other threads have stopped taking tasks."""
    budget, n = ((lambda: threads), threads) if threads else current_budget()
    n = max(1, min(n, most or n))
    drained = [False]

    def drain():
        if not drained[0]:
            drained[0] = True
            budget_changed()            # the threads still waiting for a share: none is left

    def work(i: int):
        try:
            while i == 0 or wait_for_share(i, budget, lambda: drained[0]):
                task = take()
                if task is None:
                    return
                task()
        finally:
            drain()
    futs = [pool(n, kind).submit(work, i) for i in range(1, n)]
    try:
        work(0)
    finally:
        for f in futs:
            if not f.cancel():          # not started yet (its pool busy elsewhere): nothing to wait for
                f.result()


@functools.lru_cache(maxsize=None)
def pool(n: int, kind: str = "launch") -> concurrent.futures.ThreadPoolExecutor:
    """The process's pool of `n` threads for launches split `n` ways (made once per size and
    kind). Threads that may wait for their share (`elastic`) are in pools of their own kind
    ("elastic": the MSM lanes loop; "ntt": the NTT's passes), so that they hold up no
    launch's split, and an NTT pass beside an MSM waits for no thread of the MSM's."""
    return concurrent.futures.ThreadPoolExecutor(max_workers=n, thread_name_prefix=f"zktensor-{kind}")


HOST_SPLIT = 1 << 16      # elements of host work from which it is shared by threads


def host_parallel(n: int, fn, work: int, min_work: int | None = None) -> None:
    """fn(lo, hi) over contiguous shares of range(n), on `launch_threads()` threads (the caller
    takes the first share), for host work on numpy arrays, which drops the GIL in its
    loops. `work`: its size in elements; below `min_work` (default HOST_SPLIT) one call
    does it all (a thread hand-off costs tens of microseconds)."""
    threads = min(launch_threads(), n)
    if threads <= 1 or work < (HOST_SPLIT if min_work is None else min_work):
        fn(0, n)
        return
    step = -(-n // threads)
    futs = [pool(threads).submit(fn, lo, min(lo + step, n)) for lo in range(step, n, step)]
    fn(0, step)
    for f in futs:
        f.result()
