"""Bucket sums of a plan against a table (the batch-affine tree, `kernels.msm_tree`), their
reduction per bucket row (`kernels.msm_reduce`: halving or blocked suffix sums) and the
combination of the rows' sums into each MSM's result (Horner on tensors, or on the host
for a few rows)."""
from __future__ import annotations

import numpy as np

from ...kernels.point_formulas import add_complete
from ...points import PointTensor

from .accumulate import bucket_sums
from .bases import double_n_many
from .plan import MSMPlan


def _sums(GS, table, tinf, plan: MSMPlan, cfg, dev, stats, table_rows=None):
    """The plan's MSMs against a table: bucket sums, reduction, combination."""
    from ...kernels.msm_tree import Clock
    if plan.lanes is not None:
        return _lane_sums(GS, table, plan, dev, stats, table_rows)
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


def _lane_sums(GS, table, plan: MSMPlan, dev, stats, table_rows=None):
    """The plan's MSMs by the lanes loop (`kernels.msm_small_cpu`): a call per eight windows
    and one to weight them, then eight points combined on the host, per batch row."""
    from ...kernels import msm_small_cpu
    from ...kernels.msm_tree import Clock
    from ...kernels.point_formulas import from_host
    clock = Clock(stats)
    lp = plan.lanes
    rows = table_rows.numpy() if table_rows is not None else np.ascontiguousarray(table.numpy().T)
    sums = msm_small_cpu.msm_many([(GS, rows, lp.neg_off, *row) for row in lp.rows], c=lp.c)
    clock.tick("lanes")
    if stats is not None:
        stats.update(accumulation="lanes", window=lp.c, widths=plan.widths, windows=len(plan.widths), rounds=1,
                     checkpoints=plan.J, entries=plan.entries)
    return PointTensor(GS, from_host(GS, sums, device=dev).contiguous())


HOST_COMBINE_ROWS = 4   # batch rows up to which the windows are combined on the host: a BN254 G1
                        # row is ~250 doublings on Python ints, where the tensor Horner chain
                        # costs several launches a round whatever the number of rows


def _combine_on_host(GS, T, round_off, Bt):
    """sum_m 2^(round_off[m])·T_m for each of the Bt batch rows, the round sums T (XYZZ,
    round m at columns m·Bt..(m+1)·Bt) made affine in one batch and combined on Python ints
    (`algebra.curves.lincomb`: ~bits doublings of one point a row). On the CPU target the
    tensor Horner chain was 4-5 launches a round for one lane of work."""
    from ...algebra.curves import lincomb
    pts = PointTensor(GS, T).to_affine()
    M = len(round_off)
    sums = [lincomb(GS.params, None, [(1 << round_off[m], pts[m * Bt + b]) for m in range(M)])
            for b in range(Bt)]
    return GS.tensor(sums, device=T.device).data


def _bucket_rows(GS, table, tinf, plan: MSMPlan, cfg, stats, table_rows=None):
    """T_r = sum_v v·(bucket v of row r) for every bucket row r of the plan, from the table
    (limb-major; or `table_rows`, point-major, where the caller keeps it so: `MSMBases`,
    table None): (L, 4d, rows)."""
    from ...kernels.msm_reduce import reduce_buckets, reduce_halving, reduce_sparse
    from ...kernels.msm_tree import Clock
    rows, N, K = plan.rows, plan.N, plan.K
    buckets, binf = bucket_sums(GS, table, tinf, plan, cfg, stats, table_rows)
    clock = Clock(stats)
    if plan.sparse:             # few digits, no offsets: most buckets are empty
        T = reduce_sparse(GS, buckets, binf, rows, N, cfg.tree_block, cfg.inverse_block, stats=stats)
    elif cfg.reduction == "halving":
        sub = {} if stats is not None else None
        T = reduce_halving(GS, buckets, binf, rows, N, cfg.tree_block, cfg.inverse_block, stats=sub)
        if sub:
            stats["reduce_phases"] = sub["time"]
            stats["reduce_exceptional"] = sub.get("exceptional", 0)
    else:
        T = reduce_buckets(GS, buckets, binf, rows, K, N // K, stats=stats)   # (L, 4d, rows), row = m·B + b
    clock.tick("reduce")
    return T
