"""Bucket placement for the MSM's bucket tree: a counting sort as two CPU loops.

Pippenger's digits d_i (signed, |d_i| <= N) select buckets; the bucket tree
(`msm_tree`) wants every nonzero digit's table column at the place of its bucket
and of its rank among the bucket's entries, in digit order (a stable sort). With
the bucket sizes known, one pass over the digits places each entry directly:

    count:  cnt[|d_i|] += 1                                  for every i
    place:  rank = cnt[v]++  (cnt[v] starts at the rank of bucket v's first entry)
            dst[off[rank] + pos[v - 1]] = col[i] + (d_i < 0) * width     (rank-major)
            dst[pos[v - 1] + rank]      = col[i] + (d_i < 0) * width     (flat)

for v = |d_i| != 0. numpy has no such loop: it took a radix argsort, a gather, a
repeat and a scatter (`ops.msm.plan._bucket_layout`'s numpy form, which stays as
the fallback and as the tests' independent reference), several times slower than these
loops (figures in the commit that added them).

The loops are scalar: the scattered store is the cost, and a bucket's counter has
to be read back before its next entry. They are MLIR (`cpu_code`), compiled once
into the kernel cache like every other CPU kernel.

Order in this file: kernel (MLIR text), host wrapper.
"""
from __future__ import annotations

import numpy as np

from .cpu_code import Code, Loops


# =============================================================================
# Kernel
# =============================================================================
HEAD = "  func.func @{name}({params}) {{"


def _magnitude(c: Code, i: str):
    """(|d_i| as i64, d_i < 0) for the i32 digit at %dig[i]."""
    d = c.load(c.gep("%dig", i, "i32"), "i32", 4)
    z32 = c.const(0, "i32")
    neg = c.cmp("slt", d, z32, "i32")
    nd = c.bin("subi", z32, d, "i32")
    a32 = c.fresh("a")
    c.emit(f"{a32} = arith.select {neg}, {nd}, {d} : i32")
    a = c.fresh("a")
    c.emit(f"{a} = arith.extsi {a32} : i32 to i64")
    return a, neg


def _count_function() -> str:
    c = Code()
    zero, one = c.const(0), c.const(1)
    with c.loop(zero, "%m", one) as i:
        a, _ = _magnitude(c, i)
        p = c.gep("%cnt", a, "i64")
        c.store(c.add(c.load(p, "i64", 8), one), p, "i64", 8)
    params = "%dig: !llvm.ptr, %m: i64, %cnt: !llvm.ptr"
    return "\n".join([HEAD.format(name="bucket_count", params=params)] + c.lines + ["    return", "  }"])


def _place_function(ranked: bool) -> str:
    c = Code()
    zero, one = c.const(0), c.const(1)
    with c.loop(zero, "%m", one) as i:
        a, neg = _magnitude(c, i)
        with c.when(c.cmp("ne", a, zero)):
            cp = c.gep("%cnt", a, "i64")
            rank = c.load(cp, "i64", 8)
            c.store(c.add(rank, one), cp, "i64", 8)
            place = c.load(c.gep("%pos", c.bin("subi", a, one), "i64"), "i64", 8)
            first = c.load(c.gep("%off", rank, "i64"), "i64", 8) if ranked else rank
            shift = c.fresh("s")
            c.emit(f"{shift} = arith.select {neg}, %width, {zero} : i64")
            value = c.add(c.load(c.gep("%col", i, "i64"), "i64", 8), shift)
            c.store(value, c.gep("%dst", c.add(first, place), "i64"), "i64", 8)
    params = ("%dig: !llvm.ptr, %col: !llvm.ptr, %m: i64, %width: i64, %cnt: !llvm.ptr, "
              "%off: !llvm.ptr, %pos: !llvm.ptr, %dst: !llvm.ptr")
    name = "bucket_place_ranked" if ranked else "bucket_place_flat"
    return "\n".join([HEAD.format(name=name, params=params)] + c.lines + ["    return", "  }"])


def module_text() -> str:
    return "module {\n" + "\n".join([_count_function(), _place_function(True), _place_function(False)]) + "\n}"


# =============================================================================
# Host wrapper
# =============================================================================
LOOPS = Loops("msm-place", module_text, {
    "bucket_count": "pip", "bucket_place_ranked": "ppiipppp", "bucket_place_flat": "ppiipppp"})
ENABLED = True      # tests switch to the numpy form with this


def available() -> bool:
    return ENABLED and LOOPS.get() is not None


def _i32(a: np.ndarray) -> np.ndarray:
    if a.dtype != np.int32 or not a.flags.c_contiguous:
        raise ValueError(f"msm_place: digits must be contiguous int32, got {a.dtype}")
    return a


def _i64(a: np.ndarray, name: str) -> np.ndarray:
    if a.dtype != np.int64 or not a.flags.c_contiguous:
        raise ValueError(f"msm_place: {name} must be contiguous int64, got {a.dtype}")
    return a


def count(digits: np.ndarray, N: int) -> np.ndarray:
    """Entries of each bucket 0..N (0: the zero digits) among `digits` (|d| <= N)."""
    d = _i32(digits)
    cnt = np.zeros(N + 1, dtype=np.int64)
    LOOPS.get().bucket_count(d.ctypes.data, len(d), cnt.ctypes.data)
    return cnt


def place(digits: np.ndarray, cols: np.ndarray, width: int, start: np.ndarray,
          pos: np.ndarray, dst: np.ndarray, off: np.ndarray | None = None) -> None:
    """dst[off[rank] + pos[v - 1]] = cols[i] + (d_i < 0)·width (rank-major; flat without off:
    dst[pos[v - 1] + rank]) for every nonzero digit d_i, v = |d_i|, rank counted from
    start[v - 1] in digit order. The caller's counts make every place fall inside dst."""
    d = _i32(digits)
    c = _i64(cols, "cols")
    if len(c) != len(d) or len(start) != len(pos):
        raise ValueError(f"msm_place: {len(d)} digits, {len(c)} columns, {len(start)} starts, "
                         f"{len(pos)} places")
    cnt = np.empty(len(start) + 1, dtype=np.int64)
    cnt[1:] = start
    lib = LOOPS.get()
    fn = lib.bucket_place_flat if off is None else lib.bucket_place_ranked
    fn(d.ctypes.data, c.ctypes.data, len(d), width, cnt.ctypes.data,
       0 if off is None else _i64(off, "off").ctypes.data, _i64(pos, "pos").ctypes.data,
       _i64(dst, "dst").ctypes.data)
