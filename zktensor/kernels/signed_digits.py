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


CLOSED_FORM_UPTO = 1024     # scalars up to which `signed_digits` takes the closed form


def signed_digits(words: np.ndarray, c, W: int | None = None) -> np.ndarray:
    """Signed digits (W, m) int32 of scalars given as words (m, Lr), window t of width
    c_t (`c` an int: all windows c bits; or a list of widths): sum_t d_t 2^(c_0 + ... + c_{t-1}),
    -2^(c_t - 1) < d_t <= 2^(c_t - 1).

    Two ways to one result: a carry chain, a few numpy calls a window over all m scalars
    (where m is large: memory traffic dominates), or, up to CLOSED_FORM_UPTO scalars
    (where the calls' fixed cost dominates: 50 windows of 5 bits, ~400 calls), the closed
    form, a few calls in all (`_closed_form`)."""
    widths = [c] * W if isinstance(c, int) else list(c)
    if max(widths) > 30:
        raise ValueError(f"windows of at most 30 bits, got {max(widths)}")
    m, Lr = words.shape
    if m <= CLOSED_FORM_UPTO:
        return _closed_form(words, widths)
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


def _closed_form(words: np.ndarray, widths: list) -> np.ndarray:
    """`signed_digits` without a carry chain. Digits d_t in (-h_t, h_t], h_t = 2^(c_t - 1),
    are unique for a scalar that fits the windows (their ranges are complete residue
    systems), and d_t + h_t - 1 in [0, 2^c_t) are then the plain windows of
    k + Σ_t (h_t - 1)·2^(o_t) (o_t: window t's bit offset): one multi-word addition, then
    every window read at once from 64-bit word pairs (a window of <= 30 bits at a bit
    offset < 32 fits one)."""
    m, Lr = words.shape
    offs = np.cumsum([0] + widths[:-1])
    total = int(offs[-1]) + widths[-1]
    nw = max(Lr, -(-total // 32)) + 1              # k + bias, and a last word for the pairs
    bias = sum(((1 << (ct - 1)) - 1) << int(o) for ct, o in zip(widths, offs))
    bias_words = np.frombuffer(bias.to_bytes(4 * nw, "little"), dtype="<u4").astype(np.uint64)
    w = np.asarray(words, dtype=np.uint32).astype(np.uint64)
    K = np.empty((m, nw), dtype=np.uint64)
    carry = np.zeros(m, dtype=np.uint64)
    for i in range(nw):
        t = carry + bias_words[i]
        if i < Lr:
            t += w[:, i]
        K[:, i] = t & np.uint64(0xFFFFFFFF)
        carry = t >> np.uint64(32)
    above = [(0xFFFFFFFF << max(0, total - 32 * i)) & 0xFFFFFFFF for i in range(nw)]   # bits >= total
    if (K & np.array(above, dtype=np.uint64)).any():
        raise AssertionError("signed recoding overflowed its windows")
    pairs = K[:, :-1] | (K[:, 1:] << np.uint64(32))
    v = (pairs[:, offs // 32] >> (offs % 32).astype(np.uint64)) & np.array([(1 << ct) - 1 for ct in widths],
                                                                             dtype=np.uint64)
    return np.ascontiguousarray((v.view(np.int64) - np.array([(1 << (ct - 1)) - 1 for ct in widths])).T,
                                dtype=np.int32)


__all__ = ["n_windows", "signed_digits"]
