"""Segmented sums of affine points by a tree of batch-affine additions.

`segment_sums(G, table, tinf, idx, lens)` adds up segments of points: segment
s is the rows idx[start_s : start_s + lens[s]] of an affine point table. It is
the bucket accumulation of the MSM (a segment is a bucket, its rows the
points whose digit selects it) and the tree reduction of its sparse path
(a segment per scalar vector, the points with scalar 1).

Each level of the tree pairs neighbours inside every segment (ranks 0+1,
2+3, ...), adds all pairs of all segments in one batch and carries an odd last
element over; a segment of length k is done after ceil(log2 k) levels and
leaves the working set. Tables are limb-major, (2·degree·L, columns): a point
is a column, and every kernel operand is a (L, columns) view with unit column
stride, which the CPU target's vector (IFMA) loops need. One level is

    gather   the left and right operands into two arrays (index_select of columns);
    up       one launch over blocks of B pairs: the denominators x_R - x_L
             (over Fq2 their norms, in Fq) and their prefix products;
    invert   the block products, recursively (`msm_inverse`);
    down     one launch: each denominator's inverse by Montgomery's backward
             sweep, then lambda = (y_R - y_L)/(x_R - x_L), x3 = lambda^2 - x_L - x_R,
             y3 = lambda (x_L - x3) - y_L, written straight into the next level's table,

so an addition costs about 6 products (3 of them its share of the one
inversion) against 10 to 14 for projective additions, in about 2·log_B(pairs)
launches per level. The work of a level is the pairs of all segments together,
split evenly over threads or GPU blocks however uneven the buckets are (a
bucket holding half the points costs log2 levels, not a serial chain): the
tree is the load balance.

Exceptions are found, not assumed away: a pair with an identity operand or
with x_L = x_R (P = ±Q) gets x_R := x_L + 1 before the shared inversion (so
no denominator is zero), and is recomputed afterwards with the complete XYZZ
formulas of `zktensor.points` (P + P doubles, P + (-P) is the identity).
Identity rows carry a flag.
"""
from __future__ import annotations

import numpy as np
import torch

from ..ir import ec as E
from . import msm_ec
from .elementwise import host_parallel
from .msm_inverse import batch_inverse


_BETA: dict[str, int] = {}
ALIGN = 64      # pairs per block row are padded to a multiple of this: every block view is whole
                # 8-lane vectors, and the batch inversion's first levels need no padded copy


def _beta(G) -> int:
    if G.name not in _BETA:
        from ..points import _beta as beta
        _BETA[G.name] = beta(G)
    return _BETA[G.name]


def _den(P, Q):
    """(dx, den): dx = x_Q - x_P and the base-field value to invert (dx over Fq; its norm
    dx·conj(dx) over Fq2)."""
    dx = Q.coords()[0] - P.coords()[0]
    parts = dx.parts()
    if len(parts) == 1:
        return dx, parts[0]
    a0, a1 = parts
    return dx, a0 * a0 - (a1 * a1) * _BETA[P.prog.group.name]


def _add_given(P, Q, dx, inv):
    """P + Q for affine P != ±Q, given inv = 1/den (den as in _den)."""
    x1, y1 = P.coords()
    x2, y2 = Q.coords()
    parts = dx.parts()
    dinv = E.join(inv) if len(parts) == 1 else E.join(parts[0] * inv, -(parts[1] * inv))
    lam = (y2 - y1) * dinv
    x3 = lam.square() - x1 - x2
    y3 = lam * (x1 - x3) - y1
    return E.make("affine", x3, y3)


def _f_up(B):
    """Block j of B pairs -> prefix products of their denominators (Montgomery's trick, up)."""
    def f(*xs):                 # x_L0, x_R0, x_L1, x_R1, ... (affine points: only x is read)
        acc, out = None, []
        for j in range(B):
            den = _den(xs[2 * j], xs[2 * j + 1])[1]
            acc = den if acc is None else acc * den
            if j:
                out.append(acc)
        return tuple(out) if B > 1 else (acc,)      # p_1 .. p_{B-1} (B = 1: the denominator)
    return f


def _f_down_add(B):
    """From t = 1/p_{B-1}: every denominator's inverse (backward), then the B additions."""
    def f(t, *rest):
        pts = rest[:2 * B]
        pre = rest[2 * B:]                                   # p_1 .. p_{B-2}
        dens = [_den(pts[2 * j], pts[2 * j + 1]) for j in range(B)]
        p = [dens[0][1]] + list(pre)                          # p_0 .. p_{B-2}
        inv = [None] * B
        for j in range(B - 1, 0, -1):
            inv[j] = t * p[j - 1]
            t = t * dens[j][1]
        inv[0] = t
        return tuple(_add_given(pts[2 * j], pts[2 * j + 1], dens[j][0], inv[j]) for j in range(B))
    return f


def _f_plus_one(P):
    x, y = P.coords()
    return E.make("affine", x + 1, y)


def _views(t: torch.Tensor, C: int, cols=slice(None)) -> list[torch.Tensor]:
    """The C components of limb-major point data (C·L, m), each a (L, m') view with unit
    column stride (what the CPU target's vector loops take)."""
    L = t.shape[0] // C
    return [t[k * L:(k + 1) * L, cols] for k in range(C)]


def to_points(GS, t: torch.Tensor, inf: torch.Tensor):
    """Limb-major affine data (2d·L, m) as a PointTensor (XYZZ)."""
    C = 2 * GS.degree
    return GS.from_affine(t.reshape(C, GS.L, -1).permute(1, 0, 2), inf, check=False)


def from_points_xy(xy: torch.Tensor) -> torch.Tensor:
    """PointTensor.affine()'s (L, 2d, m) as limb-major (2d·L, m)."""
    L, C, m = xy.shape
    return xy.permute(1, 0, 2).reshape(C * L, m).contiguous()


def take_cols(t: torch.Tensor | None, idx: np.ndarray, out: torch.Tensor | None = None,
              rows: torch.Tensor | None = None) -> torch.Tensor:
    """t[..., idx] along the last dimension, into `out` (any view with unit column stride) if
    given. On the CPU by numpy's take, row by row: several times faster than torch's
    index_select here, and with mode="clip" and a contiguous destination numpy neither
    checks bounds (our indices are in range by construction) nor buffers, which halved
    the MSM tree's gathers. It drops the GIL, so the kernel threads share the rows.

    rows: t point-major (`point_major(t)`), for indices that jump all over t (the tree's
    first level reads the bases in bucket order). Row by row, each column read is a cache
    line for 4 bytes, C times; from the point-major copy a column is one read of its C
    words, then chunks are transposed into place: a 2^21-column gather from a 2^19-column
    BN254 table took 44 ms against 140-240 ms on 2 threads. With rows, t may be None (a
    table kept only point-major, as `MSMBases` keeps large ones)."""
    src = t if t is not None else rows
    if src.device.type != "cpu":
        res = (t.index_select(t.dim() - 1, torch.from_numpy(idx).to(t.device)) if t is not None else
               rows.index_select(0, torch.from_numpy(idx).to(rows.device)).T)
        return res if out is None else out.copy_(res)
    if out is None:
        shape = t.shape[:-1] if t is not None else (rows.shape[1],)
        out = torch.empty(shape + (len(idx),), dtype=src.dtype)
    dst = out.numpy()
    if rows is not None:
        pm = rows.numpy()

        def gather_points(lo, hi):
            for a in range(lo, hi, CHUNK):
                b = min(a + CHUNK, hi)
                dst[:, a:b] = np.take(pm, idx[a:b], axis=0, mode="clip").T
        host_parallel(len(idx), gather_points, len(idx) * pm.shape[1], GATHER_SPLIT)
        return out
    tn = t.numpy()
    if t.dim() == 1:
        np.take(tn, idx, out=dst, mode="clip")
        return out

    def gather(lo, hi):
        for r in range(lo, hi):
            np.take(tn[r], idx, out=dst[r], mode="clip")
    host_parallel(t.shape[0], gather, len(idx) * t.shape[0], GATHER_SPLIT)
    return out


CHUNK = 1 << 12     # columns a transposed chunk: 4096 BN254 G1 points are 256 KiB, cache-sized
POINT_MAJOR_FROM = 6 << 20     # bytes of one limb row from which the first level gathers point-major
PREPARED_POINT_MAJOR_FROM = 1 << 20
"""The same for `MSMBases` tables with weighted copies (M < W), kept point-major, the copy
made once. Diagnostics (2-core VM, interleaved, dense scalars, MSMs): M = 1 BN254 G1 2^14
(2.2 MiB rows, one thread) 84-86 ms point-major against 94-97 ms limb-major, G2 2^14
138-157 against 162-187, and G1 2^15 (4.4 MiB rows) 151-173 ms against 203-209 ms. Plain
tables of 2 MiB rows did not gain (BN254 G1 2^18 within noise; G2 2^18, two threads,
1086-1248 ms against 998-1224 ms, and the 2^18 bench proof 4.30-4.77 s against
4.06-4.91 s): they keep `POINT_MAJOR_FROM`."""


def point_major(t: torch.Tensor) -> torch.Tensor | None:
    """t (C, m) as a contiguous (m, C) copy, for `take_cols(rows=)`; None where it does not
    pay: off the CPU (index_select needs no help) and while one row of t (m words) fits in
    cache, so that the row-by-row gather's reads hit. Diagnostic A/Bs on the 2-core VM,
    2 threads: BN254 G1 2^20 points (8 MiB rows) gathers 1.04 s against 1.31 s (MSM 3.18 s
    against 3.90 s); 2^14 to 2^18 (rows up to 2 MiB) no difference beyond the noise; BN254
    G2 2^18 (2 MiB rows, 32 of them) 1.26 s against 1.15 s, slower. (`MSMBases` builds its
    tables point-major itself, by `PREPARED_POINT_MAJOR_FROM`.)"""
    if t.device.type != "cpu" or t.shape[-1] * t.element_size() < POINT_MAJOR_FROM:
        return None
    out = torch.empty((t.shape[1], t.shape[0]), dtype=t.dtype)
    src, dst = t.numpy(), out.numpy()

    def transpose(lo, hi):
        for a in range(lo, hi, CHUNK):
            b = min(a + CHUNK, hi)
            dst[a:b] = src[:, a:b].T
    host_parallel(t.shape[1], transpose, t.numel(), GATHER_SPLIT)
    return out


def move_cols(out: torch.Tensor, dst: np.ndarray, t: torch.Tensor | None, src: np.ndarray,
              rows: torch.Tensor | None = None):
    """out[..., dst] = t[..., src] (on the CPU row by row in numpy: torch's index_put took
    13 ms of a 2^16-point MSM's tree for the buckets' final columns), or from `rows` (t
    point-major) where t is None."""
    if t is None:
        out[:, torch.from_numpy(dst).to(out.device)] = take_cols(None, src, rows=rows)
        return
    if t.device.type != "cpu":
        d = torch.from_numpy(dst).to(t.device)
        out[..., d] = t.index_select(t.dim() - 1, torch.from_numpy(src).to(t.device))
        return
    o, x = out.numpy(), t.numpy()
    if o.ndim == 1:
        o[dst] = np.take(x, src, mode="clip")
        return
    for r in range(o.shape[0]):
        o[r][dst] = np.take(x[r], src, mode="clip")


GATHER_SPLIT = 1 << 16      # words from which a gather is shared by threads


def exceptional(XL, XR, infL, infR, d, L):
    """Columns with an identity operand or equal x (P = ±Q), or None. Equal x is looked for
    on the lowest word first, so the full comparison only touches candidates. infL/infR may
    be None (no identity operands)."""
    if XL.device.type == "cpu" and infL is None:     # numpy: a fraction of torch's overhead here
        cn = XL[0].numpy() == XR[0].numpy()
        if not cn.any():
            return None
        idx = torch.from_numpy(np.flatnonzero(cn))
        keep = torch.all(XL[:d * L, idx] == XR[:d * L, idx], dim=0)
        idx = idx[keep]
        return idx if len(idx) else None
    cand = XL[0] == XR[0]
    if infL is not None:
        cand |= infL | infR
    if not bool(cand.any()):
        return None
    idx = torch.nonzero(cand).reshape(-1)
    keep = torch.all(XL[:d * L, idx] == XR[:d * L, idx], dim=0)
    if infL is not None:
        keep |= infL[idx] | infR[idx]
    idx = idx[keep]
    return idx if len(idx) else None


def add_pairs(GS, XL: torch.Tensor, XR: torch.Tensor, infL: torch.Tensor, infR: torch.Tensor,
              out: torch.Tensor, block: int = 4, inverse_block: int = 4, n: int | None = None,
              stats: dict | None = None) -> torch.Tensor:
    """out[:, i] = XL[:, i] + XR[:, i] for limb-major affine data (2d·L, m), m a multiple of
    `block`, with identity flags (None: no operand is the identity); returns the sums'
    identity flags (None: no sum is). Exceptional pairs get x_R = x_L + 1 before the shared
    inversion and are recomputed after; XR's x is restored on return (the bucket reduction
    reads its operands again). Columns from n on are padding: computed, never patched."""
    from ..points import PointTensor, add_complete
    G = GS.params
    _beta(G)
    d, L = G.degree, GS.L
    C = 2 * d
    m = XL.shape[1]
    B = block
    if m == 0:
        return torch.zeros(0, dtype=torch.bool, device=XL.device)
    assert m % B == 0, "pad the pairs to a multiple of the block"
    q = m // B
    n = m if n is None else n
    clock = _Clock(stats)
    sp = exceptional(XL, XR, infL, infR, d, L)
    moved_cols = sp
    if sp is not None and stats is not None:
        stats["exceptional"] = stats.get("exceptional", 0) + int((sp < n).sum())
    if sp is not None:
        orig = XR[:, sp].clone()
        moved_x = orig[:d * L]
        moved = msm_ec.run(G, "plus_one", ("affine",), _f_plus_one, _views(XL[:, sp].contiguous(), C))
        XR[:d * L, sp] = torch.cat(moved[:d], dim=0)
        keep = sp < n
        sp, orig = sp[keep], orig[:, keep]
        if len(sp) == 0:
            sp = None
    xs, outs = [], []
    for j in range(B):
        cols = slice(j * q, (j + 1) * q)
        xs += _views(XL, C, cols) + _views(XR, C, cols)
        outs += _views(out, C, cols)
    clock.tick("tree_exc")
    pre = msm_ec.run(G, ("tree_up", B), ("affine",) * (2 * B), _f_up(B), xs)
    clock.tick("tree_up")
    t = batch_inverse(GS.F, pre[-1], inverse_block)
    clock.tick("tree_inv")
    msm_ec.run(G, ("tree_down_add", B), ("fq",) + ("affine",) * (2 * B) + ("fq",) * (B - 2),
               _f_down_add(B), [t] + xs + list(pre[:-1]), out=outs)
    clock.tick("tree_down")
    if moved_cols is not None:
        XR[:d * L, moved_cols] = moved_x
    if sp is None:
        return None if infL is None else infL & infR
    if infL is None:
        infL = infR = torch.zeros(m, dtype=torch.bool, device=XL.device)
    sinf = infL & infR
    if sp is not None:
        # exceptional pairs, recomputed with complete XYZZ arithmetic
        a = to_points(GS, XL[:, sp], infL[sp])
        b = to_points(GS, orig, infR[sp])
        xy, inf = PointTensor(GS, add_complete(GS, a.data, b.data)).affine()
        out[:, sp] = from_points_xy(xy)
        sinf[sp] = inf
    return sinf


def _no_inf(m, dev):
    """An all-False flag vector (a view of a cached buffer: never written)."""
    buf = _NO_INF.get(dev)
    if buf is None or buf.numel() < m:
        buf = _NO_INF[dev] = torch.zeros(max(m, 1 << 16), dtype=torch.bool, device=dev)
    return buf[:m]


_NO_INF: dict = {}


def segment_sums(GS, table: torch.Tensor | None, tinf: torch.Tensor, idx: np.ndarray, lens: np.ndarray,
                 dest: np.ndarray | None = None, out_cols: int | None = None, block: int = 4,
                 inverse_block: int = 4, stats: dict | None = None, rows: torch.Tensor | None = None):
    """Sums of the segments of columns of a limb-major affine table (2d·L, T) with identity
    flags (T,).

    idx: int64 columns of the table, segment after segment; lens: segment lengths (zero
    allowed: the sum is the identity). Segment s is written to column dest[s] (default s)
    of the result (2d·L, out_cols); returns (result, identity flags). rows: the table
    point-major ((T, 2d·L), `point_major`) where the caller keeps it so (table None); else
    the first level makes that copy where it pays."""
    if rows is None:
        rows = point_major(table)
    CL = table.shape[0] if table is not None else rows.shape[1]
    S = len(lens)
    dev = tinf.device
    seg = np.arange(S, dtype=np.int64) if dest is None else np.asarray(dest, dtype=np.int64)
    ncols = S if out_cols is None else out_cols
    out = torch.zeros((CL, ncols), dtype=torch.int32, device=dev)
    out_inf = torch.ones(ncols, dtype=torch.bool, device=dev)
    cur_idx = np.asarray(idx, dtype=np.int64)
    lens = np.asarray(lens, dtype=np.int64)
    cur_table, cur_inf = table, tinf
    any_inf = bool(tinf.any())
    B = block
    clock = _Clock(stats)
    # From the second level on a segment's elements need no index array: rank r of segment s
    # is column cb_s + r of the level's table (the sums of its pairs, in order), except that
    # its last rank is column passcol_s when has_pass_s (its odd element, passed on).
    cb = passcol = has_pass = None
    while True:
        starts = np.cumsum(lens) - lens
        one = lens == 1
        if one.any():
            src = cur_idx[starts[one]] if cur_idx is not None else cb[one]    # a pair's sum: rank 0
            dst = seg[one]
            move_cols(out, dst, cur_table, src, rows=rows if cur_idx is not None else None)
            if any_inf:
                move_cols(out_inf, dst, cur_inf, src)
            else:
                out_inf[torch.from_numpy(dst).to(dev)] = False
        clock.tick("tree_done")
        live = lens >= 2
        if not live.any():
            break
        lens, starts, seg = lens[live], starts[live], seg[live]
        if cur_idx is None:
            cb, passcol, has_pass = cb[live], passcol[live], has_pass[live]
        npairs = lens >> 1
        odd = lens & 1
        oddb = odd.astype(bool)
        P = int(npairs.sum())
        Pp = -(-P // (B * ALIGN)) * B * ALIGN if P > B * ALIGN else -(-P // B) * B
        # pair p = (segment s, rank k), p = pstart_s + k, adds ranks 2k and 2k + 1; its sum is
        # column p of the next table, and the odd element of s, passed on, column Pp + ob_s
        # (ob_s: the odd segments before s)
        pstart = np.cumsum(npairs) - npairs
        ob = np.cumsum(odd) - odd
        li = np.empty(Pp, dtype=np.int64)
        ri = np.empty(Pp, dtype=np.int64)
        if cur_idx is not None:          # the first level: ranks are the entries' table columns
            lpos = np.arange(0, 2 * P, 2, dtype=np.int64)
            lpos += np.repeat(starts - 2 * pstart, npairs)      # = starts_s + 2k
            np.take(cur_idx, lpos, out=li[:P])
            lpos += 1
            np.take(cur_idx, lpos, out=ri[:P])
            pass_src = cur_idx[(starts + lens - 1)[oddb]]
        else:
            li[:P] = np.arange(0, 2 * P, 2, dtype=np.int64)
            li[:P] += np.repeat(cb - 2 * pstart, npairs)        # = cb_s + 2k
            np.add(li[:P], 1, out=ri[:P])
            last_right = has_pass & ~oddb                       # the passed element is the right
            ri[(pstart + npairs - 1)[last_right]] = passcol[last_right]     # operand of the last pair
            pass_src = np.where(has_pass[oddb], passcol[oddb], (cb + lens - 1)[oddb])
        li[P:], ri[P:] = li[0], ri[0]              # padding pairs (copies of pair 0): discarded
        npass = len(pass_src)
        new_lens = npairs + odd
        clock.tick("tree_index")
        # the first level reads the table in segment order: from the point-major copy if it
        # pays (see `take_cols`); one copy serves its three gathers
        first = rows if cur_idx is not None else None
        XL = take_cols(cur_table, li, rows=first)
        XR = take_cols(cur_table, ri, rows=first)
        new_table = torch.empty((CL, Pp + npass), dtype=torch.int32, device=dev)
        if npass:
            take_cols(cur_table, pass_src, out=new_table[:, Pp:], rows=first)
        infL = take_cols(cur_inf, li) if any_inf else None
        infR = take_cols(cur_inf, ri) if any_inf else None
        clock.tick("tree_gather")
        sinf = add_pairs(GS, XL, XR, infL, infR, new_table[:, :Pp], B, inverse_block, n=P, stats=stats)
        pinf = take_cols(cur_inf, pass_src) if any_inf and npass else None
        if sinf is None and pinf is None:
            new_inf, any_inf = _no_inf(Pp + npass, dev), False
        else:
            new_inf = torch.zeros(Pp + npass, dtype=torch.bool, device=dev)
            if sinf is not None:
                new_inf[:Pp] = sinf
            if pinf is not None:
                new_inf[Pp:] = pinf
            any_inf = bool(new_inf.any())
        clock.tick("tree_fix")
        if stats is not None:
            stats.setdefault("levels", []).append(P)
        cur_table, cur_inf, lens = new_table, new_inf, new_lens
        cur_idx, cb, passcol, has_pass = None, pstart, Pp + ob, oddb
    return out, out_inf


class _Clock:
    """Accumulates wall time per phase into stats["time"] and process CPU time (all threads)
    into stats["cpu"] (no-op without stats)."""

    def __init__(self, stats):
        import time
        self.stats, self.time, self.cpu = stats, time.perf_counter, time.process_time
        self.t, self.c = self.time(), self.cpu()

    def tick(self, name):
        if self.stats is None:
            return
        now, cnow = self.time(), self.cpu()
        for key, d in (("time", now - self.t), ("cpu", cnow - self.c)):
            tm = self.stats.setdefault(key, {})
            tm[name] = tm.get(name, 0.0) + d
        self.t, self.c = now, cnow


Clock = _Clock
