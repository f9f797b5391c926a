"""Sums of field values by segment on the host: the CPU target's sparse products' second half.

    plan = SegmentPlan(rows, n_rows)          # once per matrix (numpy index plans)
    sums = plan.sum(F, products)              # (L, nnz) int32 limbs -> (L, n_rows)

The entries are sorted by segment once and summed by a tree of elementwise field
additions (`field_programs.run_host`, the compiled program over numpy arrays), each level
adding neighbouring pairs inside every segment: a segment of k entries needs ceil(log2 k)
levels, and the levels together do one addition per entry. Numpy and the compiled
kernels only, so the prover without torch (`numpy_prover`) sums as the tensor prover
(`r1cs_to_qap.SparseFr`) does, with this same code.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels.cpu_gather import move_rows, take_rows
from ..kernels.field_programs import run_host

_ADD = lambda a, b: a + b          # noqa: E731


@dataclass
class _Level:
    left: np.ndarray        # positions (in the level's input) of the pairs' first elements;
                            # the pairs that finish a segment come first
    right: np.ndarray       # ... and their second elements
    done: np.ndarray        # the segments those pairs finish
    pair_out: np.ndarray    # where the other pairs' sums go in the next level's input
    carry: np.ndarray       # positions of the unpaired last elements of odd segments ...
    carry_out: np.ndarray   # ... and where they go
    size: int               # elements after this level


class SegmentPlan:
    """How to sum m values by a segment key (0 <= key < n_segments) with a tree of
    elementwise additions. Built once (numpy), applied to any (L, m) limb data.

    A segment leaves the tree when it is down to one value: singletons are copied to
    the output at the start, and a level's pairs that finish a segment write their sums
    straight to it. So each value is moved O(1) times however unequal the lengths are
    (otherwise a C matrix with a few 33-term rows among 200k short ones would carry
    every short row through all six levels)."""

    def __init__(self, keys: np.ndarray, n_segments: int):
        keys = np.asarray(keys, dtype=np.int64)
        self.m = int(keys.shape[0])
        self.n_segments = int(n_segments)
        order = np.argsort(keys, kind="stable")
        seg_ids, counts = np.unique(keys[order], return_counts=True)
        starts = np.cumsum(counts) - counts
        self.max_len = int(counts.max()) if counts.size else 0
        one = counts == 1
        self.single_src = order[starts[one]]                  # entry positions of singletons
        self.single_dst = seg_ids[one].astype(np.int64)
        lens, segs = counts[~one].astype(np.int64), seg_ids[~one].astype(np.int64)
        first = np.repeat(starts[~one] - np.cumsum(lens) + lens, lens) + np.arange(int(lens.sum()))
        self.gather = order[first]                            # the longer segments' entries, by segment
        self.levels: list[_Level] = []
        while lens.size:
            starts = np.cumsum(lens) - lens
            fin = lens == 2
            cl, cs = lens[~fin], starts[~fin]
            pairs = cl // 2
            new_lens = pairs + (cl & 1)
            new_starts = np.cumsum(new_lens) - new_lens
            seg_of_pair = np.repeat(np.arange(len(cl)), pairs)
            k = np.arange(int(pairs.sum()), dtype=np.int64) - np.repeat(np.cumsum(pairs) - pairs, pairs)
            odd = np.flatnonzero(cl & 1)
            left = np.concatenate([starts[fin], cs[seg_of_pair] + 2 * k]).astype(np.int64)
            self.levels.append(_Level(
                left=left, right=left + 1, done=segs[fin], pair_out=new_starts[seg_of_pair] + k,
                carry=cs[odd] + cl[odd] - 1, carry_out=new_starts[odd] + new_lens[odd] - 1,
                size=int(new_lens.sum())))
            lens, segs = new_lens, segs[~fin]

    def sum(self, F, values: np.ndarray) -> np.ndarray:
        """(L, m) int32 Montgomery data in entry order -> (L, n_segments) sums (zero where
        empty). F: the field (a record or a field space)."""
        if values.shape[1:] != (self.m,):
            raise ValueError(f"SegmentPlan.sum: {self.m} values expected, got shape {values.shape}")
        L = values.shape[0]
        out = np.zeros((L, self.n_segments), dtype=np.int32)
        if self.single_dst.size:
            move_rows(out, self.single_dst, values, self.single_src)
        x = take_rows(values, self.gather)
        for lv in self.levels:
            (s,) = run_host(F, "qap_add", 2, _ADD, [take_rows(x, lv.left), take_rows(x, lv.right)])
            nd = lv.done.size
            if nd:
                out[:, lv.done] = s[:, :nd]
            y = np.empty((L, lv.size), dtype=np.int32)
            if lv.pair_out.size:
                y[:, lv.pair_out] = s[:, nd:]
            if lv.carry.size:
                move_rows(y, lv.carry_out, x, lv.carry)
            x = y
        return out


__all__ = ["SegmentPlan"]
