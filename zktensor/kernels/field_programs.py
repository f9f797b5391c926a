"""Elementwise field programs over raw limb tensors: the named operations (`OPS`), the one
cache of traced programs (`traced`), and `run_program`, which compiles a traced program for
the strategy and target in force and launches it.

Each operation is a tiny traced program (`a + b`, `x ** e`, ...) compiled and cached like
any user `@zt.jit` function; nothing here does arithmetic on tensors itself. `F` is a field
space (`tensor.FieldSpace`: its name and parameters); values are (L, *batch) int32 limb
tensors in Montgomery form.
"""
from __future__ import annotations

import threading

import numpy as np

from ..ir.program import trace
from ..runtime.target import choose
from ..tune.resolve import tuned_scope
from .elementwise import CompilerUnavailable, get_program

_traced: dict = {}
_traced_lock = threading.Lock()


def traced(key, make):
    """The traced program (field or curve) for `key`, made by `make()` on the first request:
    the one cache of traced programs (field ops, curve formulas, `zt.jit` functions)."""
    prog = _traced.get(key)
    if prog is None:
        prog = make()
        with _traced_lock:
            prog = _traced.setdefault(key, prog)
    return prog


OPS = {
    "add": (2, lambda a, b: a + b),
    "sub": (2, lambda a, b: a - b),
    "mul": (2, lambda a, b: a * b),
    "neg": (1, lambda a: -a),
    "square": (1, lambda a: a.square()),
    "to_mont": (1, lambda a: a._op("to_mont")),
    "from_mont": (1, lambda a: a._op("from_mont")),
}

def program(F, key, n_inputs: int, fn):
    """The traced field program `key` over F, a field space or a field's record
    (`algebra.fields.Field`: host code without torch); `fn` is traced on the first request only."""
    return traced(("field", F.name, key), lambda: trace(fn, getattr(F, "params", F), n_inputs))


def run_program(F, key, n_inputs: int, fn, datas, out=None, strategy=None, target=None):
    """Run a traced program over limb tensors; returns the output limb tensors. The tuning
    cache's `mul` entry for this field and size supplies the strategy and launch options
    where neither the caller nor zt.config nor the environment does (see zktensor.config)."""
    size = max((d.numel() // max(d.shape[0], 1) for d in datas), default=0)
    with tuned_scope("mul", F.name, size, datas[0].device):
        strategy, target = choose(datas[0].device.type, strategy, target)
        compiled = get_program(program(F, key, n_inputs, fn), strategy, target)
        return compiled(*datas, out=out)


def run_host(F, key, n_inputs: int, fn, arrays: list, out: list | None = None) -> list:
    """`run_program` over host arrays, without torch: the CPU target's compiled program over
    (L, m) int32 numpy arrays with unit column stride (views of a larger array are fine), for
    a program of one kernel (the elementwise operations and the fused formulas of `OPS`' size).
    out: arrays for the outputs (None entries, or none at all: allocated). The strategy is
    `choose`'s for a CPU computation, the tuning cache's `mul` entry included."""
    L, m = arrays[0].shape
    for a in arrays + [o for o in (out or []) if o is not None]:
        if a.dtype != np.int32 or a.shape != (L, m) or (m > 1 and a.strides[1] != 4):
            raise ValueError(f"run_host: int32 ({L}, {m}) arrays with unit column stride, got "
                             f"{a.dtype} {a.shape} strides {a.strides}")
    with tuned_scope("mul", F.name, m, "cpu"):
        strategy, _ = choose("cpu", None, "cpu")
        compiled = get_program(program(F, key, n_inputs, fn), strategy, "cpu")
    n_out = len(compiled.meta["outputs"])
    if len(compiled.meta["calls"]) != 1:
        raise ValueError(f"run_host: {key!r} compiles to {len(compiled.meta['calls'])} kernels; one expected")
    out = list(out) if out is not None else [None] * n_out
    out = [o if o is not None else np.empty((L, m), dtype=np.int32) for o in out]
    address = [(a.ctypes.data, a.strides[0] // 4) for a in arrays]
    compiled.run_many([(address, [(o.ctypes.data, o.strides[0] // 4) for o in out], m)])
    return out


def to_mont(F, words):
    """Standard-form words to Montgomery form: the compiled program, else (no kernel for this
    target in the cache and no compiler here) torch integer arithmetic on the same device."""
    try:
        return run_program(F, "to_mont", 1, OPS["to_mont"][1], [words])[0]
    except CompilerUnavailable:
        from . import mont_torch
        return mont_torch.to_mont(words, F.p)


def from_mont(F, data):
    """Montgomery-form words to standard form; the same fallback as `to_mont`."""
    try:
        return run_program(F, "from_mont", 1, OPS["from_mont"][1], [data])[0]
    except CompilerUnavailable:
        from . import mont_torch
        return mont_torch.from_mont(data, F.p)


FEW = 64      # values up to which inverses are taken on the host (`invert_few`)


def invert_few(F, data):
    """Inverses of a few Montgomery-form values (L, m) on the host, zero for zero (what
    x^(p-2) gives): Montgomery's trick on Python ints, so one modular inverse and 3
    products per value. The compiled x^(p-2) is ~380 dependent products in one lane,
    slow for a launch that is the top of every batch inversion (each tree level and
    halving step of the MSM has one)."""
    p, R2 = F.params.p, F.params.R2          # (x·R)^-1 · R^2 = x^-1 · R
    L, m = data.shape
    raw = np.ascontiguousarray(data.cpu().numpy().view(np.uint32).T).tobytes()     # (m, L) words
    xs = [int.from_bytes(raw[4 * L * i:4 * L * (i + 1)], "little") for i in range(m)]
    prefix, acc = [], 1
    for x in xs:
        prefix.append(acc)                   # product of the nonzero values before x
        if x:
            acc = acc * x % p
    t = R2 * pow(acc, -1, p) % p              # R / (product of all nonzero values)
    res = [0] * m
    for i in range(m - 1, -1, -1):
        if xs[i]:
            res[i] = t * prefix[i] % p
            t = t * xs[i] % p
    out = np.frombuffer(bytearray(b"".join(v.to_bytes(4 * L, "little") for v in res)), dtype="<u4")
    import torch
    return torch.from_numpy(out.reshape(m, L).T.copy().view(np.int32)).to(data.device)
