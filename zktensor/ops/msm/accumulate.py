"""Bucket accumulation on the CPU target: every digit of the plan is an entry of its bucket,
and all buckets of all rows are summed by one tree of batch-affine additions over the plan's
rank-major blocks (`kernels.msm_tree`; each level's pairs share one inversion). The unit of
work of a launch is a pair, never a bucket, so the load is balanced however the digits fall."""
from __future__ import annotations

from .plan import MSMPlan


def bucket_sums(GS, table, tinf, plan: MSMPlan, cfg, stats, table_rows=None):
    """The plan's buckets summed from the table (limb-major; or `table_rows`, point-major):
    (buckets, identity flags) as `msm_tree.tree_sums` returns them."""
    from ...kernels.msm_tree import point_major, tree_sums
    kw = dict(block=cfg.tree_block, inverse_block=cfg.inverse_block, stats=stats)
    if plan.heavy and table_rows is None:
        table_rows = point_major(table)
    return tree_sums(GS, table, tinf, plan.tree, rows=table_rows, **kw)
