"""Where a process's threads spend a stretch of wall time: a sampling profiler for all threads.

    with StackSampler() as s:
        prover.prove(wtns)
    print(s.report())

cProfile sees one thread, and the Groth16 graph runs its nodes on worker threads; this
samples every thread's stack (`sys._current_frames`) every `interval` seconds and counts,
per function, the samples it was on a stack for (inclusive) and at the top of (own), and
per top frame, the path of zktensor functions that led to it (`own_from`: a library
function's time is then charged to the zktensor call that made it). A thread waiting in a
lock or in a C call shows as that call's caller. Used where py-spy is
not at hand (a lent GPU machine has no network).
"""
from __future__ import annotations

import collections
import sys
import threading
import time


def _name(code) -> str:
    path = code.co_filename
    for cut in ("/site-packages/", "/zktensor/", "/bench/"):
        if cut in path:
            path = path[path.index(cut) + 1:]
            break
    return f"{path}:{code.co_firstlineno} {code.co_name}"


class StackSampler:
    def __init__(self, interval: float = 0.002):
        self.interval = interval
        self.samples = 0
        self.ticks = 0
        self.inclusive: collections.Counter = collections.Counter()
        self.own: collections.Counter = collections.Counter()
        self.own_from: collections.Counter = collections.Counter()
        self._stop = threading.Event()
        self._thread = None

    def _run(self) -> None:
        me = threading.get_ident()
        while not self._stop.wait(self.interval):
            self.ticks += 1
            for tid, frame in sys._current_frames().items():
                if tid == me:
                    continue
                self.samples += 1
                top = _name(frame.f_code)
                self.own[top] += 1
                ours = []                      # the innermost zktensor frames above the top one
                seen = set()
                while frame is not None:
                    n = _name(frame.f_code)
                    if n not in seen:          # a recursive function counts once a sample
                        seen.add(n)
                        self.inclusive[n] += 1
                    if len(ours) < 2 and n.startswith("zktensor/") and n != top:
                        ours.append(n)
                    frame = frame.f_back
                self.own_from[" < ".join([top] + ours)] += 1

    def __enter__(self):
        self.t0 = time.perf_counter()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.wall = time.perf_counter() - self.t0

    def top(self, n: int = 30) -> dict:
        """{"inclusive": [[function, seconds]...], "own": [...], "own_from": [...]}: seconds
        of thread time, a sample standing for the wall time between two ticks (the sampler
        waits for the GIL, so it ticks less often than its interval asks)."""
        per = self.wall / max(self.ticks, 1)
        return {k: [[f, round(c * per, 3)] for f, c in counts.most_common(n)]
                for k, counts in (("inclusive", self.inclusive), ("own", self.own), ("own_from", self.own_from))}

    def report(self, n: int = 30) -> str:
        t = self.top(n)
        lines = [f"{self.samples} thread samples in {self.ticks} ticks over {self.wall:.2f} s wall"]
        for k in ("inclusive", "own", "own_from"):
            lines.append(f"-- {k} (thread-seconds)")
            lines += [f"{s:8.3f}  {f}" for f, s in t[k]]
        return "\n".join(lines)
