"""Bucket reduction: sum_v v·B_v for many bucket rows at once, by halving or by blocked
suffix sums.

Halving (`reduce_halving`, the default): for N = 2h buckets,

    sum_{v=1}^{2h} v·B_v = sum_{u=1}^{h} u·(B_u + B_{u+h})  +  h·sum_{u=1}^{h} B_{u+h},

so one level adds the top half onto the bottom half (h batch-affine additions over
every row at once) and keeps the top half T aside. After log2 N levels one bucket A
is left, and

    sum_v v·B_v = sum_k h_k·sum(T_k) + A,    h_k = N / 2^k,

where each T_k is summed by the same halving, in the same launches as the buckets
(step s halves the buckets and every T_k kept so far, all of 2·h_s a row), and the
weights h_k are a Horner chain of log2 N doublings over the rows (for a few rows, one
Straus a row on Python ints: `HOST_HORNER_ROWS`). About 2N affine
additions per row (~6 products each with the shared inversion) in log2 N launches
(the last steps, of at most XYZZ_TAIL pairs, as one launch of XYZZ additions each),
where the suffix sums below take 2N XYZZ additions (~12 to 14 products) in Lc
launches of rows·K lanes.

Blocked suffix sums (`reduce_buckets`): for a row of N buckets B_1..B_N (affine, from
`msm_tree`), the weighted sum
is the sum of the suffix sums S_v = B_v + ... + B_N. The buckets are cut into
K chunks of Lc = N / K, and the chunks of every row are lanes of one batch:

    level 1 (Lc - 1 launches over rows·K lanes): inside each chunk, from its top,
        run += B_j;  acc += run                 (a mixed and an XYZZ addition)
      giving run_k = sum of chunk k and acc_k = sum_j (j + 1)·B_{k·Lc + j};
    level 2 (K - 2 launches over rows lanes): the same step over the chunk sums
        (made affine, one batch inversion), r += run_k; a += r, giving
        a = sum_{k>=1} k·run_k, and s = sum_k acc_k by a tree of additions;
    then  T = s + Lc·a  (Lc·a: log2 Lc doublings), because
        sum_v v·B_v = sum_k (acc_k + k·Lc·run_k).

Each step is one launch of the same fused kernel (a mixed and an XYZZ
addition) writing its state in place; it also returns the product of the steps' cross-multiplied
x-differences, zero exactly when a step met P = ±Q. Those products are
checked once at the end (no host round trip per step), and any lane that met
an exception, or holds an identity bucket, is recomputed with complete
additions (`point_formulas.add_complete`). With the MSM's offset point D in
every bucket that path is, for inputs not built to hit it, never taken; it is
what keeps the result exact when it is.
"""
from __future__ import annotations

import torch

from . import msm_ec
from .msm_triton import ADD_PARTS, _f_add_finish, split_here
from ..algebra.curves import lincomb
from .point_formulas import add_complete, affine, double_n, from_host, neg, to_host, tree_sum


def _f_lane_step(run, b, acc):
    h1, _ = run.cross(b)
    run = run + b
    h2, _ = acc.cross(run)
    acc = acc + run
    return run, acc, h1 * h2


# The same step in three kernels, for the Triton target where the fused one spills (the
# record's triton_split_lane): run + b with its h1, the products of acc + run
# (msm_triton.ADD_PARTS[0]; its H is h2), then the rest of that addition with h1·h2. The
# field values are those of the fused formula and outputs are canonical: the same words.


def _f_lane_run(run, b):
    h1, _ = run.cross(b)
    return run + b, h1


def _f_lane_finish(U1, S1, H, R, ZZ12, ZZZ12, h1):
    return _f_add_finish(U1, S1, H, R, ZZ12, ZZZ12), h1 * H


LANE_PARTS = (("lane_run", ("xyzz", "affine"), _f_lane_run),
              ("lane_finish", ("coord",) * 7, _f_lane_finish))


def lane_step(G, inputs, out, split: bool | None = None):
    """One suffix-sum step, in place: inputs run (xyzz), b (affine), acc (xyzz) as component
    tensors; out: run, acc and h1·h2 (zero where a step met P = ±Q). `split`: the three-kernel
    form; by default where the Triton target would spill the fused kernel."""
    if split is None:
        split = split_here(G, G.triton_split_lane, inputs[0].device.type)
    if not split:
        msm_ec.run(G, "lane_step", ("xyzz", "affine", "xyzz"), _f_lane_step, inputs, out=out)
        return
    K, A = 4 * G.degree, 2 * G.degree     # components of an XYZZ and of an affine point
    run_in, b_in, acc_in = inputs[:K], inputs[K:K + A], inputs[K + A:]
    run_out, acc_out, h_out = out[:K], out[K:2 * K], out[2 * K:]
    (k1, kinds1, f1), (k3, kinds3, f3) = LANE_PARTS
    h1 = msm_ec.run(G, k1, kinds1, f1, run_in + b_in, out=run_out + [None] * G.degree)[K:]
    kp, kindsp, fp = ADD_PARTS[0]
    mid = msm_ec.run(G, kp, kindsp, fp, acc_in + run_out)
    msm_ec.run(G, k3, kinds3, f3, mid + h1, out=acc_out + h_out)


def _comps(t):
    return [t[:, k] for k in range(t.shape[1])]


def _xyzz(GS, xy, inf):
    """XYZZ data (L, 4d, m) from limb-major affine data (2d·L, m) and identity flags."""
    C = 2 * GS.degree
    return GS.from_affine(xy.reshape(C, GS.L, -1).permute(1, 0, 2), inf, check=False).data


def _cols(GS, t):
    """Limb-major affine data (2d·L, m) as component views (L, m)."""
    L = GS.L
    return [t[k * L:(k + 1) * L] for k in range(t.shape[0] // L)]


def _zero_cols(h: torch.Tensor) -> torch.Tensor:
    """(steps·lanes) columns of (L, d, steps·lanes) that are all zero."""
    return torch.all(h.reshape(-1, h.shape[-1]) == 0, dim=0)


def reduce_buckets(GS, buckets: torch.Tensor, binf: torch.Tensor, rows: int, K: int, Lc: int,
                   stats: dict | None = None) -> torch.Tensor:
    """T_r = sum_v v·B_{r,v} for `rows` rows of N = K·Lc buckets.

    buckets: limb-major affine data (2d·L, N·rows), column j·(K·rows) + k·rows + r holding
    B_{r, k·Lc + j + 1}; binf: their identity flags. Returns XYZZ (L, 4d, rows)."""
    G = GS.params
    L = GS.L
    lanes = K * rows
    dev = buckets.device
    d = G.degree

    def col(j):
        return slice(j * lanes, (j + 1) * lanes)

    # -- level 1: suffix sums inside the chunks -----------------------------------------
    run = _xyzz(GS, buckets[:, col(Lc - 1)], binf[col(Lc - 1)])
    acc = run.clone()
    steps = Lc - 1
    h = torch.empty((L, d, max(steps, 1) * lanes), dtype=torch.int32, device=dev)
    for j in range(Lc - 2, -1, -1):
        t = Lc - 2 - j
        lane_step(G, _comps(run) + _cols(GS, buckets[:, col(j)]) + _comps(acc),
                  _comps(run) + _comps(acc) + [h[:, q, t * lanes:(t + 1) * lanes] for q in range(d)])
    bad = binf.reshape(Lc, lanes).any(dim=0)
    if steps:
        bad |= _zero_cols(h[:, :, :steps * lanes]).reshape(steps, lanes).any(dim=0)
    if bool(bad.any()):
        idx = torch.nonzero(bad).reshape(-1)
        if stats is not None:
            stats["slow_lanes"] = stats.get("slow_lanes", 0) + len(idx)
        sel = lambda j: (buckets[:, col(j)][:, idx], binf[col(j)][idx])  # noqa: E731
        r = _xyzz(GS, *sel(Lc - 1))
        a = r.clone()
        for j in range(Lc - 2, -1, -1):
            r = add_complete(GS, r, _xyzz(GS, *sel(j)))
            a = add_complete(GS, a, r)
        run[:, :, idx] = r
        acc[:, :, idx] = a

    # -- level 2: over the chunks of each row ----------------------------------------------
    def rows_of(t, k):
        return t[:, :, k * rows:(k + 1) * rows]

    if K == 1:
        return acc
    if K >= RECURSE_FROM:
        a = _weighted_chunks(GS, run, rows, K, stats)
    else:
        a = _weighted_chunks_serial(GS, run, rows, K, stats)
    # s = sum_k acc_k
    s = tree_sum(GS, acc, rows, K)
    shift = Lc.bit_length() - 1
    return add_complete(GS, s, double_n(GS, a, shift) if shift else a)


RECURSE_FROM = 16      # K from which level 2 is itself a bucket reduction (2·sqrt(K) launches)


def _weighted_chunks(GS, run: torch.Tensor, rows: int, K: int, stats) -> torch.Tensor:
    """sum_{k=0}^{K-1} k·run_k per row, as a bucket reduction of its own: with B_v = run_{v-1}
    (v = 1..K), sum_v v·B_v - sum_v B_v."""
    xy, inf = affine(GS, run)                        # (L, 2d, K·rows), col k·rows + r
    L, C2 = GS.L, 2 * GS.degree
    K2 = 1 << ((K.bit_length() - 1) // 2)
    Lc2 = K // K2
    # sub-bucket layout: column j·(K2·rows) + k2·rows + r for v - 1 = k = k2·Lc2 + j
    sub = xy.reshape(L, C2, K2, Lc2, rows).permute(1, 0, 3, 2, 4).reshape(C2 * L, K * rows)
    binf = inf.reshape(K2, Lc2, rows).permute(1, 0, 2).reshape(-1)
    T = reduce_buckets(GS, sub.contiguous(), binf.contiguous(), rows, K2, Lc2, stats)
    S = tree_sum(GS, run, rows, K)
    return add_complete(GS, T, neg(GS, S))


def _weighted_chunks_serial(GS, run: torch.Tensor, rows: int, K: int, stats) -> torch.Tensor:
    """sum_{k>=1} k·run_k per row by K - 2 suffix-sum steps over run_k made affine."""
    G = GS.params
    L, d, dev = GS.L, GS.degree, run.device

    def rows_of(t, k):
        return t[:, :, k * rows:(k + 1) * rows]

    xy, inf = affine(GS, run[:, :, rows:])            # chunks 1..K-1 (L, 2d, m)
    r = rows_of(run, K - 1).clone()
    a = r.clone()
    steps2 = K - 2
    h2 = torch.empty((L, d, max(steps2, 1) * rows), dtype=torch.int32, device=dev)
    for k in range(K - 2, 0, -1):
        t = K - 2 - k
        lane_step(G, _comps(r) + _comps(xy[:, :, (k - 1) * rows:k * rows]) + _comps(a),
                  _comps(r) + _comps(a) + [h2[:, q, t * rows:(t + 1) * rows] for q in range(d)])
    bad = inf.reshape(K - 1, rows).any(dim=0)
    if steps2:
        bad |= _zero_cols(h2[:, :, :steps2 * rows]).reshape(steps2, rows).any(dim=0)
    if bool(bad.any()):
        idx = torch.nonzero(bad).reshape(-1)
        if stats is not None:
            stats["slow_rows"] = stats.get("slow_rows", 0) + len(idx)
        rr = rows_of(run, K - 1)[:, :, idx]
        aa = rr.clone()
        for k in range(K - 2, 0, -1):
            rr = add_complete(GS, rr, rows_of(run, k)[:, :, idx])
            aa = add_complete(GS, aa, rr)
        r[:, :, idx], a[:, :, idx] = rr, aa
    return a


# -- halving ------------------------------------------------------------------------------------


HOST_HORNER_ROWS = 4  # bucket rows up to which `reduce_halving`'s Horner chain runs on the host: a
                      # row is ~2·log2 N point operations on Python ints, where the tensor chain
                      # is a doubling and a complete-addition launch per level whatever the rows
                      # (timings: the commit that made it so)
XYZZ_TAIL = 4096     # halving steps of at most this many pairs are one launch of complete
                     # XYZZ additions (dearer a pair than batch-affine ones, but one launch
                     # against an up, a down and the inversion's levels). A one-row reduction
                     # (a prepared Groth16 key: N = 32768 at 2^16 constraints) has its last
                     # 10 of 15 steps in XYZZ


def reduce_halving(GS, buckets: torch.Tensor, binf: torch.Tensor, rows: int, N: int,
                   block: int = 2, inverse_block: int = 2, stats: dict | None = None) -> torch.Tensor:
    """T_r = sum_v v·B_{r,v} for `rows` rows of N buckets (N a power of two), by halving.

    buckets: limb-major affine data (2d·L, N·rows) with unit column stride, column
    (v - 1)·rows + r holding B_{r,v}; binf: their identity flags. The buckets are overwritten
    (the steps add in place). Returns XYZZ (L, 4d, rows).

    Step s (h = N / 2^s) halves every live array at once: the buckets A (2h a row) into
    A' = A_low + A_high, and the partial sums P_k of the tops T_k (k < s), which have
    shrunk to 2h a row as well, into P_k,low + P_k,high; A_high is kept as T_s. So each
    step is one batch-affine launch pair of s·h·rows pairs (every array's high half added
    onto its low half in place, one job per array, one shared inversion), log2 N steps in
    all, and at the end every P_k is the sum of T_k. Then sum_v v·B_v = sum_k h_k·P_k + A
    by Horner. Steps of at most XYZZ_TAIL pairs are one launch of XYZZ additions instead.

    Every addition is exact whatever the buckets: the batch-affine launches find identity
    operands and P = ±Q and handle them (`msm_tree.add_ragged_jobs`), and the Horner chain
    uses complete formulas."""
    from .msm_tree import Clock, PairJob, add_ragged_jobs, to_points
    clock = Clock(stats)
    dev = buckets.device
    arrays = [buckets]                       # A, P_1, ..., P_{s-1}: 2h·rows columns each
    infs = [binf]
    any_inf = bool(binf.any())
    h = N // 2
    while h >= 1 and len(arrays) * h * rows > XYZZ_TAIL:
        m = h * rows
        # in place: every array's low half += its high half, one job each (one shared
        # inversion; a ragged remainder through one padded copy), and A's high half stays
        # where it is as T_s. Copying all the halves side by side was a third of the
        # reduction's time.
        jobs = [PairJob(t[:, :m], t[:, m:2 * m], f[:m] if any_inf else None,
                        f[m:2 * m] if any_inf else None, t[:, :m]) for t, f in zip(arrays, infs)]
        sums = add_ragged_jobs(GS, jobs, block, inverse_block, stats)
        top, tinf = arrays[0][:, m:2 * m], infs[0][m:2 * m]
        arrays = [t[:, :m] for t in arrays] + [top]
        infs = [f if f is not None else torch.zeros(m, dtype=torch.bool, device=dev) for f in sums] + [tinf]
        any_inf = any(bool(f.any()) for f in infs)
        h //= 2
    clock.tick("reduce_steps")
    # the last steps in XYZZ: one launch of complete additions each, where a batch-affine
    # step's launches and inversion levels cost more than its few additions
    S = to_points(GS, torch.cat(arrays, dim=1), torch.cat(infs)).data
    while h >= 1:
        m, w = h * rows, 2 * h * rows
        k = S.shape[2] // w                                   # the arrays A, P_1, ...
        parts = S.reshape(S.shape[0], S.shape[1], k, 2, m)
        top = parts[:, :, 0, 1]                               # A's high half: T_s
        sums = add_complete(GS, parts[:, :, :, 0].reshape(S.shape[0], S.shape[1], k * m),
                            parts[:, :, :, 1].reshape(S.shape[0], S.shape[1], k * m))
        S = torch.cat([sums, top], dim=2)
        h //= 2
    clock.tick("reduce_tail")
    part = lambda k: S[:, :, k * rows:(k + 1) * rows]        # noqa: E731  A, P_1, ..., P_levels
    levels = S.shape[2] // rows - 1
    if levels == 0:
        return part(0)
    if S.device.type == "cpu" and rows <= HOST_HORNER_ROWS:
        # sum_k 2^(levels - k)·P_k + A per row: one Straus (levels doublings, levels + 1
        # additions) on Python ints
        pts = to_host(GS, S)
        sums = [lincomb(GS.params, None, [(1 << (levels - k) if k else 1, pts[k * rows + r])
                                          for k in range(levels + 1)]) for r in range(rows)]
        clock.tick("reduce_horner")
        return from_host(GS, sums)
    R = part(1)
    for k in range(2, levels + 1):
        R = add_complete(GS, double_n(GS, R, 1), part(k))
    R = add_complete(GS, R, part(0))
    clock.tick("reduce_horner")
    return R


SPARSE_DIGIT = 4     # bits of a base-2^w digit of a bucket's index in `reduce_sparse`


def reduce_sparse(GS, buckets: torch.Tensor, binf: torch.Tensor, rows: int, N: int,
                  block: int = 2, inverse_block: int = 2, stats: dict | None = None) -> torch.Tensor:
    """T_r = sum_v v·B_{r,v}, as `reduce_halving` (same layout; the buckets are left as they
    are), for rows whose buckets are mostly the identity: the work follows the live buckets,
    not N. A plan whose digits are few next to its buckets (sparse witnesses: mostly 0 and 1)
    leaves its buckets empty instead of giving each an offset point, and ends here.

    Each live bucket's index v, in base 2^w digits d_q (w = SPARSE_DIGIT), makes it an entry
    of bucket d_q of row (q, r) for every nonzero digit, so that

        sum_v v·B_v = sum_q 2^(w·q) · sum_d d · (sum of the buckets whose digit q is d):

    the entries (about live·c/w) are summed by the bucket tree (`msm_tree.segment_sums`),
    the rows of 2^w buckets are reduced by halving, and the rows' sums over q are combined
    by Horner (w doublings a digit). Exact whatever the buckets, like the tree and the
    halving it is made of."""
    import numpy as np

    from .msm_tree import Clock, segment_sums
    clock = Clock(stats)
    w = SPARSE_DIGIT
    Q = -(-N.bit_length() // w)                 # digits of v in 1..N
    N2, rows2 = 1 << w, Q * rows
    live = np.flatnonzero(~binf.cpu().numpy())    # columns (v - 1)·rows + r
    v, r = live // rows + 1, live % rows
    q = np.arange(Q, dtype=np.int64)[:, None]
    d = (v[None, :] >> (w * q)) & (N2 - 1)        # (Q, live)
    seg = (d - 1) * rows2 + q * rows + r[None, :]   # bucket d of row q·rows + r, as reduce_halving lays it
    keep = d > 0
    seg, col = seg[keep], np.broadcast_to(live, d.shape)[keep]
    order = np.argsort(seg, kind="stable")
    lens = np.bincount(seg, minlength=N2 * rows2)
    sums, sinf = segment_sums(GS, buckets, binf, col[order], lens, block=block, inverse_block=inverse_block,
                              stats=stats)
    clock.tick("reduce_sparse_tree")
    T = reduce_halving(GS, sums, sinf, rows2, N2, block, inverse_block)      # column q·rows + r
    R = T[:, :, (Q - 1) * rows:Q * rows]
    for k in range(Q - 2, -1, -1):
        R = add_complete(GS, double_n(GS, R, w), T[:, :, k * rows:(k + 1) * rows])
    clock.tick("reduce_sparse_rows")
    return R
