"""Launch and synchronisation counters: what an op costs the device in calls, not seconds.

    with counters.record() as c:
        Q = zt.msm(scalars, P)
    c.launches, c.syncs            # kernels launched (ours and torch's), host reads

A launch is one compiled kernel started (Triton or CPU: `launch()` / `kernel()`, called
by the launchers) or one torch operation that computes (views and bare allocations are
not counted; on a GPU each is at least one kernel). A synchronisation is the host reading
a tensor's value: `Tensor.item`/`bool`/`int` (torch's `_local_scalar_dense`) or a copy
from a device to the host. Counting torch operations needs a TorchDispatchMode, so it
happens only inside `record()`; inside a `kernel()` launch (the Triton interpreter runs
kernels on torch tensors) torch operations are the launch's own and are not counted.

Records nest and are global to the process: a launch made by a worker thread counts in
every open record. Tests that must not trust these counts use their own guard
(tests/guard.py), which counts independently.
"""
from __future__ import annotations

import functools
import threading
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass
class Counts:
    launches: int = 0       # kernels + torch operations
    kernels: int = 0        # compiled kernels (of those launches)
    syncs: int = 0

    def as_dict(self) -> dict:
        return {"launches": self.launches, "kernels": self.kernels, "syncs": self.syncs}


_open: list[Counts] = []
_lock = threading.Lock()
_local = threading.local()


def _records() -> list:
    """The open records this thread's work counts in: the process's and this thread's own."""
    mine = getattr(_local, "open", None)
    return _open + mine if mine else _open


def launch(n: int = 1) -> None:
    """n compiled kernels were launched."""
    if _open or getattr(_local, "open", None):
        with _lock:
            for c in _records():
                c.launches += n
                c.kernels += n


def sync(n: int = 1) -> None:
    """The host read n tensor values (a reader outside torch's dispatch, e.g. numpy)."""
    if _open or getattr(_local, "open", None):
        with _lock:
            for c in _records():
                c.syncs += n


@contextmanager
def _uncounted():
    """Torch operations inside are seen by the counting mode and counted in no record."""
    _local.inside = getattr(_local, "inside", 0) + 1
    try:
        yield
    finally:
        _local.inside -= 1


@contextmanager
def kernel():
    """Around one kernel launch: counts it, and leaves the torch operations inside uncounted."""
    launch()
    with _uncounted():
        yield


def _inside_kernel() -> bool:
    return getattr(_local, "inside", 0) > 0


_FREE = {"empty.memory_format", "empty_strided.default", "lift_fresh.default", "detach.default",
         "set_.source_Storage_storage_offset", "resize_.default"}


@functools.lru_cache(maxsize=1)
def _torch_counter():
    from torch.utils._python_dispatch import TorchDispatchMode

    class TorchOps(TorchDispatchMode):
        """Counts torch operations (launches) and host reads (syncs) into the open records."""

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if getattr(_local, "dispatching", False):     # a mode below another (nested records):
                return func(*args, **(kwargs or {}))      # the one above counts the op, once
            _local.dispatching = True
            try:
                out = func(*args, **(kwargs or {}))
            finally:
                _local.dispatching = False
            if _inside_kernel() or not (_open or getattr(_local, "open", None)):
                return out
            name = func._schema.name.split("::")[-1] + "." + func._overloadname
            if func is _LOCAL_SCALAR():
                sync()
            elif _copies_to_host(func, args, kwargs, out):
                sync()
                _count_op()
            elif not func.is_view and name not in _FREE:
                _count_op()
            return out
    # torch wraps a mode's __torch_dispatch__ so that dynamo does not trace into it, and
    # that wrapper imports torch._dynamo (most of torch's compiler) at the first op it sees. These
    # counters never run under torch.compile: the wrapper may call the method as it is.
    # (Private to torch: should the attribute change, the import comes back, nothing else.)
    method = TorchOps.__dict__["__torch_dispatch__"]
    inner = getattr(method, "__wrapped__", None)
    if inner is not None:
        setattr(inner, "__dynamo_disable", inner)
    return TorchOps


def _count_op():
    with _lock:
        for c in _records():
            c.launches += 1


def _LOCAL_SCALAR():
    import torch
    return torch.ops.aten._local_scalar_dense.default


def _copies_to_host(func, args, kwargs, out) -> bool:
    """A copy whose source is on a device and whose result is in host memory."""
    import torch
    name = func._schema.name
    if name not in ("aten::_to_copy", "aten::copy_", "aten::to"):
        return False
    src = args[1] if name == "aten::copy_" else args[0]
    dst = args[0] if name == "aten::copy_" else out
    return (isinstance(src, torch.Tensor) and isinstance(dst, torch.Tensor)
            and src.device.type != "cpu" and dst.device.type == "cpu")


_ready = False


def prepare() -> None:
    """Pay, once and outside any timing, what the process's first counted torch operation
    costs: torch sets up its dispatch-mode machinery then, which a
    profile would otherwise charge to whichever node counted first."""
    global _ready
    if not _ready:
        import torch
        with record(thread=True), _uncounted():
            torch.zeros(1).add_(1)
        _ready = True


@contextmanager
def record(torch_ops: bool = True, thread: bool = False):
    """Counts of everything launched and read back while the block runs (see the module).
    thread: only what this thread launches and reads (a graph node's own counts while other
    nodes run beside it; torch's dispatch modes are per thread too)."""
    c = Counts()
    where = _open
    if thread:
        where = _local.open = getattr(_local, "open", None) or []
    with _lock:
        where.append(c)
    mode = _torch_counter()() if torch_ops else None
    try:
        if mode is not None:
            with mode:
                yield c
        else:
            yield c
    finally:
        with _lock:
            where.remove(c)
