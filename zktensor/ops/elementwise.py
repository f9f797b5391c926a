"""Elementwise field operations on tensors, all through compiled programs.

Each operation is a tiny traced program (`a + b`, `x ** e`, ...) compiled and
cached like any user `@zt.jit` function; nothing here does arithmetic itself.
`batch_inverse` is Montgomery's trick as a tensor program: prefix products
along the columns of an (m, k) view, one inversion of the m row totals
(recursively), and a backward sweep — about 3 multiplications per element
plus O(k) launches.
"""
from __future__ import annotations

import math

import torch

from ..config import choose, tuned_scope
from ..ir.program import trace
from ..kernels import mont_torch
from ..kernels.elementwise import CompilerUnavailable, get_program
from ..tensor import FieldSpace, FieldTensor

OPS = {
    "add": (2, lambda a, b: a + b),
    "sub": (2, lambda a, b: a - b),
    "mul": (2, lambda a, b: a * b),
    "neg": (1, lambda a: -a),
    "square": (1, lambda a: a.square()),
    "to_mont": (1, lambda a: a._op("to_mont")),
    "from_mont": (1, lambda a: a._op("from_mont")),
}

_traced: dict = {}


def _program(F: FieldSpace, key, n_inputs: int, fn):
    k = (F.name, key)
    if k not in _traced:
        _traced[k] = trace(fn, F.params, n_inputs)
    return _traced[k]


def run_program(F: FieldSpace, key, n_inputs: int, fn, datas, out=None, strategy=None, target=None):
    """Run a traced program over limb tensors; returns the output limb tensors. The tuning
    cache's `mul` entry for this field and size supplies the strategy and launch options
    where neither the caller nor zt.config nor the environment does (see zktensor.config)."""
    size = max((d.numel() // max(d.shape[0], 1) for d in datas), default=0)
    with tuned_scope("mul", F.name, size, datas[0].device):
        strategy, target = choose(datas[0].device.type, strategy, target)
        compiled = get_program(_program(F, key, n_inputs, fn), strategy, target)
        return compiled(*datas, out=out)


def apply(name: str, *xs: FieldTensor, out: FieldTensor | None = None) -> FieldTensor:
    n, fn = OPS[name]
    F = xs[0].F
    for x in xs:
        if x.F != F:
            raise TypeError(f"cannot mix {F.name} and {x.F.name} tensors")
    (res,) = run_program(F, name, n, fn, [x.data for x in xs], out=[out.data] if out is not None else None)
    return out if out is not None else FieldTensor(F, res)


def to_mont(F: FieldSpace, words: torch.Tensor) -> torch.Tensor:
    """Standard-form words to Montgomery form: the compiled program, else (no kernel for this
    target in the cache and no compiler here) torch integer arithmetic on the same device."""
    try:
        return run_program(F, "to_mont", 1, OPS["to_mont"][1], [words])[0]
    except CompilerUnavailable:
        return mont_torch.to_mont(words, F.p)


def from_mont(F: FieldSpace, data: torch.Tensor) -> torch.Tensor:
    """Montgomery-form words to standard form; the same fallback as `to_mont`."""
    try:
        return run_program(F, "from_mont", 1, OPS["from_mont"][1], [data])[0]
    except CompilerUnavailable:
        return mont_torch.from_mont(data, F.p)


def power(x: FieldTensor, e: int) -> FieldTensor:
    if not isinstance(e, int) or isinstance(e, bool):
        raise TypeError("exponent must be an int")
    if e < 0:
        return power(inverse(x), -e)
    (res,) = run_program(x.F, ("pow", e), 1, lambda a: a ** e, [x.data])
    return FieldTensor(x.F, res)


FEW = 64      # values up to which inverses are taken on the host (`invert_few`)


def invert_few(F: FieldSpace, data: torch.Tensor) -> torch.Tensor:
    """Inverses of a few Montgomery-form values (L, m) on the host, zero for zero (what
    x^(p-2) gives): Montgomery's trick on Python ints, so one modular inverse (~10 us at
    254 bits) and 3 products per value. The compiled x^(p-2) is ~380 dependent products
    in one lane: 2.3 ms a launch on the CPU target, and this is the top of every batch
    inversion (each tree level and halving step of the MSM has one)."""
    import numpy as np
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
    return torch.from_numpy(out.reshape(m, L).T.copy().view(np.int32)).to(data.device)


def _check_nonzero(x: FieldTensor):
    zero = x.is_zero()
    if bool(zero.any()):
        idx = tuple(int(i) for i in torch.nonzero(zero.reshape(zero.shape) if zero.dim() else
                                                      zero.reshape(1))[0])
        raise ZeroDivisionError(f"{x.F.name}: inverse of zero (at index {idx})")


def inverse(x: FieldTensor) -> FieldTensor:
    """1/x elementwise (Fermat: x^(p-2)); raises ZeroDivisionError on a zero."""
    _check_nonzero(x)
    return power(x, x.F.p - 2)


BACKWARD = lambda inv, pre, x: (inv * pre, inv * x)  # noqa: E731  (out_j, running inverse)


def batch_inverse(x: FieldTensor) -> FieldTensor:
    """Inverses of every element with one field inversion (Montgomery's trick)."""
    _check_nonzero(x)
    return _batch_inverse(x.reshape(-1)).reshape(tuple(x.shape))


def _batch_inverse(flat: FieldTensor) -> FieldTensor:
    F, n = flat.F, flat.numel()
    if n <= FEW:
        return FieldTensor(F, invert_few(F, flat.data.reshape(F.limbs, n)))
    k = 1 << math.ceil(math.log2(math.sqrt(n)))
    m = -(-n // k)
    X = F.ones((m * k,), device=flat.device)
    X.data[:, :n] = flat.data
    X = X.reshape(m, k)
    pre = F.zeros((m, k), device=flat.device)
    pre.data[:, :, 0] = X.data[:, :, 0]
    for j in range(1, k):
        apply("mul", pre[:, j - 1], X[:, j], out=pre[:, j])
    inv = _batch_inverse(pre[:, k - 1].contiguous())
    out = F.zeros((m, k), device=flat.device)
    for j in range(k - 1, 0, -1):
        o, inv_next = run_program(F, "batch_inverse_backward", 3, BACKWARD,
                                  [inv.data, pre.data[:, :, j - 1], X.data[:, :, j]],
                                  out=[out.data[:, :, j], None])
        inv = FieldTensor(F, inv_next)
    out.data[:, :, 0] = inv.data
    return out.reshape(m * k)[:n]
