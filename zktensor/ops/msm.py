"""Multi-scalar multiplication: sum_i k_i·P_i as a tensor program.

    G = zt.group("bn254.g1")
    P = G.tensor(points)                      # (n,) bases
    Q = zt.msm(scalars, P)                    # scalars: FieldTensor of bn254.fr or ints
    Qs = zt.msm(scalar_rows, P)               # (B, n) scalars sharing the bases -> (B,) points
    bases = zt.msm_prepare(P, window=13, checkpoint=4)    # GZKP precomputation (fixed bases)
    Q = zt.msm(scalars, bases)

Algorithm (signed-digit Pippenger; see `MSMConfig` for the knobs):

1. Scalars (standard form, checked < r) are cut into W = ceil((bits + 1)/c) windows
   of c or c - 1 bits (balanced: a top window of a few bits would pile every
   point into a few buckets) and recoded to signed digits in [-2^(c-1), 2^(c-1)],
   so N = 2^(c-1) buckets per window and -P costs only a negated y.
2. Sparse scalars (witness MSMs are mostly 0 and 1): zeros are dropped, and a one
   is a single entry of bucket 1 of the first window, so the bucket tree below sums
   the ones in the same launches as everything else; the window is chosen for the
   other scalars (with 90% zeros and ones, the window for all n would make buckets
   outnumber their entries). Identity bases are dropped.
3. Bucket accumulation as a tensor program: every (window, point) digit is an
   entry; entries are grouped by bucket with a counting sort per window row
   (`kernels.msm_place`: compiled loops, or numpy's stable radix argsort where
   they cannot be compiled) and placed rank-major (buckets longest first, entry
   i of every bucket in rank block i), and all buckets of all windows are summed
   by one tree of batch-affine additions over those blocks (`kernels.msm_tree`:
   each level adds block 2k+1 onto block 2k in place, all k in one launch pair
   sharing one inversion). The tree balances load by construction: a level's work is its
   pairs, whatever the buckets' sizes.
4. Bucket offsets: bucket v of every row also receives U_v = s_v·g (`bucket_offsets`,
   pseudo-random multiples of the generator g), so no bucket is empty and no two
   buckets or partial sums are equal by construction: the reduction's fused
   kernels then meet no identity and no P = ±Q unless the input is built for it
   (those cases are still found and recomputed exactly). The offsets' total,
   sum_m 2^(o_m)·sum_v v·s_v·g (o_m the bit offset of window/round m), is
   cancelled by adding g to the bases with the opposite scalar.
5. Bucket reduction (`kernels.msm_reduce`), by default by halving: the top half of
   every bucket row is added onto its bottom half and kept aside, log2 N steps of
   batch-affine additions over all rows at once (the small last steps in XYZZ), then
   the kept halves' sums weighted by a Horner chain. Or (`reduction="suffix"`) by
   blocked parallel suffix sums: the buckets of every window are cut into K chunks,
   all chunks of all windows are lanes of one batch, and each step of the scan is
   one fused launch of XYZZ additions. Measured on the 2-core CPU (diagnostic, 2026-11-21): BN254 G2,
   18 rows of 2^14 buckets, one thread, 148-163 ms halving against 226-228 ms
   suffix; BN254 G1 within noise of each other (72-82 ms against 75-79 ms).
6. Windows combined by Horner (doublings fused up to `points.max_chain` per launch).

Load balance: the unit of work of every launch is a pair (tree) or a lane
(reduction), never a bucket, so threads and GPU blocks get equal shares however
the digits are distributed; a heavy bucket costs log2(size) tree levels.

GZKP consolidation (`msm_prepare`): with the weighted bases 2^(j·M·c)·P_i kept
for every checkpoint j (every M windows), the windows t = j·M + m of all
checkpoints share the buckets of round m: M bucket sets instead of W, so
fewer bucket reductions (and larger windows pay off), at the memory of
ceil(W/M) copies of the bases. M = 1 merges every window into one bucket set
(most memory); M = W is plain Pippenger.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, replace

import numpy as np
import torch

from ..config import config as zt_config, msm_config, user as user_config
from ..runtime.threads import host_parallel, launch_threads
from ..points import GroupSpace, PointTensor, add_complete, double_n, scalar_mul
from ..tensor import FieldTensor

PIECE_MIN = 1 << 15     # digits a piece of a bucket row holds at least (`_bucket_layout`)
MAX_WINDOW = 20          # the cost model's widest window (N = 2^19 buckets a row; 2^18
                         # scalars at M = 1 choose c = 17)


@dataclass(frozen=True)
class MSMConfig:
    """The knobs of `msm`, for callers and the autotuner. None means: chosen by the cost model.

    window       c, bits per signed-digit window (2..MAX_WINDOW = 20)
    reduction    bucket reduction: "halving" (batch-affine, `msm_reduce.reduce_halving`) or
                 "suffix" (blocked XYZZ suffix sums, `msm_reduce.reduce_buckets`)
    chunks       K, lanes per bucket row in the suffix reduction (power of two <= 2^(c-1)); it
                 also shapes the bucket offsets
    checkpoint   M for `msm_prepare`: windows between stored weighted bases
    sparse       choose the window for the scalars other than 0 and 1 (zeros are always
                 dropped, and a one is always a single entry of bucket 1)
    offset       put an offset point in every bucket (see module docstring)
    tree_block   pairs per block in a tree level's fused inversion+addition launches
    inverse_block  B of the blocked batch inversion of the block products (`kernels.msm_inverse`)
                 Both 2: every (tree_block, inverse_block) does ~6 products an addition, and
                 the smaller blocks keep the down kernel's operands in registers (diagnostic
                 A/B, 2-core VM, 2 threads, 2026-11-22: BN254 G1 2^16 171-212 ms against
                 195-222 ms for 4/4, 2^18 556-600 against 590-664; BN254 G2 2^14 139-154
                 against 144-157). Not measured on a GPU.
    cost_affine / cost_bucket   cost-model weights: one batch-affine addition, and one
                 bucket's share (its offset entry and its suffix-sum step), in the same unit
                 (measured on the CPU target: a tree addition ~120 ns, a bucket ~310 ns a thread)
    strategy     multiplication strategy of every kernel; None: `auto_strategy`
    """
    window: int | None = None
    chunks: int | None = None
    reduction: str = "halving"
    checkpoint: int | None = None
    sparse: bool = True
    offset: bool = True
    tree_block: int = 2
    inverse_block: int = 2
    cost_affine: float = 1.0
    cost_bucket: float = 2.6
    strategy: str | None = None

    def __post_init__(self):
        if self.reduction not in REDUCTIONS:
            raise ValueError(f"MSMConfig.reduction must be one of {REDUCTIONS}, got {self.reduction!r}")


REDUCTIONS = ("halving", "suffix")


def auto_strategy(GS: GroupSpace, device) -> str | None:
    """On the CPU: fp64 where the target has 8-lane AVX-512 IFMA kernels, for every group
    (measured 2026-11-21, one thread, dense scalars: BN254 G1 about 4x the int64 kernels'
    throughput on the tree and reduction kernels; BN254 G2 2^14 181 ms vs 460 ms;
    MNT4-753 G1 2^10 166 ms vs 374 ms); else the default. None elsewhere (the device's
    default). G2 and MNT4-753 used int64 until limbs-to-cpu kept the scalar tail loop's
    body a call: LLVM's loop vectorizer had taken > 40 min on their inlined bodies."""
    if torch.device(device).type != "cpu":
        return None
    try:
        from ..kernels.cpu_isa import cpu_options
    except ImportError:
        return None
    o = cpu_options("fp64")
    return "fp64" if o.get("lanes") == 8 and o.get("ifma") else None


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


# -- bucket offsets ---------------------------------------------------------------------------

_offsets: dict = {}
_offset_scalars: dict = {}


def bucket_offsets(GS: GroupSpace, c: int, chunks: int, device):
    """Offset points U_v = s_v·g (v = 1..N, g the generator), one per bucket, and
    sum_v v·s_v mod r. s_v = a_j + b_k for v - 1 = k·Lc + j with a (Lc values) and b
    (K values) drawn once per process from a CSPRNG: U costs Lc + K scalar
    multiplications and one batched addition, and its points obey no linear relation
    with small coefficients that the bucket reduction could meet (so empty buckets,
    which would otherwise all be equal, are not). The scalars are drawn per (r, c, K),
    so groups of one scalar field (G1 and G2) get the same total and their prepared bases
    can share an `MSMPlan` (whose generator digits cancel it); the points are cached per
    (group, c, K, device)."""
    key = (GS.name, c, chunks, str(device))
    if key not in _offsets:
        N = 1 << (c - 1)
        K = chunks
        Lc = N // K
        a, b, total = _offset_draw(GS.r, c, K)
        g = GS.generator((Lc + K,), device=device)
        ab = scalar_mul(g, a + b)
        U = ab[:Lc].reshape(1, Lc) + ab[Lc:].reshape(K, 1)        # (K, Lc): U[k, j]
        xy, inf = U.reshape(N).affine()
        if bool(inf.any()):   # probability ~N/r
            raise AssertionError("bucket offset is the identity")
        _offsets[key] = (xy, total)
    return _offsets[key]


def _offset_draw(r: int, c: int, K: int):
    """(a, b, sum_v v·s_v mod r) of `bucket_offsets`, drawn once per (r, c, K)."""
    key = (r, c, K)
    if key not in _offset_scalars:
        import secrets
        Lc = (1 << (c - 1)) // K
        a = [secrets.randbelow(r) for _ in range(Lc)]
        b = [secrets.randbelow(r) for _ in range(K)]
        total = sum((k * Lc + j + 1) * (a[j] + b[k]) for k in range(K) for j in range(Lc)) % r
        _offset_scalars[key] = (a, b, total)
    return _offset_scalars[key]


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


def window_widths(bits: int, c: int) -> list[int]:
    """Widths of the n_windows(bits, c) signed-digit windows, balanced (each c or c - 1, the
    wider ones low): a top window of a few bits would gather all n digits into a few
    buckets, and their trees would take log2(n) levels."""
    W = n_windows(bits, c)
    base, extra = divmod(bits + 1, W)
    return [base + 1] * extra + [base] * (W - extra)


def signed_digits(words: np.ndarray, c, W: int | None = None) -> np.ndarray:
    """Signed digits (W, m) int32 of scalars given as words (m, Lr), window t of width
    c_t (`c` an int: all windows c bits; or a list of widths): sum_t d_t 2^(c_0 + ... + c_{t-1}),
    |d_t| <= 2^(c_t - 1)."""
    widths = [c] * W if isinstance(c, int) else list(c)
    if max(widths) > 30:
        raise ValueError(f"windows of at most 30 bits, got {max(widths)}")
    m, Lr = words.shape
    # in 32-bit words throughout (a window is at most 30 bits, its carry one): half the
    # memory traffic of 64-bit lanes, ~2x faster
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


class MSMBases:
    """Bases prepared for repeated MSMs (GZKP): 2^(j·M·c)·P_i for every checkpoint j (and the
    same for the generator, which cancels the bucket offsets), their negations and the
    bucket offsets, as one affine table: limb-major (`table`), or point-major (`rows`,
    `table` None) from rows of `msm_tree.PREPARED_POINT_MAJOR_FROM` bytes (e.g. M = 1
    tables from 2^13 BN254 G1 bases, plain ones from 2^17 where `cpu_gather` compiles, else
    from `POINT_MAJOR_FROM`), the copy made once here instead of in every MSM
    (`msm_tree.point_major`). Diagnostic
    (2-core VM, 2^16 dense BN254 G1, one thread, interleaved): M = 1 191-196 ms with the copy
    kept, 224-329 ms making it per MSM, against 242-276 ms for the plain table (M = W)."""

    def __init__(self, GS: GroupSpace, xy: torch.Tensor, inf: torch.Tensor, window: int,
                 checkpoint: int, chunks: int, config: MSMConfig):
        self.G, self.window, self.config = GS, window, config
        self.n = xy.shape[2]
        bits = GS.r.bit_length()
        self.W = n_windows(bits, window)
        self.M = min(checkpoint, self.W)
        self.J = -(-self.W // self.M)
        self.chunks = chunks
        self.base_inf = inf
        from ..kernels import cpu_gather, msm_tree
        self.device = xy.device
        cols = table_columns(self.n, self.J, window)
        # numpy's point-major gather paid only on weighted tables; the compiled one on all
        pm = self.device.type == "cpu" and cols * 4 >= (
            msm_tree.PREPARED_POINT_MAJOR_FROM if self.J > 1 or cpu_gather.available() else
            msm_tree.POINT_MAJOR_FROM)
        table, self.tinf, self.offset_total = _weighted_table(GS, xy, inf, window, self.M, self.J, chunks,
                                                              point_major=pm)
        self.table, self.rows = (None, table) if pm else (table, None)

    def __len__(self):
        return self.n

    def memory_bytes(self) -> int:
        return (self.table if self.table is not None else self.rows).numel() * 4


def table_columns(n: int, J: int, c: int) -> int:
    """Columns (points) of the table for n bases, J checkpoints and window c: every
    checkpoint's bases and generator, their negations, and the 2^(c-1) bucket offsets."""
    return 2 * J * (n + 1) + (1 << (c - 1))


def _weighted_table(GS, xy, inf, c, M, J, chunks, point_major: bool = False):
    """Limb-major affine table (2d·L, 2·J·(n+1) + N) and identity flags:
    [Q_0 | ... | Q_{J-1} | -Q_0 | ... | -Q_{J-1} | U_1..U_N], Q_j = 2^(j·M·c)·[P_0..P_{n-1}, g];
    with point_major, the same table as (columns, 2d·L) (see `msm_tree.point_major`). Each
    part is written into place as it is made (a 2^16 BN254 G1 table at M = 1 is 130 MiB:
    concatenating and transposing it took ~40% of msm_prepare)."""
    L, C2, n = xy.shape
    d = GS.degree
    dev = xy.device
    n1 = n + 1
    uxy, total = bucket_offsets(GS, c, chunks, dev)
    T = table_columns(n, J, c)
    table = torch.empty((T, C2 * L) if point_major else (C2 * L, T), dtype=torch.int32, device=dev)
    tinf = torch.zeros(T, dtype=torch.bool, device=dev)

    def put(col, x, y):                 # x, y: (L, d, m) coordinates of columns col..col+m
        m = x.shape[2]
        if point_major:
            v = table[col:col + m].view(m, C2, L)
            v[:, :d].copy_(x.permute(2, 1, 0))
            v[:, d:].copy_(y.permute(2, 1, 0))
        else:
            v = table[:, col:col + m].view(C2, L, m)
            v[:d].copy_(x.permute(1, 0, 2))
            v[d:].copy_(y.permute(1, 0, 2))

    gxy, ginf = GS.generator((1,), device=dev).affine()
    cxy, cinf = torch.cat([xy, gxy], dim=2), torch.cat([inf, ginf])
    cur = None              # XYZZ form, made only where there are weighted copies to double into
    for j in range(J):
        if j:
            cur = cur if cur is not None else GS.from_affine(cxy, cinf, check=False)
            cur = PointTensor(GS, double_n_many(GS, cur.data, M * c))
            cxy, cinf = cur.affine()
        negy = (-FieldTensor(GS.F, cxy[:, d:].reshape(L, -1).contiguous())).data.reshape(L, d, n1)
        put(j * n1, cxy[:, :d], cxy[:, d:])
        put((J + j) * n1, cxy[:, :d], negy)
        tinf[j * n1:(j + 1) * n1] = cinf
        tinf[(J + j) * n1:(J + j + 1) * n1] = cinf
    put(2 * J * n1, uxy[:, :d], uxy[:, d:])
    return table, tinf, total


def prepared_bytes(GS: GroupSpace, n: int, checkpoint: int, n_hint: int | None = None) -> int:
    """Bytes of `msm_prepare`'s table for n bases at checkpoint interval M, the window chosen
    by the cost model for MSMs of n_hint (default n) scalars."""
    bits = GS.r.bit_length()
    c = choose_window(n_hint or n, bits, checkpoint=checkpoint)
    W = n_windows(bits, c)
    J = -(-W // min(checkpoint, W))
    return table_columns(n, J, c) * 2 * GS.degree * GS.L * 4


def double_n_many(GS, data, n):
    return double_n(GS, data, n)


def msm_prepare(points, window: int | None = None, checkpoint: int | None = None,
                config: MSMConfig | None = None, n_hint: int | None = None) -> MSMBases:
    """Precompute GZKP's weighted bases for `points` (a 1-D PointTensor). Without `config`:
    zt.config(msm=...), else the tuning cache (op `msm_prepared`), else the cost model."""
    if not isinstance(points, PointTensor):
        raise TypeError("msm_prepare takes a PointTensor of bases")
    GS = points.G
    if len(points.shape) != 1:
        raise ValueError("bases must be a 1-D PointTensor")
    n = points.shape[0]
    cfg = config or msm_config(GS, n_hint or n, points.device, prepared=True)
    bits = GS.r.bit_length()
    M = checkpoint or cfg.checkpoint
    c = window or cfg.window or choose_window(n_hint or n, bits, checkpoint=M or 1, cfg=cfg)
    _check_window(c)
    W = n_windows(bits, c)
    M = min(M or 1, W)
    N = 1 << (c - 1)
    K = min(cfg.chunks or choose_chunks(N), N)
    strategy = cfg.strategy or auto_strategy(GS, points.device)
    with zt_config(strategy=strategy):
        xy, inf = points.affine()
        return MSMBases(GS, xy, inf, c, M, K, replace(cfg, window=c, checkpoint=M, chunks=K))


def _check_window(c):
    if not 2 <= c <= MAX_WINDOW:
        raise ValueError(f"window must be in [2, {MAX_WINDOW}], got {c}")


# -- the MSM ---------------------------------------------------------------------------------------


def msm(scalars, points, config: MSMConfig | None = None, stats: dict | None = None) -> PointTensor:
    """sum_i scalars[i]·points[i] as a 0-d PointTensor; (B, n) scalars give a (B,) PointTensor.

    points: a 1-D PointTensor (e.g. G.tensor(list of affine points)) or `MSMBases` from
    `msm_prepare`. scalars: a FieldTensor of the group's scalar field, or Python ints in
    [0, r) (a list, or a list of lists), or an `MSMPlan` of them (`msm_plan`) for prepared
    bases. `stats` (a dict) receives what was chosen (window,
    chunks, ...), the tree's level sizes and wall/CPU seconds per phase. Without `config`:
    prepared bases keep the config they were prepared with; otherwise zt.config(msm=...),
    else the tuning cache, else the cost model."""
    G = points.G if isinstance(points, (PointTensor, MSMBases)) else None
    dev = (points.device if isinstance(points, MSMBases) else
           points.device if isinstance(points, PointTensor) else torch.device("cpu"))
    cfg = config
    if cfg is None:
        if isinstance(points, MSMBases):
            cfg = _prepared_config(points, None)
        elif isinstance(points, PointTensor) and len(points.shape) == 1:
            cfg = msm_config(G, points.shape[0], dev, batch=_batch_of(scalars))
        else:
            cfg = MSMConfig()
    strategy = cfg.strategy or (auto_strategy(G, dev) if G is not None else None)
    if stats is not None:
        stats["strategy"] = strategy or "default"
    with zt_config(strategy=strategy):
        if isinstance(scalars, MSMPlan):
            return _msm_planned(scalars, points, cfg, stats)
        return _msm(scalars, points, cfg, stats)


def msm_many(jobs, bases: MSMBases, config: MSMConfig | None = None, stats: dict | None = None) -> PointTensor:
    """Several MSMs over slices of one set of prepared bases, summed by one bucket tree:
    jobs is a list of (scalars, offset), scalars[i] multiplying base offset + i (scalars as
    for `msm`, a vector each). Returns a (len(jobs),) PointTensor. The jobs share the
    digits, the sort, the tree's launches, the bucket reduction and the final combination,
    which for small MSMs are mostly fixed costs."""
    if not isinstance(bases, MSMBases):
        raise TypeError("msm_many takes MSMBases from msm_prepare")
    if not jobs:
        raise ValueError("msm_many: no jobs")
    GS = bases.G
    cfg = config or (msm_config(GS, bases.n, bases.device, prepared=True) if user_config("msm") else bases.config)
    word_jobs = []
    for j, (scalars, off) in enumerate(jobs):
        words = scalar_words(GS, scalars)
        if words.shape[0] != 1:
            raise ValueError(f"msm_many: job {j}: scalars must be one vector")
        k = words.shape[1]
        if not 0 <= off <= bases.n - k:
            raise ValueError(f"msm_many: job {j}: {k} scalars from base {off} pass the {bases.n} bases")
        word_jobs.append((words[0], off))
    strategy = cfg.strategy or auto_strategy(GS, bases.device)
    if stats is not None:
        stats["strategy"] = strategy or "default"
    with zt_config(strategy=strategy):
        return _with_bases(bases, word_jobs, cfg, stats)


def msm_plan(scalars, *bases: MSMBases, config: MSMConfig | None = None,
             stats: dict | None = None) -> MSMPlan:
    """The scalar side of MSMs of `scalars` (as for `msm`) against each of `bases` (prepared,
    of one geometry: same number of bases, window, checkpoints, chunks and scalar field; G1
    and G2 bases may share a plan): signed digits, sort and bucket layout, made once, so that
    `msm(plan, b)` for each b skips them. A scalar 0, or one whose base is the identity in
    every given set, gets no entries; a base that is the identity in some sets only is
    summed as the identity there."""
    if not bases:
        raise ValueError("msm_plan: no bases")
    for b in bases:
        if not isinstance(b, MSMBases):
            raise TypeError("msm_plan takes MSMBases from msm_prepare")
    cfgs = [_prepared_config(b, config) for b in bases]
    keys = [plan_key(b, c) for b, c in zip(bases, cfgs)]
    for i, k in enumerate(keys[1:], 1):
        if k != keys[0]:
            raise ValueError(f"msm_plan: bases {i} ({bases[i].G.name}, {_describe(bases[i], cfgs[i])}) differ "
                             f"from bases 0 ({bases[0].G.name}, {_describe(bases[0], cfgs[0])}); a plan "
                             "needs one geometry")
    words = scalar_words(bases[0].G, scalars)
    Bt, ns, _ = words.shape
    if ns != bases[0].n:
        raise ValueError(f"msm_plan: {ns} scalars but {bases[0].n} bases")
    plan = _bases_plan(list(bases), [(words[b], 0) for b in range(Bt)], cfgs[0], stats)
    return replace(plan, squeeze=_is_vector(scalars))


def _prepared_config(bases: MSMBases, config: MSMConfig | None) -> MSMConfig:
    """`msm`'s config for prepared bases: the caller's, zt.config(msm=...), else the bases' own."""
    if config is not None:
        return config
    return msm_config(bases.G, bases.n, bases.device, prepared=True) if user_config("msm") else bases.config


def _describe(bases: MSMBases, cfg: MSMConfig) -> str:
    return (f"n={bases.n}, window={bases.window}, checkpoint={bases.M}, chunks={bases.chunks}, "
            f"offset={bool(cfg.offset)}, reduction={cfg.reduction}")


def _is_vector(scalars) -> bool:
    """Scalars given as one vector (msm returns one point), not a (B, n) batch."""
    if isinstance(scalars, FieldTensor):
        return len(scalars.shape) != 2
    return not (len(scalars) and isinstance(list(scalars)[0], (list, tuple)))


def _msm_planned(plan: MSMPlan, bases, cfg: MSMConfig, stats: dict | None) -> PointTensor:
    if not isinstance(bases, MSMBases):
        raise TypeError("msm(plan, bases): a plan from msm_plan runs against MSMBases")
    if plan.key != plan_key(bases, cfg):
        raise ValueError(f"msm: the plan was made for bases of another geometry than these "
                         f"({bases.G.name}, {_describe(bases, cfg)})")
    res = _run(bases, plan, cfg, stats)
    return res[0] if plan.squeeze else res


def _with_bases(bases: MSMBases, word_jobs, cfg: MSMConfig, stats: dict | None) -> PointTensor:
    """The MSMs of scalar words (k, Lr) against bases offset .. offset + k of prepared bases,
    for each (words, offset) of word_jobs, in one bucket tree: a (len(word_jobs),) PointTensor."""
    return _run(bases, _bases_plan([bases], word_jobs, cfg, stats), cfg, stats)


def _bases_plan(sets: list, word_jobs, cfg: MSMConfig, stats: dict | None) -> MSMPlan:
    """The plan of word_jobs against prepared bases of one geometry: a scalar goes through
    the buckets unless it is 0 or its base is the identity in every set."""
    b0 = sets[0]
    base_inf = b0.base_inf.cpu().numpy()
    for b in sets[1:]:
        base_inf = base_inf & b.base_inf.cpu().numpy()
    js, n_ones, n_dense = [], 0, 0
    for words, off in word_jobs:
        live, ones = split_scalars(words[None], base_inf[off:off + len(words)], cfg.sparse)
        js.append((words[live[0]], off + np.flatnonzero(live[0])))
        n_ones, n_dense = n_ones + int(ones.sum()), n_dense + int((live & ~ones).sum())
    plan = _plan(js, b0.n, [b0.window] * b0.W, b0.M, b0.J, b0.chunks, b0.offset_total, cfg, b0.G.Fr,
                 stats)
    return replace(plan, key=plan_key(b0, cfg), ones=n_ones, dense=n_dense)


def plan_key(bases: MSMBases, config: MSMConfig | None = None) -> tuple:
    """What an `MSMPlan` for `bases` depends on besides the scalars, with `msm`'s config
    (config None: as `msm` resolves it): bases with equal keys share plans."""
    cfg = _prepared_config(bases, config)
    return (bases.G.r, bases.n, bases.window, bases.W, bases.M, bases.J, bases.chunks, bases.offset_total,
            bool(cfg.offset), cfg.reduction == "halving")


def _run(bases: MSMBases, plan: MSMPlan, cfg: MSMConfig, stats: dict | None) -> PointTensor:
    res = _sums(bases.G, bases.table, bases.tinf, plan, cfg, bases.device, stats, bases.rows)
    if stats is not None:
        stats.update(ones=plan.ones, dense=plan.dense)
    return res


def _batch_of(scalars) -> int:
    """Rows of a (B, n) batch of scalars (1 for a vector)."""
    if isinstance(scalars, FieldTensor):
        return scalars.shape[0] if len(scalars.shape) == 2 else 1
    if isinstance(scalars, (list, tuple)) and scalars and isinstance(scalars[0], (list, tuple)):
        return len(scalars)
    return 1


def _msm(scalars, points, cfg: MSMConfig, stats: dict | None) -> PointTensor:
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
    squeeze = _is_vector(scalars)
    dev = (bases.device if bases is not None else points.device)
    if n == 0:
        res = GS.identity((Bt,), device=dev)
        return res[0] if squeeze else res
    if bases is not None:
        res = _with_bases(bases, [(words[b], 0) for b in range(Bt)], cfg, stats)
        return res[0] if squeeze else res
    from ..kernels.msm_tree import Clock
    clock = Clock(stats)
    xy, inf = points.affine()
    live, ones = split_scalars(words, inf.cpu().numpy(), cfg.sparse)
    bits = GS.r.bit_length()
    # the window for the scalars other than 0 and 1: with sparse scalars (witnesses: mostly
    # 0 and 1) the window for all n would give buckets that outnumber their entries
    many = int((live & ~ones).sum(axis=1).max())
    c = cfg.window or choose_window(max(many, 1), bits, batch=Bt, cfg=cfg)
    _check_window(c)
    widths = window_widths(bits, c)
    c = max(widths)
    W = len(widths)
    N = 1 << (c - 1)
    K = min(cfg.chunks or choose_chunks(N), N)
    # point-major where compiled gathers read it (`msm_tree.take_cols`): BN254 G1 2^18, 2 threads,
    # 332-337 ms against 379-405 limb-major; 2^16 119-137 against 124-139 (in-process A/B)
    from ..kernels import cpu_gather
    pm = dev.type == "cpu" and cpu_gather.available()
    table, tinf, total = _weighted_table(GS, xy, inf, c, W, 1, K, point_major=pm)
    clock.tick("table")
    # (all live, as dense scalars are: no masked copy of the words)
    jobs = [(words[b], np.arange(n, dtype=np.int64)) if live[b].all() else
            (words[b][live[b]], np.flatnonzero(live[b])) for b in range(Bt)]
    res = (_pippenger(GS, None, tinf, jobs, n, c, widths, W, 1, K, total, cfg, dev, stats, table) if pm else
           _pippenger(GS, table, tinf, jobs, n, c, widths, W, 1, K, total, cfg, dev, stats))
    if stats is not None:
        stats.update(ones=int(ones.sum()), dense=int((live & ~ones).sum()))
    return res[0] if squeeze else res


def split_scalars(words: np.ndarray, base_inf: np.ndarray, sparse: bool):
    """(live, ones) masks (B, n) of scalar words (B, n, Lr): the nonzero scalars of non-identity
    bases (all of them go through the buckets), and with `sparse` the scalars 1 among them
    (left out of the window choice)."""
    if words.shape[2] % 2 or words.dtype.itemsize != 4 or not words.flags.c_contiguous or \
            sys.byteorder != "little":
        live = words.any(axis=2) & ~base_inf[None, :]
        one = (words[:, :, 0] == 1) & ~words[:, :, 1:].any(axis=2)
    else:       # as 64-bit pairs of words, ORed column by column: any() over an axis of 8 words
        q = words.view(np.uint64)           # was ~5x slower (10 ms for 2^18 scalars)
        hi = np.zeros(q.shape[:2], dtype=np.uint64)
        for k in range(1, q.shape[2]):
            hi |= q[:, :, k]
        live = ((q[:, :, 0] | hi) != 0) & ~base_inf[None, :]
        one = (q[:, :, 0] == 1) & (hi == 0)     # the low pair is 1: word 0 is 1, word 1 is 0
    if not sparse:
        return live, np.zeros_like(live)
    return live, live & one


def _pippenger(GS, table, tinf, jobs, n, c, widths, M, J, K, offset_total, cfg, dev, stats,
               table_rows=None):
    """jobs: one (words (k, Lr), cols (k,)) per batch row: the scalars that go through the
    buckets (zeros and identity bases already left out: they get no digits) and the bases
    they multiply, as columns of the n-base table. Windows t = j·M + m (checkpoint j, round
    m); widths[t] bits each (uniform when J > 1, so that a round sits at the same offset in
    every checkpoint)."""
    plan = _plan(jobs, n, widths, M, J, K, offset_total, cfg, GS.Fr, stats)
    return _sums(GS, table, tinf, plan, cfg, dev, stats, table_rows)


@dataclass
class MSMPlan:
    """The scalar side of MSMs against prepared bases (`msm_plan`): the scalars' signed digits
    sorted into the bucket tree's layout. It depends on the scalars and on the bases'
    geometry (`key`: n, window, checkpoints, bucket offsets) only, not on the points, so
    MSMs of one scalar vector against several sets of bases (Groth16's A, B1 and C in G1
    and B2 in G2) make it once."""
    key: tuple | None
    tree: object            # `msm_tree.TreePlan`: every digit's table column, in bucket order
    heavy: bool             # a bucket past RANK_CAP (cut into pieces)
    Bt: int                 # batch rows (MSMs)
    K: int                  # chunks of the suffix reduction
    round_off: list         # bit offset of round m
    widths: list            # of the windows
    J: int                  # checkpoints
    entries: int
    ones: int = 0
    dense: int = 0
    squeeze: bool = False   # `msm` returns one point, not a (1,) batch

    @property
    def rows(self) -> int:
        """Bucket rows: round m of batch row b is row m·Bt + b."""
        return len(self.round_off) * self.Bt

    @property
    def N(self) -> int:
        """Buckets a row."""
        return 1 << (max(self.widths) - 1)


def _plan(jobs, n, widths, M, J, K, offset_total, cfg, Fr, stats) -> MSMPlan:
    """Digits, sort and bucket layout of `_pippenger`'s jobs."""
    from ..kernels.msm_tree import Clock
    clock = Clock(stats)
    Bt = len(jobs)
    Lr = Fr.limbs
    r = Fr.p
    c = max(widths)
    N = 1 << (c - 1)
    W = len(widths)
    round_off = [sum(widths[:m]) for m in range(M)]          # bit offset of round m
    # the generator's scalar cancels the bucket offsets: sum_m 2^(off_m) sum_v v·U_v
    if cfg.offset:
        s = offset_total * sum(1 << o for o in round_off) % r
        d_words = np.frombuffer(((r - s) % r).to_bytes(4 * Lr, "little"), dtype="<u4")
    else:
        d_words = np.zeros(Lr, dtype=np.uint32)
    # a scalar 1 is one entry, bucket 1 of the first window: the bucket tree sums the ones
    # in the launches that sum everything else (a tree of their own took as many launches
    # again: 2^16 sparse points, 48 ms against 15 ms for the whole combine phase)
    cols = [np.append(np.asarray(cb, dtype=np.int64), n) for _, cb in jobs]     # + the generator
    flat = np.concatenate([np.concatenate([np.asarray(wb, dtype=np.uint32).reshape(-1, Lr), d_words[None]])
                           for wb, _ in jobs])
    start = np.cumsum([0] + [len(cb) for cb in cols])
    digits = np.zeros((J * M, len(flat)), dtype=np.int32)

    def digits_of(lo, hi):
        digits[:W, lo:hi] = signed_digits(flat[lo:hi], widths)
    host_parallel(len(flat), digits_of, len(flat) * W)
    # rows r = m·B + b (round m of batch b): its digits and their table columns j·(n+1) + i
    # (checkpoint j, base i)
    cmap = [(np.arange(J, dtype=np.int64)[:, None] * (n + 1) + cb[None, :]).ravel() for cb in cols]
    dgs = [digits[m::M, start[b]:start[b + 1]].ravel() for m in range(M) for b in range(Bt)]
    cmaps = [cmap[b] for m in range(M) for b in range(Bt)]
    clock.tick("digits")
    tree, heavy, entries = _bucket_layout(dgs, cmaps, N, K, J * (n + 1), cfg, stats)
    return MSMPlan(None, tree, heavy, Bt, K, round_off, list(widths), J, entries)


def _sums(GS, table, tinf, plan: MSMPlan, cfg, dev, stats, table_rows=None):
    """The plan's MSMs against a table: bucket sums, reduction, combination."""
    from ..kernels.msm_tree import Clock
    T = _bucket_rows(GS, table, tinf.to(dev), plan, cfg, stats, table_rows)   # (L, 4d, rows)
    clock = Clock(stats)
    Bt, M, round_off = plan.Bt, len(plan.round_off), plan.round_off
    if T.device.type == "cpu" and Bt <= HOST_COMBINE_ROWS:
        res = _combine_on_host(GS, T, round_off, Bt)
    else:   # Horner over rounds
        res = T[:, :, (M - 1) * Bt:M * Bt]
        for m in range(M - 2, -1, -1):
            res = double_n_many(GS, res, round_off[m + 1] - round_off[m])
            res = add_complete(GS, res, T[:, :, m * Bt:(m + 1) * Bt])
    clock.tick("combine")
    if stats is not None:
        stats.update(window=max(plan.widths), widths=plan.widths, windows=len(plan.widths), rounds=M,
                     checkpoints=plan.J, chunks=plan.K, buckets=plan.rows * plan.N, entries=plan.entries)
    return PointTensor(GS, res.contiguous())


HOST_COMBINE_ROWS = 4   # batch rows up to which the windows are combined on the host: a BN254 G1
                        # row is ~250 doublings on Python ints (~1.5 ms, G2 ~4 ms), where the
                        # tensor Horner chain costs ~5-10 ms whatever the number of rows


def _combine_on_host(GS, T, round_off, Bt):
    """sum_m 2^(round_off[m])·T_m for each of the Bt batch rows, the round sums T (XYZZ,
    round m at columns m·Bt..(m+1)·Bt) made affine in one batch and combined on Python ints
    (`algebra.curves.lincomb`: ~bits doublings of one point a row). On the CPU target the
    tensor Horner chain was 4-5 launches a round for one lane of work (BN254 G1 2^12: 13 ms
    of a 56 ms MSM)."""
    from ..algebra.curves import lincomb
    pts = PointTensor(GS, T).to_affine()
    M = len(round_off)
    sums = [lincomb(GS.params, None, [(1 << round_off[m], pts[m * Bt + b]) for m in range(M)])
            for b in range(Bt)]
    return GS.tensor(sums, device=T.device).data


def _bucket_layout(dgs, cmaps, N, K, width, cfg, stats):
    """The bucket tree's plan for rows of signed digits dgs[r], digit i of row r selecting
    table column cmaps[r][i] (its negation that + width; the bucket offsets U_v follow at
    2·width): (`msm_tree.TreePlan`, whether a bucket was cut into pieces, entries). Bucket
    v of row r is summed into column dest of the (rows·N) bucket table laid out for the
    reduction."""
    from ..kernels import msm_place
    from ..kernels.msm_tree import RANK_CAP, Clock, RankBlocks, TreePlan, tree_plan
    clock = Clock(stats)
    rows = len(dgs)
    n_digits = sum(len(d) for d in dgs)
    # rows are sorted in pieces of digit positions, so that threads share even a plan of one
    # bucket row (a prepared table with M = 1: one thread's ~25 ms of a 2^16-constraint
    # proof). A stable sort puts a bucket's entries of an earlier piece first, so an entry's
    # rank in its bucket is its rank in the piece plus the bucket's entries in earlier pieces.
    parts = max(1, launch_threads() // max(rows, 1))
    pieces = []                                      # (row, first digit, end)
    for r in range(rows):
        step = max(-(-len(dgs[r]) // parts), PIECE_MIN)
        pieces += [(r, a, min(a + step, len(dgs[r]))) for a in range(0, len(dgs[r]), step)] or [(r, 0, 0)]
    pcounts = np.empty((len(pieces), N + 1), dtype=np.int64)
    sorted_ = [None] * len(pieces)
    # the counting sort's compiled loops (`msm_place`), or numpy's radix argsort
    counting = msm_place.available()

    def sort_pieces(lo, hi):
        for k in range(lo, hi):
            r, a, b = pieces[k]
            d = dgs[r][a:b]
            if counting:
                pcounts[k] = msm_place.count(d, N)
                continue
            mags = np.abs(d).astype(np.uint16 if N < 1 << 16 else np.uint32)
            # each digit's table column, in digit order: one gather by the sort order later
            # (two, of the column and of the digit's sign, cost ~2.5 ns a digit more)
            col = cmaps[r][a:b] + (d < 0) * width
            sorted_[k] = (col, np.argsort(mags, kind="stable"))     # a radix sort for uint16 keys
            pcounts[k] = np.bincount(mags, minlength=N + 1)
    host_parallel(len(pieces), sort_pieces, n_digits)
    counts = np.zeros((rows, N + 1), dtype=np.int64)
    prior = np.empty((len(pieces), N), dtype=np.int64)     # bucket v's entries in earlier pieces
    for k, (r, _, _) in enumerate(pieces):
        prior[k] = counts[r, 1:]
        counts[r] += pcounts[k]
    lens = counts[:, 1:].ravel() + (1 if cfg.offset else 0)     # segments (row, v) in order
    S = rows * N
    # bucket layout for the reduction: column j·(K·rows) + k·rows + row for v - 1 = k·Lc + j
    # (halving: K = 1, i.e. (v - 1)·rows + row)
    Lc = N if cfg.reduction == "halving" else N // K
    v0 = np.tile(np.arange(N, dtype=np.int64), rows)
    rr = np.repeat(np.arange(rows, dtype=np.int64), N)
    dest = (v0 % Lc) * ((N // Lc) * rows) + (v0 // Lc) * rows + rr

    def entries(k):
        """Piece k's nonzero digits in bucket order: their table columns, and per bucket v
        its count among them (`np.repeat(x, c)` is x[v - 1] for each), and their ranks in
        the row's buckets."""
        col, order = sorted_[k]
        o = order[pcounts[k, 0]:]                                # digit 0 sorts first: dropped
        c = pcounts[k, 1:]
        rank = np.arange(len(o), dtype=np.int64) + np.repeat(prior[k] - (np.cumsum(c) - c), c)
        return np.take(col, o), c, rank
    heavy = bool(lens.max() > RANK_CAP)
    if heavy:        # a heavy bucket (the scalars 1): the pieces of segment_sums
        idx = np.empty(int(lens.sum()), dtype=np.int64)
        ends = np.cumsum(lens)
        seg0 = ends - lens                                        # segment (r, v)'s first index

        def fill(lo, hi):
            for k in range(lo, hi):
                r, a, b = pieces[k]
                if counting:
                    msm_place.place(dgs[r][a:b], cmaps[r][a:b], width, prior[k], seg0[r * N:(r + 1) * N], idx)
                else:
                    cols, c, rank = entries(k)
                    idx[np.repeat(seg0[r * N:(r + 1) * N], c) + rank] = cols
                if cfg.offset and a == 0:   # each segment: its entries, then its offset U_v
                    idx[ends[r * N:(r + 1) * N] - 1] = 2 * width + np.arange(N, dtype=np.int64)
        host_parallel(len(pieces), fill, S + n_digits)
        clock.tick("sort")
        tree = tree_plan(idx, lens, dest, S)
        clock.tick("tree_index")
    else:
        # the rank-major layout straight from the sorted digits: entry i of bucket (r, v) goes
        # to column off[i] + pos[(r, v)], the offset U_v last (`msm_tree.rank_sums`)
        blocks = RankBlocks.of(lens)
        pos = np.empty(S, dtype=np.int64)
        src = None
        if blocks is not None:          # (None: no entries at all)
            pos[blocks.order] = np.arange(S, dtype=np.int64)
            src = np.zeros(blocks.total, dtype=np.int64)

        def place(lo, hi):
            for k in range(lo, hi):
                r, a, b = pieces[k]
                p = pos[r * N:(r + 1) * N]
                if counting:
                    msm_place.place(dgs[r][a:b], cmaps[r][a:b], width, prior[k], p, src, blocks.off)
                else:
                    cols, c, rank = entries(k)
                    src[blocks.off[rank] + np.repeat(p, c)] = cols
                if cfg.offset and a == 0:
                    src[blocks.off[counts[r, 1:]] + p] = 2 * width + np.arange(N, dtype=np.int64)
        if blocks is not None:
            host_parallel(len(pieces), place, S + n_digits)
        clock.tick("sort")
        tree = TreePlan(blocks, src, dest, S)
    return tree, heavy, int(lens.sum())


def _bucket_rows(GS, table, tinf, plan: MSMPlan, cfg, stats, table_rows=None):
    """T_r = sum_v v·(bucket v of row r) for every bucket row r of the plan, from the table
    (limb-major; or `table_rows`, point-major, where the caller keeps it so: `MSMBases`,
    table None): (L, 4d, rows)."""
    from ..kernels.msm_reduce import reduce_buckets, reduce_halving
    from ..kernels.msm_tree import Clock, point_major, tree_sums
    rows, N, K = plan.rows, plan.N, plan.K
    kw = dict(block=cfg.tree_block, inverse_block=cfg.inverse_block, stats=stats)
    if plan.heavy and table_rows is None:
        table_rows = point_major(table)
    buckets, binf = tree_sums(GS, table, tinf, plan.tree, rows=table_rows, **kw)
    clock = Clock(stats)
    if cfg.reduction == "halving":
        sub = {} if stats is not None else None
        T = reduce_halving(GS, buckets, binf, rows, N, cfg.tree_block, cfg.inverse_block, stats=sub)
        if sub:
            stats["reduce_phases"] = sub["time"]
            stats["reduce_exceptional"] = sub.get("exceptional", 0)
    else:
        T = reduce_buckets(GS, buckets, binf, rows, K, N // K, stats=stats)   # (L, 4d, rows), row = m·B + b
    clock.tick("reduce")
    return T
