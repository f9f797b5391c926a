"""A guard against device-to-host synchronisations, and a launch counter of its own.

    with SyncGuard() as g:
        Q = zt.msm(k, P)              # raises SyncError at the first host read
    g.launches                        # Triton launches + torch operations, counted here

It does not trust the code under test (nor `zktensor.runtime.counters`): a
TorchDispatchMode sees every torch operation, whoever calls it, and fails on
`aten._local_scalar_dense` (`item`, `bool(t)`, `int(t)`, `float(t)`) and on copies from a
device to the host; `Tensor.numpy`, `tolist`, `item`, `cpu`, `__array__`, `__bool__`,
`__int__`, `__float__` and `__index__` are patched to fail too, because on CPU tensors
(the Triton interpreter's "device") no dispatch marks them as host reads. The only
exemption is Triton's own interpreter while it runs a launch (`GridExecutor.__call__`,
which copies arguments to numpy and back): the guard wraps it, and so counts launches
independently. Torch operations that compute count as launches; views and bare
allocations do not (on a GPU each counted operation is at least one kernel).
"""
from __future__ import annotations

import threading

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_state = threading.local()


class SyncError(AssertionError):
    """The code under a SyncGuard read a tensor's value on the host."""


def _in_triton() -> bool:
    return getattr(_state, "triton", 0) > 0


_FREE = {"aten::empty", "aten::empty_strided", "aten::lift_fresh", "aten::detach", "aten::set_",
         "aten::new_empty"}
_READS = ("item", "tolist", "numpy", "cpu", "__array__", "__bool__", "__int__", "__float__", "__index__")


class _Mode(TorchDispatchMode):
    def __init__(self, guard):
        super().__init__()
        self.guard = guard

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not _in_triton():
            name = func._schema.name
            if func is torch.ops.aten._local_scalar_dense.default:
                self.guard._fail(f"host read of a tensor value ({func})")
            if name in ("aten::_to_copy", "aten::copy_", "aten::to"):
                src = args[1] if name == "aten::copy_" else args[0]
                dst_dev = (args[0].device if name == "aten::copy_" else
                           kwargs.get("device", None))
                if isinstance(src, torch.Tensor) and src.device.type != "cpu" and \
                        dst_dev is not None and torch.device(dst_dev).type == "cpu":
                    self.guard._fail(f"copy from {src.device} to the host ({func})")
            if not func.is_view and name not in _FREE:
                self.guard.torch_ops += 1
                self.guard.ops.append(name)
        return func(*args, **kwargs)


class SyncGuard:
    """Fails on any host read of a tensor inside the block; counts launches (see module)."""

    def __init__(self):
        self.triton_launches = 0
        self.torch_ops = 0
        self.ops: list[str] = []
        self.kernels: list[str] = []
        self._saved = {}

    @property
    def launches(self) -> int:
        return self.triton_launches + self.torch_ops

    def _fail(self, what: str):
        raise SyncError(f"device-to-host synchronisation: {what}")

    def __enter__(self):
        from triton.runtime import interpreter
        guard = self
        self._saved["grid"] = call = interpreter.GridExecutor.__call__

        def launch(ex, *args, **kwargs):
            guard.triton_launches += 1
            guard.kernels.append(getattr(ex.fn, "__name__", "?"))
            _state.triton = getattr(_state, "triton", 0) + 1
            try:
                return call(ex, *args, **kwargs)
            finally:
                _state.triton -= 1
        interpreter.GridExecutor.__call__ = launch
        for name in _READS:
            orig = getattr(torch.Tensor, name)
            self._saved[name] = (orig, name in torch.Tensor.__dict__)
            setattr(torch.Tensor, name, self._patched(name, orig))
        self._mode = _Mode(self)
        self._mode.__enter__()
        return self

    def _patched(self, name, orig):
        guard = self

        def read(t, *a, **k):
            if not _in_triton():
                guard._fail(f"Tensor.{name}")
            return orig(t, *a, **k)
        return read

    def __exit__(self, *exc):
        from triton.runtime import interpreter
        self._mode.__exit__(*exc)
        interpreter.GridExecutor.__call__ = self._saved.pop("grid")
        for name, (orig, own) in self._saved.items():
            if own:
                setattr(torch.Tensor, name, orig)
            else:
                delattr(torch.Tensor, name)
        self._saved.clear()
        return False
