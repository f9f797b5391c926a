"""The knobs of `msm` (`MSMConfig`) and the cost model that fills the ones left None:
the window from Pippenger's cost (entries through the bucket tree plus buckets through the
reduction), the suffix reduction's chunks, and the CPU target's multiplication strategy."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ...kernels.msm_small_cpu import lanes_window  # noqa: F401  (re-exported)
from ...kernels.signed_digits import n_windows
from ...runtime.target import choose
from ...tune.resolve import resolve
from ...points import GroupSpace

MAX_WINDOW = 20          # the cost model's widest window (N = 2^19 buckets a row; 2^18
                         # scalars at M = 1 choose c = 17)


@dataclass(frozen=True)
class MSMConfig:
    """The knobs of `msm`, for callers and the autotuner. None means: chosen by the cost model.

    window       c, bits per signed-digit window (2..MAX_WINDOW = 20)
    accumulation CPU target: "tree" (the batch-affine bucket tree, `kernels.msm_tree`, then
                 the bucket reduction) or "lanes" (eight windows at a time as the lanes of
                 one compiled loop of complete XYZZ additions, `kernels.msm_small_cpu`: a call
                 per eight windows where the tree takes hundreds of launches, for ~1.7x the
                 field products an addition); None: "lanes" up to `LANES_UPTO` entries a
                 row where the loop runs (8-lane AVX-512), else "tree". "lanes" chooses its
                 own window (`lanes_window`; it reads prepared bases' first checkpoint only)
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
                 the smaller blocks keep the down kernel's operands in registers (the A/B
                 against 4/4 is in the commit that chose it; not measured on a GPU).
    cost_affine / cost_bucket   cost-model weights: one batch-affine addition, and one
                 bucket's share (its offset entry and its suffix-sum step), in the same unit
                 (their ratio from the CPU target's tree additions and bucket steps)
    strategy     multiplication strategy of every kernel; None: `auto_strategy`
    block        Triton target: columns (threads) a program of the device MSM's point kernels;
                 num_warps = block // 32, one column a thread
    max_registers  Triton target: a cap on the registers a thread of the device program's
                 kernels may use (ptxas's .maxnreg; None: the group's record's, else ptxas's
                 choice, 255 for their fused point formulas; BLS12-381 G2's and MNT4-753 G1's
                 records say 255, since left to itself ptxas gave their chain kernels 32
                 registers and a stack, `algebra.curves`): 128 doubles the resident warps of an SM where the
                 uncapped kernels hold 8, for spills to local memory (`bench/sass_report.py
                 --max-registers` counts both). For the autotuner: which wins is a GPU's
                 measurement, not yet made.
    segment      Triton target: entries a lane of the accumulation kernel adds in its loop (a
                 bucket longer than that is cut into segments, summed again in later rounds)
    balanced     Triton target: the first accumulation round's lanes hold the buckets' full
                 segments, then their last segments sorted by length (a sort of one key a
                 bucket), so that a block of lanes, which loops as often as its longest
                 segment, wastes few trips; off: lane j is segment j, bucket by bucket
                 (`bench.gpu_counts` counts the point formulas either way)
    weighted     Triton target, prepared bases (`msm_prepare`): run against their weighted
                 table (`device.weighted_points`, W copies of the bases, made at the first
                 such MSM and kept), so the windows share one row of buckets and no chain of
                 doublings combines them at the end. W times the bases' device memory; off
                 by default until a GPU measures it against the plain program.
    point_major  Triton target: the device program's point arrays (bases, weighted tables,
                 each round's segment sums, the reduction's sums) keep each point's words
                 together (column stride K·L, word stride 1), so that a lane's gather of one
                 point reads K·L·4 consecutive bytes (BN254 G1: four 32-byte sectors) where
                 the word-major layout of `PointTensor` (word stride K·n) spreads them over
                 K·L sectors, each shared with unrelated points. Bases given word-major are
                 copied once a call (one launch); prepared bases are kept point-major. Off by
                 default until a GPU measures it against the word-major program.
    mixed        Triton target, prepared bases: keep them (and their weighted table) in affine
                 coordinates on the device, normalised once by `msm_prepare`, so the first
                 accumulation round reads 2 of a base's 4 coordinates and adds it with mixed
                 additions (madd-2008-s). Half the bases' device memory; off by default
                 until a GPU measures it against the XYZZ bases.
    glv          Triton target, without a weighted table, for a group with an endomorphism
                 (BN254 and BLS12-381, G1 and G2, `algebra.glv`): each scalar k becomes k1 + lambda·k2
                 with |k1|, |k2| < 2^127 on the device (`kernels.glv_split`), against the
                 bases P and phi(P). The same entries to accumulate (2n points, half the
                 windows), half the buckets to reduce, and half the window combination's
                 doublings, the plain program's longest chain; for one launch of the split,
                 a product of n x-coordinates by beta and a copy of the bases.
    """
    window: int | None = None
    accumulation: str | None = None
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
    block: int = 64
    segment: int = 16
    balanced: bool = True
    max_registers: int | None = None
    weighted: bool = False
    mixed: bool = False
    point_major: bool = False
    glv: bool = True

    def __post_init__(self):
        if self.accumulation not in (None,) + ACCUMULATIONS:
            raise ValueError(f"MSMConfig.accumulation must be one of {ACCUMULATIONS} or None, "
                             f"got {self.accumulation!r}")
        if self.reduction not in REDUCTIONS:
            raise ValueError(f"MSMConfig.reduction must be one of {REDUCTIONS}, got {self.reduction!r}")
        if self.block < 32 or self.block & (self.block - 1):
            raise ValueError(f"MSMConfig.block must be a power of two >= 32, got {self.block}")
        if self.max_registers is not None and not 24 <= self.max_registers <= 255:
            raise ValueError(f"MSMConfig.max_registers must be in 24..255 or None, got {self.max_registers}")
        if self.segment < 2:
            raise ValueError(f"MSMConfig.segment must be at least 2, got {self.segment}")
        for flag in ("sparse", "offset", "balanced", "weighted", "mixed", "point_major", "glv"):
            if not isinstance(getattr(self, flag), bool):    # a string such as "False" would read as true
                raise ValueError(f"MSMConfig.{flag} must be True or False, got {getattr(self, flag)!r}")


REDUCTIONS = ("halving", "suffix")
ACCUMULATIONS = ("tree", "lanes")
LANES_UPTO = 1 << 16     # entries a row up to which the lanes loop runs by default (the A/B is in the commit that set it)


def msm_config(G, n: int, device, batch: int = 1, prepared: bool = False) -> MSMConfig:
    """MSMConfig for an MSM of n points of group G (`prepared`: bases for `msm_prepare`):
    `zt.config(msm=...)`, else the tuning cache, else the cost model (None fields: msm's
    own window/chunks model), else MSMConfig() (`tune.resolve.resolve`)."""
    return resolve(MSMConfig, "msm", "msm_prepared" if prepared else "msm", G, n, device, batch)[0]


def auto_strategy(GS: GroupSpace, device) -> str | None:
    """On the CPU: fp64 where the target has 8-lane AVX-512 IFMA kernels, for every group
    (faster than the int64 kernels for every group measured; figures in bench/results and
    the commit history); else the default. None elsewhere (the device's
    default). G2 and MNT4-753 used int64 until limbs-to-cpu kept the scalar tail loop's
    body a call: LLVM's loop vectorizer had taken > 40 min on their inlined bodies."""
    if torch.device(device).type != "cpu" or choose("cpu")[1] != "cpu":
        return None             # the Triton target (on CPU tensors under its interpreter too)
    try:
        from ...runtime.cpu_isa import cpu_options
    except ImportError:
        return None
    o = cpu_options("fp64")
    return "fp64" if o.get("lanes") == 8 and o.get("ifma") else None


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


def check_window(c):
    if not 2 <= c <= MAX_WINDOW:
        raise ValueError(f"window must be in [2, {MAX_WINDOW}], got {c}")


def choose_accumulation(entries: int, cfg: MSMConfig) -> str:
    """cfg.accumulation, else "lanes" up to LANES_UPTO entries where the loop runs."""
    if cfg.accumulation is not None:
        return cfg.accumulation
    from ...kernels import msm_small_cpu
    return "lanes" if entries <= LANES_UPTO and msm_small_cpu.available() else "tree"
