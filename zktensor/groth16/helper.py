"""A helper process that runs some of a proof's MSMs beside the prover's own thread (CPU).

Why a process: the MSM kernels are compiled and drop the GIL, but each launch's
Python half (slicing, index arithmetic, the tree's level loop) holds it, so two MSM
threads of one process queue for it and an MSM beside another runs slower than
alone, and slower than beside one in another process. A forked child has its own
interpreter, so the two halves of the proof contend only for the cores.

Why fork: the child starts as a copy of the prover, resident tables included, with
no copy made (copy-on-write; nothing writes the tables) and no pickling, where a
spawned interpreter would import torch first and need the tables put into shared
memory. Forking a process that has threads is safe only for
a child that does not touch what those threads were doing, so the child uses none
of the parent's thread pools (it makes its own, for the threads each request grants
its launches) and sets torch to one thread (torch's OpenMP pool is not fork-safe).

    helper = Helper(work, {"w": (L, n)}, groups)   # forks; work(job, {"w": scalars}) -> {unit: PointTensor}
    points = helper.run(job, {"w": scalars}, threads)   # blocks this thread (without the GIL)
    helper.close()                            # or when the helper is garbage-collected

The scalars go through anonymous shared mappings made before the fork, one per named
input (written by the parent, read by the child: no pickling of megabytes per proof);
a request may fill the first columns of one only. The points come back pickled as
numpy arrays (a few hundred bytes each); other values of `work`'s dict (Python ints,
the blinding's affine points) come back as they are. Requests run one at a time, in the order
their `run` calls take the helper's lock. `zt.config(...)` in force
around `run` is sent along with each request and applies in the child too. If the
child dies (killed, out of memory), `run` raises `HelperError` and the helper is
marked dead (later calls: `HelperGone`); the prover then computes the MSMs itself. The child ignores SIGINT, so
Ctrl-C stops the proof in the parent and leaves the helper for the next one. A
profile's memory columns are the parent's: the child's temporaries are not in them.
"""
from __future__ import annotations

import mmap
import multiprocessing
import os
import signal
import threading
import time
import traceback
import warnings
import weakref
from collections.abc import Callable

import numpy as np
import torch

from ..config import config as zt_config, current as current_config
from ..points import PointTensor

_live: "weakref.WeakSet[Helper]" = weakref.WeakSet()


class HelperError(RuntimeError):
    """The helper process died or its work raised (the message carries the child's traceback)."""


class HelperGone(HelperError):
    """A request to a helper that an earlier request found dead (that one said so)."""


class Helper:
    def __init__(self, work: Callable, buffers: dict[str, tuple[int, int]], groups: dict):
        """work(job, {name: int32 (L, m) tensor}) -> {unit: PointTensor}, the inputs
        Montgomery limbs; buffers: {name: (L, n)}, the largest input of each name;
        groups: {unit: GroupSpace} to rebuild the returned points."""
        self.groups = groups
        # MAP_SHARED | MAP_ANONYMOUS: the child sees our writes
        self._maps = {k: mmap.mmap(-1, max(1, 4 * L * n)) for k, (L, n) in buffers.items()}
        self._limbs = {k: L for k, (L, _) in buffers.items()}
        self.buffers = {k: torch.frombuffer(m, dtype=torch.int32) for k, m in self._maps.items()}
        self._conn, child_conn = multiprocessing.Pipe()
        with warnings.catch_warnings():
            # Python 3.12 warns on fork() with threads alive; the child uses none of their state
            warnings.filterwarnings("ignore", message=".*multi-threaded.*fork", category=DeprecationWarning)
            pid = os.fork()
        if pid == 0:                                    # the child: serve, then leave without cleanup
            code = 1
            try:
                self._conn.close()
                for h in list(_live):                   # other helpers' pipe ends: their children
                    h._conn.close()                     # must see EOF when their parents close them
                _serve(child_conn, work, self.buffers, self._limbs)
                code = 0
            finally:
                os._exit(code)
        child_conn.close()
        self.pid = pid
        self._lock = threading.Lock()
        self.alive = True
        _live.add(self)
        self._finalizer = weakref.finalize(self, _stop, self._conn, pid)

    def run(self, job, inputs: dict[str, torch.Tensor], threads: int = 1) -> dict[str, PointTensor]:
        """The helper's work(job, inputs) (inputs: {name: int32 (L, m)} with m at most the
        buffer's n), its launches on `threads` threads; blocks until it is done (after the
        requests before it)."""
        with self._lock:        # (alive read here: a request waiting here finds out from the one before)
            if not self.alive:
                raise HelperGone("the MSM helper process is not running")
            cols = {}
            for k, x in inputs.items():
                L, m = x.shape
                self.buffers[k][:L * m].view(L, m).copy_(x)
                cols[k] = m
            try:
                self._conn.send((job, cols, current_config(), int(threads)))
                status, payload = self._conn.recv()
            except (EOFError, OSError) as e:
                self.alive = False
                raise HelperError(f"the MSM helper process (pid {self.pid}) died: {type(e).__name__}; "
                                  f"{_reap(self.pid, 0.5)}") from None
        if status != "ok":
            raise HelperError(f"the MSM helper process raised:\n{payload}")
        return {u: PointTensor(self.groups[u], torch.from_numpy(a)) if isinstance(a, np.ndarray) else a
                for u, a in payload.items()}

    def close(self) -> None:
        self.alive = False
        self._finalizer()


def _reap(pid: int, timeout: float) -> str:
    """Wait up to `timeout` s for the child to exit; how it ended, in words."""
    end = time.monotonic() + timeout
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return "already reaped"
        if done:
            if os.WIFSIGNALED(status):
                return f"killed by signal {os.WTERMSIG(status)}"
            return f"exit code {os.WEXITSTATUS(status)}"
        if time.monotonic() > end:
            return "still running"
        time.sleep(0.005)


def _stop(conn, pid: int) -> None:
    try:
        conn.send(None)         # the child's loop ends
        conn.close()
    except OSError:
        pass
    if _reap(pid, 2.0) == "still running":
        os.kill(pid, signal.SIGKILL)
        _reap(pid, 2.0)


def _serve(conn, work: Callable, buffers: dict, limbs: dict) -> None:
    """The child's loop: one request at a time until the parent says stop or goes away."""
    from ..runtime import threads
    # Ctrl-C in a terminal reaches the whole process group: the parent stops the proof
    # (after this request, which its graph waits for); the helper stays for the next one
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    torch.set_num_threads(1)
    threads.pool.cache_clear()        # the parent's pools: their threads are not here
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        job, cols, override, n_threads = msg
        try:
            inputs = {k: buffers[k][:limbs[k] * m].view(limbs[k], m) for k, m in cols.items()}
            with zt_config(**override), threads.launch_budget(n_threads):
                out = work(job, inputs)
            reply = ("ok", {u: np.ascontiguousarray(p.data.cpu().numpy()) if isinstance(p, PointTensor) else p
                            for u, p in out.items()})
        except BaseException:  # noqa: BLE001 - reported to the parent, which raises
            reply = ("error", traceback.format_exc())
        try:
            conn.send(reply)
        except (EOFError, OSError):
            return


__all__ = ["Helper", "HelperError", "HelperGone"]
