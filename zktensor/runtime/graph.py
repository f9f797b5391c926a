"""A graph of named nodes with data edges, a scheduler that runs independent nodes
concurrently, and per-node time and memory profiles.

    g = Graph("prove")
    g.add("intt", lambda abc: intt(abc), inputs=["abc"], lane="poly", critical=True)
    g.add("msm_a", lambda w: msm(w, A), inputs=["w"], lane="g1")
    run = g.run({"abc": abc, "w": w}, profile=True)
    run.values["msm_a"]; print(run.table()); run.write_trace("trace.json")

A node is a function of its inputs' values (in the order named); its return value
is what its consumers receive. ``run`` executes every node once, as soon as its
inputs are ready, on a pool of worker threads:

* Ready nodes are taken by their ``priority`` (default 0; the prover's witness
  check has a higher one, so it runs first), then critical-first, then by the
  longest chain of nodes still below them (upward rank), then in the order they
  were added. A critical chain
  (the prover's POLY -> H-MSM) therefore never waits behind side work when a worker
  is free, and side work (the witness MSMs) fills the other workers.
* On a CUDA device each *lane* gets its own stream; a node runs with its lane's
  stream current, waits (``Stream.wait_event``) on the events its inputs' producers
  recorded when they ran on another stream, and records an event of its own. Values
  handed across streams are marked with ``record_stream`` so the caching allocator
  does not reuse their memory while the consumer's kernels may still read it.
* On the CPU the lanes are only labels (the trace's rows); the workers are threads.
  The compiled CPU kernels, numpy and torch release the GIL while they compute. Each
  running node's kernel launches use its share of the cores (cores // running nodes,
  read at every launch: `runtime.threads.launch_budget`) so that side-by-side nodes
  do not oversubscribe, and a node left running alone gets every core. A launch of many
  calls (the CPU lanes MSM, an NTT pass's shares of tiles) reads it before each call, so
  one that began beside another node gains threads when that node ends
  (`runtime.threads.elastic`).
* A node runs on one of two kinds of worker (``worker=``, `WORKERS`). A ``"thread"``
  node computes on one of the run's ``workers`` threads. An ``"external"`` node hands its
  work to something outside this process's threads (another process, such as the
  prover's MSM helper) and waits: its thread takes none of the ``workers`` slots, but it
  counts as a running node in the cores' shares, and its launch budget, for whatever
  does the work, is a fixed share: cores // (workers + external nodes).
* The first node to raise stops the run: nothing new starts, running nodes finish,
  and the exception propagates from ``run``.

Profiling (``profile=True``): each node's wall time (on a GPU the node's stream is
synchronised at its end, so the time is the device's), the process's peak memory
while it ran (host RSS, sampled every millisecond by a background thread; on a GPU
also the device's allocated bytes) and the size of the value it returned. With
nodes running concurrently a node's peak is the process's peak during its window,
not memory it alone allocated; the totals line gives the whole run's peak.
``RunResult.chrome_trace()`` is a Chrome/Perfetto trace (about://tracing): one row
per lane, a counter track for memory.
"""
from __future__ import annotations

import contextvars
import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

import torch

from . import counters
from .threads import budget_changed, launch_budget, launch_threads
from .atomic import atomic_write


WORKERS = {
    "thread": "computes on one of the run's worker threads",
    "external": "hands its work to another process and waits; takes no worker thread",
}


@dataclass
class Node:
    name: str
    fn: Callable
    inputs: tuple[str, ...]
    lane: str = "main"
    critical: bool = False
    kind: str = ""          # free-form label for reports: "poly", "msm", "io", ...
    priority: int = 0       # ready nodes: higher priority first, then critical, then rank
    order: int = 0
    worker: str = "thread"  # a key of WORKERS


@dataclass
class NodeStats:
    name: str
    lane: str
    kind: str
    critical: bool
    start_s: float          # from the run's start
    end_s: float
    thread: str
    peak_host_bytes: int | None = None      # process RSS peak while the node ran
    peak_device_bytes: int | None = None    # CUDA allocated-bytes peak while the node ran
    output_bytes: int | None = None
    launches: int | None = None             # kernels + computing torch operations the node made
    syncs: int | None = None                # host reads of device values inside the node

    @property
    def seconds(self) -> float:
        return self.end_s - self.start_s


@dataclass
class RunResult:
    graph: str
    values: dict
    stats: list[NodeStats]
    wall_s: float
    device: str
    workers: int
    peak_host_bytes: int | None = None
    peak_device_bytes: int | None = None
    memory_samples: list = field(default_factory=list, repr=False)   # (t_s, host, device)
    external: tuple = ()    # the nodes whose work was done outside this process's threads

    def __getitem__(self, name):
        return self.values[name]

    def by_name(self) -> dict[str, NodeStats]:
        return {s.name: s for s in self.stats}

    def critical_path_s(self) -> float:
        """Summed time of the nodes marked critical."""
        return sum(s.seconds for s in self.stats if s.critical)

    def table(self) -> str:
        """A per-node report, in start order."""
        rows = sorted(self.stats, key=lambda s: (s.start_s, s.name))
        w = max([len(s.name) for s in rows] + [4])
        lw = max([len(s.lane) for s in rows] + [4])
        head = (f"{'node':<{w}}  {'lane':<{lw}}  {'start ms':>9}  {'time ms':>9}  "
                f"{'peak host':>10}  {'peak dev':>10}  {'output':>10}  {'launches':>8}  {'syncs':>5}")
        on = f"{self.workers} worker{'s' if self.workers != 1 else ''}"
        if self.external:
            on += f" and {len(self.external)} external node{'s' if len(self.external) != 1 else ''}"
        lines = [f"graph {self.graph}: {len(rows)} nodes on {on} ({self.device}), "
                 f"wall {1e3 * self.wall_s:.1f} ms; * = critical path", head, "-" * len(head)]
        for s in rows:
            mark = "*" if s.critical else " "
            lines.append(f"{s.name:<{w}}{mark} {s.lane:<{lw}}  {1e3 * s.start_s:9.1f}  {1e3 * s.seconds:9.1f}  "
                         f"{_mib(s.peak_host_bytes):>10}  {_mib(s.peak_device_bytes):>10}  "
                         f"{_mib(s.output_bytes):>10}  {_num(s.launches):>8}  {_num(s.syncs):>5}")
        lines.append("-" * len(head))
        lines.append(f"critical path {1e3 * self.critical_path_s():.1f} ms of wall {1e3 * self.wall_s:.1f} ms; "
                     f"peak host {_mib(self.peak_host_bytes)}, peak device {_mib(self.peak_device_bytes)}")
        if self.external:
            lines.append(f"(external: {', '.join(self.external)}; another process did their work, so the "
                         "memory columns do not count it)")
        return "\n".join(lines)

    def chrome_trace(self) -> dict:
        lanes = sorted({s.lane for s in self.stats}, key=lambda l: min(s.start_s for s in self.stats if s.lane == l))
        tid = {l: i + 1 for i, l in enumerate(lanes)}
        ev = [{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": f"zktensor {self.graph}"}}]
        for l, i in tid.items():
            ev.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": i, "args": {"name": l}})
        for s in self.stats:
            args = {"kind": s.kind, "critical": s.critical, "thread": s.thread}
            for k in ("peak_host_bytes", "peak_device_bytes", "output_bytes", "launches", "syncs"):
                if getattr(s, k) is not None:
                    args[k] = getattr(s, k)
            ev.append({"name": s.name, "cat": s.kind or "node", "ph": "X", "pid": 1, "tid": tid[s.lane],
                       "ts": round(1e6 * s.start_s, 3), "dur": round(1e6 * s.seconds, 3), "args": args})
        for t, host, dev in self.memory_samples:
            a = {"host MiB": round(host / 2**20, 3)}
            if dev is not None:
                a["device MiB"] = round(dev / 2**20, 3)
            ev.append({"name": "memory", "ph": "C", "pid": 1, "ts": round(1e6 * t, 3), "args": a})
        return {"traceEvents": ev, "displayTimeUnit": "ms",
                "otherData": {"graph": self.graph, "device": self.device, "workers": self.workers,
                              "wall_s": self.wall_s}}

    def write_trace(self, path) -> None:
        """The Chrome trace as JSON (written atomically)."""
        with atomic_write(path, "w", encoding="utf-8") as f:
            json.dump(self.chrome_trace(), f)


def _num(v) -> str:
    return "-" if v is None else str(v)


def _mib(b) -> str:
    return "-" if b is None else f"{b / 2**20:.1f} MiB"


# -- memory sampling ---------------------------------------------------------------------


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):  # pragma: no cover - not Linux
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class _Sampler:
    """Samples host RSS (and CUDA allocated bytes) every ``interval`` seconds."""

    def __init__(self, t0: float, cuda_device, interval: float = 0.001):
        self.t0, self.cuda, self.interval = t0, cuda_device, interval
        self.samples: list = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="zktensor-memsampler", daemon=True)

    def sample(self):
        dev = torch.cuda.memory_allocated(self.cuda) if self.cuda is not None else None
        self.samples.append((time.perf_counter() - self.t0, _rss_bytes(), dev))

    def _loop(self):
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def __enter__(self):
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.sample()

    def peak(self, start: float, end: float):
        host = [h for t, h, _ in self.samples if start <= t <= end]
        dev = [d for t, _, d in self.samples if start <= t <= end and d is not None]
        # a node shorter than the interval may hold no sample: take the neighbours'
        if not host:
            near = [s for s in self.samples if s[0] <= end][-1:] + [s for s in self.samples if s[0] >= start][:1]
            host = [h for _, h, _ in near]
            dev = [d for _, _, d in near if d is not None]
        return (max(host) if host else None), (max(dev) if dev else None)


def value_bytes(v) -> int:
    """Bytes of the tensors in a value (tensors, FieldTensor/PointTensor, containers)."""
    if isinstance(v, torch.Tensor):
        return v.numel() * v.element_size()
    data = getattr(v, "data", None)
    if isinstance(data, torch.Tensor) and data is not v:
        return value_bytes(data)
    if isinstance(v, dict):
        return sum(value_bytes(x) for x in v.values())
    if isinstance(v, (list, tuple)):
        return sum(value_bytes(x) for x in v)
    return 0


def _tensors(v):
    if isinstance(v, torch.Tensor):
        yield v
        return
    data = getattr(v, "data", None)
    if isinstance(data, torch.Tensor) and data is not v:
        yield data
    elif isinstance(v, dict):
        for x in v.values():
            yield from _tensors(x)
    elif isinstance(v, (list, tuple)):
        for x in v:
            yield from _tensors(x)


# -- the graph ---------------------------------------------------------------------------


class Graph:
    def __init__(self, name: str = "graph"):
        self.name = name
        self.nodes: dict[str, Node] = {}

    def add(self, name: str, fn: Callable, inputs: Sequence[str] = (), *, lane: str = "main",
            critical: bool = False, kind: str = "", priority: int = 0, worker: str = "thread") -> str:
        if name in self.nodes:
            raise ValueError(f"graph {self.name}: node {name!r} defined twice")
        if worker not in WORKERS:
            raise ValueError(f"graph {self.name}: node {name!r}: worker {worker!r} is not one of {sorted(WORKERS)}")
        self.nodes[name] = Node(name, fn, tuple(inputs), lane, critical, kind, priority, len(self.nodes),
                                worker)
        return name

    def __contains__(self, name) -> bool:
        return name in self.nodes

    def edges(self) -> list[tuple[str, str]]:
        return [(i, n.name) for n in self.nodes.values() for i in n.inputs]

    def _check(self, given: dict):
        for n in self.nodes.values():
            for i in n.inputs:
                if i not in self.nodes and i not in given:
                    raise ValueError(f"graph {self.name}: node {n.name!r} needs {i!r}, which is neither "
                                     "a node nor a given input")
        for k in given:
            if k in self.nodes:
                raise ValueError(f"graph {self.name}: input {k!r} is also a node")
        order = self.topological_order(given)
        if len(order) != len(self.nodes):
            raise ValueError(f"graph {self.name}: the data edges have a cycle")

    def topological_order(self, given=()) -> list[str]:
        indeg = {n: sum(1 for i in node.inputs if i in self.nodes) for n, node in self.nodes.items()}
        ready = [n for n, d in indeg.items() if d == 0]
        out = []
        consumers = self._consumers()
        while ready:
            n = ready.pop(0)
            out.append(n)
            for c in consumers[n]:
                indeg[c] -= 1
                if indeg[c] == 0:
                    ready.append(c)
        return out

    def _consumers(self) -> dict[str, list[str]]:
        cons = {n: [] for n in self.nodes}
        for n in self.nodes.values():
            for i in dict.fromkeys(n.inputs):
                if i in self.nodes:
                    cons[i].append(n.name)
        return cons

    def ranks(self) -> dict[str, int]:
        """Upward rank: nodes on the longest chain from a node to a sink, itself included."""
        cons = self._consumers()
        rank: dict[str, int] = {}
        for n in reversed(self.topological_order()):
            rank[n] = 1 + max((rank[c] for c in cons[n]), default=0)
        return rank

    def to_dot(self) -> str:
        """Graphviz source of the graph (critical nodes bold)."""
        lines = [f'digraph "{self.name}" {{', "  rankdir=LR;"]
        for n in self.nodes.values():
            style = ', style=bold, color="red"' if n.critical else ""
            lines.append(f'  "{n.name}" [label="{n.name}\\n{n.lane}"{style}];')
        for a, b in self.edges():
            lines.append(f'  "{a}" -> "{b}";')
        lines.append("}")
        return "\n".join(lines)

    # -- running ---------------------------------------------------------------------
    def run(self, given: dict | None = None, *, workers: int | None = None, device=None,
            profile: bool = False, keep: Sequence[str] | None = None) -> RunResult:
        """Run every node once. ``given``: values of named inputs that are not nodes.
        ``workers``: threads for the local nodes (default: the number of lanes, at most 4);
        an ``"external"`` node (whose work is done elsewhere) gets a thread of its own
        beside them and counts as a running node in the cores' shares. ``device``: the
        torch device the nodes compute on (CUDA: one stream per lane). ``keep``: node
        values to return (default: all; others are dropped when their consumers are done,
        which bounds memory)."""
        given = dict(given or {})
        self._check(given)
        device = torch.device(device) if device is not None else torch.device("cpu")
        cuda = device.type == "cuda"
        lanes = sorted({n.lane for n in self.nodes.values()})
        workers = workers or min(max(len(lanes), 1), 4)
        # each running node's CPU launches take its share of the cores, read at every launch:
        # two MSMs side by side, each splitting its launches over all cores, ran 15% slower at
        # 2^18 than with one thread each (and the launches' Python halves contend for the
        # GIL); a node left running alone gets them all
        cores = launch_threads()
        active = [0]

        def budget():
            return max(1, cores // max(1, active[0]))
        # an external node's share, which it may hand to whatever does its work: fixed, as that
        # cannot follow the count of running nodes here
        external = tuple(n for n, node in self.nodes.items() if node.worker == "external")
        external_share = max(1, cores // (workers + len(external))) if external else 1
        ranks = self.ranks()
        cons = self._consumers()
        remaining_uses = {n: len(cons[n]) for n in self.nodes}
        keep_set = set(self.nodes) if keep is None else set(keep)
        streams = {l: torch.cuda.Stream(device) for l in lanes} if cuda else {}
        if cuda:
            # the given inputs may still be in flight on the caller's stream (a non-blocking upload
            # of the witness from pinned memory): every lane starts after them, without the host waiting
            caller = torch.cuda.current_stream(device)
            for s in streams.values():
                s.wait_stream(caller)
        events: dict[str, object] = {}
        values: dict = dict(given)
        stats: list[NodeStats] = []
        lock = threading.Lock()
        if profile:
            counters.prepare()
        t0 = time.perf_counter()
        sampler = _Sampler(t0, device if cuda else None) if profile else None
        if cuda and profile:
            torch.cuda.reset_peak_memory_stats(device)

        def key(n: str):
            node = self.nodes[n]
            return (-node.priority, not node.critical, -ranks[n], node.order)

        def run_node(n: str):
            node = self.nodes[n]
            args = [values[i] for i in node.inputs]
            start = time.perf_counter() - t0
            # the node's own launches and host reads (this thread's): runtime.counters
            rec = counters.record(thread=True) if profile and node.worker != "external" else _Null()
            with rec as calls:
                out = run_fn(node, args)
            end = time.perf_counter() - t0
            st = NodeStats(n, node.lane, node.kind, node.critical, start, end, threading.current_thread().name,
                           output_bytes=value_bytes(out) if profile else None)
            if calls is not None:
                st.launches, st.syncs = calls.launches, calls.syncs
            return out, st

        def run_fn(node, args):
            n = node.name
            if cuda:
                s = streams[node.lane]
                for i in node.inputs:
                    ev = events.get(i)
                    if ev is not None and ev[1] is not s:
                        s.wait_event(ev[0])
                        for t in _tensors(values[i]):
                            if t.is_cuda:
                                t.record_stream(s)
                with torch.cuda.stream(s):
                    out = node.fn(*args)
                    ev = torch.cuda.Event()
                    ev.record(s)
                events[n] = (ev, s)
                if profile:
                    s.synchronize()
            else:
                with lock:
                    active[0] += 1
                try:
                    with launch_budget(external_share if node.worker == "external" else budget):
                        out = node.fn(*args)
                finally:
                    with lock:
                        active[0] -= 1
                    budget_changed()        # a launch waiting for its share may take it now
            return out

        indeg = {n: sum(1 for i in node.inputs if i in self.nodes) for n, node in self.nodes.items()}
        ready = sorted((n for n, d in indeg.items() if d == 0), key=key)
        running: dict[Future, str] = {}
        error = None
        ctx = sampler if sampler is not None else _Null()
        local = [0]

        def next_ready():
            for i, n in enumerate(ready):
                if self.nodes[n].worker == "external" or local[0] < workers:
                    return ready.pop(i)
            return None

        def finish(n: str, result) -> None:
            """Take in node n's result: its (value, stats), or the exception it raised."""
            nonlocal error
            local[0] -= self.nodes[n].worker == "thread"
            if isinstance(result, BaseException):
                if error is None:
                    error = result
                return
            out, st = result
            with lock:
                values[n] = out
                stats.append(st)
            for i in self.nodes[n].inputs:     # free values nobody needs any more
                if i in self.nodes:
                    remaining_uses[i] -= 1
                    if remaining_uses[i] == 0 and i not in keep_set:
                        values.pop(i, None)
            for c in cons[n]:
                indeg[c] -= 1
                if indeg[c] == 0:
                    ready.append(c)
            ready.sort(key=key)
        # one worker: this thread runs the local nodes itself, where a pool thread would cost
        # two hand-offs a node (comparable to a small proof's nodes); external nodes still
        # wait on threads of their own, and are started before the local node that runs here
        inline = workers == 1
        threads = max(1, len(external)) if inline else workers + len(external)
        with ctx, ThreadPoolExecutor(max_workers=threads, thread_name_prefix=f"{self.name}") as pool:
            while ready or running:
                here = None
                while ready and error is None:
                    n = next_ready()
                    if n is None:
                        break
                    local[0] += self.nodes[n].worker == "thread"
                    if inline and self.nodes[n].worker == "thread":
                        here = n            # the one local slot is now taken: only external nodes follow
                        continue
                    # the caller's context (zt.config(...) around the run) in every worker
                    running[pool.submit(contextvars.copy_context().run, run_node, n)] = n
                if here is not None:
                    try:
                        result = contextvars.copy_context().run(run_node, here)
                    except BaseException as e:  # noqa: BLE001 - re-raised below
                        result = e
                    finish(here, result)
                    done = [f for f in running if f.done()]
                elif running:
                    done, _ = wait(running, return_when=FIRST_COMPLETED)
                else:
                    break
                for fut in done:
                    finish(running.pop(fut), fut.exception() or fut.result())
                if error is not None:
                    ready.clear()
        if error is not None:
            raise error
        if cuda:
            torch.cuda.synchronize(device)
        wall = time.perf_counter() - t0
        res = RunResult(self.name, {k: v for k, v in values.items() if k in keep_set}, stats, wall,
                        str(device), workers, external=external)
        if sampler is not None:
            for st in stats:
                st.peak_host_bytes, st.peak_device_bytes = sampler.peak(st.start_s, st.end_s)
            res.memory_samples = sampler.samples
            res.peak_host_bytes = max(h for _, h, _ in sampler.samples)
            if cuda:
                res.peak_device_bytes = torch.cuda.max_memory_allocated(device)
        return res


class _Null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


__all__ = ["Graph", "WORKERS", "Node", "NodeStats", "RunResult", "value_bytes"]
