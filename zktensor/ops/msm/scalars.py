"""The scalar side of an MSM: scalars as standard-form words (checked < r), balanced window
widths, signed digits (on the host for the CPU plan, by a carry chain; on the scalars'
device for the device program, in closed form), and the masks of the scalars that go
through the buckets (nonzero, non-identity base) and of the ones."""
from __future__ import annotations

import functools
import sys

import numpy as np
import torch
import torch.nn.functional as Fn

from ...points import GroupSpace
from ...tensor import FieldTensor

from ...kernels.signed_digits import n_windows, signed_digits  # noqa: F401  (re-exported)


# -- inputs -------------------------------------------------------------------------------------


def scalar_words(GS: GroupSpace, scalars) -> np.ndarray:
    """Standard-form 32-bit words (B, n, Lr) of the scalars, each checked < r."""
    Fr = GS.Fr
    Lr = Fr.limbs
    if isinstance(scalars, FieldTensor):
        if scalars.F != Fr:
            raise ValueError(f"{GS.name}: scalars must be {Fr.name} elements, got {scalars.F.name}")
        from ...kernels.field_programs import from_mont
        shape = tuple(scalars.shape)
        if len(shape) not in (1, 2):
            raise ValueError("scalars must be a vector (n,) or a batch of vectors (B, n)")
        words = from_mont(Fr, scalars.data).cpu()
        words = words.reshape(Lr, -1).T.contiguous().numpy().view(np.uint32)
        return words.reshape((1,) + shape + (Lr,) if len(shape) == 1 else shape + (Lr,))
    if isinstance(scalars, torch.Tensor):
        raise TypeError("pass scalars as a FieldTensor of the scalar field or as Python ints")
    rows = list(scalars)
    batched = bool(rows) and isinstance(rows[0], (list, tuple))
    if not batched:
        rows = [rows]
    n = len(rows[0]) if rows else 0
    r = GS.r
    nb = 4 * Lr
    buf = bytearray()
    for b, row in enumerate(rows):
        if len(row) != n:
            raise ValueError("every scalar vector must have the same length")
        for i, k in enumerate(row):
            if not isinstance(k, (int, np.integer)) or isinstance(k, bool):
                raise TypeError(f"scalar {i}: expected an int, got {type(k).__name__}")
            k = int(k)
            if not 0 <= k < r:
                where = f"scalar {i}" if not batched else f"scalar [{b}][{i}]"
                raise ValueError(f"{where} = {k} is outside [0, r) of {GS.Fr.name}; reduce it mod r")
            buf += k.to_bytes(nb, "little")
    return np.frombuffer(bytes(buf), dtype="<u4").reshape(len(rows), n, Lr)


def window_widths(bits: int, c: int) -> list[int]:
    """Widths of the n_windows(bits, c) signed-digit windows, balanced (each c or c - 1, the
    wider ones low): a top window of a few bits would gather all n digits into a few
    buckets, and their trees would take log2(n) levels."""
    W = n_windows(bits, c)
    base, extra = divmod(bits + 1, W)
    return [base + 1] * extra + [base] * (W - extra)


@functools.lru_cache(maxsize=16)
def _window_words(C: int, W: int, device: str):
    """For window t: the indices of the two words it may span (t·C // 32 and the next), and
    its bit offset in the first (made once per window geometry and device)."""
    idx = torch.tensor([t * C // 32 for t in range(W)] + [t * C // 32 + 1 for t in range(W)], device=device)
    sh = torch.tensor([[t * C % 32] for t in range(W)], dtype=torch.int64, device=device)
    return idx, sh


def signed_digits_torch(words: torch.Tensor, C: int, W: int) -> torch.Tensor:
    """Signed digits (W, m) int32 of scalars given as standard-form words (Lr, m) int32 on any
    device, W windows of C bits, in closed form (no carry chain): with w_t window t's bits
    and b_i bit i of the scalar, d_t = w_t + b_(tC-1) - 2^C·b_((t+1)C-1). The sum telescopes
    to the scalar and |d_t| <= 2^(C-1); a few whole-tensor torch operations, no host read.
    int32 (C <= 30): half the bytes of every pass over the W·m digits, the sort's included."""
    if not 1 <= C <= 30:
        raise ValueError(f"signed digits of 1..30 bits, got {C}")
    idx, sh = _window_words(C, W, str(words.device))
    w = Fn.pad(words.to(torch.int64) & 0xFFFFFFFF, (0, 0, 0, 2))       # two zero words past the top
    lohi = w.index_select(0, idx)
    win = (((lohi[:W] | (lohi[W:] << 32)) >> sh) & ((1 << C) - 1)).to(torch.int32)
    top = win >> (C - 1)
    return win + Fn.pad(top[:-1], (0, 0, 1, 0)) - (top << C)


def split_scalars(words: np.ndarray, base_inf: np.ndarray, sparse: bool):
    """(live, ones) masks (B, n) of scalar words (B, n, Lr): the nonzero scalars of non-identity
    bases (all of them go through the buckets), and with `sparse` the scalars 1 among them
    (left out of the window choice)."""
    if words.shape[2] % 2 or words.dtype.itemsize != 4 or not words.flags.c_contiguous or \
            sys.byteorder != "little":
        live = words.any(axis=2) & ~base_inf[None, :]
        one = (words[:, :, 0] == 1) & ~words[:, :, 1:].any(axis=2)
    else:       # as 64-bit pairs of words, ORed column by column: any() over an axis of 8 words
        q = words.view(np.uint64)           # was several times slower
        hi = np.zeros(q.shape[:2], dtype=np.uint64)
        for k in range(1, q.shape[2]):
            hi |= q[:, :, k]
        live = ((q[:, :, 0] | hi) != 0) & ~base_inf[None, :]
        one = (q[:, :, 0] == 1) & (hi == 0)     # the low pair is 1: word 0 is 1, word 1 is 0
    if not sparse:
        return live, np.zeros_like(live)
    return live, live & one
