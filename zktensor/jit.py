"""`@zt.jit`: compile a Python function over field values into one fused kernel.

    @zt.jit
    def f(a, b, c):
        return a * b - c * c

    d = f(x, y, z)          # x, y, z FieldTensors of one field (batch shapes broadcast)

The function is traced once per field and arity, lowered by the pass pipeline
(`zktensor.passes`) and cached on disk; `f.source(...)` and `f.ir(...)` show
what was generated.
"""
from __future__ import annotations

import functools

from .runtime.target import choose

# the compiler and torch load on first use (see zktensor/__init__.py)


class JitFunction:
    def __init__(self, fn, strategy=None, target=None):
        self.fn = fn
        self.strategy, self.target = strategy, target
        functools.update_wrapper(self, fn)

    def program(self, F, n_inputs: int):
        from .ir.program import trace
        from .kernels.field_programs import traced
        return traced(("jit", self.fn, F.name, n_inputs), lambda: trace(self.fn, F.params, n_inputs))

    def compiled(self, F, n_inputs: int, device_type: str = "cpu"):
        from .kernels.elementwise import get_program
        strategy, target = choose(device_type, self.strategy, self.target)
        return get_program(self.program(F, n_inputs), strategy, target)

    def __call__(self, *args):
        from .tensor import FieldTensor
        if not args or not all(isinstance(a, FieldTensor) for a in args):
            raise TypeError(f"{self.fn.__name__}: a jit function takes FieldTensors (use ints inside the body)")
        F = args[0].F
        for a in args:
            if a.F != F:
                raise TypeError(f"{self.fn.__name__}: cannot mix {F.name} and {a.F.name} tensors")
        compiled = self.compiled(F, len(args), args[0].device.type)
        outs = [FieldTensor(F, d) for d in compiled(*(a.data for a in args))]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def source(self, F, n_inputs: int, strategy="int32") -> str:
        """The generated Triton source for this function."""
        from .kernels.elementwise import get_program
        return get_program(self.program(F, n_inputs), strategy, "triton").source


def jit(fn=None, *, strategy=None, target=None):
    if fn is None:
        return lambda f: JitFunction(f, strategy, target)
    return JitFunction(fn, strategy, target)
