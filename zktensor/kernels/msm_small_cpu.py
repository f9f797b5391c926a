"""Small MSMs on the CPU in one call a group of windows: signed-digit Pippenger with the
windows as the lanes of 8-lane vectors.

The bucket tree (`msm_tree`) sums buckets by batch-affine additions, a few launches a tree
level: for 2^12 points hundreds of launches whose Python overhead outweighs their work.
Here eight windows go through the points together, one lane each, in a compiled loop:

    for each entry e (a base and its 8 digits, one per window of the group):
        Q = the base, -Q where the lane's digit is negative       (per-lane select of y)
        bucket[|digit|] (gathered per lane) += Q                   (complete mixed XYZZ addition)
                                                                  (digit 0: bucket 0, never read)
    r = a = 0
    for b = NB .. 1:  r += bucket[b];  a += r                      (a = sum_b b·bucket[b])

and a last call weights the groups by Horner (`msm_combine`), after which lane l holds
windows l, l + 8, ... combined, and folds the lanes, sum_l 2^(c·l)·lane_l: one point,
which the host makes affine (`combine`).

A 0/1 witness's scalars would use one lane of eight: scalar 1 has one nonzero digit. Its
scalars ±1 (from `UNITS_MIN` of them, or all of a job's) go to `msm_units` instead, the
same loop with a column per lane, gathered, so a trip adds eight different bases (NB = 1:
each lane's sum of its share), and `msm_combine` folds those eight lanes with weight 1.

Every lane does the same step each trip, so the loop has no mask; lanes are windows, so
the eight gathers of a trip hit eight different bucket arrays and never conflict. The
additions are complete (as in the device kernels, `msm_device`): an identity operand
gives the other one and P = -Q the identity, chosen per lane by selects from zero tests
(values are fully reduced, so a coordinate is zero exactly when its limbs are); P = Q,
rare, is the one branch: taken when a lane of the trip meets it, it puts 2P in those
lanes. The identity is ZZ = 0 in XYZZ, and all-zero words in the affine table ((0, 0)
lies on none of the curves: their b is nonzero).

The group arithmetic is the compiler's: the `ec` programs of `msm_device` (mixed products
H and R of madd-2008-s; the six add-2008-s products; the inputs whose finish is 2P) and
`msm_triton` (the finish) are traced, taken through ec-to-field and canonicalize, and their
nodes lowered inline by field-to-limbs onto the `fp64` strategy's 52-bit limbs (AVX-512
IFMA where the CPU has it); this module writes the loops and the selects around them as
MLIR (`cpu_code`). Buckets live in 52-bit limbs, lane-minor: limb q of bucket b of lane l
at (b·K52 + q)·8 + l.

Order in this file: kernel (MLIR text), host wrapper, reference (the tests' Python ints,
`tests/ec/test_msm_small_cpu.py`).
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import threading

import numpy as np

from ..runtime import cache
from ..runtime.cpu_isa import cpu_options
from .cpu_code import Code, apply, compile_module, field_func, vector_function
from .host_words import xyzz_to_affine
from .signed_digits import n_windows, signed_digits

LANES = 8
TEMPLATE_VERSION = "8"
MAX_WINDOW = 16     # buckets a lane: 2^(c-1) + 3 slots of K52·8 words each


# =============================================================================
# Kernel
# =============================================================================
def _programs(GS):
    """The traced formulas as FieldFuncs over Fq components: (mixed products, products,
    finish, doubling inputs)."""
    from . import msm_ec
    from .msm_device import f_double_inputs, f_mixed_products
    from .msm_triton import ADD_PARTS
    (k_prod, kinds_prod, f_prod), (k_fin, kinds_fin, f_fin) = ADD_PARTS
    G = _record(GS)
    return (field_func(msm_ec.program(G, "mixed_products", ("xyzz", "affine"), f_mixed_products)),
            field_func(msm_ec.program(G, k_prod, kinds_prod, f_prod)),
            field_func(msm_ec.program(G, k_fin, kinds_fin, f_fin)),
            field_func(msm_ec.program(G, "double_inputs", ("xyzz",), f_double_inputs)))


def _step_functions(GS, F, ifma: bool) -> list[str]:
    """`mstep_fast(P, Q)`: P + Q for an XYZZ P and an affine Q; `pstep_fast(P, Q)`: P + Q
    in XYZZ; both complete (see the module docstring) but for P = Q, whose lanes they
    return after the sum (an i64 mask, 1 where P = Q) for `_rare` to fill with `dstep(P)`,
    2P. A point is 4d components, an affine one 2d, each F.limbs52 limbs."""
    mprod, prod, fin, dblin = _programs(GS)
    d = GS.degree

    def zero(e, comps):                       # all limbs of the components zero, per lane
        acc = None
        for c in comps:
            for x in c:
                acc = x if acc is None else e.or_(acc, x)
        return e.op("arith.cmpi", [acc, e.const(0, "i64")], "i1", "predicate = 0 : i64")

    def sel(e, c, xs, ys):
        return [[e.select(c, x, y) for x, y in zip(xc, yc)] for xc, yc in zip(xs, ys)]

    def finish(e, A, u, h, r, naid, nbid):
        """The sum from the six coordinates u where P != Q, and the lanes where P = Q (both
        not the identity) as a mask: there the caller puts 2P (`_rare`), which is rare,
        where computing the doubling's inputs in every step cost a fifth of it."""
        hz, rz = zero(e, h), zero(e, r)
        true = e.const(1, "i1")
        both = e.and_(naid, nbid)
        same = e.and_(e.and_(hz, rz), both)
        opp = e.and_(e.and_(hz, e.xor(rz, true)), both)
        x = apply(A, F, e, fin, u)
        nothing = [[A.zero] * A.n for _ in range(4 * d)]
        return sel(e, opp, nothing, x), same

    def mstep(e, A, args):
        P, Q = args
        true = e.const(1, "i1")
        aid, bid = zero(e, P[2 * d:3 * d]), zero(e, Q)
        hr = apply(A, F, e, mprod, P + Q)
        u = P[:2 * d] + hr + P[2 * d:]                 # (U1, S1, H, R, ZZ12, ZZZ12) = (X, Y, H, R, ZZ, ZZZ)
        s, same = finish(e, A, u, hr[:d], hr[d:], e.xor(aid, true), e.xor(bid, true))
        one = A.constant(1)
        unit = [one] + [[A.zero] * A.n for _ in range(d - 1)]
        lift = Q + unit + unit                         # Q with ZZ = ZZZ = 1 (all zero: the identity)
        nothing = [[A.zero] * A.n for _ in range(4 * d)]
        out = sel(e, aid, sel(e, bid, nothing, lift), sel(e, bid, P, s))
        return [x for c in out for x in c] + [e.zext(same, "i64")]

    def pstep(e, A, args):
        P, Q = args
        true = e.const(1, "i1")
        aid, bid = zero(e, P[2 * d:3 * d]), zero(e, Q[2 * d:3 * d])
        u = apply(A, F, e, prod, P + Q)
        s, same = finish(e, A, u, u[2 * d:3 * d], u[3 * d:4 * d], e.xor(aid, true), e.xor(bid, true))
        out = sel(e, aid, Q, sel(e, bid, P, s))
        return [x for c in out for x in c] + [e.zext(same, "i64")]

    def dstep(e, A, args):                             # 2P; the identity stays ZZ = 0
        (P,) = args
        return [x for c in apply(A, F, e, fin, apply(A, F, e, dblin, P)) for x in c]

    mq, pq = [(4 * d, "i64"), (2 * d, "i64")], [(4 * d, "i64"), (4 * d, "i64")]
    return [vector_function(F, "mstep_fast", mq, mstep, ifma, LANES),
            vector_function(F, "pstep_fast", pq, pstep, ifma, LANES),
            vector_function(F, "dstep", [(4 * d, "i64")], dstep, ifma, LANES),
            vector_function(F, "to52", [(1, "i32")], lambda e, A, a: A.from_words(a[0][0]), ifma, LANES),
            vector_function(F, "to32", [(1, "i64")], lambda e, A, a: A.to_words(a[0][0]), ifma, LANES)]


def _call(c: Code, fn: str, args: list, n_res: int, inline: bool = True) -> list:
    """A call of one of the step functions (`inline=False`: kept a call, for cold code:
    each inlined copy of a step is compiled, and compile time, again)."""
    if inline:
        return c.call(fn, args, n_res, f"vector<{LANES}xi64>", f"vector<{LANES}xi64>")
    v64 = f"vector<{LANES}xi64>"
    r = c.fresh("r")
    c.emit(f"{r}:{n_res} = func.call @{fn}({', '.join(args)}) {{no_inline}} : ({', '.join([v64] * len(args))}) -> "
           f"({', '.join([v64] * n_res)})")
    return [f"{r}#{i}" for i in range(n_res)]


def _rare(c: Code, step: str, args: list, K52: int, inline: bool = True) -> list:
    """`{step}_fast(args)`, and where a lane met P = Q, 2P (`dstep` of the first operand) in
    those lanes: a branch on the lanes' mask, taken about never on data not built for it,
    its doubling a call outside the loop."""
    v64, vb = f"vector<{LANES}xi64>", f"vector<{LANES}xi1>"
    types = ", ".join([v64] * K52)
    res = _call(c, f"{step}_fast", args, K52 + 1, inline)
    flag = c.fresh("any")
    c.emit(f"{flag} = vector.reduction <or>, {res[-1]} : {v64} into i64")
    out = c.fresh("o")
    c.emit(f"{out}:{K52} = scf.if {c.cmp('ne', flag, c.const(0))} -> ({types}) {{")
    c.depth += 1
    dbl = _call(c, "dstep", args[:K52], K52, inline=False)
    zv = c.fresh("z")
    c.emit(f"{zv} = arith.constant dense<0> : {v64}")
    same = c.fresh("same")
    c.emit(f"{same} = arith.cmpi ne, {res[-1]}, {zv} : {v64}")
    picked = []
    for x, y in zip(dbl, res[:K52]):
        r = c.fresh("x")
        c.emit(f"{r} = arith.select {same}, {x}, {y} : {vb}, {v64}")
        picked.append(r)
    c.emit(f"scf.yield {', '.join(picked)} : {types}")
    c.depth -= 1
    c.emit("} else {")
    c.depth += 1
    c.emit(f"scf.yield {', '.join(res[:K52])} : {types}")
    c.depth -= 1
    c.emit("}")
    return [f"{out}#{i}" for i in range(K52)]


PARAMS = {"pts": "p", "C": "i", "neg_off": "i", "idx": "p", "dig": "p", "n_e": "i", "bk": "p", "NB": "i",
          "out": "p"}


def _windows_function(GS, F, per_lane: bool = False) -> str:
    """@msm_windows: the accumulation and the reduction of one group of 8 windows.

    pts: point-major affine table (int32 words, C = 2d·L a column; -Q of column i at
    neg_off + i); idx (n_e,) int64: each entry's column; dig (n_e, 8) int32: its digit in
    each lane's window; bk: NB + 3 slots of K52·8 int64, zeroed (slot 0 takes the zero
    digits, slots NB + 1 and NB + 2 hold r and a); out: (K52, 8) int64, the lanes'
    sum_b b·bucket[b] in 52-bit limbs (Montgomery form; the identity ZZ = 0).

    per_lane (@msm_units): idx is (n_e, 8), a column per lane, each gathered: the eight
    lanes add eight different bases a trip. For scalars ±1 (a 0/1 witness's), called with
    NB = 1 and digits ±1 (0 for padding): lane l sums its share of the ±P_i, where a
    group of windows spends a trip per base and uses one lane of it."""
    d, L, n52 = GS.degree, F.limbs32, F.limbs52
    K52 = 4 * d * n52
    c = Code(LANES)
    v32, v64, vb = f"vector<{LANES}xi32>", f"vector<{LANES}xi64>", f"vector<{LANES}xi1>"
    one, zero = c.const(1), c.const(0)
    slot = c.const(K52 * LANES)
    iota = c.fresh("iota")
    c.emit(f"{iota} = arith.constant dense<[{', '.join(map(str, range(LANES)))}]> : {v64}")
    zv = c.fresh("zv")
    c.emit(f"{zv} = arith.constant dense<0> : {v64}")

    def words(col, comps):                    # the column's words of these components, splat
        if per_lane:                          # col: a vector of columns, gathered
            base = c.mul(col, c.splat("%C"), v64)
            return [[c.gather(c.gep("%pts", c.add(base, c.splat(c.const(k * L + j)), v64), "i32", vector=True),
                              "i32") for j in range(L)] for k in comps]
        base = c.gep("%pts", c.mul(col, "%C"), "i32")
        return [[c.splat(c.load(c.gep(base, c.const(k * L + j), "i32"), "i32", 4), "i32") for j in range(L)]
                for k in comps]

    def to52(ws):
        return [c.call("to52", w, n52, v32, v64) for w in ws]

    # ---- accumulation
    with c.loop(zero, "%n_e", one) as e:
        if per_lane:
            col = c.load(c.gep("%idx", c.mul(e, c.const(LANES)), "i64"), v64, 8)
        else:
            col = c.load(c.gep("%idx", e, "i64"), "i64", 8)
        dv = c.load(c.gep("%dig", c.mul(e, c.const(LANES)), "i32"), v32, 4)
        d64 = c.fresh("d")
        c.emit(f"{d64} = arith.extsi {dv} : {v32} to {v64}")
        neg = c.fresh("neg")
        c.emit(f"{neg} = arith.cmpi slt, {d64}, {zv} : {v64}")
        mag = c.fresh("mag")
        c.emit(f"{mag} = math.absi {d64} : {v64}")
        off = c.add(c.mul(mag, c.splat(slot), v64), iota, v64)
        x = words(col, range(d))
        y = words(col, range(d, 2 * d))
        ny = words(c.add(c.splat("%neg_off"), col, v64) if per_lane else c.add("%neg_off", col), range(d, 2 * d))
        ys = []
        for yk, nk in zip(y, ny):
            ysk = []
            for a, b in zip(yk, nk):
                r = c.fresh("ys")
                c.emit(f"{r} = arith.select {neg}, {b}, {a} : {vb}, {v32}")
                ysk.append(r)
            ys.append(ysk)
        Q = to52(x) + to52(ys)
        ptrs = [c.gep(c.gep("%bk", c.const(q * LANES), "i64"), off, "i64", vector=True) for q in range(K52)]
        acc = [c.gather(p, "i64") for p in ptrs]
        res = _rare(c, "mstep", acc + [w for q in Q for w in q], K52)
        for v, p in zip(res, ptrs):
            c.scatter(v, p, "i64")

    # ---- reduction: r, a in slots NB + 1, NB + 2 (zeroed by the caller)
    def slot_ptrs(s):
        base = c.gep("%bk", c.mul(s, slot), "i64")
        return [c.gep(base, c.const(q * LANES), "i64") for q in range(K52)]

    # one step a trip, one step in the code (each inlined copy is compiled again): trip 2k
    # is r += bucket[NB - k], trip 2k + 1 is a += r
    r_slot, a_slot = c.add("%NB", one), c.add("%NB", c.const(2))
    ap = slot_ptrs(a_slot)
    with c.loop(zero, c.add("%NB", "%NB"), one) as t:
        odd = c.cmp("ne", c.and_(t, one), zero)
        b = c.bin("subi", "%NB", c.shr(t, one))
        x_slot = c.fresh("xs")
        c.emit(f"{x_slot} = arith.select {odd}, {a_slot}, {r_slot} : i64")
        y_slot = c.fresh("ys")
        c.emit(f"{y_slot} = arith.select {odd}, {r_slot}, {b} : i64")
        xp = slot_ptrs(x_slot)
        args = [c.load(p, v64, 8) for p in xp] + [c.load(p, v64, 8) for p in slot_ptrs(y_slot)]
        v = _rare(c, "pstep", args, K52)
        for x, p in zip(v, xp):
            c.store(x, p, v64, 8)
    for p, q in zip(ap, range(K52)):
        c.store(c.load(p, v64, 8), c.gep("%out", c.const(q * LANES), "i64"), v64, 8)
    params = ", ".join(f"%{n}: {'!llvm.ptr' if t == 'p' else 'i64'}" for n, t in PARAMS.items())
    name = "msm_units" if per_lane else "msm_windows"
    return "\n".join([f"  func.func @{name}({params}) {{"] + c.lines + ["    return", "  }"])


COMBINE_PARAMS = {"T": "p", "G": "i", "shift": "i", "lane_shift": "i", "out": "p"}


def _combine_function(GS, F) -> str:
    """@msm_combine: lane l of V = sum_g 2^(shift·g)·T[g] by Horner over the groups, then the
    lanes folded, sum_l 2^(lane_shift·l)·V_l, stored as words into out (4d·L, 8) int32, every
    lane the same point (T: G + 2 slots of K52·8 int64, the last two scratch for V and the
    fold). With windows of c bits, shift = 8c and lane_shift = c: lane l holds the windows
    l, l + 8, ... of the scalar, and the fold weighs them among each other, which on the
    host was ~50 group operations on Python ints. The fold is one lane's work done in all
    eight alike: 7·(lane_shift + 1) steps."""
    d, L, n52 = GS.degree, F.limbs32, F.limbs52
    K52 = 4 * d * n52
    c = Code(LANES)
    v32, v64 = f"vector<{LANES}xi32>", f"vector<{LANES}xi64>"
    one, zero = c.const(1), c.const(0)
    slot = c.const(K52 * LANES)

    def slot_ptrs(s):
        base = c.gep("%T", c.mul(s, slot), "i64")
        return [c.gep(base, c.const(q * LANES), "i64") for q in range(K52)]

    vp = slot_ptrs("%G")
    top = slot_ptrs(c.bin("subi", "%G", one))
    for a, b in zip(top, vp):
        c.store(c.load(a, v64, 8), b, v64, 8)
    with c.loop(zero, c.bin("subi", "%G", one), one) as i:
        with c.loop(zero, "%shift", one):
            v = _call(c, "dstep", [c.load(p, v64, 8) for p in vp], K52, inline=False)
            for x, p in zip(v, vp):
                c.store(x, p, v64, 8)
        t = [c.load(p, v64, 8) for p in slot_ptrs(c.bin("subi", c.bin("subi", "%G", c.const(2)), i))]
        v = _rare(c, "pstep", [c.load(p, v64, 8) for p in vp] + t, K52, inline=False)
        for x, p in zip(v, vp):
            c.store(x, p, v64, 8)
    # the fold, from lane 7 down: lane l of V is the word at q·8 + l of each of its limbs q
    fp = slot_ptrs(c.add("%G", one))
    vbase = c.gep("%T", c.mul("%G", slot), "i64")

    def lane(li):
        return [c.splat(c.load(c.gep(vbase, c.add(c.const(q * LANES), li), "i64"), "i64", 8)) for q in range(K52)]
    for x, p in zip(lane(c.const(LANES - 1)), fp):
        c.store(x, p, v64, 8)
    with c.loop(zero, c.const(LANES - 1), one) as i:
        with c.loop(zero, "%lane_shift", one):
            v = _call(c, "dstep", [c.load(p, v64, 8) for p in fp], K52, inline=False)
            for x, p in zip(v, fp):
                c.store(x, p, v64, 8)
        v = _rare(c, "pstep", [c.load(p, v64, 8) for p in fp] + lane(c.bin("subi", c.const(LANES - 2), i)), K52,
                  inline=False)
        for x, p in zip(v, fp):
            c.store(x, p, v64, 8)
    v = [c.load(p, v64, 8) for p in fp]
    for k in range(4 * d):
        ws = c.call("to32", v[k * n52:(k + 1) * n52], L, v64, v32)
        for j, w in enumerate(ws):
            c.store(w, c.gep("%out", c.const((k * L + j) * LANES), "i32"), v32, 4)
    params = ", ".join(f"%{n}: {'!llvm.ptr' if t == 'p' else 'i64'}" for n, t in COMBINE_PARAMS.items())
    return "\n".join([f"  func.func @msm_combine({params}) {{"] + c.lines + ["    return", "  }"])


def module_text(GS, ifma: bool) -> str:
    F = _record(GS).fq
    return "module {\n" + "\n".join(_step_functions(GS, F, ifma) + [_windows_function(GS, F),
                                                                     _windows_function(GS, F, per_lane=True),
                                                                     _combine_function(GS, F)]) + "\n}"


# =============================================================================
# Host wrapper
# =============================================================================
_libs: dict = {}
_lock = threading.Lock()


def available() -> bool:
    """Whether the loop runs here: 8-lane vectors (AVX-512) and a compiler or a cached build."""
    return cpu_options("fp64")["lanes"] == LANES


def library(GS):
    """The compiled module for group GS (generated, compiled and cached on first use). The
    module text's digest is remembered per package source (`cache.memo`): tracing and
    lowering the formulas takes a process about a second, which a warm cache should not."""
    G = _record(GS)
    opts = cpu_options("fp64")
    k = (G.name, opts["ifma"])
    with _lock:
        lib = _libs.get(k)
        if lib is None:
            text = functools.cache(lambda: module_text(G, opts["ifma"]))    # made at most once
            digest = cache.memo(f"msm-small-{G.name}-ifma{int(opts['ifma'])}",
                                lambda: hashlib.sha256(text().encode()).hexdigest())
            key = cache.entry_key(digest, TEMPLATE_VERSION, "cpu-msm-small" + json.dumps(opts, sort_keys=True))
            entry = cache.lookup(key) or cache.build(
                key, lambda dst: (compile_module(text(), dst), {"kind": "msm_small_cpu"})[1])
            lib = ctypes.CDLL(str(entry / "kernels.so"))
            for name, params in (("msm_windows", PARAMS), ("msm_units", PARAMS), ("msm_combine", COMBINE_PARAMS)):
                f = getattr(lib, name)
                f.argtypes = [ctypes.c_void_p if t == "p" else ctypes.c_int64 for t in params.values()]
                f.restype = None
            _libs[k] = lib
        return lib


def lane_sums(GS, table: np.ndarray, neg_off: int, cols: np.ndarray, digits: np.ndarray,
              c: int) -> np.ndarray:
    """The MSM sum_l 2^(c·l)·V_l, V_l = sum_g 2^(8c·g)·T_(8g+l) for the 8 lanes l, T_t =
    sum_v v·(the bases whose digit in window t is ±v, signed): (4d·L, 8) int32 storage
    words, XYZZ (the identity: ZZ = 0), the same point in every lane (`combine` reads one).

    table: point-major affine table (columns, 2d·L) int32 (`ops.msm.bases`), -Q of column
    i at column neg_off + i (an identity base: all-zero words); cols (m,) int64: the
    entries' columns; digits (W, m) int32 of windows of c
    bits, |digit| <= 2^(c-1)."""
    from ..runtime.threads import host_parallel
    sums = _Sums(GS, table, neg_off, cols, digits, c)
    host_parallel(sums.groups, lambda lo, hi: [sums.run(g) for g in range(lo, hi)],
                  sums.groups * max(sums.m, 1) * 1024, min_work=0)
    return sums.finish()


class _Sums:
    """One MSM's calls: `run(g)` accumulates and reduces group g of eight windows (one
    msm_windows call, any thread), `finish()` weights the groups (msm_combine)."""

    def __init__(self, GS, table, neg_off: int, cols, digits, c: int):
        G = _record(GS)
        d, L = G.degree, G.fq.limbs32
        K52 = 4 * d * G.fq.limbs52
        W, m = digits.shape
        if table.dtype != np.int32 or not table.flags.c_contiguous or table.shape[1] != 2 * d * L:
            raise ValueError(f"lane_sums: a contiguous int32 point-major table of {2 * d * L} words a "
                             f"column, got {table.dtype} {table.shape}")
        if cols.shape != (m,):
            raise ValueError(f"lane_sums: {m} digits a window but {cols.shape} columns")
        if not 1 <= c <= MAX_WINDOW:
            raise ValueError(f"lane_sums: windows of 1 to {MAX_WINDOW} bits, got {c}")
        cols = np.ascontiguousarray(cols, dtype=np.int64)
        if m and not (cols.min() >= 0 and neg_off >= 0 and neg_off + cols.max() < table.shape[0]):
            raise ValueError("lane_sums: a column outside the table")
        self.NB = 1 << (c - 1)
        if m and int(np.abs(digits).max()) > self.NB:
            raise ValueError(f"lane_sums: a digit past ±2^{c - 1}")
        self.groups = max(1, -(-W // LANES))
        self.digits = digits
        self.T = np.zeros((self.groups + 2, K52, LANES), dtype=np.int64)     # + V and the fold
        self.lib, self.slot, self.words = library(G), K52 * LANES, 4 * d * L
        self.table, self.neg_off, self.cols, self.c, self.m = table, neg_off, cols, c, m

    def run(self, g: int) -> None:
        dg = self.digits[g * LANES:(g + 1) * LANES]
        if dg.shape[0] < LANES:                     # the last group's missing windows: zero digits
            dg = np.concatenate([dg, np.zeros((LANES - dg.shape[0], self.m), dtype=np.int32)])
        live = np.flatnonzero(dg.any(axis=0))       # entries with a digit in this group
        dg = np.ascontiguousarray(dg[:, live].T)
        cg = np.ascontiguousarray(self.cols[live])
        bk = np.zeros((self.NB + 3) * self.slot, dtype=np.int64)
        self.lib.msm_windows(self.table.ctypes.data, self.table.shape[1], self.neg_off, cg.ctypes.data,
                             dg.ctypes.data, len(live), bk.ctypes.data, self.NB, self.T[g].ctypes.data)

    def finish(self) -> np.ndarray:
        from ..runtime import counters
        out = np.empty((self.words, LANES), dtype=np.int32)
        self.lib.msm_combine(self.T.ctypes.data, self.groups, LANES * self.c, self.c, out.ctypes.data)
        counters.launch(self.groups + 1)
        return out


def combine(GS, *parts):
    """The sum of `msm_combine`'s points (each part (4d·L, 8) int32 words, the point in
    every lane; None: no entries of that kind), as an affine Python-int point (None: the
    identity): lane 0 of each to the host, one inversion in all."""
    from ..algebra.curves import lincomb
    G = _record(GS)
    d, L = G.degree, G.fq.limbs32
    blocks = [np.ascontiguousarray(w.reshape(4 * d, L, LANES)[:, :, :1].transpose(0, 2, 1))
              for w in parts if w is not None]
    if not blocks:
        return None
    return lincomb(G, None, [(1, P) for P in xyzz_to_affine(G, np.concatenate(blocks, axis=1))])


UNITS_MIN = 256     # ±1 scalars from which `_Units` sums them apart from other scalars: its
                    # call and the host's conversion of its lanes cost about this many trips of
                    # the windows loop (measured when the host added the eight lanes; the fold
                    # now does). A job of ±1 scalars alone takes `_Units` whatever their number:
                    # the windows loop would spend a call a group of windows (and a bucket
                    # reduction each) on digits that are all in the first window


class _Units:
    """Σ ±P_i over the entries whose scalar is 1 or r − 1 (a 0/1 witness's), eight bases a
    trip (`msm_units`): lane l adds entries l, l + 8, ...; `run()` folds the lanes and
    leaves the sum as (4d·L, 8) int32 storage words (every lane alike) in `words`."""

    def __init__(self, G, table, neg_off: int, cols: np.ndarray, signs: np.ndarray):
        d, L = G.degree, G.fq.limbs32
        if table.dtype != np.int32 or not table.flags.c_contiguous or table.shape[1] != 2 * d * L:
            raise ValueError(f"msm_units: a contiguous int32 point-major table of {2 * d * L} words a "
                             f"column, got {table.dtype} {table.shape}")
        if len(cols) and not (cols.min() >= 0 and neg_off >= 0 and neg_off + cols.max() < table.shape[0]):
            raise ValueError("msm_units: a column outside the table")
        self.K52 = 4 * d * G.fq.limbs52
        self.n = -(-len(cols) // LANES)
        self.cols = np.zeros(self.n * LANES, dtype=np.int64)
        self.cols[:len(cols)] = cols
        self.dig = np.zeros(self.n * LANES, dtype=np.int32)        # padding: digit 0, a slot never read
        self.dig[:len(cols)] = signs
        self.lib, self.table, self.neg_off = library(G), table, neg_off
        self.words = np.empty((4 * d * L, LANES), dtype=np.int32)

    def run(self) -> None:
        from ..runtime import counters
        slot = self.K52 * LANES
        bk = np.zeros(4 * slot, dtype=np.int64)                   # NB = 1: slots 0, 1 and r, a
        T = np.zeros((3, self.K52, LANES), dtype=np.int64)
        self.lib.msm_units(self.table.ctypes.data, self.table.shape[1], self.neg_off, self.cols.ctypes.data,
                           self.dig.ctypes.data, self.n, bk.ctypes.data, 1, T.ctypes.data)
        self.lib.msm_combine(T.ctypes.data, 1, 0, 0, self.words.ctypes.data)   # one group, the lanes summed
        counters.launch(2)


def unit_sum(GS, table: np.ndarray, neg_off: int, cols, signs):
    """Σ signs_i·Q_(cols[i]) for signs ±1, as an affine Python-int point (None: the
    identity): one `_Units` call, eight bases a trip, its lanes folded in the call.
    For sums of a few hundred table points, such as a fixed base's multiple from its
    ladder of doublings (`groth16.blinding`). table, neg_off: as `lane_sums`'."""
    G = _record(GS)
    cols, signs = np.asarray(cols, dtype=np.int64).reshape(-1), np.asarray(signs, dtype=np.int32).reshape(-1)
    if cols.shape != signs.shape or not np.all(np.abs(signs) == 1):
        raise ValueError(f"unit_sum: a sign of ±1 for each of the {cols.size} columns")
    units = _Units(G, table, neg_off, cols, signs)
    units.run()
    return combine(G, units.words)


def unit_signs(words: np.ndarray, r: int) -> np.ndarray:
    """Per scalar (rows of standard-form words, r the group's order): 1 where it is 1, -1
    where it is r − 1, 0 elsewhere: the entries `_Units` can take."""
    one = (words[:, 0] == 1) & ~words[:, 1:].any(axis=1)
    minus = (words == _words_of(r - 1, words.shape[1])).all(axis=1)
    return one.astype(np.int8) - minus.astype(np.int8)


def window_entries(signs: np.ndarray) -> int:
    """How many of the scalars with these `unit_signs` the windows loop takes: all of them,
    or, from `UNITS_MIN` ±1 scalars or where every scalar is ±1, the others (`_Units` sums
    those): the n that `lanes_window` chooses the window for."""
    units = int(np.count_nonzero(signs))
    return len(signs) - units if units >= UNITS_MIN or 0 < units == len(signs) else len(signs)


class _Job:
    """One MSM of `msm_many`: its calls (`run(g)`, g < `calls`: the groups of eight windows,
    then the ±1 entries' `_Units` call when it has one) and its point (`point()`)."""

    def __init__(self, GS, table, neg_off: int, cols, words, c: int | None, bits: int | None = None,
                 signs: np.ndarray | None = None):
        G = _record(GS)
        bits = bits or G.r.bit_length()
        w = np.asarray(words, dtype=np.uint32)
        w = w if w.ndim == 2 else w.reshape(len(cols), -1)
        cols = np.asarray(cols, dtype=np.int64)
        self.G, self.units, self.sums = G, None, None
        signs = unit_signs(w, G.r) if signs is None else signs
        if window_entries(signs) < len(signs):
            unit = signs != 0
            self.units = _Units(G, table, neg_off, cols[unit], signs[unit])
            cols, w = cols[~unit], w[~unit]
        self.c = c or lanes_window(len(cols), bits)
        if len(cols) or self.units is None:
            digits = signed_digits(w, self.c, n_windows(bits, self.c))
            self.sums = _Sums(G, table, neg_off, cols, digits, self.c)
        self.calls = (self.sums.groups if self.sums is not None else 0) + (self.units is not None)

    def run(self, g: int) -> None:
        if self.sums is not None and g < self.sums.groups:
            self.sums.run(g)
        else:
            self.units.run()

    def point(self):
        return combine(self.G, self.sums.finish() if self.sums is not None else None,
                       self.units.words if self.units is not None else None)


@functools.lru_cache(maxsize=None)
def _words_of(value: int, n: int) -> np.ndarray:
    return np.frombuffer(value.to_bytes(4 * n, "little"), dtype="<u4")


def lanes_window(n: int, bits: int) -> int:
    """The window of the lanes loop for n entries, by its cost in loop steps (one 8-lane
    mixed addition): a group of eight windows costs a step per entry, two full additions
    (~1.5 steps each) per bucket in its reduction and a call's fixed cost (~48 steps of
    host work), and a window's digits ~4 steps. Few entries thus take wider windows than
    their buckets alone would ask: fewer groups and fewer digits to make. The host costs
    are fitted to single-thread timings of every window for 2 to 4096 scalars, G1 and G2
    alike (bench/results/msm_lanes_window_sweep.json; the fit in the commit that set them)."""
    def steps(c):
        W = n_windows(bits, c)
        return -(-W // LANES) * (n + 3 * (1 << (c - 1)) + 48) + 4 * W
    return min(range(1, MAX_WINDOW + 1), key=steps)


def msm(GS, table: np.ndarray, neg_off: int, cols: np.ndarray, words: np.ndarray, c: int | None = None):
    """sum_i k_i·Q_(cols[i]) as an affine Python-int point (None: the identity): the scalars
    k_i as standard-form words (m, Lr), signed digits of c bits (default `lanes_window`),
    `lane_sums` and `combine`. table, neg_off: as `lane_sums`'."""
    return msm_many([(GS, table, neg_off, cols, words)], c)[0]


def msm_many(jobs, c: int | None = None, done=None, threads: int | None = None, bits: int | None = None) -> list:
    """`msm` of several jobs (GS, table, neg_off, cols, words[, signs: their `unit_signs`, where
    the caller has them]) at once: their groups of eight
    windows are one queue of calls that the threads take as they finish, in the jobs'
    order, so that no core idles at the end of an MSM of few groups (three groups on two
    cores leave one idle a third of the time). A job's digits are made when its first
    group is taken, and its arrays go when its last is done: about two jobs' at a time.
    done(k): called once job k's point is made (its table is no longer read by it).
    threads: how many threads take calls; 1: only the caller's, for jobs of a few points,
    which would otherwise wait for a pool busy elsewhere. By default the caller's budget
    (`launch_threads`) is read before every call, so an MSM that began beside other work
    gains threads when that work ends (`runtime.threads.elastic`). bits: every
    scalar is below 2^bits (default: the group order's bits), so only the windows of those
    bits are summed (`key_check`'s 64-bit combinations)."""
    from ..runtime.threads import elastic
    out: list = [None] * len(jobs)
    sums: list = [None] * len(jobs)
    left = [0] * len(jobs)              # a job's calls not yet done
    groups = [0] * len(jobs)
    lock = threading.Lock()
    at = [0, 0]                 # the next call: job, group

    def take():
        with lock:
            while at[0] < len(jobs):
                k, g = at
                if g == 0:
                    sums[k] = _Job(*jobs[k][:5], c, bits, *jobs[k][5:])
                    groups[k] = left[k] = sums[k].calls
                if g < groups[k]:
                    at[1] += 1
                    return functools.partial(call, sums[k], k, g)
                at[0], at[1] = k + 1, 0         # (sums[k] may be gone already: its calls are done)
            return None

    def call(job, k: int, g: int):
        job.run(g)
        with lock:
            left[k] -= 1
            last = left[k] == 0
        if last:
            out[k] = job.point()
            sums[k] = None
            if done is not None:
                done(k)
    elastic(take, threads=threads)
    return out


def _record(GS):
    """The group's record (`algebra.curves`): of a GroupSpace, or the record itself (host
    code without torch)."""
    return getattr(GS, "params", GS)
