"""Signed-digit windows of scalars on the host (numpy): the recoding every MSM path plans with.

    W = n_windows(254, c)                  # windows of c bits, the final carry included
    d = signed_digits(words, c, W)         # (W, m) int32, |d| <= 2^(c-1)

A leaf (numpy only): the bucket tree's plan (`ops.msm`), the lanes loop
(`msm_small_cpu`) and the prover without torch (`groth16.numpy_prover`) all recode here.
"""
from __future__ import annotations

import numpy as np


def n_windows(bits: int, c: int) -> int:
    """Windows for signed digits of a `bits`-bit scalar: the recoding's final carry fits."""
    return -(-(bits + 1) // c)


def signed_digits(words: np.ndarray, c, W: int | None = None) -> np.ndarray:
    """Signed digits (W, m) int32 of scalars given as words (m, Lr), window t of width
    c_t (`c` an int: all windows c bits; or a list of widths): sum_t d_t 2^(c_0 + ... + c_{t-1}),
    |d_t| <= 2^(c_t - 1)."""
    widths = [c] * W if isinstance(c, int) else list(c)
    if max(widths) > 30:
        raise ValueError(f"windows of at most 30 bits, got {max(widths)}")
    m, Lr = words.shape
    # in 32-bit words throughout (a window is at most 30 bits, its carry one): half the
    # memory traffic of 64-bit lanes
    w = np.ascontiguousarray(words.T, dtype=np.uint32)
    out = np.empty((len(widths), m), dtype=np.int32)
    carry = np.zeros(m, dtype=np.int32)
    off = 0
    for t, ct in enumerate(widths):
        half, mask = 1 << (ct - 1), (1 << ct) - 1
        j, s = divmod(off, 32)
        v = (w[j] >> np.uint32(s)) if j < Lr else np.zeros(m, dtype=np.uint32)
        if j + 1 < Lr and s + ct > 32:
            v |= w[j + 1] << np.uint32(32 - s)          # the high bits fall off: masked below
        v &= np.uint32(mask)
        v = v.view(np.int32)
        v += carry
        np.greater(v, half, out=carry, casting="unsafe")
        out[t] = v - (carry << ct)
        off += ct
    if carry.any():
        raise AssertionError("signed recoding overflowed its windows")
    return out


__all__ = ["n_windows", "signed_digits"]
