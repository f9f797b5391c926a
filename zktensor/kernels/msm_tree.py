"""Segmented sums of affine points by a tree of batch-affine additions.

`segment_sums(G, table, tinf, idx, lens)` adds up segments of points: segment
s is the rows idx[start_s : start_s + lens[s]] of an affine point table. It is
the bucket accumulation of the MSM (a segment is a bucket, its rows the
points whose digit selects it) and the tree reduction of its sparse path
(a segment per scalar vector, the points with scalar 1).

Each level of the tree pairs neighbours inside every segment (ranks 0+1,
2+3, ...), adds all pairs of all segments in one batch and carries an odd last
element over; a segment of length k is done after ceil(log2 k) levels and
leaves the working set. One level is

    gather   the left and right operands into two contiguous arrays
             (index_select: unit strides, so CPU vector loops apply);
    den      one launch: x_R - x_L (over Fq2: its norm, an Fq value);
    inverse  all denominators of the level with one field inversion
             (`msm_inverse`, 2·log_B launches, ~3 products each);
    add      one launch: lambda = (y_R - y_L)/(x_R - x_L), x3 = lambda^2 - x_L - x_R,
             y3 = lambda (x_L - x3) - y_L, written straight into the next level's table.

so a level costs about 6 products per addition (3 of them the batch inversion)
against 10 to 14 for projective additions. The work of a level is the pairs
of all segments together, split evenly over threads or GPU blocks however
uneven the buckets are (a bucket holding half the points costs log2 levels,
not a serial chain): the tree is the load balance.

Exceptions are found, not assumed away: a pair with an identity operand takes
the other operand; a pair with x_L = x_R (a zero denominator, replaced by 1
before the inversion) is P + P, routed through the complete XYZZ doubling, or
P + (-P), which becomes the identity. Identity rows carry a flag.
"""
from __future__ import annotations

import numpy as np
import torch

from ..ir import ec as E
from . import msm_ec
from .msm_inverse import batch_inverse


def _f_den(P, Q):
    """What the level inverts: x_Q - x_P (its norm over Fq2)."""
    dx = Q.coords()[0] - P.coords()[0]
    parts = dx.parts()
    if len(parts) == 1:
        return parts[0]
    a0, a1 = parts
    return a0 * a0 - (a1 * a1) * _BETA[P.prog.group.name]


def _f_add_inv(P, Q, inv):
    """P + Q for affine P != ±Q given inv = 1/den (den as in _f_den)."""
    x1, y1 = P.coords()
    x2, y2 = Q.coords()
    dx = x2 - x1
    parts = dx.parts()
    if len(parts) == 1:
        dinv = E.join(inv)
    else:
        dinv = E.join(parts[0] * inv, -(parts[1] * inv))
    lam = (y2 - y1) * dinv
    x3 = lam.square() - x1 - x2
    y3 = lam * (x1 - x3) - y1
    return E.make("affine", x3, y3)


_BETA: dict[str, int] = {}


def _beta(G) -> int:
    if G.name not in _BETA:
        from ..points import _beta as beta
        _BETA[G.name] = beta(G)
    return _BETA[G.name]


def comps(data: torch.Tensor):
    return [data[:, k] for k in range(data.shape[1])]


def add_pairs(GS, XL: torch.Tensor, XR: torch.Tensor, infL: torch.Tensor, infR: torch.Tensor,
              out: torch.Tensor, block: int = 8) -> torch.Tensor:
    """out[:, :, i] = XL[i] + XR[i] for affine data (L, 2d, P) with identity flags;
    returns the identity flags of the sums."""
    from ..points import PointTensor, is_zero, add_complete
    G = GS.params
    _beta(G)
    L, C, P = XL.shape
    d = G.degree
    if P == 0:
        return torch.zeros(0, dtype=torch.bool, device=XL.device)
    q = -(-P // block) * block if P > block else P
    den = torch.empty((L, q), dtype=torch.int32, device=XL.device)
    if q > P:
        den[:, P:] = GS._one_col(XL.device).reshape(L, 1)
    msm_ec.run(G, "tree_den", ("affine", "affine"), _f_den, comps(XL) + comps(XR), out=[den[:, :P]])
    zero = is_zero(den[:, :P].unsqueeze(1))
    special = zero | infL | infR
    sp = None
    if bool(special.any()):
        sp = torch.nonzero(special).reshape(-1)
        den[:, sp] = GS._one_col(XL.device).reshape(L, 1)
    inv = batch_inverse(GS.F, den, block)
    msm_ec.run(G, "tree_add", ("affine", "affine", "fq"), _f_add_inv,
               comps(XL) + comps(XR) + [inv[:, :P]], out=[out[:, k] for k in range(C)])
    sinf = infL & infR
    if sp is not None:
        # exceptional pairs, done with complete XYZZ arithmetic (rare: ±equal points, identities)
        a = GS.from_affine(XL[:, :, sp], infL[sp], check=False)
        b = GS.from_affine(XR[:, :, sp], infR[sp], check=False)
        s = PointTensor(GS, add_complete(GS, a.data, b.data))
        xy, inf = s.affine()
        out[:, :, sp] = xy
        sinf[sp] = inf
    return sinf


def segment_sums(GS, table: torch.Tensor, tinf: torch.Tensor, idx: np.ndarray, lens: np.ndarray,
                 dest: np.ndarray | None = None, out_cols: int | None = None, block: int = 8,
                 stats: dict | None = None):
    """Sums of the segments of rows of an affine table (L, 2d, T) with identity flags (T,).

    idx: int64 rows of the table, segment after segment; lens: segment lengths
    (zero allowed: the sum is the identity). Segment s is written to column
    dest[s] (default s) of the result (L, 2d, out_cols); returns (result, inf)."""
    L, C, _ = table.shape
    S = len(lens)
    dev = table.device
    dest = np.arange(S, dtype=np.int64) if dest is None else np.asarray(dest, dtype=np.int64)
    ncols = S if out_cols is None else out_cols
    out = torch.zeros((L, C, ncols), dtype=torch.int32, device=dev)
    out_inf = torch.ones(ncols, dtype=torch.bool, device=dev)
    seg = dest
    cur_idx = np.asarray(idx, dtype=np.int64)
    lens = np.asarray(lens, dtype=np.int64)
    cur_table, cur_inf = table, tinf
    level = 0
    while True:
        starts = np.cumsum(lens) - lens
        one = lens == 1
        if one.any():
            src = torch.from_numpy(cur_idx[starts[one]]).to(dev)
            dst = torch.from_numpy(seg[one]).to(dev)
            out[:, :, dst] = cur_table[:, :, src]
            out_inf[dst] = cur_inf[src]
        live = lens >= 2
        if not live.any():
            break
        lens, starts, seg = lens[live], starts[live], seg[live]
        npairs = lens >> 1
        odd = (lens & 1).astype(bool)
        P = int(npairs.sum())
        pstart = np.cumsum(npairs) - npairs
        rank = np.arange(P, dtype=np.int64) - np.repeat(pstart, npairs)
        lpos = np.repeat(starts, npairs) + 2 * rank
        li = torch.from_numpy(cur_idx[lpos]).to(dev)
        ri = torch.from_numpy(cur_idx[lpos + 1]).to(dev)
        pass_src = cur_idx[(starts + lens - 1)[odd]]
        npass = len(pass_src)
        new_lens = npairs + odd
        new_starts = np.cumsum(new_lens) - new_lens
        new_idx = np.empty(P + npass, dtype=np.int64)
        new_idx[np.repeat(new_starts, npairs) + rank] = np.arange(P, dtype=np.int64)
        new_idx[new_starts[odd] + npairs[odd]] = P + np.arange(npass, dtype=np.int64)
        new_table = torch.empty((L, C, P + npass), dtype=torch.int32, device=dev)
        XL = cur_table.index_select(2, li)
        XR = cur_table.index_select(2, ri)
        sinf = add_pairs(GS, XL, XR, cur_inf[li], cur_inf[ri], new_table[:, :, :P], block)
        new_inf = torch.empty(P + npass, dtype=torch.bool, device=dev)
        new_inf[:P] = sinf
        if npass:
            ps = torch.from_numpy(pass_src).to(dev)
            new_table[:, :, P:] = cur_table[:, :, ps]
            new_inf[P:] = cur_inf[ps]
        if stats is not None:
            stats.setdefault("levels", []).append(P)
        cur_table, cur_inf, cur_idx, lens = new_table, new_inf, new_idx, new_lens
        level += 1
    return out, out_inf
