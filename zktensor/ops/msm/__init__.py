"""Multi-scalar multiplication: sum_i k_i·P_i as a tensor program (one front end, two plans).

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
   one fused launch of XYZZ additions.
6. Windows combined by Horner (doublings fused up to `point_formulas.max_chain` per launch).

Small MSMs on the CPU (`MSMConfig.accumulation`, by default up to `LANES_UPTO` scalars a
row) replace steps 3-6 by the lanes loop (`kernels.msm_small_cpu`): windows of their own
width, eight at a time as the lanes of one compiled loop that adds every base into its
bucket with complete mixed XYZZ additions, reduces the buckets and weights the groups of
eight, then eight points combined on the host. It reads the table's first checkpoint and
negations only. Per addition it costs more field products than the tree's batch-affine
ones, and no launch per level: it wins while launches outweigh products.

Load balance: the unit of work of every launch is a pair (tree) or a lane
(reduction), never a bucket, so threads and GPU blocks get equal shares however
the digits are distributed; a heavy bucket costs log2(size) tree levels.

GZKP consolidation (`msm_prepare`): with the weighted bases 2^(j·M·c)·P_i kept
for every checkpoint j (every M windows), the windows t = j·M + m of all
checkpoints share the buckets of round m: M bucket sets instead of W, so
fewer bucket reductions (and larger windows pay off), at the memory of
ceil(W/M) copies of the bases. M = 1 merges every window into one bucket set
(most memory); M = W is plain Pippenger.

The package, one concept a module: `model` (MSMConfig, cost model), `scalars` (words,
signed digits, sparse split), `offsets` (bucket offsets), `bases` (prepared bases,
msm_prepare), `plan` (CPU digits, counting sort, tree layout; the lanes loop's scalars),
`accumulate` (CPU bucket sums), `reduce` (CPU bucket reduction and window combination;
the lanes loop's sums), `device` (the Triton target: the whole MSM as device-resident
launches, see there) and `api` (msm, msm_many, msm_plan). The CPU target runs steps 1-6
above or the lanes loop; the Triton target runs `device`.
"""
from .api import msm, msm_many, msm_plan, plan_key
from .bases import MSMBases, double_n_many, msm_prepare, prepared_bytes, resident_bytes, table_columns
from .model import (ACCUMULATIONS, LANES_UPTO, MAX_WINDOW, REDUCTIONS, MSMConfig, auto_strategy,
                    check_window, choose_accumulation, choose_chunks, choose_window, cost, lanes_window,
                    n_windows)
from .offsets import bucket_offsets
from .plan import MSMPlan
from .scalars import scalar_words, signed_digits, split_scalars, window_widths

__all__ = ["ACCUMULATIONS", "LANES_UPTO", "MAX_WINDOW", "MSMBases", "MSMConfig", "MSMPlan",
           "REDUCTIONS", "auto_strategy", "bucket_offsets", "check_window", "choose_accumulation",
           "choose_chunks", "choose_window", "cost", "double_n_many", "lanes_window", "msm",
           "msm_many", "msm_plan", "msm_prepare", "n_windows", "plan_key", "prepared_bytes", "resident_bytes",
           "scalar_words", "signed_digits", "split_scalars", "table_columns", "window_widths"]
