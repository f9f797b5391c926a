"""Multi-scalar multiplication: sum_i k_i·P_i as a tensor program.

    G = zt.group("bn254.g1")
    P = G.tensor(points)                      # (n,) bases
    Q = zt.msm(scalars, P)                    # scalars: FieldTensor of bn254.fr or ints
    Qs = zt.msm(scalar_rows, P)               # (B, n) scalars sharing the bases -> (B,) points
    bases = zt.msm_prepare(P, window=13, checkpoint=4)    # GZKP precomputation (fixed bases)
    Q = zt.msm(scalars, bases)

Algorithm (signed-digit Pippenger; see `MSMConfig` for the knobs):

1. Scalars (standard form, checked < r) are cut into W windows of c bits and
   recoded to signed digits in [-2^(c-1), 2^(c-1)], so N = 2^(c-1) buckets per
   window and -P costs only a negated y.
2. Sparse scalars: zeros are dropped and ones summed by a tree reduction apart
   from the rest (witness MSMs are mostly 0 and 1); identity bases are dropped.
3. Bucket accumulation as a tensor program: every (window, point) digit is an
   entry; entries are grouped by bucket with a stable radix sort per window
   row, and all buckets of all windows are summed by one segmented tree of
   batch-affine additions (`kernels.msm_tree`: each level one batched addition
   launch sharing one inversion). The tree balances load by construction: a
   level's work is its pairs, whatever the buckets' sizes.
4. Offset point D: every bucket also receives D (a fixed multiple of the
   generator), so no bucket is empty and the reduction runs without identity
   cases; D's total, (N(N+1)/2)·sum_m 2^(m·c)·D, is cancelled exactly by adding
   D to the bases with the opposite scalar.
5. Bucket reduction by blocked parallel suffix sums (`kernels.msm_reduce`).
6. Windows combined by Horner (c doublings fused into one launch per window).

GZKP consolidation (`msm_prepare`): with the weighted bases 2^(j·M·c)·P_i kept
for every checkpoint j (every M windows), the windows t = j·M + m of all
checkpoints share the buckets of round m: M bucket sets instead of W, so
fewer bucket reductions (and larger windows pay off), at the memory of
ceil(W/M) copies of the bases. M = 1 merges every window into one bucket set
(most memory); M = W is plain Pippenger.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import torch

from ..points import GroupSpace, PointTensor, add_complete, double_n, group as group_space, scalar_mul
from ..tensor import FieldTensor

MAX_WINDOW = 16          # |digit| <= 2^(c-1) fits the uint16 radix sort


@dataclass(frozen=True)
class MSMConfig:
    """The knobs of `msm`, for callers and the autotuner. None means: chosen by the cost model.

    window       c, bits per signed-digit window (2..16)
    chunks       K, lanes per bucket row in the bucket reduction (power of two <= 2^(c-1))
    checkpoint   M for `msm_prepare`: windows between stored weighted bases
    sparse       split scalars 0 and 1 off the Pippenger path
    offset       put the offset point D in every bucket (see module docstring)
    inverse_block  B of the blocked batch inversion (`kernels.msm_inverse`)
    cost_affine / cost_bucket   cost-model weights: one batch-affine addition, and one
                 bucket's share of the reduction, in the same (arbitrary) unit
    """
    window: int | None = None
    chunks: int | None = None
    checkpoint: int | None = None
    sparse: bool = True
    offset: bool = True
    inverse_block: int = 8
    cost_affine: float = 1.0
    cost_bucket: float = 5.0


def n_windows(bits: int, c: int) -> int:
    """Windows for signed digits of a `bits`-bit scalar: the recoding's final carry fits."""
    return -(-(bits + 1) // c)


def cost(n: int, bits: int, c: int, rows_per_batch: int | None = None, batch: int = 1,
         cfg: MSMConfig = MSMConfig()) -> float:
    """Modelled cost of Pippenger with window c: entries through the batch-affine tree plus
    buckets through the reduction (a bucket row per window, or per round when consolidated)."""
    W = n_windows(bits, c)
    rows = W if rows_per_batch is None else rows_per_batch
    N = 1 << (c - 1)
    entries = batch * n * W * (1 - 1.0 / (1 << c))
    return cfg.cost_affine * entries + cfg.cost_bucket * batch * rows * N


def choose_window(n: int, bits: int, batch: int = 1, checkpoint: int | None = None,
                  cfg: MSMConfig = MSMConfig()) -> int:
    best = None
    for c in range(2, MAX_WINDOW + 1):
        W = n_windows(bits, c)
        rows = W if checkpoint is None else min(checkpoint, W)
        v = cost(n, bits, c, rows, batch, cfg)
        if best is None or v < best[0]:
            best = (v, c)
    return best[1]


def choose_chunks(N: int) -> int:
    """K ~ sqrt(N): Lc + K launches in the reduction."""
    return 1 << ((N.bit_length() - 1) // 2)


# -- the offset point D ------------------------------------------------------------------------

_D_SCALAR = 0x9E3779B97F4A7C15F39CC0605CEDC834    # fixed, odd, no structure relied on
_offsets: dict = {}


def offset_point(GS: GroupSpace, device) -> tuple[torch.Tensor, torch.Tensor]:
    """D = _D_SCALAR·g as affine data (L, 2d, 1) (cached per group and device)."""
    key = (GS.name, str(device))
    if key not in _offsets:
        D = scalar_mul(GS.generator(device=device), _D_SCALAR)
        xy, inf = D.reshape(1).affine()
        _offsets[key] = (xy, inf)
    return _offsets[key]


# -- inputs -------------------------------------------------------------------------------------


def scalar_words(GS: GroupSpace, scalars) -> np.ndarray:
    """Standard-form 32-bit words (B, n, Lr) of the scalars, each checked < r."""
    Fr = GS.Fr
    Lr = Fr.limbs
    if isinstance(scalars, FieldTensor):
        if scalars.F != Fr:
            raise ValueError(f"{GS.name}: scalars must be {Fr.name} elements, got {scalars.F.name}")
        from .elementwise import from_mont
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


def signed_digits(words: np.ndarray, c: int, W: int) -> np.ndarray:
    """Signed c-bit digits (W, m) int32 of scalars given as words (m, Lr): sum_t d_t 2^(t c)."""
    m, Lr = words.shape
    w = np.ascontiguousarray(words.T).astype(np.uint64)
    out = np.empty((W, m), dtype=np.int32)
    carry = np.zeros(m, dtype=np.int64)
    half, mask = 1 << (c - 1), (1 << c) - 1
    for t in range(W):
        j, s = divmod(t * c, 32)
        v = (w[j] >> np.uint64(s)) if j < Lr else np.zeros(m, dtype=np.uint64)
        if j + 1 < Lr and s + c > 32:
            v = v | (w[j + 1] << np.uint64(32 - s))
        v = (v & np.uint64(mask)).astype(np.int64) + carry
        carry = (v > half).astype(np.int64)
        out[t] = v - (carry << c)
    if carry.any():
        raise AssertionError("signed recoding overflowed its windows")
    return out


class MSMBases:
    """Bases prepared for repeated MSMs (GZKP): 2^(j·M·c)·P_i for every checkpoint j, plus
    the offset point D's weighted copies, as one affine table with its negation."""

    def __init__(self, GS: GroupSpace, xy: torch.Tensor, inf: torch.Tensor, window: int,
                 checkpoint: int, config: MSMConfig):
        self.G, self.window, self.checkpoint, self.config = GS, window, checkpoint, config
        self.n = xy.shape[2]
        bits = GS.r.bit_length()
        self.W = n_windows(bits, window)
        self.M = min(checkpoint, self.W)
        self.J = -(-self.W // self.M)
        self.base_inf = inf
        self.table, self.tinf = _weighted_table(GS, xy, inf, window, self.M, self.J, config)

    def __len__(self):
        return self.n

    def memory_bytes(self) -> int:
        return self.table.numel() * 4


def _weighted_table(GS, xy, inf, c, M, J, cfg):
    """Affine table (L, 2d, 2·J·(n+1)): [Q_0 | Q_1 | ... | Q_{J-1} | -(same)], Q_j = 2^(j M c)·[P, D]."""
    L, C2, n = xy.shape
    dev = xy.device
    Dxy, Dinf = offset_point(GS, dev)
    base_xy = torch.cat([xy, Dxy], dim=2)
    base_inf = torch.cat([inf, Dinf])
    parts, infs = [base_xy], [base_inf]
    cur = GS.from_affine(base_xy, base_inf, check=False)
    for _ in range(1, J):
        cur = PointTensor(GS, double_n_many(GS, cur.data, M * c))
        cxy, cinf = cur.affine()
        parts.append(cxy)
        infs.append(cinf)
    pos = torch.cat(parts, dim=2)
    pinf = torch.cat(infs)
    negy = -FieldTensor(GS.F, pos[:, GS.degree:].reshape(L, -1).contiguous())
    neg = torch.cat([pos[:, :GS.degree], negy.data.reshape(L, GS.degree, -1)], dim=1)
    return torch.cat([pos, neg], dim=2), torch.cat([pinf, pinf])


def double_n_many(GS, data, n):
    while n > 0:
        k = min(n, 16)
        data = double_n(GS, data, k)
        n -= k
    return data


def msm_prepare(points, window: int | None = None, checkpoint: int | None = None,
                config: MSMConfig | None = None, n_hint: int | None = None) -> MSMBases:
    """Precompute GZKP's weighted bases for `points` (a 1-D PointTensor)."""
    cfg = config or MSMConfig()
    if not isinstance(points, PointTensor):
        raise TypeError("msm_prepare takes a PointTensor of bases")
    GS = points.G
    if len(points.shape) != 1:
        raise ValueError("bases must be a 1-D PointTensor")
    n = points.shape[0]
    bits = GS.r.bit_length()
    M = checkpoint or cfg.checkpoint
    c = window or cfg.window or choose_window(n_hint or n, bits, checkpoint=M or 1, cfg=cfg)
    _check_window(c)
    W = n_windows(bits, c)
    M = min(M or 1, W)
    xy, inf = points.affine()
    return MSMBases(GS, xy, inf, c, M, replace(cfg, window=c, checkpoint=M))


def _check_window(c):
    if not 2 <= c <= MAX_WINDOW:
        raise ValueError(f"window must be in [2, {MAX_WINDOW}], got {c}")


# -- the MSM ---------------------------------------------------------------------------------------


def msm(scalars, points, config: MSMConfig | None = None, stats: dict | None = None) -> PointTensor:
    """sum_i scalars[i]·points[i] as a 0-d PointTensor; (B, n) scalars give a (B,) PointTensor.

    points: a 1-D PointTensor, a list of affine points (tuples, None = identity) with `group`
    given through a PointTensor, or `MSMBases` from `msm_prepare`. scalars: a FieldTensor of
    the group's scalar field, or Python ints in [0, r) (a list, or a list of lists)."""
    cfg = config or MSMConfig()
    if isinstance(points, MSMBases):
        bases = points
        GS = bases.G
        n = bases.n
    elif isinstance(points, PointTensor):
        GS = points.G
        if len(points.shape) != 1:
            raise ValueError(f"bases must be a 1-D PointTensor, got shape {tuple(points.shape)}")
        n = points.shape[0]
        bases = None
    else:
        raise TypeError("msm(scalars, points): points must be a PointTensor (e.g. G.tensor(list)) "
                        "or MSMBases from msm_prepare")
    words = scalar_words(GS, scalars)
    Bt, ns, _ = words.shape
    if ns != n:
        raise ValueError(f"msm: {ns} scalars but {n} points")
    squeeze = not (isinstance(scalars, FieldTensor) and len(scalars.shape) == 2) and not (
        not isinstance(scalars, FieldTensor) and len(scalars) and isinstance(list(scalars)[0], (list, tuple)))
    dev = (bases.table.device if bases is not None else points.device)
    if bases is None:
        xy, inf = points.affine()
        bits = GS.r.bit_length()
        c = cfg.window or choose_window(max(n, 1), bits, batch=Bt, cfg=cfg)
        _check_window(c)
        W = n_windows(bits, c)
        table, tinf = _weighted_table(GS, xy, inf, c, W, 1, cfg)
        base_inf = inf
        M, J = W, 1
    else:
        c, W, M, J = bases.window, bases.W, bases.M, bases.J
        table, tinf, base_inf = bases.table, bases.tinf, bases.base_inf
    res = _pippenger(GS, table, tinf, base_inf.cpu().numpy(), words, c, W, M, J, cfg, dev, stats)
    return res[0] if squeeze else res


def _pippenger(GS, table, tinf, base_inf, words, c, W, M, J, cfg, dev, stats):
    Bt, n, Lr = words.shape
    r = GS.r
    N = 1 << (c - 1)
    nz = words.any(axis=2)                                   # (B, n)
    one = (words[:, :, 0] == 1) & ~words[:, :, 1:].any(axis=2)
    live = nz & ~base_inf[None, :]
    ones_mask = (one & live) if cfg.sparse else np.zeros_like(one)
    dense = live & ~ones_mask
    # the offset point's scalar: minus D's total in the buckets
    if cfg.offset:
        s = (N * (N + 1) // 2) * sum(1 << (m * c) for m in range(M)) % r
        d_words = np.frombuffer(((r - s) % r).to_bytes(4 * Lr, "little"), dtype="<u4")
    else:
        d_words = np.zeros(Lr, dtype=np.uint32)
    all_words = np.concatenate([np.where(dense[:, :, None], words, 0).astype(np.uint32),
                                np.broadcast_to(d_words, (Bt, 1, Lr))], axis=1)   # (B, n+1, Lr)
    n1 = n + 1
    digits = signed_digits(all_words.reshape(Bt * n1, Lr), c, W).reshape(W, Bt, n1)
    # rows r = m·B + b (round m of batch b); columns j·(n+1) + i (checkpoint j, base i)
    if J * M != W:
        digits = np.concatenate([digits, np.zeros((J * M - W, Bt, n1), dtype=np.int32)])
    dg = digits.reshape(J, M, Bt, n1).transpose(1, 2, 0, 3).reshape(M * Bt, J * n1)
    rows = M * Bt
    mags = np.abs(dg).astype(np.uint16)
    order = np.argsort(mags, axis=1, kind="stable")
    smag = np.take_along_axis(mags, order, axis=1)
    counts = np.zeros((rows, N + 1), dtype=np.int64)
    np.add.at(counts, (np.repeat(np.arange(rows), J * n1), smag.ravel()), 1) if False else None
    counts = np.bincount((np.arange(rows, dtype=np.int64)[:, None] * (N + 1) + smag).ravel(),
                         minlength=rows * (N + 1)).reshape(rows, N + 1)
    sel = smag.ravel() > 0
    cols = order.ravel()[sel]
    neg = (np.take_along_axis(dg, order, axis=1).ravel()[sel] < 0)
    entries = cols.astype(np.int64) + neg * (J * n1)
    seg_counts = counts[:, 1:].ravel()                       # segments (row, v) in order
    S = rows * N
    if cfg.offset:
        lens = seg_counts + 1
        d_pos = np.cumsum(lens) - 1
        idx = np.empty(int(lens.sum()), dtype=np.int64)
        mask = np.ones(len(idx), dtype=bool)
        mask[d_pos] = False
        idx[mask] = entries
        idx[d_pos] = n                                       # D at checkpoint 0, positive
    else:
        lens, idx = seg_counts, entries
    # bucket layout for the reduction: column j·(K·rows) + k·rows + row for v - 1 = k·Lc + j
    K = min(cfg.chunks or choose_chunks(N), N)
    Lc = N // K
    v0 = np.tile(np.arange(N, dtype=np.int64), rows)
    rr = np.repeat(np.arange(rows, dtype=np.int64), N)
    dest = (v0 % Lc) * (K * rows) + (v0 // Lc) * rows + rr
    from ..kernels.msm_tree import segment_sums
    from ..kernels.msm_reduce import reduce_buckets
    buckets, binf = segment_sums(GS, table, tinf.to(dev), idx, lens, dest=dest, out_cols=S,
                                 block=cfg.inverse_block, stats=stats)
    T = reduce_buckets(GS, buckets, binf, rows, K, Lc, stats=stats)   # (L, 4d, rows), row = m·B + b
    # Horner over rounds
    res = T[:, :, (M - 1) * Bt:M * Bt]
    for m in range(M - 2, -1, -1):
        res = double_n_many(GS, res, c)
        res = add_complete(GS, res, T[:, :, m * Bt:(m + 1) * Bt])
    # the ones, summed apart
    if ones_mask.any():
        ob, oi = np.nonzero(ones_mask)
        ones_xy, ones_inf = segment_sums(GS, table, tinf.to(dev), oi.astype(np.int64),
                                         np.bincount(ob, minlength=Bt).astype(np.int64),
                                         block=cfg.inverse_block, stats=None)
        res = add_complete(GS, res, GS.from_affine(ones_xy, ones_inf, check=False).data)
    if stats is not None:
        stats.update(window=c, windows=W, rounds=M, checkpoints=J, chunks=K, buckets=S,
                     entries=int(len(idx)), ones=int(ones_mask.sum()), dense=int(dense.sum()))
    return PointTensor(GS, res.contiguous())
