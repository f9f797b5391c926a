"""The driver-code helpers (`kernels.cpu_code`): a module written with `Code` (scalar and
vector loops, arithmetic, a condition, gathers and scatters), lowered and compiled by
`Loops`, run over numpy arrays and compared with the same steps on Python ints."""
from __future__ import annotations

import numpy as np
import pytest

from zktensor.kernels.cpu_code import Code, Loops

LANES = 8
MASK64 = (1 << 64) - 1


def _probe_text() -> str:
    """probe(src, dst, odd, idx, out, n):
        dst[i] = (((3·src[i] + 1) << 4) >> 2) & 0xFFFFFFFF     (u64 arithmetic, logical shift)
        odd[i] = 1 where src[i] is odd (left as it was elsewhere)
        out[idx[i]] = src[idx[i]] + i0        (8 lanes at a time; i0 the first lane's i)"""
    c = Code(LANES)
    v64 = f"vector<{LANES}xi64>"
    zero, one = c.const(0), c.const(1)
    with c.loop(zero, "%n", one) as i:
        x = c.load(c.gep("%src", i, "i64"), "i64", 8)
        y = c.add(c.mul(x, c.const(3)), one)
        z = c.and_(c.shr(c.shl(y, c.const(4)), c.const(2)), c.const(0xFFFFFFFF))
        c.store(z, c.gep("%dst", i, "i64"), "i64", 8)
        with c.when(c.cmp("ne", c.and_(x, one), zero)):
            c.store(one, c.gep("%odd", i, "i64"), "i64", 8)
    with c.loop(zero, "%n", c.const(LANES)) as i:
        iv = c.load(c.gep("%idx", i, "i64"), v64, 8)
        got = c.gather(c.gep("%src", iv, "i64", vector=True), "i64")
        c.scatter(c.add(got, c.splat(i), v64), c.gep("%out", iv, "i64", vector=True), "i64")
    params = "%src: !llvm.ptr, %dst: !llvm.ptr, %odd: !llvm.ptr, %idx: !llvm.ptr, %out: !llvm.ptr, %n: i64"
    body = [f"  func.func @probe({params}) {{"] + c.lines + ["    return", "  }"]
    return "module {\n" + "\n".join(body) + "\n}"


LOOPS = Loops("test-probe", _probe_text, {"probe": "pppppi"})


def test_loops_compile_and_run_exactly():
    lib = LOOPS.get()
    if lib is None:
        pytest.skip(f"no compiled loops: {LOOPS.error}")
    n = 4 * LANES
    rng = np.random.default_rng(3)
    src = rng.integers(0, 1 << 63, n, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, n, dtype=np.uint64)
    src[:3] = [0, MASK64, 1 << 63]
    idx = rng.permutation(n).astype(np.int64)
    dst, odd, out = np.zeros(n, np.uint64), np.zeros(n, np.uint64), np.zeros(n, np.uint64)
    lib.probe(src.ctypes.data, dst.ctypes.data, odd.ctypes.data, idx.ctypes.data, out.ctypes.data, n)
    xs = [int(v) for v in src]
    assert dst.tolist() == [((((3 * x + 1) & MASK64) << 4 & MASK64) >> 2) & 0xFFFFFFFF for x in xs]
    assert odd.tolist() == [x & 1 for x in xs]
    want = [0] * n
    for i in range(n):
        j = int(idx[i])
        want[j] = (xs[j] + i - i % LANES) & MASK64
    assert out.tolist() == want
