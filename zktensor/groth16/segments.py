"""Sums of field values by segment on the host: the CPU target's sparse products' second half.

    plan = SegmentPlan(rows, n_rows)          # once per matrix (numpy index plans)
    sums = plan.sum(F, products)              # (L, nnz) int32 limbs -> (L, n_rows)

The segments are ranked longest first, and the entries laid out by their position in
their segment: first every segment's entry 0 (in rank order), then entry 1 of the
segments that have one (a prefix of the ranks), and so on:

    segments (rank order)   a: a0 a1 a2    b: b0 b1    c: c0    d: d0
    layout                  a0 b0 c0 d0 | a1 b1 | a2
    sums                    acc = [a0 b0 c0 d0];  acc[:2] += [a1 b1];  acc[:1] += [a2]

So a segment sum is one elementwise field addition (`field_programs.run_host`, the compiled
program over numpy arrays) per position after the first, each over a contiguous prefix of
the accumulators and a contiguous block of the layout: one addition per entry, as a tree
would do, but without the gathers and scatters between a tree's levels, which cost the
tree it replaces several times its additions (the commit that made this so). One gather
puts the products in the layout's order, one scatter puts the accumulators in rows. A long
segment among short ones (a C matrix's few 33-term rows among 200k short ones) costs
only its own additions. Numpy and the compiled kernels only, so the prover without torch
(`numpy_prover`) sums as the tensor prover (`r1cs_to_qap.SparseFr`) does, with this code.
"""
from __future__ import annotations

import numpy as np

from ..kernels.cpu_gather import take_rows
from ..kernels.field_programs import run_host

_ADD = lambda a, b: a + b          # noqa: E731


class SegmentPlan:
    """How to sum m values by a segment key (0 <= key < n_segments): the layout's order of
    the entries (`order`), the widths of its blocks (`widths`: block j holds entry j of the
    first widths[j] segments by rank) and the rows the accumulators go to (`rows`)."""

    def __init__(self, keys: np.ndarray, n_segments: int):
        keys = np.asarray(keys, dtype=np.int64)
        self.m = int(keys.shape[0])
        self.n_segments = int(n_segments)
        by_key = np.argsort(keys, kind="stable")
        seg_ids, counts = np.unique(keys[by_key], return_counts=True)
        starts = np.cumsum(counts) - counts                 # each segment's first entry in by_key
        rank = np.argsort(-counts, kind="stable")           # longest first
        self.rows = seg_ids[rank].astype(np.int64)
        lens, first = counts[rank], starts[rank]
        self.max_len = int(lens[0]) if lens.size else 0
        # widths[j]: the segments with more than j entries, a prefix of the ranks (lens descend)
        self.widths = [int(w) for w in np.searchsorted(-lens, -np.arange(self.max_len), side="left")]
        self.order = (np.concatenate([by_key[first[:w] + j] for j, w in enumerate(self.widths)])
                      if self.max_len else np.zeros(0, dtype=np.int64))

    def sum(self, F, values: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """(L, m) int32 Montgomery data in entry order -> (L, n_segments) sums (zero where
        empty). F: the field (a record or a field space). out: an (L, n_segments) int32
        array (a view: rows of any stride) to write the sums into, else one is allocated."""
        if values.shape[1:] != (self.m,):
            raise ValueError(f"SegmentPlan.sum: {self.m} values expected, got shape {values.shape}")
        L = values.shape[0]
        if out is None:
            out = np.zeros((L, self.n_segments), dtype=np.int32)
        else:
            if out.shape != (L, self.n_segments) or out.dtype != np.int32:
                raise ValueError(f"SegmentPlan.sum: out must be int32 of shape {(L, self.n_segments)}, "
                                 f"got {out.dtype} {out.shape}")
            if len(self.rows) < self.n_segments:
                out[...] = 0                  # the empty segments' sums
        if not self.max_len:
            return out
        x = take_rows(values, self.order)
        w0 = self.widths[0]
        acc = x[:, :w0]
        at = w0
        for w in self.widths[1:]:
            part = acc[:, :w]
            run_host(F, "qap_add", 2, _ADD, [part, x[:, at:at + w]], out=[part])
            at += w
        for r in range(L):
            out[r][self.rows] = acc[r]        # a row's 1-D view: numpy's fast path, not out[r, rows]
        return out


__all__ = ["SegmentPlan"]
