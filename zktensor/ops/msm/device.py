"""The MSM on the Triton target: a short, fixed sequence of launches over device tensors.

The host enqueues and never reads a value back before the result: every size below is a
worst-case bound fixed by (n, batch, window, segment), so the number of launches depends
on those alone, and none of them waits for the device.

0. GLV (`MSMConfig.glv`, groups with an endomorphism, no weighted table): each scalar k
   becomes k1 + lambda·k2 with |k1|, |k2| < 2^127 and the bases (P, phi(P)) (2n points):
   half the windows, so half the buckets and half step 5's doublings. One launch
   (`kernels.glv_split`) splits the scalars and makes step 1's digits of both halves.
1. Digits: the scalars (standard form, from `from_mont` on the device) are cut into W
   windows of C bits and recoded to signed digits in closed form, d_t = w_t + b_(tC-1) -
   2^C·b_((t+1)C-1) (b_i bit i of the scalar; the sum telescopes to the scalar, and
   |d_t| <= 2^(C-1)), by torch integer operations over all windows at once.
2. Sort: each (row, digit) entry gets the key row·N + |d| - 1 (row = batch·W + window,
   N = 2^(C-1) buckets a row; a zero digit sorts past every bucket) and one `torch.sort`
   orders all entries; `searchsorted` gives every bucket's first entry.
3. Accumulation in rounds (`kernels.msm_device.accumulate`): a lane adds at most S
   entries of one bucket in a loop inside the kernel (mixed signs resolved by negating in
   registers; its first entry starts the sum, so a one-entry segment is a copy, not an
   addition), so a bucket of c entries takes ceil(c/S) lanes; in the first round
   (`MSMConfig.balanced`) the lanes of full segments come first and the buckets' last,
   shorter segments after them, longest first, so that a block's lanes (which loop as
   often as the longest of them) hold about as many entries each; round r + 1 sums round r's
   segments of each bucket the same way, until every bucket is one sum (R rounds, S^R >=
   the most entries a bucket can hold). The segment counts of all rounds follow from the
   first round's bucket sizes by ceil(c/S^r), computed before any kernel runs.
4. Reduction (`chain`, once a level, `reduce_levels`): blocks of m = 2^b buckets a lane
   (the weighted sum a = sum_j (j+1)·B_j and the block's sum r, scaled to m·r by b
   doublings), then blocks of G blocks merged (a = sum_k k·r_k + sum_k a_k, r = G·sum_k
   r_k), until each row is one lane: the critical path is a few short chains, not a walk
   over the row's 2^(C-1) buckets. Scaling r where it is made keeps each merge free of the
   weights' doublings, which would otherwise grow with the level (log2 of the buckets
   below it).
5. Windows (`chain` again): Horner, C doublings between windows. With a weighted table
   (`weighted_points`: the bases times 2^(C·t), one copy a window) the windows share one
   row of buckets instead, and this step has nothing to combine.

Exceptional additions (P + P, P - P, the identity) are resolved inside the kernels
(`msm_device.pstep`), never on the host.
"""
from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np
import torch
import torch.nn.functional as Fn

from ...algebra.glv import endomorphism
from ...runtime.target import choose
from ...kernels import glv_split, msm_device
from ...kernels.elementwise import triton_cdiv
from ...points import PointTensor
from ...tensor import FieldTensor

from .model import MSMConfig, n_windows
from .scalars import scalar_words, signed_digits_torch

INTERPRET_BLOCK = 1 << 14       # most lanes a program under the interpreter (its cost is per program)


MAX_DEVICE_WINDOW = 16          # N = 2^15 buckets a row


def on_device(device) -> bool:
    """Whether MSMs over tensors on this device run the device program (the Triton target)."""
    return choose(torch.device(device).type)[1] == "triton"


def device_window(n: int, bits: int, batch: int = 1) -> int:
    """C for the device program: entries (n·W) against buckets (W·2^(C-1)), by the same
    balance as the CPU model but with a bucket costing about as much as an entry."""
    best = None
    for c in range(2, MAX_DEVICE_WINDOW + 1):
        W = n_windows(bits, c)
        v = batch * n * W + 2 * batch * W * (1 << (c - 1))
        if best is None or v < best[0]:
            best = (v, c)
    return best[1]


def layout(n: int, B: int, C: int, W: int, S: int) -> dict:
    """The static shape of one device MSM: rows, buckets, rounds and lanes per round (worst
    cases: every digit nonzero, a bucket may hold all n entries of its row)."""
    N = 1 << (C - 1)
    rows = B * W
    NB = rows * N
    R = max(1, math.ceil(math.log(max(n, 2)) / math.log(S) - 1e-9))
    while S ** R < n:
        R += 1
    lanes, entries = [], rows * n
    for _ in range(R):
        lanes.append(-(-entries // S) + NB)
        entries = lanes[-1]
    if max(lanes) >= 1 << 31:            # the accumulation stores a lane's sum at an int32 column
        raise ValueError(f"device MSM: {max(lanes)} accumulation lanes in a round; at most 2^31 - 1 "
                         f"(fewer points or batch rows a call)")
    return dict(N=N, rows=rows, NB=NB, R=R, lanes=lanes)


_CONSTS_KEPT = 16                # small index tensors per (shape, device), most recent kept
_consts: OrderedDict = OrderedDict()


def _const(key, make):
    """A small constant tensor for `key`, made once and kept among the last _CONSTS_KEPT
    (a long-running prover sees a few shapes; a sweep over sizes must not grow memory)."""
    v = _consts.get(key)
    if v is None:
        v = _consts[key] = make()
        while len(_consts) > _CONSTS_KEPT:
            _consts.popitem(last=False)
    else:
        _consts.move_to_end(key)
    return v


def clear_constants() -> None:
    """Drop the kept constant tensors: the next MSM of each shape makes its own again, as a
    process's first does (`bench.gpu_counts` counts both calls)."""
    _consts.clear()


def register_cap(GS, cfg) -> int | None:
    """ptxas's register cap for the device program's kernels: MSMConfig.max_registers, else
    the group's record (`algebra.curves`, device_maxnreg: where ptxas's own choice spills
    most of a kernel), else None (ptxas's choice)."""
    return cfg.max_registers if cfg.max_registers is not None else GS.triton_device_maxnreg


def _launch(kernel, grid, args, interpret: bool, block: int, max_registers: int | None = None):
    msm_device.launch(kernel, grid, args, interpret, block, max_registers)  # (a seam the tests and prebuild replace)


def _go(kernel, lanes: int, args, interpret: bool, block: int, max_registers: int | None = None):
    """Launch `kernel` over `lanes` columns. Interpreted, a program covers every lane up to
    INTERPRET_BLOCK, rounded up to a power of two only as far as the lanes need: the
    interpreter's numpy work per operation grows with the block, masked lanes included."""
    if interpret:
        block = min(INTERPRET_BLOCK, max(16, 1 << (lanes - 1).bit_length()))
    _launch(kernel, (triton_cdiv(lanes, block),), args, interpret, block, max_registers)




class AffinePoints:
    """Bases on the device in affine coordinates (`MSMConfig.mixed`): xy (L, 2·degree, n),
    Montgomery form, all-zero words at the identity ((0, 0) lies on none of the curves, whose
    b is nonzero). The first accumulation round adds them with mixed additions."""

    def __init__(self, G, xy: torch.Tensor):
        if xy.dim() != 3 or xy.shape[:2] != (G.L, 2 * G.degree):
            raise ValueError(f"{G.name}: affine bases are ({G.L}, {2 * G.degree}, n) words, got {tuple(xy.shape)}")
        self.G, self.data = G, xy

    @classmethod
    def of(cls, points: PointTensor, point_major: bool = False) -> "AffinePoints":
        """The affine form of 1-D XYZZ points (one batch inversion, and host reads: made
        once, with the bases, not in an MSM); `point_major`: their words point-major
        (`MSMConfig.point_major`)."""
        xy, _ = points.affine()                  # zero at the identity
        return cls(points.G, _point_major(xy) if point_major else xy.contiguous())

    @property
    def shape(self) -> tuple:
        return (self.data.shape[2],)

    @property
    def device(self):
        return self.data.device

    def points(self) -> PointTensor:
        """The same points in XYZZ."""
        inf = (self.data == 0).all(dim=1).all(dim=0)
        return self.G.from_affine(self.data, inf, check=False)


def _point_major(data: torch.Tensor) -> torch.Tensor:
    """Point words (L, K, m) as a view whose points each lie in K·L consecutive words
    (strides (1, L, K·L), `MSMConfig.point_major`): a copy unless they already do."""
    return data.permute(2, 1, 0).contiguous().permute(2, 1, 0)


def point_major(points):
    """A PointTensor or AffinePoints with its words point-major (`MSMConfig.point_major`):
    only the device program's kernels, which take every stride as an argument, read them
    without a copy; other point operations copy them back to word-major first."""
    return type(points)(points.G, _point_major(points.data))


def _empty_points(L: int, K: int, m: int, dev, point_major: bool) -> torch.Tensor:
    """Uninitialised point words (L, K, m), in the layout `MSMConfig.point_major` names."""
    if point_major:
        return torch.empty((m, K, L), dtype=torch.int32, device=dev).permute(2, 1, 0)
    return torch.empty((L, K, m), dtype=torch.int32, device=dev)


def weighted_points(GS, points: PointTensor, C: int, W: int, point_major: bool = False) -> PointTensor:
    """The weighted table of 1-D bases for the device program with windows of C bits:
    (W·n,) XYZZ points, 2^(C·t)·P_i at column t·n + i (GZKP's weighted bases, one copy a
    window). W times the bases' memory, made once by (W - 1)·C doublings of all n points.
    `point_major`: the table in that layout (`MSMConfig.point_major`)."""
    n = points.shape[0]
    out = _empty_points(GS.L, GS.K, W * n, points.device, point_major)
    cur = points.reshape(n)
    out[:, :, :n] = cur.data
    for t in range(1, W):
        cur = cur.double(C)
        out[:, :, t * n:(t + 1) * n] = cur.data
    return PointTensor(GS, out)


def device_msm(GS, scalars, points: PointTensor | AffinePoints, cfg: MSMConfig, stats: dict | None = None,
               bits: int | None = None, weighted=None, glv=None):
    """sum_i k_i·P_i for scalars (a FieldTensor (n,) or (B, n) of the scalar field on the
    points' device, Python ints, or standard-form int32 words (Lr, B, n) on that device)
    and 1-D points, on the Triton target: a PointTensor
    of shape (B,). `bits`: scalars are below 2^bits (default: r's bits), fewer windows.
    Points as `AffinePoints`: the first accumulation round's additions are mixed
    (`msm_device.accumulate_affine`); the later rounds add XYZZ segment sums either way.

    `weighted`: a function of C giving the points' weighted table for windows of C bits
    (`weighted_points`; `MSMBases.device_weighted` keeps one). Window t's digit of scalar i
    then multiplies column t·n + i of the table, so all windows add into one row of
    buckets and the result needs no Horner over the windows: its (W - 1)·C doublings are a
    chain one lane deep, the longest in the program (bench/results/gpu_estimate.md).

    `glv`: the bases (P, phi(P)) as `glv_points` makes them (2n points, P first), where the
    caller keeps them (`MSMBases`); used when the split applies, made here otherwise."""
    dev = points.device
    n = points.shape[0]
    words = _scalar_words(GS, scalars, dev)                  # (Lr, B, n) standard form
    B = words.shape[1]
    bits = bits or GS.r.bit_length()
    interpret = dev.type != "cuda"
    block, cap = cfg.block, register_cap(GS, cfg)
    # 0: GLV: n full-width scalars against P become 2n half-width ones against (P, phi(P))
    endo = glv_endomorphism(GS, cfg, n, bits, weighted is not None)
    if endo is not None:
        if glv is None:
            glv = glv_points(GS, endo, points, cfg.point_major)
        elif glv.shape[0] != 2 * n or type(glv) is not type(points):
            raise ValueError(f"device MSM: GLV bases of {glv.shape[0]} {type(glv).__name__} for {n} "
                             f"{type(points).__name__}; they are (P, phi(P)), {2 * n} points")
        points, n, bits = glv, 2 * n, endo.bits
    C = cfg.window or device_window(n, bits, B)
    if not 2 <= C <= MAX_DEVICE_WINDOW:
        raise ValueError(f"the device MSM takes windows of 2..{MAX_DEVICE_WINDOW} bits, got {C}")
    W = n_windows(bits, C)
    # 1: digits (with GLV, the split's kernel makes them)
    if endo is not None:
        d = glv_digits(endo, words, C, W, interpret, block, cap)
    else:
        d = signed_digits_torch(words.reshape(words.shape[0], B * n), C, W).reshape(W, B, n)
    windows = W
    if weighted is not None:     # one window over W·n points: digit (t, b, i) at column t·n + i
        table = weighted(C)
        if table.shape[0] < W * n:
            raise ValueError(f"a weighted table of {table.shape[0]} points; windows of {C} bits need {W * n}")
        d = d.permute(1, 0, 2).reshape(1, B, W * n)
        points = type(table)(GS, table.data[:, :, :W * n])
        n, W = W * n, 1
    S, pm = cfg.segment, cfg.point_major
    if pm:                                  # a no-op for bases kept point-major
        points = point_major(points)
    lay = layout(n, B, C, W, S)
    N, NB, rows, R = lay["N"], lay["NB"], lay["rows"], lay["R"]
    mod = msm_device.module(GS, cfg.strategy, dev.type, interpret)
    L, K = GS.L, GS.K
    # 2: keys, sort, bucket starts
    # int32 keys while they fit: the radix sort's passes follow the key's width
    kd = torch.int32 if NB < (1 << 31) - 1 else torch.int64
    rowbase = _const(("rowbase", B, W, N, str(dev)), lambda: (                 # (W, B, 1): row b·W + t
        (torch.arange(W, device=dev, dtype=kd)[:, None] + W * torch.arange(B, device=dev, dtype=kd)[None, :])
        * N - 1)[:, :, None])
    keys = torch.where(d != 0, d.abs().to(kd) + rowbase, NB).reshape(-1)
    sorted_keys, order = torch.sort(keys)
    bounds, pw = _const(("bounds", NB, R, S, str(dev)), lambda: (
        torch.arange(NB + 1, device=dev, dtype=kd), torch.tensor([[S ** r] for r in range(1, R + 1)], device=dev)))
    start = torch.searchsorted(sorted_keys, bounds)                    # (NB + 1,)
    counts = start[1:] - start[:-1]
    nseg = torch.clamp_min((counts + (pw - 1)) // pw, 1)               # (R, NB): ceil(c / S^r)
    seg_end = torch.cumsum(nseg, dim=1)
    starts = Fn.pad(seg_end, (1, 0))                                  # round r + 1 reads round r's
    # 3: accumulation rounds
    src, d_flat = points.data, d.reshape(-1)
    mixed = isinstance(points, AffinePoints)
    log_nb = max(1, NB.bit_length())
    if cfg.balanced:            # round 0's lanes: full segments, then last ones, longest first
        nfull = torch.clamp_min(counts - 1, 0) // S
        ends, last = torch.cumsum(nfull, 0), torch.argsort(counts - nfull * S, descending=True)
    for r in range(R):
        lanes = lay["lanes"][r]
        out = _empty_points(L, K, lanes, dev, pm)
        lane_map = [ends, last] if r == 0 and cfg.balanced else [seg_end[r], seg_end[r]]
        args = (msm_device.strides(src) + [order, d_flat, n, seg_end[r], start if r == 0 else starts[r - 1], *lane_map]
                + msm_device.strides(out) + [lanes, NB, log_nb, S, int(r == 0), int(r == 0 and cfg.balanced)])
        _go(mod.accumulate_affine if r == 0 and mixed else mod.accumulate, lanes, args, interpret, block, cap)
        src = out
    # 4: the bucket reduction, level by level (bucket (row, v) is column row·N + v - 1 of the
    # last round's output): blocks of G buckets a lane, their weighted sums a (weights 1..G)
    # and sums r (times G) side by side in the level's output; then blocks of G blocks,
    # a = sum k·r_k + sum a_k and r = G·sum r_k, until one lane a row holds
    # T_row = sum_v v·B_v (the last level's r, not read, is left unscaled)
    levels = reduce_levels(C)
    ra, lanes = src, rows * N
    for i, b in enumerate(levels):
        G = 1 << b
        run, horner = ((G, 0, G, 1), (1, 0, 0, 0)) if i == 0 else ((G, 0, G, 0), (G, lanes, G, 0))
        nxt = _empty_points(L, K, 2 * (lanes // G), dev, pm)
        _go(mod.chain, lanes // G, _chain_args(ra, nxt, lanes // G, run=run, horner=horner,
                                               r_dbl=b if i < len(levels) - 1 else 0, outs=(0, lanes // G)),
            interpret, block, cap)
        ra, lanes = nxt, lanes // G
    # 5: windows: Horner over each batch row's W window sums (T at column rows + b·W + t of ra)
    res = torch.empty((L, K, B), dtype=torch.int32, device=dev)
    _go(mod.chain, B, _chain_args(ra, res, B, horner=(W, rows, W, C)), interpret, block, cap)
    if stats is not None:
        stats.update(window=C, windows=windows, rounds=R, segment=S, buckets=NB, lanes=lay["lanes"],
                     reduce_levels=levels, path="device", weighted=weighted is not None,
                     mixed=mixed, point_major=pm, glv=endo is not None)
    return PointTensor(GS, res)


def glv_endomorphism(GS, cfg: MSMConfig, n: int, bits: int, weighted: bool = False):
    """The endomorphism the device program splits the scalars by (`MSMConfig.glv`), or None:
    none for a group without one, a weighted table (no window combination to shorten) or
    scalars that fit the halves already."""
    if not cfg.glv or weighted or not n:
        return None
    e = endomorphism(GS.name)
    return e if e is not None and bits > e.bits + 1 else None


def glv_digits(endo, words: torch.Tensor, C: int, W: int, interpret: bool, block: int,
               cap: int | None = None) -> torch.Tensor:
    """Standard-form words (Lr, B, n) -> signed digits (W, B, 2n) int32, W windows of C bits,
    of k1 at column j of each batch row and of k2 at n + j (k = k1 + lambda·k2 mod r, each
    digit with its half's sign), as `signed_digits_torch` recodes: one launch of `glv_split`."""
    Lr, B, n = words.shape
    flat = words.reshape(Lr, B * n)
    d = torch.empty((W, B, 2 * n), dtype=torch.int32, device=words.device)
    mod = glv_split.module(endo, Lr, interpret)
    _go(mod.glv_split, B * n, [flat, flat.stride(1), flat.stride(0), d, d.stride(0), n, B * n, C, W],
        interpret, block, cap)
    return d


def glv_points(GS, endo, points, point_major: bool = False):
    """(2n,) bases P_0 .. P_(n-1), phi(P_0) .. phi(P_(n-1)) of 1-D bases (n,), PointTensor
    or AffinePoints: phi multiplies x (XYZZ: X, since x = X/ZZ; G2: both of its Fq
    components, the first `degree` of the point's) by beta in Fq and keeps the rest, so the
    identity (ZZ = 0; affine: all-zero words) stays the identity. Written once, in the
    layout `point_major` names (`MSMConfig.point_major`)."""
    data, d = points.data, GS.degree
    L, K, n = data.shape
    dev = data.device
    beta = _const(("beta", GS.name, str(dev)), lambda: GS.F.full((), endo.beta, device=dev))
    both = _empty_points(L, K, 2 * n, dev, point_major)
    halves = both.unflatten(2, (2, n))                  # a view in either layout: P twice, one copy
    halves.copy_(data[:, :, None, :].expand(L, K, 2, n))
    both[:, :d, n:] = (FieldTensor(GS.F, data[:, :d, :]) * beta).data
    return type(points)(GS, both)


def point_sums(GS, points: PointTensor, M: int, strategy: str | None = None) -> PointTensor:
    """(n / M,) sums of consecutive groups of M points of 1-D points (n,): one launch of the
    device program's `chain` (its running sum alone; complete additions, so identities,
    equal and opposite points need nothing more), where a device MSM with 1-bit scalars
    was its whole program (digits, sort, rounds, reduction) for the same few additions."""
    n = points.shape[0]
    if M < 1 or n % M:
        raise ValueError(f"point_sums: {n} points are not groups of {M}")
    rows = n // M
    dev = points.device
    interpret = dev.type != "cuda"
    cfg = MSMConfig()
    mod = msm_device.module(GS, strategy or cfg.strategy, dev.type, interpret)
    out = torch.empty((GS.L, GS.K, 2 * rows), dtype=torch.int32, device=dev)       # the sums, then the chain's a
    _go(mod.chain, rows, _chain_args(points.data, out, rows, run=(M, 0, M, 0), outs=(0, rows)), interpret,
        cfg.block)
    return PointTensor(GS, out[:, :, :rows])


def _chain_args(src, dst, lanes: int, run=(1, 0, 0, 1), horner=(1, 0, 0, 0), r_dbl: int = 0,
                outs=(-1, 0)) -> list:
    """Arguments of `msm_device.chain` over `lanes` lanes: run = (M, offset, steps, last_a)
    of the running sums (last_a 0: weights 0..M-1, else 1..M), horner = (M2, offset, groups,
    doublings before each group's addition but the first's), r_dbl = doublings of r at the
    end, outs = (column of r or -1, column of a) in dst (lane i at offset + i)."""
    return msm_device.strides(src) + msm_device.strides(dst) + [lanes, *run, *horner, r_dbl, *outs]


LEVEL_BITS = 2          # at most 2^2 blocks merged a level: the shortest chains for the launches


def reduce_levels(C: int) -> list[int]:
    """log2 of the bucket reduction's fan-in per level, for N = 2^(C-1) buckets a row. The
    levels' chains run one after the other, each one lane deep per row, so the reduction's
    critical path is their sum, not N (a running sum over a row is N deep): a first level
    of 2^b buckets is 2·2^b - 2 additions and b doublings, a later one of fan-in G = 2^b is
    3G - 3 additions and b doublings (none in the last level): the path shortens as the
    fan-in falls, and each level is a launch. Fan-ins of 4 keep a 2^20 MSM within its
    launch budget (`bench.gpu_estimate.reduction_steps` counts the steps)."""
    bits = C - 1
    k = max(1, -(-bits // LEVEL_BITS))
    return [bits // k + (1 if i < bits % k else 0) for i in range(k)]


def _scalar_words(GS, scalars, dev) -> torch.Tensor:
    """Standard-form words (Lr, B, n) on the device: a FieldTensor through `from_mont` on the
    device; Python ints checked and converted on the host (they are host data), then
    uploaded once; int32 words (Lr, B, n) already on the device as they are."""
    Fr = GS.Fr
    if isinstance(scalars, torch.Tensor):                   # words already there (msm_many's matrix)
        return scalars
    if isinstance(scalars, FieldTensor):
        if scalars.F != Fr:
            raise ValueError(f"{GS.name}: scalars must be {Fr.name} elements, got {scalars.F.name}")
        if scalars.data.device != dev:
            raise ValueError(f"scalars on {scalars.data.device}, points on {dev}: put both on one device")
        from ...kernels.field_programs import from_mont
        data = scalars.data
        if data.dim() == 2:
            data = data.reshape(data.shape[0], 1, data.shape[1])
        return from_mont(Fr, data)
    w = scalars if isinstance(scalars, np.ndarray) else scalar_words(GS, scalars)   # (B, n, Lr), < r
    t = torch.from_numpy(w.view("<i4").transpose(2, 0, 1).copy())
    return t.to(dev)
