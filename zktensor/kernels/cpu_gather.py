"""Column gathers on the CPU: dst[r, i] = t[idx[i], r] from a point-major int32 table.

The MSM's bucket tree gathers every entry's point, 16 to 64 words, from a table of
bases into its limb-major operands (`msm_tree.take_cols`). Large tables are kept
point-major (m, C), so that a point is one run of C words rather than C cache lines.
numpy then needs two passes: a take of whole points into a chunk, and the chunk's
transpose into place. Here the words go straight from the table to their rows,
8 lanes at a time by vector gathers, a block of indices at a time so that the
block's points stay in L1 while every row takes its word of them:

    for each block [a, b) of columns:
        for each row r:  dst[r, a:b] = gather(t + r·row_stride, idx[a:b]·col_stride)

(row_stride 1, col_stride C.) The loops are MLIR (`cpu_code`), compiled once into the
kernel cache. Over a limb-major table (row_stride m, col_stride 1) a row is already
contiguous and the same loops gain nothing over numpy's take row by row, so
`take_cols` keeps numpy's there.

Order in this file: kernel (MLIR text), host wrapper.
"""
from __future__ import annotations

import numpy as np

from .cpu_code import Code, Loops

LANES = 8
BLOCK = 1 << 8      # columns that every row gathers before the next block: 256 G2 points are 32 KiB


# =============================================================================
# Kernel
# =============================================================================
def module_text() -> str:
    c = Code(LANES)
    v64 = f"vector<{LANES}xi64>"
    v32 = f"vector<{LANES}xi32>"
    one = c.const(1)
    lanes = c.const(LANES)
    cs_v = c.splat("%cs")
    with c.loop("%lo", "%hi", "%block") as a:
        b = c.bin("minsi", c.add(a, "%block"), "%hi")
        whole = c.add(a, c.mul(c.bin("divsi", c.bin("subi", b, a), lanes), lanes))
        with c.loop(c.const(0), "%C", one) as r:
            trow = c.gep("%t", c.mul(r, "%rs"), "i32")
            drow = c.gep("%dst", c.mul(r, "%ds"), "i32")
            with c.loop(a, whole, lanes) as i:
                iv = c.load(c.gep("%idx", i, "i64"), v64, 8)
                ptrs = c.gep(trow, c.bin("muli", iv, cs_v, v64), "i32", vector=True)
                c.store(c.gather(ptrs, "i32"), c.gep(drow, i, "i32"), v32, 4)
            with c.loop(whole, b, one) as i:          # the block's last few columns
                j = c.load(c.gep("%idx", i, "i64"), "i64", 8)
                w = c.load(c.gep(trow, c.mul(j, "%cs"), "i32"), "i32", 4)
                c.store(w, c.gep(drow, i, "i32"), "i32", 4)
    params = ("%t: !llvm.ptr, %rs: i64, %cs: i64, %C: i64, %idx: !llvm.ptr, %lo: i64, %hi: i64, "
              "%dst: !llvm.ptr, %ds: i64, %block: i64")
    body = [f"  func.func @gather_cols({params}) {{"] + c.lines + ["    return", "  }"]
    return "module {\n" + "\n".join(body) + "\n}"


# =============================================================================
# Host wrapper
# =============================================================================
LOOPS = Loops("gather", module_text, {"gather_cols": "piiipiipii"})
ENABLED = True      # tests switch to numpy's take with this


def available() -> bool:
    return ENABLED and LOOPS.get() is not None


def gather_cols(t: np.ndarray, idx: np.ndarray, dst: np.ndarray, lo: int, hi: int) -> None:
    """dst[:, lo:hi] = t[idx[lo:hi]].T for a point-major table t (m, C); dst: (C, len(idx))
    int32 with unit column stride. The indices must be in range: they are not checked here
    (the MSM's are by construction)."""
    C = t.shape[1]
    if t.dtype != np.int32 or dst.dtype != np.int32 or idx.dtype != np.int64:
        raise ValueError(f"gather_cols: int32 table and output and int64 indices, got "
                         f"{t.dtype}, {dst.dtype}, {idx.dtype}")
    if not t.flags.c_contiguous or not idx.flags.c_contiguous or dst.strides[1] != 4 or dst.shape[0] != C:
        raise ValueError(f"gather_cols: a contiguous table and indices and a ({C}, n) output with "
                         f"unit column stride, got {t.shape}, {dst.shape} strides {dst.strides}")
    if not 0 <= lo <= hi <= min(len(idx), dst.shape[1]):
        raise ValueError(f"gather_cols: columns [{lo}, {hi}) outside {len(idx)} indices")
    LOOPS.get().gather_cols(t.ctypes.data, 1, C, C, idx.ctypes.data, lo, hi, dst.ctypes.data,
                           dst.strides[0] // 4, BLOCK)


def take_rows(x: np.ndarray, idx: np.ndarray, out: np.ndarray | None = None, split: int = 1 << 16) -> np.ndarray:
    """out[r] = x[r][idx] for limb-major data x (rows, m): numpy's take a row at a time, where
    a row is contiguous and numpy needs no help (see the module docstring); with mode="clip"
    and a contiguous destination it neither checks bounds (the indices are in range by
    construction) nor buffers. It drops the GIL, so threads share the rows from `split`
    words on. out: (rows, len(idx)), any rows with unit column stride (default: new)."""
    from ..runtime.threads import host_parallel
    if out is None:
        out = np.empty((x.shape[0], len(idx)), dtype=x.dtype)

    def take(lo, hi):
        for r in range(lo, hi):
            np.take(x[r], idx, out=out[r], mode="clip")
    host_parallel(x.shape[0], take, len(idx) * x.shape[0], split)
    return out


def move_rows(out: np.ndarray, dst: np.ndarray, x: np.ndarray, src: np.ndarray, split: int = 1 << 16) -> None:
    """out[r][dst] = x[r][src] for every row r (gather and scatter in one pass, as `take_rows`)."""
    from ..runtime.threads import host_parallel

    def move(lo, hi):
        for r in range(lo, hi):
            out[r][dst] = np.take(x[r], src, mode="clip")
    host_parallel(out.shape[0], move, len(src) * out.shape[0], split)
