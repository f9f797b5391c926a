"""Montgomery conversions by torch integer operations: no compiled kernel, any device.

The compiled `to_mont` / `from_mont` programs need a kernel for the tensor's target:
on the CPU a shared object that LLVM built for this host (a cache copied from another
CPU misses it), compiled through the MLIR bindings on a miss. A machine without the
bindings (the lent GPU machine: the torch-mlir wheel does not travel) still has to read
witnesses, keys and results, so these conversions run there as plain torch arithmetic
on whatever device holds the words.

One Montgomery product by a constant, x·c·R^-1 mod p with R = 2^(32·L): to_mont takes
c = R^2 mod p, from_mont c = 1. The words are split into 16-bit digits held in int64
columns, so that every digit product (< 2^32) and every column sum stays exact; the
reduction is word-by-word Montgomery (CIOS order) over those digits, carried only
from the column being retired, and the columns are normalised once at the end.

Order in this file: the product, the two conversions, the reference (Python ints).
"""
from __future__ import annotations

import torch

DIGIT = 16
MASK = (1 << DIGIT) - 1
CHUNK = 1 << 18          # columns per pass: bounds the (4L+1, chunk) int64 work buffer


def _digits(v: int, n: int) -> list[int]:
    return [(v >> (DIGIT * i)) & MASK for i in range(n)]


def mont_mul_const(words: torch.Tensor, c: int, p: int) -> torch.Tensor:
    """x·c·2^(-32L) mod p, fully reduced, for int32 limb tensors (L, *batch) holding x < 2^(32L)
    (standard or Montgomery words alike) and a constant c < p. Same shape, device and dtype."""
    if words.dtype != torch.int32 or words.dim() < 1:
        raise ValueError(f"mont_mul_const: expected int32 limbs (L, ...), got {words.dtype} {tuple(words.shape)}")
    L = words.shape[0]
    if p >= 1 << (32 * L) or p % 2 == 0:
        raise ValueError(f"mont_mul_const: modulus does not fit {L} words or is even")
    batch = words.shape[1:]
    flat = words.reshape(L, -1)
    out = torch.empty_like(flat)
    for lo in range(0, flat.shape[1], CHUNK):
        out[:, lo:lo + CHUNK] = _mont_mul_cols(flat[:, lo:lo + CHUNK], c % p, p)
    return out.reshape((L,) + tuple(batch))


def _mont_mul_cols(w: torch.Tensor, c: int, p: int) -> torch.Tensor:
    L, m = w.shape
    n = 2 * L                                       # 16-bit digits per value
    dev = w.device
    x = w.to(torch.int64) & 0xFFFFFFFF
    a = torch.stack([x & MASK, x >> DIGIT], dim=1).reshape(n, m)      # digit 2j, 2j+1 of word j
    cd = torch.tensor(_digits(c, n), dtype=torch.int64, device=dev).reshape(n, 1)
    pd = torch.tensor(_digits(p, n), dtype=torch.int64, device=dev).reshape(n, 1)
    pinv = (-pow(p, -1, 1 << DIGIT)) & MASK
    # row i + k holds column k of the running sum after i digits were retired: the window of
    # live columns slides down the buffer instead of the sum being shifted
    t = torch.zeros((2 * n + 1, m), dtype=torch.int64, device=dev)
    for i in range(n):
        win = t[i:i + n]
        win += a[i] * cd
        q = ((t[i] & MASK) * pinv) & MASK
        win += q * pd
        t[i + 1] += t[i] >> DIGIT                   # t[i] is now a multiple of 2^16: retire it
    # each column took at most 2n products below 2^32 and carries: far below 2^63
    r = t[n:]
    for k in range(n):
        r[k + 1] += r[k] >> DIGIT
        r[k] &= MASK
    # r < 2p: subtract p once where that does not borrow
    d = r[:n] - pd
    for k in range(n - 1):
        d[k + 1] += d[k] >> DIGIT                   # arithmetic shift: -1 for a borrow
        d[k] &= MASK
    ge = (r[n] + (d[n - 1] >> DIGIT)) >= 0
    d[n - 1] &= MASK
    res = torch.where(ge, d, r[:n])
    words = res[0::2] | (res[1::2] << DIGIT)
    return (words - ((words >> 31) << 32)).to(torch.int32)     # uint32 values as int32 bits


def to_mont(words: torch.Tensor, p: int) -> torch.Tensor:
    """Standard-form words (each value < p) to Montgomery form, x·R mod p."""
    L = words.shape[0]
    return mont_mul_const(words, pow(2, 64 * L, p), p)


def from_mont(data: torch.Tensor, p: int) -> torch.Tensor:
    """Montgomery-form words to standard form, x·R^-1 mod p."""
    return mont_mul_const(data, 1, p)


# -- reference ------------------------------------------------------------------------
def reference(values: list[int], c: int, p: int, L: int) -> list[int]:
    """x·c·2^(-32L) mod p on Python ints."""
    rinv = pow(2, -32 * L, p)
    return [x * c * rinv % p for x in values]
