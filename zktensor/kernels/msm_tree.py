"""Segmented sums of affine points by a tree of batch-affine additions.

`segment_sums(G, table, tinf, idx, lens)` adds up segments of points: segment
s is the rows idx[start_s : start_s + lens[s]] of an affine point table. It is
the bucket accumulation of the MSM (a segment is a bucket, its rows the
points whose digit selects it) and the tree reduction of its sparse path
(a segment per scalar vector, the points with scalar 1).

The elements are gathered once, rank-major: segments ordered by length, longest
first, and element t of each segment in rank block t (so block t is a prefix of
block t - 1 in segment order). Each level of the tree adds block 2k+1 onto the
head of block 2k, in place, for every k; a segment of length k is done after
ceil(log2 k) levels. Tables are limb-major, (2·degree·L, columns): a point is
a column, and every kernel operand is a (L, columns) view with unit column
stride, which the CPU target's vector (IFMA) loops need. One level is

    up       per pair of blocks one job over blocks of B pairs: the denominators
             x_R - x_L (over Fq2 their norms, in Fq, also stored for the down launch:
             `keeps_dens`) and their prefix products, all jobs in one launch
             (`add_pair_jobs`, `CompiledProgram.run_many`);
    invert   the block products of all jobs, recursively (`msm_inverse`);
    down     one launch: each denominator's inverse by Montgomery's backward
             sweep, then lambda = (y_R - y_L)/(x_R - x_L), x3 = lambda^2 - x_L - x_R,
             y3 = lambda (x_L - x3) - y_L, written over the left operands,

so an addition costs about 6 products (3 of them its share of the one
inversion) against 10 to 14 for projective additions, in about 2·log_B(pairs)
launches per level. The work of a level is the pairs of all segments together,
split evenly over threads or GPU blocks however uneven the buckets are (a
bucket holding half the points costs log2 levels, not a serial chain): the
tree is the load balance.

Exceptions are found, not assumed away: a pair with x_L = x_R (P = ±Q, or an
identity operand whose stored x equals the other's) gets x_R := x_L ± 1
(`other_x`) before the shared inversion (so no denominator is zero). Afterwards a pair with an
identity operand takes the other operand as its sum, and P = ±Q is recomputed
with the complete XYZZ formulas of `zktensor.points` (P + P doubles, P + (-P)
is the identity).
Identity rows carry a flag.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch

from ..ir import ec as E
from . import cpu_gather, msm_ec, point_formulas
from ..runtime.threads import host_parallel
from .msm_inverse import batch_inverse


_BETA: dict[str, int] = {}
ALIGN = 64      # pairs per block row are padded to a multiple of this: every block view is whole
                # 8-lane vectors, and the batch inversion's first levels need no padded copy


def _beta(G) -> int:
    if G.name not in _BETA:
        _BETA[G.name] = point_formulas.beta(G)
    return _BETA[G.name]


def _den(P, Q):
    """(dx, den): dx = x_Q - x_P and the base-field value to invert (dx over Fq; its norm
    dx·conj(dx) over Fq2)."""
    dx = Q.coords()[0] - P.coords()[0]
    parts = dx.parts()
    if len(parts) == 1:
        return dx, parts[0]
    a0, a1 = parts
    beta = _BETA[P.prog.group.name]
    # beta < 0 (BN254, BLS12-381: u^2 = -1): a0^2 + |beta|·a1^2, where |beta| = 1 folds away;
    # a product by the constant beta costs as much as any other
    return dx, (a0 * a0 + (a1 * a1) * -beta) if beta < 0 else a0 * a0 - (a1 * a1) * beta


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


def _f_up(B, keep: bool = False):
    """Block j of B pairs -> prefix products of their denominators (Montgomery's trick, up);
    with `keep` also the B denominators themselves (see `keeps_dens`)."""
    def f(*xs):                 # x_L0, x_R0, x_L1, x_R1, ... (affine points: only x is read)
        acc, out, dens = None, [], []
        for j in range(B):
            den = _den(xs[2 * j], xs[2 * j + 1])[1]
            dens.append(den)
            acc = den if acc is None else acc * den
            if j:
                out.append(acc)
        out = out if B > 1 else [acc]               # p_1 .. p_{B-1} (B = 1: the denominator)
        return tuple(out + dens) if keep else tuple(out)
    return f


def _f_down_add(B, given: bool = False):
    """From t = 1/p_{B-1}: every denominator's inverse (backward), then the B additions;
    with `given` the denominators are inputs (after p_1 .. p_{B-2}), not recomputed."""
    def f(t, *rest):
        pts = rest[:2 * B]
        pre = rest[2 * B:2 * B + max(B - 2, 0)]              # p_1 .. p_{B-2}
        dxs = [pts[2 * j + 1].coords()[0] - pts[2 * j].coords()[0] for j in range(B)]
        dens = list(rest[2 * B + max(B - 2, 0):]) if given else \
            [_den(pts[2 * j], pts[2 * j + 1])[1] for j in range(B)]
        p = [dens[0]] + list(pre)                             # p_0 .. p_{B-2}
        inv = [None] * B
        for j in range(B - 1, 0, -1):
            inv[j] = t * p[j - 1]
            t = t * dens[j]
        inv[0] = t
        return tuple(_add_given(pts[2 * j], pts[2 * j + 1], dxs[j], inv[j]) for j in range(B))
    return f


def keeps_dens(G) -> bool:
    """Whether the tree's up kernel hands its denominators to the down kernel. Over Fq2 a
    denominator is a norm (two squares and an addition), worth more than a store and a
    load. Over Fq it is one subtraction, cheaper than the memory traffic."""
    return G.degree == 2


def tree_kernels(G, B: int):
    """The (key, kinds, fn) of a tree level's up and down programs for blocks of B."""
    keep = keeps_dens(G)
    tag = ("dens",) if keep else ()
    up = (("tree_up", B) + tag, ("affine",) * (2 * B), _f_up(B, keep))
    down = (("tree_down_add", B) + tag, ("fq",) + ("affine",) * (2 * B) + ("fq",) * (max(B - 2, 0) + B * keep),
            _f_down_add(B, keep))
    return up, down


def _on_host(dev) -> bool:
    """Whether `add_pair_jobs` handles exceptional pairs through numpy views (CPU tensors);
    elsewhere through torch ops on the device."""
    return dev.type == "cpu"


def other_x(F, x):
    """A canonical x' != x for the limb-major words x (d·L, k) of base-field values (their
    first component's 32-bit words first): the value minus one, or plus one where its low
    word is 0. x + 1 = p would need x = p - 1 with a low word of 0, i.e. p = 1 (mod 2^32),
    which no base field here is (checked). Word arithmetic on the host side of a launch:
    a compiled x + 1 was a launch per tree job, most of a witness MSM's exception handling."""
    if F.p % (1 << 32) == 1:
        raise ValueError(f"{F.name}: p = 1 (mod 2^32), x + 1 may leave the field")
    if isinstance(x, np.ndarray):           # int32 words: low - 1 wraps as the uint32 it holds
        out = x.copy()
        out[0] = np.where(out[0] != 0, out[0] - 1, 1)
        return out
    out = x.clone()
    out[0] = torch.where(out[0] != 0, out[0] - 1, torch.ones_like(out[0]))
    return out


def padded(m: int, block: int) -> int:
    """m rounded up to whole blocks, and to whole ALIGN-column block rows past one such row:
    the pairs of a launch, or the values of a batch inversion, with no padded copy in its
    first levels."""
    unit = block * ALIGN if m > block * ALIGN else block
    return -(-m // unit) * unit


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
    gather reads the bases in bucket order). Row by row, each column read is a cache
    line for 4 bytes, C times; from the point-major copy a column is one read of its C
    words, then chunks are transposed into place, which is several times faster for large
    tables. Where the CPU loops of
    `cpu_gather` compile, they do both steps at once by vector gathers. With rows, t may
    be None (a table kept only point-major, as `MSMBases` keeps large ones)."""
    src = t if t is not None else rows
    if src.device.type != "cpu":
        res = (t.index_select(t.dim() - 1, torch.from_numpy(idx).to(t.device)) if t is not None else
               rows.index_select(0, torch.from_numpy(idx).to(rows.device)).T)
        return res if out is None else out.copy_(res)
    if out is None:
        shape = t.shape[:-1] if t is not None else (rows.shape[1],)
        out = torch.empty(shape + (len(idx),), dtype=src.dtype)
    dst = out.numpy()
    if rows is not None and cpu_gather.available():
        a, ix = rows.contiguous().numpy(), np.ascontiguousarray(idx, dtype=np.int64)
        host_parallel(len(ix), lambda lo, hi: cpu_gather.gather_cols(a, ix, dst, lo, hi),
                      len(ix) * a.shape[1], GATHER_SPLIT)
        return out
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
    cpu_gather.take_rows(tn, idx, dst, GATHER_SPLIT)
    return out


CHUNK = 1 << 12     # columns a transposed chunk: 4096 BN254 G1 points are 256 KiB, cache-sized
POINT_MAJOR_FROM = 6 << 20     # bytes of one limb row from which the tree's gather reads point-major
PREPARED_POINT_MAJOR_FROM = 1 << 20
"""The same for weighted `MSMBases` tables where `cpu_gather` does not compile (numpy's
two-pass gather): a prepared table is gathered by every MSM over it, so the copy, made
once, pays from smaller rows than a one-off gather's. With `cpu_gather`'s vector gathers
every prepared table is point-major."""


def point_major(t: torch.Tensor) -> torch.Tensor | None:
    """t (C, m) as a contiguous (m, C) copy, for `take_cols(rows=)`; None where it does not
    pay: off the CPU (index_select needs no help) and while one row of t (m words) fits in
    cache, so that the row-by-row gather's reads hit (below `POINT_MAJOR_FROM` the copy
    costs what it saves). (`MSMBases` builds its tables point-major itself, by
    `PREPARED_POINT_MAJOR_FROM`.)"""
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
    """out[..., dst] = t[..., src] (on the CPU row by row in numpy, which is much faster
    than torch's index_put here), or from `rows` (t point-major) where t is None."""
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
    cpu_gather.move_rows(o, dst, x, src, GATHER_SPLIT)


GATHER_SPLIT = 1 << 16      # words from which a gather is shared by threads


def exceptional(XL, XR, infL, infR, d, L):
    """(columns with an identity operand or equal x, their equal-x mask), or None. Equal x
    is looked for on the lowest word first, so the full comparison only touches
    candidates. infL/infR may be None (no identity operands)."""
    if XL.device.type == "cpu":     # numpy: a fraction of torch's overhead here
        cn = XL[0].numpy() == XR[0].numpy()
        if infL is not None:
            cn |= infL.numpy() | infR.numpy()
        if not cn.any():
            return None
        idx = np.flatnonzero(cn)
        same = (XL[:d * L].numpy()[:, idx] == XR[:d * L].numpy()[:, idx]).all(axis=0)
        keep = same | infL.numpy()[idx] | infR.numpy()[idx] if infL is not None else same
        return (torch.from_numpy(idx[keep]), torch.from_numpy(same[keep])) if keep.any() else None
    cand = XL[0] == XR[0]
    if infL is not None:
        cand |= infL | infR
    if not bool(cand.any()):
        return None
    idx = torch.nonzero(cand).reshape(-1)
    same = torch.all(XL[:d * L, idx] == XR[:d * L, idx], dim=0)
    keep = same | infL[idx] | infR[idx] if infL is not None else same
    return (idx[keep], same[keep]) if bool(keep.any()) else None


@dataclass
class PairJob:
    """out[:, i] = XL[:, i] + XR[:, i] over limb-major affine data (2d·L, m): views with unit
    column stride, m a multiple of the block; out may be XL itself (the compiled program
    reads an element's operands before it writes its sums). Identity flags infL/infR (None:
    no operand is the identity); columns from n (default m) on are padding."""
    XL: torch.Tensor
    XR: torch.Tensor
    infL: torch.Tensor | None
    infR: torch.Tensor | None
    out: torch.Tensor
    n: int | None = None


def add_pair_jobs(GS, jobs: list[PairJob], block: int = 2, inverse_block: int = 2,
                  stats: dict | None = None) -> list[torch.Tensor | None]:
    """Every job's additions with one shared inversion: one up launch over all jobs writing
    their block products into one buffer, one batch inversion of that buffer, one down
    launch over all jobs (`msm_ec.run_many`). Returns each job's sum identity flags (None:
    no sum is the identity).

    Exceptional pairs are those with an identity operand or P = ±Q. Where x_L = x_R (P = ±Q,
    or an identity whose stored x equals the other's) x_R = x_L ± 1 (`other_x`) before the
    inversion, so that no denominator is zero. After it, a pair with an identity operand takes the
    other operand, and P = ±Q is recomputed with the complete XYZZ formulas; XR's x is
    restored on return (the bucket reduction reads its operands again)."""
    G = GS.params
    _beta(G)
    d, L = G.degree, GS.L
    C = 2 * d
    B = block
    clock = _Clock(stats)
    if not all(j.XL.shape[1] for j in jobs):
        live = iter(add_pair_jobs(GS, [j for j in jobs if j.XL.shape[1]], block, inverse_block, stats))
        return [next(live) if j.XL.shape[1] else torch.zeros(0, dtype=torch.bool, device=j.XL.device)
                for j in jobs]
    dev = jobs[0].XL.device if jobs else None
    cpu = dev is not None and _on_host(dev)
    special = []            # per job: (exceptional columns below n, their operands) or None
    moved = []              # (XR, columns, original x) to restore
    qs = []
    for j in jobs:
        m = j.XL.shape[1]
        assert m % B == 0, "pad the pairs to a multiple of the block"
        n = m if j.n is None else j.n
        qs.append(m // B)
        found = exceptional(j.XL, j.XR, j.infL, j.infR, d, L)
        if found is None:
            special.append(None)
            continue
        # on the CPU in numpy (views of the same memory): on a few columns torch's per-op
        # overhead dominates, and a witness MSM's tree has dozens of jobs with exceptions
        sp, same = found
        XL, XR, sp, same = (j.XL.numpy(), j.XR.numpy(), sp.numpy(), same.numpy()) if cpu else \
            (j.XL, j.XR, sp, same)
        keep = sp[sp < n]
        if stats is not None:
            stats["exceptional"] = stats.get("exceptional", 0) + len(keep)
        ops = (XL[:, keep], XR[:, keep])
        # only equal x makes a zero denominator: an identity operand whose stored x differs
        # (most of the witness MSMs' exceptions) needs nothing here, its sum is replaced after
        eq = sp[same]
        if len(eq):
            moved.append((XR, eq, XR[:d * L, eq]))
            XR[:d * L, eq] = other_x(GS.F, XL[:d * L, eq])
        if len(keep):
            special.append((torch.as_tensor(keep, device=dev), tuple(torch.as_tensor(o) for o in ops)))
        else:
            special.append(None)
    clock.tick("tree_exc")
    if jobs:
        npre = max(B - 1, 1)                # the up launch's outputs: p_1 .. p_{B-1} (B = 1: den)
        Q = sum(qs)
        Qp = padded(Q, inverse_block)
        pre = [torch.empty((L, Qp), dtype=torch.int32, device=dev) for _ in range(npre)]
        # over Fq2 also the B denominators, for the down launch (`keeps_dens`)
        kept = [torch.empty((L, Qp), dtype=torch.int32, device=dev) for _ in range(B * keeps_dens(G))]
        up, down = tree_kernels(G, B)
        # on the CPU operands go to the launch as addresses: a view per operand cost more
        # than a small job's kernel time
        addr = all(len(c.meta["calls"]) == 1 and c.target == "cpu"
                   for c in (msm_ec.compiled(G, *k, dev.type) for k in (up, down)))

        def comps(T, c0, q, C=C):
            """The C components of columns c0.. c0+q of T (rows: components of L words)."""
            if not addr:
                return _views(T, C, slice(c0, c0 + q))
            assert T.shape[1] <= 1 or T.stride(1) == 1
            base, ls = T.data_ptr() + 4 * c0, T.stride(0)
            return [(base + 4 * k * L * ls, ls) for k in range(C)]
        xs_of, at = [], 0
        for j, q in zip(jobs, qs):
            xs, outs = [], []
            for k in range(B):
                xs += comps(j.XL, k * q, q) + comps(j.XR, k * q, q)
                outs += comps(j.out, k * q, q)
            xs_of.append((xs, outs, at, q))
            at += q
        msm_ec.run_many(G, *up, [(xs, [comps(p, a, q, 1)[0] for p in pre + kept], q) for xs, _, a, q in xs_of])
        clock.tick("tree_up")
        pre[-1][:, Q:] = pre[-1][:, :1]          # padding: whole blocks for the inversion's levels
        t = batch_inverse(GS.F, pre[-1], inverse_block)
        clock.tick("tree_inv")
        msm_ec.run_many(G, *down, [([comps(t, a, q, 1)[0]] + xs + [comps(p, a, q, 1)[0] for p in pre[:-1] + kept],
                                    outs, q) for xs, outs, a, q in xs_of])
        clock.tick("tree_down")
    for XR, sp, x in moved:
        XR[:d * L, sp] = x
    res = []
    for j, spc in zip(jobs, special):
        infL, infR = j.infL, j.infR
        if spc is None:
            res.append(None if infL is None else infL & infR)
            continue
        m = j.XL.shape[1]
        if infL is None:
            infL = infR = torch.zeros(m, dtype=torch.bool, device=dev)
        sinf = infL & infR
        sp, (opL, opR) = spc
        # an identity operand: the sum is the other operand (a copy; the witness MSMs of a
        # shared plan meet many, where a base is the identity in one table only). On the CPU
        # in numpy, as above.
        xp = (lambda t: t.numpy()) if cpu else (lambda t: t)      # noqa: E731
        sp, opL, opR, out, sinf_ = xp(sp), xp(opL), xp(opR), xp(j.out), xp(sinf)
        iL, iR = xp(infL)[sp], xp(infR)[sp]
        ident = iL | iR
        if bool(ident.any()):
            c = ident.nonzero()[0] if cpu else torch.nonzero(ident).reshape(-1)
            out[:, sp[c]] = (np if cpu else torch).where(iL[c].reshape(1, -1), opR[:, c], opL[:, c])
            sinf_[sp[c]] = iL[c] & iR[c]
            rest = (~ident).nonzero()[0] if cpu else torch.nonzero(~ident).reshape(-1)
            sp, opL, opR, iL, iR = sp[rest], opL[:, rest], opR[:, rest], iL[rest], iR[rest]
        if cpu:
            sp, opL, opR, iL, iR = (torch.from_numpy(np.ascontiguousarray(x)) for x in (sp, opL, opR, iL, iR))
        if len(sp):
            # P = ±Q: recomputed with complete XYZZ arithmetic
            a = to_points(GS, opL, iL)
            b = to_points(GS, opR, iR)
            xy, inf = point_formulas.affine(GS, point_formulas.add_complete(GS, a.data, b.data))
            j.out[:, sp] = from_points_xy(xy)
            sinf[sp] = inf
        res.append(sinf)
    return res


def add_ragged_jobs(GS, jobs: list[PairJob], block: int = 2, inverse_block: int = 2,
                    stats: dict | None = None, align: int | None = None) -> list[torch.Tensor | None]:
    """`add_pair_jobs` for jobs of any number of columns: each job's first multiple of
    `align` (default: the block) columns is a job as given (in place where its out is its
    XL); the columns left over from every job are copied side by side into one job padded
    to whole blocks, and their sums written back to each job's out. Returns each job's sum
    identity flags (None: no sum is the identity)."""
    align = align or block
    whole, cut = [], []
    for j in jobs:
        m = j.XL.shape[1]
        w = m - m % align
        cut.append(w)
        if w:
            whole.append(PairJob(j.XL[:, :w], j.XR[:, :w], None if j.infL is None else j.infL[:w],
                                 None if j.infR is None else j.infR[:w], j.out[:, :w]))
    rest = [(j, w) for j, w in zip(jobs, cut) if w < j.XL.shape[1]]
    tail = None
    if rest:                # the leftovers, padded with copies of the first one (discarded)
        n = sum(j.XL.shape[1] - w for j, w in rest)
        pad = -(-n // block) * block - n

        def side(get):
            parts = [get(j)[..., w:] for j, w in rest]
            return torch.cat(parts + [parts[0][..., :1]] * pad, dim=-1)

        def flags(j, f):
            return f if f is not None else torch.zeros(j.XL.shape[1], dtype=torch.bool, device=j.XL.device)
        iL = iR = None
        if any(j.infL is not None for j, _ in rest):
            iL, iR = side(lambda j: flags(j, j.infL)), side(lambda j: flags(j, j.infR))
        XL = side(lambda j: j.XL)
        tail = PairJob(XL, side(lambda j: j.XR), iL, iR, torch.empty_like(XL), n)
    sums = add_pair_jobs(GS, whole + ([tail] if tail is not None else []), block, inverse_block, stats)
    tail_inf = sums[-1] if tail is not None else None
    res, k, at = [], 0, 0
    for j, w in zip(jobs, cut):
        m = j.XL.shape[1]
        head = None
        if w:
            head, k = sums[k], k + 1
        if w == m:
            res.append(head)
            continue
        j.out[:, w:] = tail.out[:, at:at + m - w]
        t = tail_inf[at:at + m - w] if tail_inf is not None else None
        at += m - w
        if head is None and t is None:
            res.append(None)
            continue
        dev = j.XL.device
        res.append(torch.cat([head if head is not None else torch.zeros(w, dtype=torch.bool, device=dev),
                              t if t is not None else torch.zeros(m - w, dtype=torch.bool, device=dev)]))
    return res


RANK_CAP = 64    # ranks of the rank-major layout: longer segments are first summed in pieces of
                 # this many (a level has a job per pair of ranks: the cap bounds the jobs, and
                 # a heavy bucket would otherwise leave thousands of one-column blocks)
HALVING_FROM = 1024   # a segment at least this long (the scalars 1's bucket of a light witness) is
                      # summed apart, by halving in XYZZ (`halving_sum`): log2 n launches of
                      # complete additions, where in the tree its pieces took a job per pair of
                      # ranks and its pieces' sums levels of their own, each with an inversion


def segment_sums(GS, table: torch.Tensor | None, tinf: torch.Tensor, idx: np.ndarray, lens: np.ndarray,
                 dest: np.ndarray | None = None, out_cols: int | None = None, block: int = 2,
                 inverse_block: int = 2, stats: dict | None = None, rows: torch.Tensor | None = None):
    """Sums of the segments of columns of a limb-major affine table (2d·L, T) with identity
    flags (T,).

    idx: int64 columns of the table, segment after segment; lens: segment lengths (zero
    allowed: the sum is the identity). Segment s is written to column dest[s] (default s)
    of the result (2d·L, out_cols); returns (result, identity flags). rows: the table
    point-major ((T, 2d·L), `point_major`) where the caller keeps it so (table None); else
    the gather makes that copy where it pays.

    Rank-major tree: the segments are ordered by length, longest first, and element t of
    every segment is gathered into rank block t, so block t holds S_t columns (the segments
    longer than t) and every block is a prefix of the one before. A level adds block 2k+1
    onto the first S_(2k+1) columns of block 2k, in place, for every k: each operand is a
    contiguous column range, so a level needs no index arrays and no gathers, only one
    launch pair per pair of blocks (sharing one inversion). After ceil(log2 R) levels block 0
    holds the sums. (Before this layout every level gathered its pairs through index arrays
    into fresh tables; the rank-major blocks save those gathers.)

    The index side (`tree_plan`) depends only on idx and lens: callers that sum the same
    columns of several tables make it once and call `tree_sums`."""
    if rows is None:
        rows = point_major(table)
    clock = _Clock(stats)
    plan = tree_plan(idx, lens, dest, out_cols)
    clock.tick("tree_index")
    return tree_sums(GS, table, tinf, plan, block, inverse_block, stats, rows)


@dataclass
class TreePlan:
    """Where `tree_sums` gathers every column and puts every sum (`tree_plan`): the rank-major
    layout `blocks` with src[c] the table column of layout column c, segment s of the layout
    going to column seg[s] of the (ncols) result. With pieces (segments longer than
    RANK_CAP), the layout sums the pieces, `then` sums each long segment's pieces and
    `short` = (result columns, piece columns) moves the one-piece segments. Segments of
    HALVING_FROM elements and more are left out of the layout: `long`."""
    blocks: "RankBlocks | None"
    src: np.ndarray | None
    seg: np.ndarray
    ncols: int
    then: "TreePlan | None" = None
    short: tuple | None = None
    long: tuple = ()     # (result column, table columns) of each segment summed by `halving_sum`


def tree_plan(idx: np.ndarray, lens: np.ndarray, dest: np.ndarray | None = None,
              out_cols: int | None = None) -> TreePlan:
    """The index side of `segment_sums` (same arguments)."""
    lens = np.asarray(lens, dtype=np.int64)
    idx = np.asarray(idx, dtype=np.int64)
    S = len(lens)
    seg = np.arange(S, dtype=np.int64) if dest is None else np.asarray(dest, dtype=np.int64)
    ncols = S if out_cols is None else out_cols
    if S and lens.max() >= HALVING_FROM:
        long = lens >= HALVING_FROM
        starts = np.cumsum(lens) - lens
        runs = tuple((int(seg[s]), idx[starts[s]:starts[s] + lens[s]]) for s in np.nonzero(long)[0])
        plan = tree_plan(idx[np.repeat(~long, lens)], lens[~long], seg[~long], ncols)
        return replace(plan, long=runs)
    if S and lens.max() > RANK_CAP:
        # cut long segments into pieces of RANK_CAP consecutive elements (the last shorter),
        # sum the pieces, then each long segment's pieces (a short one's piece is its sum)
        pieces = -(-lens // RANK_CAP)
        first = np.cumsum(pieces) - pieces
        plens = np.full(int(pieces.sum()), RANK_CAP, dtype=np.int64)
        live = lens > 0
        plens[(first + pieces - 1)[live]] = lens[live] - (pieces[live] - 1) * RANK_CAP
        plan = tree_plan(idx, plens)
        long = pieces > 1
        lp = pieces[long]
        sub = np.arange(int(lp.sum()), dtype=np.int64) + np.repeat(first[long] - (np.cumsum(lp) - lp), lp)
        short = pieces == 1
        return replace(plan, then=tree_plan(sub, lp, seg[long], ncols), short=(seg[short], first[short]))
    blocks = RankBlocks.of(lens)
    src = None
    if blocks is not None:
        src = np.zeros(blocks.total, dtype=np.int64)       # (the gaps between blocks gather column 0)
        starts = np.cumsum(lens) - lens
        first = starts[blocks.order[:blocks.width[0]]]
        for t in range(len(blocks.off)):   # block t: element t of the width[t] longest segments
            w, o = int(blocks.width[t]), int(blocks.off[t])
            np.add(first[:w], t, out=src[o:o + w])
            np.take(idx, src[o:o + w], out=src[o:o + w], mode="clip")
    return TreePlan(blocks, src, seg, ncols)


def tree_sums(GS, table, tinf, plan: TreePlan, block: int = 2, inverse_block: int = 2,
              stats: dict | None = None, rows: torch.Tensor | None = None):
    """`segment_sums` from its plan."""
    out, out_inf = rank_sums(GS, table, tinf, plan.blocks, plan.src, plan.seg, plan.ncols, block, inverse_block,
                             stats, rows)
    if plan.then is not None:
        psum, pinf = out, out_inf
        out, out_inf = tree_sums(GS, psum, pinf, plan.then, block, inverse_block, stats, point_major(psum))
        dst, cols = plan.short
        move_cols(out, dst, psum, cols)
        move_cols(out_inf, dst, pinf, cols)
    if plan.long:
        clock = _Clock(stats)
        for dst, cols in plan.long:
            out[:, dst:dst + 1], out_inf[dst:dst + 1] = halving_sum(GS, table, tinf, cols, rows)
        clock.tick("tree_long")
    return out, out_inf


def halving_sum(GS, table, tinf, cols: np.ndarray, rows: torch.Tensor | None = None):
    """The sum of the table's columns `cols` (one long segment, `tree_plan`): affine
    limb-major (2d·L, 1) and its identity flag (1,). In XYZZ, by halving (`tree_sum`: the
    top half added onto the bottom half by one launch of complete additions, whose cases
    are equal and opposite points and identities, log2 n times), then one conversion."""
    pts = to_points(GS, take_cols(table, cols, rows=rows), take_cols(tinf, cols)).data
    xy, inf = point_formulas.affine(GS, point_formulas.tree_sum(GS, pts, 1, len(cols)))
    return from_points_xy(xy), inf


@dataclass
class RankBlocks:
    """The rank-major layout of segments of lengths lens (all at most RANK_CAP): order, the
    segments longest first (stable); width[t], the segments longer than t (block t is
    element t of segments order[:width[t]]); off[t], block t's first column (blocks start on
    whole vectors, `LANES`); total, the columns."""
    order: np.ndarray
    width: np.ndarray
    off: np.ndarray
    total: int

    @staticmethod
    def of(lens: np.ndarray) -> "RankBlocks | None":
        """None when every segment is empty."""
        if not len(lens) or not lens.any():
            return None
        order = np.argsort((RANK_CAP - lens).astype(np.uint16), kind="stable")    # radix sort
        R = int(lens[order[0]])
        width = len(lens) - np.cumsum(np.bincount(lens, minlength=R + 1))[:R]
        room = -(-width // LANES) * LANES
        return RankBlocks(order, width, np.cumsum(room) - room, int(room.sum()))

    @staticmethod
    def of_widths(order: np.ndarray, width: np.ndarray) -> "RankBlocks":
        room = -(-width // LANES) * LANES
        return RankBlocks(order, width, np.cumsum(room) - room, int(room.sum()))

    def parts(self, src: np.ndarray, seg: np.ndarray, max_cols: int):
        """(layout, src, dst) for runs of consecutive segments (in `order`, longest first)
        of at most max_cols entries each (a segment longer than that is a part of its own;
        each block of a part is padded to whole vectors), so that each can be summed on its own: the part's own rank
        blocks, its columns of src, and the result columns of its segments. One part, the
        layout itself, when it fits."""
        S = int(self.width[0])
        if self.total <= max_cols:
            yield self, src, seg[self.order[:S]]
            return
        # segment j (in order) has as many elements as there are blocks wider than j
        lens = np.searchsorted(-self.width, -np.arange(S), side="left").astype(np.int64)
        ends = np.cumsum(lens)
        a = 0
        while a < S:
            b = max(a + 1, int(np.searchsorted(ends, (ends[a - 1] if a else 0) + max_cols, side="right")))
            width = np.clip(self.width - a, 0, b - a)
            width = width[width > 0]
            part = RankBlocks.of_widths(self.order[a:b], width)
            psrc = np.zeros(part.total, dtype=src.dtype)
            for t, w in enumerate(width):
                o, po = int(self.off[t]) + a, int(part.off[t])
                psrc[po:po + w] = src[o:o + w]
            yield part, psrc, seg[self.order[a:b]]
            a = b


GATHER_BYTES = 64 << 20    # gathered entries the tree holds at once: a larger layout is summed
                           # in parts of consecutive segments, each gathered, summed and moved
                           # out before the next (a 2^18 MSM's four million entries would
                           # otherwise be one 256 MiB gather per MSM, and Groth16 runs several
                           # MSMs side by side); the additions are the same, only launches grow


def rank_sums(GS, table, tinf, blocks: RankBlocks | None, src: np.ndarray | None, seg: np.ndarray,
              ncols: int, block: int = 2, inverse_block: int = 2, stats: dict | None = None,
              rows: torch.Tensor | None = None):
    """`segment_sums` from its rank-major layout: src[c] is the table column of column c of
    the layout `blocks`; segment s goes to column seg[s] of the result. At most
    GATHER_BYTES of entries are gathered at once (`RankBlocks.parts`)."""
    CL = table.shape[0] if table is not None else rows.shape[1]
    dev = tinf.device
    out = torch.zeros((CL, ncols), dtype=torch.int32, device=dev)
    out_inf = torch.ones(ncols, dtype=torch.bool, device=dev)
    if blocks is None:
        return out, out_inf
    any_inf = bool(tinf.any())
    for part, psrc, dst in blocks.parts(src, seg, max(LANES, GATHER_BYTES // (4 * CL))):
        _rank_part(GS, table, tinf if any_inf else None, part, psrc, dst, out, out_inf, block,
                   inverse_block, stats, rows)
    return out, out_inf


def _rank_part(GS, table, tinf, blocks: RankBlocks, src, dst, out, out_inf, block, inverse_block, stats,
               rows):
    """Gather the layout's entries, sum each segment by levels of pairs of rank blocks, and
    move the sums (column j of block 0 is segment j's) to out[..., dst]."""
    clock = _Clock(stats)
    dev = out.device
    E = take_cols(table, src, rows=rows)
    Einf = take_cols(tinf, src) if tinf is not None else None
    clock.tick("tree_gather")
    in_place = _in_place(GS.params, block, dev.type)
    off, width = blocks.off, blocks.width
    while len(off) > 1:
        Einf = _rank_level(GS, E, Einf, off, width, block, inverse_block, in_place, stats)
        if stats is not None:
            stats.setdefault("levels", []).append(int(width[1::2].sum()))
        off, width = off[0::2], width[0::2]
        if Einf is not None and not bool(Einf.any()):
            Einf = None
    clock.tick("tree_levels")
    w0, o0 = int(width[0]), int(off[0])
    move_cols(out, dst, E, np.arange(o0, o0 + w0, dtype=np.int64))
    if Einf is not None:
        move_cols(out_inf, dst, Einf, np.arange(o0, o0 + w0, dtype=np.int64))
    else:
        out_inf[torch.from_numpy(dst).to(dev)] = False
    clock.tick("tree_done")


def _in_place(G, B, device_type) -> bool:
    """Whether the down launch may write its sums over its left operands: its program is one
    kernel, which loads an element's operands before it stores its results (a program cut
    into several kernels, as some groups' are on the GPU, could overwrite an operand that a
    later kernel still reads)."""
    _beta(G)
    c = msm_ec.compiled(G, *tree_kernels(G, B)[1], device_type)
    return len(c.meta["calls"]) == 1


LANES = 8   # columns of a CPU vector: views that start on one load whole vectors (views that
            # start mid-vector make every vector load straddle two)


def _rank_level(GS, E, Einf, off, width, B, inverse_block, in_place, stats):
    """One level of the rank-major tree: block 2k + 1 added onto the head of block 2k, for
    every k; returns the identity flags of E (None: no column is the identity). Each pair of
    blocks is a job on column views of E (`add_ragged_jobs`: its first multiple of B·LANES
    columns as they are, so that every block view starts on a whole vector; the columns
    left over from all pairs copied into one padded job)."""
    jobs, los = [], []
    for k in range(len(off) // 2):
        w, lo, ro = int(width[2 * k + 1]), int(off[2 * k]), int(off[2 * k + 1])
        XL, XR = E[:, lo:lo + w], E[:, ro:ro + w]
        iL = Einf[lo:lo + w] if Einf is not None else None
        iR = Einf[ro:ro + w] if Einf is not None else None
        jobs.append(PairJob(XL, XR, iL, iR, XL if in_place else torch.empty_like(XL)))
        los.append(lo)
    sinfs = add_ragged_jobs(GS, jobs, B, inverse_block, stats, align=B * LANES)
    if Einf is None and any(f is not None and bool(f.any()) for f in sinfs):
        Einf = torch.zeros(E.shape[1], dtype=torch.bool, device=E.device)    # a sum is the identity
    for lo, j, sinf in zip(los, jobs, sinfs):
        if j.out is not j.XL:
            j.XL.copy_(j.out)
        if Einf is not None:
            Einf[lo:lo + j.XL.shape[1]] = sinf if sinf is not None else False
    return Einf


class _Clock:
    """Accumulates wall time per phase into stats["time"] and process CPU time (all threads)
    into stats["cpu"] (no-op without stats)."""

    def __init__(self, stats):
        import time
        self.stats, self.time, self.cpu = stats, time.perf_counter, time.process_time
        # (without stats no clock is read: process_time is a system call, and the MSM's
        # levels and steps make thousands of clocks a proof)
        self.t, self.c = (self.time(), self.cpu()) if stats is not None else (0.0, 0.0)

    def tick(self, name):
        if self.stats is None:
            return
        now, cnow = self.time(), self.cpu()
        for key, d in (("time", now - self.t), ("cpu", cnow - self.c)):
            tm = self.stats.setdefault(key, {})
            tm[name] = tm.get(name, 0.0) + d
        self.t, self.c = now, cnow


Clock = _Clock
