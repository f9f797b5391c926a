"""CPU NTT kernels: two cache-blocked passes over 8-lane vectors (AVX-512).

The transform of N = N1·N2 points (N1 = 2^n1 rows, N2 = 2^n2 columns of the
row-major view x[r·N2 + c]) runs as two passes over memory (four-step,
Bailey; the radix-2 stages are those of one big DIF or DIT transform, so the
twiddle scaling between the steps is already inside the stage twiddles):

- column pass: a tile is 8 adjacent columns (the vector lanes) x N1 rows,
  copied into a 52-bit-limb scratch tile that stays in L2, where all n1
  column stages run (stage half-sizes H >= N2); each butterfly's twiddles are
  one contiguous 8-lane load from the stage-major table.
- row pass: a tile is 8 rows (the lanes, gathered) x N2 columns, where all n2
  row stages run (H < N2) with one broadcast twiddle per butterfly. For a
  natural-order result the 8 rows are chosen so that their bit-reversed
  indices are consecutive: the bit reversal then costs nothing, each column
  of the tile is one contiguous 8-lane store to its bit-reversed place.

DIF (Gentleman-Sande) for natural-order input: column pass, then row pass.
DIT (Cooley-Tukey) for bit-reversed input: row pass, then column pass.
Scaling tables (coset powers, 1/N) are applied as the first pass loads or the
last pass stores. Tiles are shared out to threads (ctypes releases the GIL) a few at a
time, so a pass gains threads when other work of the process ends (`runtime.threads.elastic`).

The field arithmetic is the compiler's: the butterflies are traced from
`ntt_plan.BF_DIF`/`BF_DIT`, canonicalized, and lowered by
field-to-limbs's node lowering onto the `fp64` strategy's 52-bit limbs on
8-lane vectors (products from AVX-512 IFMA where the CPU has it, else the FMA
split); this module writes only the loops, loads and stores around them, as
MLIR, and compiles them with limbs-to-cpu's lowering into a shared object
kept in the kernel cache.

The host side works on numpy arrays and never imports torch: `transform` runs the
kernels on (L, batch, N) Montgomery words for host code that has no torch (a one-shot
proof from the command line does not pay `import torch`), and `ntt_cpu`, the `zt.ntt`
path, runs the same code on numpy views of its tensors. The tables (twiddles, coset
powers, 1/N) come from `ntt_plan.host_tables`, made with the compiled field
multiplication over numpy arrays (`field_programs.run_host`), recut here into the
kernels' 52-bit limbs and tile order, cached per (field, N).

Order in this file: kernel (MLIR generator), host wrapper, reference.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import threading
from typing import TYPE_CHECKING

import numpy as np

from ..runtime import cache
from .cpu_code import Code, apply, compile_module, field_func, vector_function
from .host_words import mont_limbs
from .ntt_plan import BF_DIF, BF_DIT, SCALE, bitrev_host, host_tables, scale_spec
from ..runtime.cpu_isa import cpu_options
from ..runtime.threads import current_budget, elastic, launch_threads
from ..tune.costmodel import default_rows_log
from ..runtime.host_memory import keep_freed_memory

if TYPE_CHECKING:       # annotations only: `import zktensor.kernels.ntt_cpu` must not import torch
    import torch

LANES = 8
MIN_PER_THREAD = 1 << 11      # elements: below this a second thread costs more than it saves
SHARES_PER_THREAD = 4         # a pass's tiles in this many shares a thread, taken as threads come
ELASTIC_FROM = 1 << 16        # elements of a pass from which it may wait for threads that are not
                              # free yet: below, waking and joining one costs more than it saves
PASSES = ("col_dif", "row_dif", "row_dit", "col_dit")


# =============================================================================
# Kernel: MLIR text of the limb functions and the two passes
# =============================================================================
def _limb_functions(F, ifma: bool) -> list[str]:
    """Private vector functions over 52-bit limbs: the two butterflies, a
    product, and the conversions from/to the 32-bit storage words."""
    from ..ir.program import trace

    def traced(fn, n_inputs):
        f = field_func(trace(fn, F, n_inputs))
        return lambda e, A, args: [x for o in apply(A, F, e, f, args[0]) for x in o]

    def func(name, n_in, in_type, body):
        return vector_function(F, name, [(n_in, in_type)], body, ifma, LANES)

    return [func("bf_dif", 3, "i64", traced(BF_DIF, 3)),
            func("bf_dit", 3, "i64", traced(BF_DIT, 3)),
            func("scale", 2, "i64", traced(SCALE, 2)),
            func("to52", 1, "i32", lambda e, A, args: A.from_words(args[0][0])),
            func("to32", 1, "i64", lambda e, A, args: A.to_words(args[0][0]))]


ARGS = ("src", "src_ls", "src_ps", "dst", "dst_ls", "dst_ps", "tw", "tw_ls",
        "pre", "pre_ls", "pre_mode", "post", "post_ls", "post_mode", "scr",
        "rowbase", "lanerow", "colperm", "nat", "n1", "n2", "t0", "t1")
PTR_ARGS = {"src", "dst", "tw", "pre", "post", "scr", "rowbase", "lanerow", "colperm"}


def _pass_function(F, name: str, unroll: int = 2) -> str:
    """One pass (see the module docstring) over tiles [t0, t1) of all polynomials.

    Twiddles: the column passes read `tw` in tile order (for column group g,
    entry (g·(N1-1) + h - 1 + k) holds the 8 lanes' w_{2H}^(k·N2 + c), H = h·N2,
    as n52 vectors of 52-bit limbs); the row passes read the stage-major table
    (limb-major, limb stride tw_ls) and broadcast one twiddle to all lanes.
    Scale modes: 0 none, 1 a table of 52-bit limbs in storage order, 2 one
    constant (the table's first entry)."""
    kind, direction = name.split("_")
    col, dit = kind == "col", direction == "dit"
    L, n52 = F.limbs32, F.limbs52
    v32, v64 = f"vector<{LANES}xi32>", f"vector<{LANES}xi64>"
    c = Code(LANES)
    params = ", ".join(f"%{a}: {'!llvm.ptr' if a in PTR_ARGS else 'i64'}" for a in ARGS)
    head = [f"  func.func @ntt_{name}({params}) {{"]
    one, zero, three = c.const(1), c.const(0), c.const(3)
    lanes_c = c.const(LANES)
    N1 = c.shl(one, "%n1")
    N2 = c.shl(one, "%n2")
    nlimb = c.const(n52)
    # tiles per polynomial: columns (col pass) or rows (row pass) over 8 lanes
    ltp = c.bin("subi", "%n2" if col else "%n1", three)
    tmask = c.bin("subi", c.shl(one, ltp), one)

    def limb_ptr(base, ls, q, off, elt):
        return c.gep(c.gep(base, c.mul(c.const(q), ls), elt), off, elt)

    def scr_ptr(r, q):
        return c.gep("%scr", c.mul(c.add(c.mul(r, nlimb), c.const(q)), lanes_c), "i64")

    def load_tile_row(r):
        return [c.load(scr_ptr(r, q), v64, 64) for q in range(n52)]

    def store_tile_row(r, limbs):
        for q in range(n52):
            c.store(limbs[q], scr_ptr(r, q), v64, 64)

    def block(kw, lines_fn):
        c.emit(kw)
        c.depth += 1
        lines_fn()
        c.depth -= 1
        c.emit("}")

    def scale_by(limbs, table_ls, mode_var, table, off, gathered):
        """limbs · table[off] (mode 1) or · table[0] (mode 2); returns new limbs.
        `off`: an i64 offset (8 contiguous lanes) or, gathered, a vector of offsets."""
        res = [c.fresh("s") for _ in range(n52)]
        types = ", ".join([v64] * n52)
        c.emit(f"{', '.join(res)} = scf.index_switch {c._index(mode_var)} -> {types}")

        def case1():
            if gathered:
                t = [c.gather(c.gep(c.gep(table, c.mul(c.const(q), table_ls), "i64"), off, "i64", vector=True),
                              "i64") for q in range(n52)]
            else:
                t = [c.load(limb_ptr(table, table_ls, q, off, "i64"), v64, 8) for q in range(n52)]
            c.emit(f"scf.yield {', '.join(c.call('scale', limbs + t, n52, v64, v64))} : {types}")

        def case2():
            t = [c.splat(c.load(c.gep(table, c.mul(c.const(q), table_ls), "i64"), "i64", 8)) for q in range(n52)]
            c.emit(f"scf.yield {', '.join(c.call('scale', limbs + t, n52, v64, v64))} : {types}")

        block("case 1 {", case1)
        block("case 2 {", case2)
        block("default {", lambda: c.emit(f"scf.yield {', '.join(limbs)} : {types}"))
        return res

    def transpose8(vs):
        """8 vectors of 8 lanes -> their transpose (3 rounds of 2-input shuffles)."""
        vs = list(vs)
        for d in (1, 2, 4):
            out = list(vs)
            for i in range(8):
                if i & d:
                    continue
                lo = [x if x & d == 0 else 8 + x - d for x in range(8)]
                hi = [x + d if x & d == 0 else 8 + x for x in range(8)]
                for dst_i, mask in ((i, lo), (i + d, hi)):
                    r = c.fresh("sh")
                    c.emit(f"{r} = llvm.shufflevector {vs[i]}, {vs[i + d]} [{', '.join(map(str, mask))}] : {v32}")
                    out[dst_i] = r
            vs = out
        return vs

    with c.loop("%t0", "%t1", one) as t:
        poly = c.bin("shrui", t, ltp)
        tt = c.and_(t, tmask)
        src = c.gep("%src", c.mul(poly, "%src_ps"), "i32")
        dst = c.gep("%dst", c.mul(poly, "%dst_ps"), "i32")
        if col:
            c0 = c.mul(tt, lanes_c)
            R, lg = N1, "%n1"
            twg = c.gep("%tw", c.mul(c.mul(tt, c.bin("subi", N1, one)), c.mul(nlimb, lanes_c)), "i64")
        else:
            R, lg = N2, "%n2"
            rb = c.load(c.gep("%rowbase", tt, "i64"), "i64", 8)
            # the 8 rows of the tile (lanes) and their word offsets
            row_off = [c.mul(c.add(rb, c.load(c.gep("%lanerow", c.const(l), "i64"), "i64", 8)), N2)
                       for l in range(LANES)]
            offv = c.mul(c.add(c.splat(rb), c.load("%lanerow", v64, 8), v64), c.splat(N2), v64)

        # ---- load the tile into scratch (52-bit limbs), prescaled
        if col:
            with c.loop(zero, R, one) as r:
                off = c.add(c.mul(r, N2), c0)
                words = [c.load(limb_ptr(src, "%src_ls", j, off, "i32"), v32, 4) for j in range(L)]
                limbs = c.call("to52", words, n52, v32, v64)
                store_tile_row(r, scale_by(limbs, "%pre_ls", "%pre_mode", "%pre", off, False))
        else:
            with c.loop(zero, R, lanes_c) as cb:
                # 8 rows x 8 columns of each word, transposed: lanes become rows
                cols_words = [[None] * L for _ in range(LANES)]
                for j in range(L):
                    wj = c.gep(src, c.mul(c.const(j), "%src_ls"), "i32")
                    rows_v = [c.load(c.gep(wj, c.add(row_off[l], cb), "i32"), v32, 4) for l in range(LANES)]
                    for cc, v in enumerate(transpose8(rows_v)):
                        cols_words[cc][j] = v
                for cc in range(LANES):
                    r = c.add(cb, c.const(cc))
                    limbs = c.call("to52", cols_words[cc], n52, v32, v64)
                    off = c.add(offv, c.splat(r), v64)
                    store_tile_row(r, scale_by(limbs, "%pre_ls", "%pre_mode", "%pre", off, True))

        # ---- the stages: `unroll` independent butterflies per step, for ILP
        with c.loop(zero, lg, one) as s:
            lh = s if dit else c.bin("subi", lg, c.add(s, one))
            h = c.shl(one, lh)
            hmask = c.bin("subi", h, one)
            hm1 = c.bin("subi", h, one)
            lh1 = c.add(lh, one)
            with c.loop(zero, c.shr(R, one), c.const(unroll)) as b0:
                rows = []
                for du in range(unroll):
                    b = c.add(b0, c.const(du)) if du else b0
                    k = c.and_(b, hmask)
                    r0 = c.bin("ori", c.shl(c.shr(b, lh), lh1), k)
                    r1 = c.add(r0, h)
                    u, v = load_tile_row(r0), load_tile_row(r1)
                    if col:
                        tix = c.mul(c.add(hm1, k), nlimb)
                        w = [c.load(c.gep(twg, c.mul(c.add(tix, c.const(q)), lanes_c), "i64"), v64, 64)
                             for q in range(n52)]
                    else:
                        toff = c.add(hm1, k)
                        w = [c.splat(c.load(limb_ptr("%tw", "%tw_ls", q, toff, "i64"), "i64", 8))
                             for q in range(n52)]
                    rows.append((r0, r1, u + v + w))
                outs = [c.call("bf_dit" if dit else "bf_dif", args, 2 * n52, v64, v64) for _, _, args in rows]
                for (r0, r1, _), res in zip(rows, outs):
                    store_tile_row(r0, res[:n52])
                    store_tile_row(r1, res[n52:])

        # ---- store, postscaled
        if col:
            with c.loop(zero, R, one) as r:
                off = c.add(c.mul(r, N2), c0)
                limbs = scale_by(load_tile_row(r), "%post_ls", "%post_mode", "%post", off, False)
                words = c.call("to32", limbs, L, v64, v32)
                for j in range(L):
                    c.store(words[j], limb_ptr(dst, "%dst_ls", j, off, "i32"), v32, 4)
        else:
            nat = c.cmp("ne", "%nat", zero)
            c.emit(f"scf.if {nat} {{")
            c.depth += 1
            # natural order: column r of the tile is 8 consecutive outputs at colperm[r]·N1 + 8·tt
            with c.loop(zero, R, one) as r:
                pos = c.add(c.mul(c.load(c.gep("%colperm", r, "i64"), "i64", 8), N1), c.mul(tt, lanes_c))
                limbs = scale_by(load_tile_row(r), "%post_ls", "%post_mode", "%post", pos, False)
                words = c.call("to32", limbs, L, v64, v32)
                for j in range(L):
                    c.store(words[j], limb_ptr(dst, "%dst_ls", j, pos, "i32"), v32, 4)
            c.depth -= 1
            c.emit("} else {")
            c.depth += 1
            # same places as loaded: transpose back, 8 row stores per word
            with c.loop(zero, R, lanes_c) as cb:
                words_of = []
                for cc in range(LANES):
                    r = c.add(cb, c.const(cc))
                    off = c.add(offv, c.splat(r), v64)
                    limbs = scale_by(load_tile_row(r), "%post_ls", "%post_mode", "%post", off, True)
                    words_of.append(c.call("to32", limbs, L, v64, v32))
                for j in range(L):
                    wj = c.gep(dst, c.mul(c.const(j), "%dst_ls"), "i32")
                    for l, v in enumerate(transpose8([words_of[cc][j] for cc in range(LANES)])):
                        c.store(v, c.gep(wj, c.add(row_off[l], cb), "i32"), v32, 4)
            c.depth -= 1
            c.emit("}")
    return "\n".join(head + c.lines + ["    return", "  }"])


def module_text(F, ifma: bool, unroll: int = 2) -> str:
    """The whole module: limb functions and the four passes. `unroll`
    independent butterflies per step of the stage loop (1, 2 or 4)."""
    if unroll not in (1, 2, 4):
        raise ValueError(f"ntt (cpu): unroll must be 1, 2 or 4, got {unroll}")
    passes = [_pass_function(F, p, unroll) for p in PASSES]
    return "module {\n" + "\n".join(_limb_functions(F, ifma) + passes) + "\n}"


def _compile(text: str, out_dir: str) -> dict:
    compile_module(text, out_dir)
    return {"kind": "ntt_cpu", "passes": list(PASSES)}


class _Library:
    def __init__(self, path):
        keep_freed_memory()
        self.lib = ctypes.CDLL(str(path / "kernels.so"))
        self.fns = {}
        for p in PASSES:
            fn = getattr(self.lib, f"ntt_{p}")
            fn.argtypes = [ctypes.c_void_p if a in PTR_ARGS else ctypes.c_int64 for a in ARGS]
            fn.restype = None
            self.fns[p] = fn


_libs: dict = {}
_libs_lock = threading.Lock()


def library(F, unroll: int = 2) -> _Library:
    """The compiled passes for field F (generated, compiled and cached on first use). The
    module text's digest is remembered per package source (`cache.memo`): tracing the
    butterflies is work that a warm cache, and a one-shot proof, should not repeat."""
    opts = cpu_options("fp64")
    key_local = (F.name, opts["ifma"], unroll)
    with _libs_lock:
        lib = _libs.get(key_local)
        if lib is None:
            P = getattr(F, "params", F)
            text = functools.cache(lambda: module_text(P, opts["ifma"], unroll))      # made at most once
            digest = cache.memo(f"ntt-cpu-{P.name}-ifma{int(opts['ifma'])}-unroll{unroll}",
                                lambda: hashlib.sha256(text().encode()).hexdigest())
            key = cache.entry_key(digest, "fp64", "cpu-ntt" + json.dumps(opts, sort_keys=True))
            entry = cache.lookup(key) or cache.build(key, lambda d: _compile(text(), d))
            lib = _libs[key_local] = _Library(entry)
        return lib


# =============================================================================
# Host wrapper
# =============================================================================
# One implementation over numpy arrays (`_run`, the tables below it), with two entries:
# `transform`, for host code that has no torch (the one-shot CLI proof pays no
# `import torch`), and `ntt_cpu`, the `zt.ntt` path, which hands it numpy views of the
# tensors' own memory (`.numpy()` shares it) and returns a tensor over the result.
def available(plan) -> bool:
    """Whether these kernels can run the plan: an x86 CPU with 8-lane vectors
    (AVX-512), a CPU tensor, and N >= 64 (both passes need 8 lanes)."""
    if plan.device.type != "cpu" or plan.log_n < 6:
        return False
    return cpu_options("fp64")["lanes"] == LANES


def transform(F, data: np.ndarray, *, inverse: bool = False, coset: int | None = None,
              input_order: str = "natural", output_order: str = "natural",
              out: np.ndarray | None = None, rows_log: int | None = None, unroll: int = 2,
              threads: int | None = None) -> np.ndarray:
    """The NTT of every row of `data` on the host, without torch: `zt.ntt(x, coset=g)` or,
    with `inverse`, `zt.intt(x, coset=g)` on numpy arrays, bit for bit.

    F: a field's record (`algebra.fields.field(name)`) or a field space (`zt.field(name)`).
    data: (L, batch, N) int32 Montgomery words (L = F.limbs32, R = 2^(32·L)), in
    `input_order` ("natural" or "bitrev"); any strides (a copy is made where N's is not one
    element). Returns the result in `output_order`, in `out` where given (an int32 array of data's shape with unit
    stride in N; it may be data itself; one that overlaps data otherwise is written after
    the transform is done aside).
    Forward: X_k = sum_j x_j·g^j·w^(jk) (g = 1 without a coset): the evaluations on g·<w>,
    w = F.root_of_unity(N). Inverse: the inverse of that, N^-1·g^-j·sum_k X_k·w^(-jk).
    rows_log, unroll, threads: the knobs of `NTTConfig` (cpu_rows_log, cpu_unroll,
    threads); rows_log None is the cost model's split (`default_rows_log`).
    Raises ValueError where the kernels cannot run it: a CPU without 8-lane vectors
    (AVX-512), N < 64 or not a power of two or beyond the field's 2-adicity, another dtype
    or shape (`zt.ntt` takes the per-stage algorithm there; this entry has none)."""
    P = getattr(F, "params", F)
    _check_lanes()
    if not isinstance(data, np.ndarray):
        raise TypeError(f"ntt (cpu): data must be a numpy array, got {type(data).__name__}")
    L = P.limbs32
    if data.dtype != np.int32 or data.ndim != 3 or data.shape[0] != L:
        raise ValueError(f"ntt (cpu): data must be int32 words of shape ({L}, batch, N) for {P.name}, "
                         f"got {data.dtype} {data.shape}")
    B, n = data.shape[1], data.shape[2]
    n1 = _split(_log_size(P, n), rows_log)
    g = _coset_value(P, coset)
    for name, order in (("input_order", input_order), ("output_order", output_order)):
        if order not in ("natural", "bitrev"):
            raise ValueError(f"ntt (cpu): {name} must be 'natural' or 'bitrev', got {order!r}")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ValueError(f"ntt (cpu): threads must be a positive int or None, got {threads!r}")
    if out is not None:
        if (not isinstance(out, np.ndarray) or out.dtype != np.int32 or out.shape != data.shape
                or out.strides[2] != 4 or not out.flags.aligned or not out.flags.writeable):
            raise ValueError(f"ntt (cpu): out must be a writable int32 array of shape {data.shape} "
                             f"with unit stride in N")
    if B == 0:
        return out if out is not None else np.empty(data.shape, dtype=np.int32)
    src = data if data.strides[2] == 4 and data.flags.aligned else np.ascontiguousarray(data)
    dst = out
    if dst is None or (np.may_share_memory(dst, src) and not _same_layout(dst, src)):
        dst = _empty_huge(data.shape)
    _run(P, src, dst, bool(inverse), g, input_order == "bitrev", output_order == "bitrev", n1, unroll, threads)
    if out is not None and dst is not out:
        out[...] = dst
        return out
    return dst


def ntt_cpu(plan, data: torch.Tensor, cfg, out: torch.Tensor | None = None) -> torch.Tensor:
    """Run the plan on (L, batch, N) int32 limbs (CPU tensors) into `out` (allocated if
    None), every input and output order: `_run` on numpy views of the tensors' memory."""
    import torch
    F, n = plan.F, plan.n
    n1 = _split(plan.log_n, cfg.cpu_rows_log)
    src = data if data.stride(2) == 1 else data.contiguous()
    B = src.shape[1]
    if out is None:
        out = torch.from_numpy(_empty_huge((F.limbs, B, n)))
    elif out.shape != (F.limbs, B, n) or out.dtype != torch.int32 or out.stride(2) != 1:
        raise ValueError(f"ntt (cpu): out must be int32 of shape {(F.limbs, B, n)} with unit stride in N")
    _run(F.params, src.numpy(), out.numpy(), plan.inverse, plan.coset, plan.bitrev_in, plan.bitrev_out,
         n1, cfg.cpu_unroll, cfg.threads)
    return out


# -- checks -------------------------------------------------------------------------
def _check_lanes():
    lanes = cpu_options("fp64")["lanes"]
    if lanes != LANES:
        raise ValueError(f"ntt (cpu): the kernels need {LANES}-lane vectors (x86 AVX-512); this CPU "
                         f"has {lanes}-lane ones")


def _log_size(P, n: int) -> int:
    """log2(n), or why these kernels cannot transform n points of P."""
    if n < 1 or n & (n - 1):
        raise ValueError(f"ntt (cpu): length {n} of the last dimension is not a power of two")
    k = n.bit_length() - 1
    if k < 6:
        raise ValueError(f"ntt (cpu): length {n} is below 64: both passes need at least 8 rows of 8 lanes")
    if k > P.two_adicity:
        raise ValueError(f"ntt (cpu): length 2^{k} is too large for {P.name}: its 2-adicity is {P.two_adicity}")
    return k


def _split(log_n: int, rows_log: int | None) -> int:
    """The rows of N = 2^rows · 2^cols (None: the cost model's), both at least 2^3."""
    n1 = rows_log if rows_log is not None else default_rows_log(log_n)
    if n1 < 3 or log_n - n1 < 3:
        raise ValueError(f"ntt (cpu): rows 2^{n1} x columns 2^{log_n - n1}: both must be at least 2^3")
    return n1


def _coset_value(P, coset) -> int | None:
    if coset is None:
        return None
    if isinstance(coset, bool) or not isinstance(coset, (int, np.integer)):
        raise TypeError(f"ntt (cpu): coset shift must be an int, got {type(coset).__name__}")
    g = int(coset) % P.p
    if g == 0:
        raise ValueError("ntt (cpu): coset shift must be non-zero")
    return g


def _same_layout(a: np.ndarray, b: np.ndarray) -> bool:
    """The very same elements (in place): every pass reads a tile whole before writing it back."""
    return a.ctypes.data == b.ctypes.data and a.shape == b.shape and a.strides == b.strides


# -- the transform -------------------------------------------------------------------
def _run(P, src: np.ndarray, dst: np.ndarray, inverse: bool, coset: int | None, bitrev_in: bool,
         bitrev_out: bool, n1: int, unroll: int, threads: int | None) -> None:
    """The two passes over (L, batch, N) int32 words, src -> dst (unit stride in N; dst
    may be src itself, or must not overlap it). DIF for natural-order input (columns,
    then rows storing to natural or bit-reversed places), DIT for bit-reversed input
    (rows, then columns in place; a permutation after it for a bit-reversed result)."""
    B, n = src.shape[1], src.shape[2]
    n2 = n.bit_length() - 1 - n1
    lib = library(P, unroll)
    T = host_tables(P, n)
    tw_col = _twiddles_col(T, inverse, n1, n2)
    tw_row = _twiddles_row(T, inverse, n2)
    pre_spec, post_spec = scale_spec(P.p, n, inverse, coset)
    pre = _scale_arg(T, pre_spec, bitrev_in)
    # bit-reversed output: DIF stores it so (the table in that order); DIT stores natural
    # order and permutes after, so its table stays natural
    post = _scale_arg(T, post_spec, bitrev_out and not bitrev_in)
    (nat_rb, nat_lr, id_rb, id_lr, colperm), _ = _index_tables(n1, n2)
    # the most threads a pass may take: a graph's share of the cores may grow while it runs
    top = current_budget()[1]
    threads = min(threads or top, top)
    limbs52 = P.limbs52
    # buffers and tables travel as (array, address): reading a numpy array's address is not
    # free next to a small transform's passes, so it is read once per array
    src_a, dst_a = (src, _addr(src)), (dst, _addr(dst))

    def run(pass_name, s, d, pre_arg, post_arg, rowbase, lanerow, nat):
        is_col = pass_name.startswith("col")
        tiles = B * (((1 << n2) if is_col else (1 << n1)) // LANES)
        rows = (1 << n1) if is_col else (1 << n2)
        tw = tw_col if is_col else tw_row
        fn = lib.fns[pass_name]
        p_t, p_ls, p_mode = pre_arg
        q_t, q_ls, q_mode = post_arg
        args = (s[1], s[0].strides[0] // 4, s[0].strides[1] // 4, d[1], d[0].strides[0] // 4, d[0].strides[1] // 4,
                tw[1], tw[0].strides[0] // 8, p_t[1] if p_t else None, p_ls, p_mode,
                q_t[1] if q_t else None, q_ls, q_mode)
        tail = (rowbase, lanerow, colperm, int(nat), n1, n2)

        def work(t0, t1):
            fn(*args, _scratch_for(rows * limbs52 * LANES), *tail, t0, t1)

        elements = rows * tiles * LANES
        most = min(threads, tiles, max(1, elements // MIN_PER_THREAD))
        if elements < ELASTIC_FROM:         # a short pass: the threads its budget gives now
            most = min(most, launch_threads())
        if most <= 1:
            work(0, tiles)
            return
        # shares of a few tiles that the threads take as they come: a pass that began
        # beside other work gains a thread when that work ends (`runtime.threads.elastic`)
        step = -(-tiles // (most * SHARES_PER_THREAD))
        starts = iter(range(0, tiles, step))

        def take():
            lo = next(starts, None)
            return None if lo is None else functools.partial(work, lo, min(lo + step, tiles))
        elastic(take, most=most, kind="ntt")

    none = (None, 0, 0)
    if not bitrev_in:
        # DIF: columns (prescaled), then rows; natural order goes through a second buffer
        if bitrev_out:
            run("col_dif", src_a, dst_a, pre, none, id_rb, id_lr, False)
            run("row_dif", dst_a, dst_a, none, post, id_rb, id_lr, False)
            return
        tmp = _work_buffer(tuple(dst.shape))
        try:
            run("col_dif", src_a, tmp, pre, none, id_rb, id_lr, False)
            run("row_dif", tmp, dst_a, none, post, nat_rb, nat_lr, True)
        finally:
            _give_back(tmp)
        return
    # DIT on bit-reversed input: rows (prescaled), then columns -> natural order
    run("row_dit", src_a, dst_a, pre, none, id_rb, id_lr, False)
    run("col_dit", dst_a, dst_a, none, post, id_rb, id_lr, False)
    if bitrev_out:
        dst[...] = np.take(dst, bitrev_host(n), axis=2)


# -- tables: the host tables (`ntt_plan.host_tables`) in the kernels' forms -----------
def to_limbs52(F, words: np.ndarray) -> np.ndarray:
    """(L32, ...) int32 storage words -> (L52, ...) int64 52-bit limbs of the same
    integers (a re-cut of the bits; both are Montgomery form with R = 2^(32·L32)),
    64-byte aligned (`_aligned`)."""
    P = getattr(F, "params", F)
    w = words.view(np.uint32).astype(np.uint64)
    out = _aligned((P.limbs52,) + words.shape[1:], np.int64)
    mask = np.uint64((1 << 52) - 1)
    for k in range(P.limbs52):
        lo = 52 * k
        acc = np.zeros(words.shape[1:], dtype=np.uint64)
        for i in range(P.limbs32):
            s = 32 * i
            if s + 32 <= lo or s >= lo + 52:
                continue
            acc |= (w[i] >> np.uint64(lo - s)) if s <= lo else (w[i] << np.uint64(s - lo))
        out[k] = acc & mask
    return out


def _addr(a: np.ndarray) -> int:
    return a.ctypes.data


def _aligned(shape, dtype) -> np.ndarray:
    """np.empty at a 64-byte boundary: the column pass loads its twiddle vectors with
    64-byte aligned loads (torch's allocator aligned every tensor so; numpy's only to 16)."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + 64, dtype=np.uint8)
    off = -raw.ctypes.data % 64
    return raw[off:off + nbytes].view(dtype).reshape(shape)


def _table52(T, name, make):
    """(array, address) of the derived table `name` of T, made by make() on first use."""
    key = ("limbs52",) + name
    with T.lock:
        t = T.derived.get(key)
    if t is None:
        a = make()
        t = (a, _addr(a))
        with T.lock:
            T.derived[key] = t
            # keep only a few scale tables
            scales = [k for k in T.derived if k[:2] == ("limbs52", "scale")]
            for k in scales[:-4]:
                del T.derived[k]
    return t


def _scale_arg(T, spec, bitrev: bool):
    """((52-bit table, address) or None, limb stride, mode) for a pre/post scale
    (`scale_spec`): mode 2 for a constant, 1 for a table in storage order (bit-reversed
    where `bitrev`)."""
    if spec is None:
        return None, 0, 0
    if isinstance(spec, int):
        t = _table52(T, ("const", spec), lambda: to_limbs52(T.F, mont_limbs(T.F, [spec])))
        return t, t[0].strides[0] // 8, 2

    def make():
        return to_limbs52(T.F, T.coset_powers(*spec, bitrev=bitrev))
    t = _table52(T, ("scale",) + tuple(spec) + (bitrev,), make)
    return t, t[0].strides[0] // 8, 1


def _twiddles_row(T, inverse: bool, n2: int):
    """Stage-major twiddles of the row stages (H < N2) as (L52, N2 - 1) limbs (and address)."""
    return _table52(T, ("tw_row", inverse, n2), lambda: to_limbs52(T.F, T.twiddles(inverse)[:, : (1 << n2) - 1]))


def _twiddles_col(T, inverse: bool, n1: int, n2: int):
    """The column stages' twiddles in the order a column tile reads them (and address):
    (N2/8 groups, N1 - 1 rows h - 1 + k, L52 limbs, 8 lanes) with row
    h - 1 + k of group g holding w_{2H}^(k·N2 + 8g + lane), H = h·N2."""
    def make():
        words = T.twiddles(inverse)
        L, N1, N2 = T.F.limbs32, 1 << n1, 1 << n2
        parts = []
        h = 1
        while h < N1:
            H = h * N2
            seg = words[:, H - 1:H - 1 + h * N2].reshape(L, h, N2 // LANES, LANES)
            parts.append(seg.transpose(0, 2, 1, 3))
            h *= 2
        tiled = np.concatenate(parts, axis=2)                # (L, N2/8, N1-1, 8)
        limbs = to_limbs52(T.F, tiled).transpose(1, 2, 0, 3)
        t = _aligned(limbs.shape, np.int64)
        t[...] = limbs
        return t
    return _table52(T, ("tw_col", inverse, n1), make)


@functools.lru_cache(maxsize=None)
def _index_tables(n1: int, n2: int):
    """The addresses of rowbase/lanerow for the natural-order row pass, the identity pair
    for the in-place one, and the column bit reversal; then the int64 arrays themselves
    (kept alive here)."""
    q = 1 << (n1 - 3)
    nat_rowbase = bitrev_host(q).copy()
    nat_lanerow = bitrev_host(LANES) << (n1 - 3)
    id_rowbase = np.arange(q, dtype=np.int64) * LANES
    id_lanerow = np.arange(LANES, dtype=np.int64)
    colperm = bitrev_host(1 << n2).copy()
    arrays = (nat_rowbase, nat_lanerow, id_rowbase, id_lanerow, colperm)
    return tuple(_addr(a) for a in arrays), arrays


# -- threads and buffers ---------------------------------------------------------------
_scratch = threading.local()


def _scratch_for(n_i64: int) -> int:
    """The address of this thread's scratch tile of n_i64 int64s, 64-byte aligned for the
    tile rows (kept alive by the thread-local buffer)."""
    buf = getattr(_scratch, "buf", None)
    if buf is None or buf.size < n_i64 + 8:
        buf = _scratch.buf = np.empty(n_i64 + 8, dtype=np.int64)
        base = _addr(buf)
        _scratch.at = base + (-base % 64)
    return _scratch.at


_libc = None
MADV_HUGEPAGE = 14
HUGE = 1 << 21


def _empty_huge(shape, dtype=np.int32) -> np.ndarray:
    """np.empty, asking the kernel for transparent huge pages before the first
    touch (the transposed stores of the row pass visit a new 4 KiB page per
    column otherwise)."""
    global _libc
    t = np.empty(shape, dtype=dtype)
    nbytes = t.nbytes
    if nbytes >= 4 * HUGE:
        try:
            if _libc is None:
                _libc = ctypes.CDLL(None, use_errno=True)
                _libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
            lo = -(-t.ctypes.data // HUGE) * HUGE
            hi = (t.ctypes.data + nbytes) // HUGE * HUGE
            if hi > lo:
                _libc.madvise(lo, hi - lo, MADV_HUGEPAGE)
        except (OSError, AttributeError):  # pragma: no cover - not Linux
            pass
    return t


_workspace = {}
_workspace_lock = threading.Lock()


def _work_buffer(shape):
    """A reusable int32 buffer (the natural-order DIF's middle step) and its address: no
    page faults on every call for a fresh allocation."""
    with _workspace_lock:
        buf = _workspace.pop(shape, None)
    if buf is None:
        a = _empty_huge(shape)
        buf = (a, _addr(a))
    return buf


def _give_back(buf):
    with _workspace_lock:
        _workspace.clear()           # keep one: the latest size
        _workspace[tuple(buf[0].shape)] = buf


# =============================================================================
# Reference: the same two-pass schedule on Python ints
# =============================================================================
def reference(values: list[int], p: int, omega: int, n1: int, bitrev_out: bool = False) -> list[int]:
    """DIF of `values` (natural order) as the two passes run it: n1 column
    stages on the rows x columns view, then the row stages, then (natural
    order) the store to bit-reversed row/column places."""
    n = len(values)
    log_n = n.bit_length() - 1
    n2 = log_n - n1
    N1, N2 = 1 << n1, 1 << n2
    x = list(values)

    def stage(H):
        w = pow(omega, n // (2 * H), p)
        for i in range(n):
            if i % (2 * H) < H:
                u, v = x[i], x[i + H]
                x[i], x[i + H] = (u + v) % p, (u - v) * pow(w, i % H, p) % p
    for s in range(n1):                      # column pass: H = N/2 .. N2
        stage(n >> (s + 1))
    for s in range(n2):                      # row pass: H = N2/2 .. 1
        stage(N2 >> (s + 1))
    if bitrev_out:
        return x

    def rev(v, bits):
        return int(format(v, f"0{bits}b")[::-1], 2) if bits else 0
    out = [0] * n
    for r in range(N1):
        for c in range(N2):
            out[rev(c, n2) * N1 + rev(r, n1)] = x[r * N2 + c]
    return out
