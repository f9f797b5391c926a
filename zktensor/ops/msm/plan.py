"""The plan of an MSM on the CPU target: signed digits of every scalar that goes through the
buckets, sorted by bucket with a counting sort per row (compiled loops, or numpy's radix
argsort) and laid out for the batch-affine bucket tree (`kernels.msm_tree`)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...runtime.threads import host_parallel, launch_threads

from .model import choose_accumulation, lanes_window, n_windows
from .scalars import signed_digits

PIECE_MIN = 1 << 15     # digits a piece of a bucket row holds at least (`_bucket_layout`)
SPARSE_BUCKETS = 8      # a plan whose live buckets are fewer than 1/SPARSE_BUCKETS of its buckets
                        # (a sparse witness against a prepared key's fixed window: mostly 0 and
                        # 1, a few short values) puts no offset point in its buckets, and its
                        # reduction follows the live buckets (`msm_reduce.reduce_sparse`):
                        # the offsets and the halving would cost a sum over every bucket


@dataclass
class LanePlan:
    """The plan of the lanes loop (`kernels.msm_small_cpu`, MSMConfig.accumulation "lanes"):
    per batch row, its scalars' table columns (k,), standard-form words (k, L) and
    `msm_small_cpu.unit_signs` (k,), summed in c-bit windows; the negated bases sit at
    column neg_off + column."""
    c: int
    rows: list
    neg_off: int


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
    offset: bool = True     # every bucket holds an offset point (MSMConfig.offset, unless sparse)
    sparse: bool = False    # few live buckets (`SPARSE_BUCKETS`): reduced by `msm_reduce.reduce_sparse`
    scalars: object = None  # bases on the device: the scalars themselves (the device program
                            # makes its digits and sort in its own launches)
    lanes: LanePlan | None = None   # the lanes loop's plan, where it sums the buckets (tree None)

    @property
    def rows(self) -> int:
        """Bucket rows: round m of batch row b is row m·Bt + b."""
        return len(self.round_off) * self.Bt

    @property
    def N(self) -> int:
        """Buckets a row."""
        return 1 << (max(self.widths) - 1)


def _plan(jobs, n, widths, M, J, K, offset_total, cfg, Fr, stats) -> MSMPlan:
    """Digits, sort and bucket layout of `_pippenger`'s jobs (or the lanes loop's scalars)."""
    from ...kernels.msm_tree import Clock
    clock = Clock(stats)
    Bt = len(jobs)
    entries = max((len(cb) for _, cb in jobs), default=0)
    if choose_accumulation(entries, cfg) == "lanes":
        return _lane_plan(jobs, n, J, Fr)
    Lr = Fr.limbs
    r = Fr.p
    c = max(widths)
    N = 1 << (c - 1)
    W = len(widths)
    round_off = [sum(widths[:m]) for m in range(M)]          # bit offset of round m
    # a scalar 1 is one entry, bucket 1 of the first window: the bucket tree sums the ones
    # in the launches that sum everything else (a tree of their own took as many launches again);
    # the generator's column carries the scalar that cancels the bucket offsets (set below)
    cols = [np.append(np.asarray(cb, dtype=np.int64), n) for _, cb in jobs]     # + the generator
    flat = np.concatenate([np.concatenate([np.asarray(wb, dtype=np.uint32).reshape(-1, Lr),
                                           np.zeros((1, Lr), dtype=np.uint32)]) for wb, _ in jobs])
    start = np.cumsum([0] + [len(cb) for cb in cols])
    digits = np.zeros((J * M, len(flat)), dtype=np.int32)

    def digits_of(lo, hi):
        digits[:W, lo:hi] = signed_digits(flat[lo:hi], widths)
    host_parallel(len(flat), digits_of, len(flat) * W)
    # the live buckets are at most the digits other than ±1 (the ones share bucket 1 of a row)
    # and each row's bucket 1
    live = np.count_nonzero((digits > 1) | (digits < -1)) + Bt * M
    sparse = live * SPARSE_BUCKETS < Bt * M * N
    offset = bool(cfg.offset) and not sparse
    if offset:
        # the generator's scalar cancels the offsets: sum_m 2^(off_m) sum_v v·U_v
        s = offset_total * sum(1 << o for o in round_off) % r
        gen = np.frombuffer(((r - s) % r).to_bytes(4 * Lr, "little"), dtype="<u4")
        digits[:W, start[1:] - 1] = signed_digits(gen[None], widths)
    # rows r = m·B + b (round m of batch b): its digits and their table columns j·(n+1) + i
    # (checkpoint j, base i)
    cmap = [(np.arange(J, dtype=np.int64)[:, None] * (n + 1) + cb[None, :]).ravel() for cb in cols]
    dgs = [digits[m::M, start[b]:start[b + 1]].ravel() for m in range(M) for b in range(Bt)]
    cmaps = [cmap[b] for m in range(M) for b in range(Bt)]
    clock.tick("digits")
    tree, heavy, entries = _bucket_layout(dgs, cmaps, N, K, J * (n + 1), cfg, stats, offset, sparse)
    return MSMPlan(None, tree, heavy, Bt, K, round_off, list(widths), J, entries, offset=offset, sparse=sparse)


def _lane_plan(jobs, n, J, Fr) -> MSMPlan:
    """The lanes loop's plan: every row's scalars (as words, for `msm_small_cpu.msm_many`)
    and one window c for all, chosen for the longest row's entries that the windows loop
    takes (its ±1 scalars are summed apart, `msm_small_cpu.window_entries`); the table's
    first checkpoint holds the bases at columns 0..n-1, their negations at J·(n+1)...."""
    from ...kernels.msm_small_cpu import unit_signs, window_entries
    bits = Fr.p.bit_length()
    words = [np.asarray(wb, dtype=np.uint32).reshape(-1, Fr.limbs) for wb, _ in jobs]
    signs = [unit_signs(w, Fr.p) for w in words]
    c = lanes_window(max((window_entries(s) for s in signs), default=0), bits)
    rows = [(np.asarray(cb, dtype=np.int64), w, s) for w, s, (_, cb) in zip(words, signs, jobs)]
    return MSMPlan(None, None, False, len(jobs), 1, [0], [c] * n_windows(bits, c), J,
                   sum(len(cb) for _, cb in jobs), offset=False, lanes=LanePlan(c, rows, J * (n + 1)))


def _bucket_layout(dgs, cmaps, N, K, width, cfg, stats, offset: bool, sparse: bool):
    """The bucket tree's plan for rows of signed digits dgs[r], digit i of row r selecting
    table column cmaps[r][i] (its negation that + width; the bucket offsets U_v follow at
    2·width): (`msm_tree.TreePlan`, whether a bucket was cut into pieces, entries). Bucket
    v of row r is summed into column dest of the (rows·N) bucket table laid out for the
    reduction."""
    from ...kernels import msm_place
    from ...kernels.msm_tree import RANK_CAP, Clock, RankBlocks, TreePlan, tree_plan
    clock = Clock(stats)
    rows = len(dgs)
    n_digits = sum(len(d) for d in dgs)
    # rows are sorted in pieces of digit positions, so that threads share even a plan of one
    # bucket row (a prepared table with M = 1). A stable sort puts a bucket's entries of an
    # earlier piece first, so an entry's rank in its bucket is its rank in the piece plus the
    # bucket's entries in earlier pieces.
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
            # (two, of the column and of the digit's sign, cost more)
            col = cmaps[r][a:b] + (d < 0) * width
            sorted_[k] = (col, np.argsort(mags, kind="stable"))     # a radix sort for uint16 keys
            pcounts[k] = np.bincount(mags, minlength=N + 1)
    host_parallel(len(pieces), sort_pieces, n_digits)
    counts = np.zeros((rows, N + 1), dtype=np.int64)
    prior = np.empty((len(pieces), N), dtype=np.int64)     # bucket v's entries in earlier pieces
    for k, (r, _, _) in enumerate(pieces):
        prior[k] = counts[r, 1:]
        counts[r] += pcounts[k]
    lens = counts[:, 1:].ravel() + (1 if offset else 0)     # segments (row, v) in order
    S = rows * N
    # bucket layout for the reduction: column j·(K·rows) + k·rows + row for v - 1 = k·Lc + j
    # (halving: K = 1, i.e. (v - 1)·rows + row)
    # (a sparse plan is reduced by `reduce_sparse`, which reads the halving layout)
    Lc = N if cfg.reduction == "halving" or sparse else N // K
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
                if offset and a == 0:   # each segment: its entries, then its offset U_v
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
                if offset and a == 0:
                    src[blocks.off[counts[r, 1:]] + p] = 2 * width + np.arange(N, dtype=np.int64)
        if blocks is not None:
            host_parallel(len(pieces), place, S + n_digits)
        clock.tick("sort")
        tree = TreePlan(blocks, src, dest, S)
    return tree, heavy, int(lens.sum())
