"""Triton kernels of the device-resident MSM: bucket accumulation, bucket reduction, windows.

The group arithmetic is the compiler's: the `ec` programs of `point_formulas` (`f_add`: P + Q
with the cross differences h, r; `_f_double`; `_f_neg`) are traced, lowered by the field
pipeline and limbs-to-triton, and their device functions (`kernel_0_fn` of each, renamed)
are pasted into one module with the kernels below. What a straight-line formula cannot do
is done here, branch-free: `padd` is the complete XYZZ addition, choosing per lane with
`tl.where` between the incomplete sum, the doubling (P = Q, computed only when some lane
of the block needs it), the identity (P = -Q) and the other operand (an identity operand,
ZZ = 0). Values are canonical (< p), so a component is zero exactly when its words are.

A point is K = 4·degree components of L words (X, Y, ZZ, ZZZ, each an Fq2 pair for G2),
held as K·L uint32 tensors of [BLOCK] lanes; in memory a point array is int32 with a
column stride, a word stride and a component stride (`PointTensor` data (L, K, n):
1, K·n, n).

    accumulate[lanes]    lane j sums one segment (at most S entries) of one bucket: the
                         lanes of bucket b are seg_end[b-1] .. seg_end[b]-1; entries are
                         the sorted digits (INDIRECT: entry e is base order[e] % n, negated
                         where its digit is < 0) or the previous round's segment sums
    bucket_reduce[rows·KB]   lane (row, k) walks buckets k·LB .. k·LB + LB - 1 of its row
                         from the top: run += B_v; acc += run (acc = sum_j (j+1)·B_j)
    window_sums[rows]    T_row = sum_k acc_k + LB·sum_k k·run_k (the small scan), LB = 2^LOG_LB
    combine[B]           Horner over a batch row's W window sums, C doublings between them

Kernel, host wrapper (`ops.msm.device`), reference (`ops.msm` on the CPU target, and the
tests' Python-int oracle).
"""
from __future__ import annotations

import threading

import torch

from ..runtime import cache
from . import msm_ec
from ..runtime.triton_modules import load_triton_module
from .msm_triton import _join_words, _split_words

TEMPLATE_VERSION = "1"

# the ec programs whose device functions the kernels call: (name, key, kinds, formula)
PROGRAMS = (("add", "add", ("xyzz", "xyzz")), ("double", "double", ("xyzz",)), ("neg", "neg", ("xyzz",)))


def _formulas():
    from . import point_formulas as P
    return {"add": P.f_add, "double": P.f_double, "neg": P.f_neg}


def device_function(compiled, name: str) -> tuple[str, list[int]]:
    """The compiled program's device function renamed `{name}_fn`, and for each program
    output the index of the function's result that holds it (each result is L words)."""
    plan = compiled.meta
    if plan["kernels"] != ["kernel_0"] or len(plan["calls"]) != 1:
        raise RuntimeError(f"{name}: the point program did not fuse into one kernel ({plan['kernels']}); "
                           "the device MSM needs one device function per formula")
    src = compiled.source
    a = src.index("@triton.jit\ndef kernel_0_fn(")
    b = src.index("@triton.jit\ndef kernel_0(")
    return src[a:b].replace("def kernel_0_fn(", f"def {name}_fn("), [v[1] for v in plan["outputs"]]


def _ident_words(GS) -> list[int]:
    """The identity as `GroupSpace.identity` stores it, word by word (component-major):
    X = Y = 1 in Montgomery form (2^(32·L) mod p; Fq2: (1, 0)), ZZ = ZZZ = 0. From Python
    ints: the module is made while an MSM runs, and reads no tensor."""
    L, d = GS.L, GS.degree
    one = (1 << 32 * L) % GS.params.p
    comps = [0] * GS.K
    comps[0] = comps[d] = one
    return [(comps[k] >> 32 * j) & 0xFFFFFFFF for k in range(GS.K) for j in range(L)]


class Shape:
    """Names of a point's words in generated code: component k, word j -> f"{p}{k}_{j}"."""

    def __init__(self, K: int, L: int, d: int):
        self.K, self.L, self.d = K, L, d

    def names(self, p: str) -> list[str]:
        return [f"{p}{k}_{j}" for k in range(self.K) for j in range(self.L)]

    def comp(self, p: str, k: int) -> list[str]:
        return [f"{p}{k}_{j}" for j in range(self.L)]


def _helpers(S: Shape, ident: list[int], out_maps: dict) -> str:
    K, L, d = S.K, S.L, S.d
    a, b = S.names("a"), S.names("b")
    # builtins only (and jit functions of this module): the standard library's jit functions
    # (tl.sum, tl.zeros) fail under the interpreter when triton was imported without it
    lines = ["@triton.jit", "def _any(x, y):", "    return x | y", ""]

    def zero(ws):
        return "((" + " | ".join(ws) + ") == 0)"
    # padd: the complete addition
    add_res = [f"s{q}_{j}" for q in range(K + 2 * d) for j in range(L)]
    lines += ["@triton.jit", f"def padd({', '.join(a + b)}):",
              f"    {', '.join(add_res)} = add_fn({', '.join(a + b)})"]
    # program outputs of add: K components of the sum, then h (d), then r (d)
    om = out_maps["add"]

    def res(q):                 # words of program output q
        return [f"s{om[q]}_{j}" for j in range(L)]
    zz = [w for k in range(2 * d, 3 * d) for w in S.comp("a", k)]
    zzb = [w for k in range(2 * d, 3 * d) for w in S.comp("b", k)]
    hw = [w for q in range(K, K + d) for w in res(q)]
    rw = [w for q in range(K + d, K + 2 * d) for w in res(q)]
    dbl = [f"t{k}_{j}" for k in range(K) for j in range(L)]
    lines += [f"    aid = {zero(zz)}", f"    bid = {zero(zzb)}", f"    hz = {zero(hw)}", f"    rz = {zero(rw)}",
              "    same = hz & rz & (aid == 0) & (bid == 0)",
              "    opp = hz & (rz == 0) & (aid == 0) & (bid == 0)",
              # the doubling only where a lane of the block needs it (P = Q is rare)
              "    if tl.reduce(same.to(tl.int32), 0, _any) > 0:",
              f"        {', '.join(_dbl_out(S, out_maps))} = double_fn({', '.join(a)})"]
    lines += [f"        {', '.join(dbl)} = {', '.join(_dbl_prog(S, out_maps))}",
              "    else:"]
    lines += [f"        {', '.join(dbl)} = {', '.join(a)}"]
    outs = []
    for k in range(K):
        for j in range(L):
            i = k * L + j
            sw = res(k)[j]
            idw = f"tl.full([], {ident[i]}, tl.uint32)"
            lines.append(f"    o{i} = tl.where(aid, {b[i]}, tl.where(bid, {a[i]}, tl.where(same, {dbl[i]}, "
                         f"tl.where(opp, {idw}, {sw}))))")
            outs.append(f"o{i}")
    lines.append(f"    return {', '.join(outs)}")
    lines.append("")
    # pdbl: doubling, the identity kept canonical
    lines += ["@triton.jit", f"def pdbl({', '.join(a)}):",
              f"    aid = {zero(zz)}",
              f"    {', '.join(_dbl_out(S, out_maps))} = double_fn({', '.join(a)})"]
    lines += [f"    {', '.join(dbl)} = {', '.join(_dbl_prog(S, out_maps))}"]
    lines.append("    return " + ", ".join(f"tl.where(aid, tl.full([], {ident[i]}, tl.uint32), {dbl[i]})"
                                          for i in range(K * L)))
    lines.append("")
    # pneg: -P (the identity stays the identity: its ZZ stays 0)
    om_n = out_maps["neg"]
    nres = [f"n{q}_{j}" for q in range(K) for j in range(L)]
    lines += ["@triton.jit", f"def pneg({', '.join(a)}):",
              f"    {', '.join(nres)} = neg_fn({', '.join(a)})",
              "    return " + ", ".join(f"n{om_n[k]}_{j}" for k in range(K) for j in range(L)), ""]
    # pnorm: the identity as stored (X = Y = 1), whatever X, Y a computation left
    lines += ["@triton.jit", f"def pnorm({', '.join(a)}):", f"    aid = {zero(zz)}",
              "    return " + ", ".join(f"tl.where(aid, tl.full([], {ident[i]}, tl.uint32), {a[i]})"
                                      for i in range(K * L)), ""]
    return "\n".join(lines) + "\n"


def _dbl_out(S: Shape, out_maps) -> list[str]:
    return [f"u{q}_{j}" for q in range(S.K) for j in range(S.L)]


def _dbl_prog(S: Shape, out_maps) -> list[str]:
    om = out_maps["double"]
    return [f"u{om[k]}_{j}" for k in range(S.K) for j in range(S.L)]


def _load(S: Shape, p: str, base: str, col: str, mask: str, lines: list, ind: str):
    """Words of the points at columns `col` ([BLOCK] int64) of array `base` (strides
    {base}_c, {base}_w, {base}_k), masked lanes all-zero words (the identity)."""
    LP = 1 << (S.L - 1).bit_length()
    lines.append(f"{ind}jj = tl.arange(0, {LP})")
    lines.append(f"{ind}wm = {mask}[:, None] & (jj < {S.L})[None, :]")
    for k in range(S.K):
        t = f"{p}t{k}"
        lines.append(f"{ind}{t} = tl.load({base} + {col}[:, None] * {base}_c + (jj * {base}_w)[None, :] + "
                     f"{k} * {base}_k, mask=wm, other=0).to(tl.uint32, bitcast=True)")
        names, body = {}, []
        _split_words(t, list(range(LP)), names, body, f"{p}{k}_x")
        lines += [ind + x for x in body]
        for j in range(S.L):
            lines.append(f"{ind}{p}{k}_{j} = {names[j]}")


def _store(S: Shape, p: str, base: str, col: str, mask: str, lines: list, ind: str = "    "):
    LP = 1 << (S.L - 1).bit_length()
    lines.append(f"{ind}jj = tl.arange(0, {LP})")
    lines.append(f"{ind}wm = {mask}[:, None] & (jj < {S.L})[None, :]")
    for k in range(S.K):
        names = {j: f"{p}{k}_{j}" for j in range(S.L)}
        names.update({j: f"{p}{k}_0" for j in range(S.L, LP)})
        body = []
        tile = _join_words(list(range(LP)), names, body, f"{p}s{k}")
        lines += [ind + x for x in body]
        lines.append(f"{ind}tl.store({base} + {col}[:, None] * {base}_c + (jj * {base}_w)[None, :] + {k} * {base}_k, "
                     f"{tile}.to(tl.int32, bitcast=True), mask=wm)")


def _arr(name: str) -> str:
    return f"{name}, {name}_c, {name}_w, {name}_k"


def _ident_init(S: Shape, p: str, ident: list[int], lines: list, ind: str = "    "):
    for k in range(S.K):
        for j in range(S.L):
            lines.append(f"{ind}{p}{k}_{j} = tl.full([BLOCK], {ident[k * S.L + j]}, tl.uint32)")


def _call(fn: str, S: Shape, out: str, *args: str) -> str:
    ins = [w for a in args for w in S.names(a)]
    return f"{', '.join(S.names(out))} = {fn}({', '.join(ins)})"


def kernels_source(S: Shape, ident: list[int]) -> str:
    L = []
    # -- accumulate ------------------------------------------------------------------------
    L += ["@triton.jit",
          f"def accumulate({_arr('src')}, order, digits, n_points, seg_end, start, {_arr('out')}, n_lanes, NB,",
          "               LOG_NB: tl.constexpr, S: tl.constexpr, INDIRECT: tl.constexpr, BLOCK: tl.constexpr):",
          "    j = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)",
          "    live = j < n_lanes",
          # the lane's bucket: the first b with seg_end[b] > j (a binary search in registers)
          "    lo = tl.full([BLOCK], 0, tl.int64)",
          "    hi = tl.full([BLOCK], 0, tl.int64) + NB",
          "    for _ in range(LOG_NB):",
          "        act = lo < hi",
          "        mid = (lo + hi) // 2",
          "        v = tl.load(seg_end + mid, mask=act, other=0)",
          "        up = act & (v <= j)",
          "        lo = tl.where(up, mid + 1, lo)",
          "        hi = tl.where(act & (v > j), mid, hi)",
          "    valid = live & (lo < NB)",
          "    b = tl.minimum(lo, NB - 1)",
          "    before = tl.load(seg_end + b - 1, mask=valid & (b > 0), other=0)",
          "    e0 = tl.load(start + b, mask=valid, other=0) + (j - before) * S",
          "    e1 = tl.minimum(e0 + S, tl.load(start + b + 1, mask=valid, other=0))"]
    _ident_init(S, "c", ident, L)
    L += ["    for s in range(S):",
          "        e = e0 + s",
          "        m = valid & (e < e1)",
          "        if INDIRECT:",
          "            o = tl.load(order + e, mask=m, other=0)",
          "            col = o % n_points",
          "            neg = tl.load(digits + o, mask=m, other=0) < 0",
          "        else:",
          "            col = e"]
    _load(S, "p", "src", "col", "m", L, "        ")
    L += ["        if INDIRECT:",
          "            " + _call("pneg", S, "q", "p")]
    for w, x in zip(S.names("p"), S.names("q")):
        L.append(f"            {w} = tl.where(neg, {x}, {w})")
    L.append("        " + _call("padd", S, "c", "c", "p"))
    _store(S, "c", "out", "j", "live", L)
    L.append("")
    # -- bucket_reduce ---------------------------------------------------------------------
    L += ["@triton.jit",
          f"def bucket_reduce({_arr('bk')}, {_arr('sa')}, {_arr('sr')}, n_lanes, N,",
          "                  KB: tl.constexpr, LB: tl.constexpr, BLOCK: tl.constexpr):",
          "    lane = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)",
          "    live = lane < n_lanes",
          "    row = lane // KB",
          "    k = lane % KB"]
    _ident_init(S, "r", ident, L)
    _ident_init(S, "a", ident, L)
    L += ["    for i in range(LB):",
          "        col = row * N + k * LB + (LB - 1 - i)"]
    _load(S, "p", "bk", "col", "live", L, "        ")
    L += ["        " + _call("padd", S, "r", "r", "p"),
          "        " + _call("padd", S, "a", "a", "r")]
    _store(S, "r", "sr", "lane", "live", L)
    _store(S, "a", "sa", "lane", "live", L)
    L.append("")
    # -- window_sums -----------------------------------------------------------------------
    L += ["@triton.jit",
          f"def window_sums({_arr('sa')}, {_arr('sr')}, {_arr('tw')}, rows,",
          "                KB: tl.constexpr, LOG_LB: tl.constexpr, BLOCK: tl.constexpr):",
          "    row = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)",
          "    live = row < rows"]
    _ident_init(S, "t", ident, L)
    _ident_init(S, "r", ident, L)
    _ident_init(S, "a", ident, L)
    L += ["    for i in range(KB):",
          "        col = row * KB + i"]
    _load(S, "p", "sa", "col", "live", L, "        ")
    L += ["        " + _call("padd", S, "t", "t", "p"),
          "    for i in range(KB - 1):",
          "        col = row * KB + (KB - 1 - i)"]
    _load(S, "p", "sr", "col", "live", L, "        ")
    L += ["        " + _call("padd", S, "r", "r", "p"),
          "        " + _call("padd", S, "a", "a", "r"),
          "    for i in range(LOG_LB):",
          "        " + _call("pdbl", S, "a", "a"),
          "    " + _call("padd", S, "t", "t", "a")]
    _store(S, "t", "tw", "row", "live", L)
    L.append("")
    # -- combine ---------------------------------------------------------------------------
    L += ["@triton.jit",
          f"def combine({_arr('tw')}, {_arr('res')}, B, W: tl.constexpr, C: tl.constexpr, BLOCK: tl.constexpr):",
          "    bb = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)",
          "    live = bb < B",
          "    col = bb * W + (W - 1)"]
    _load(S, "x", "tw", "col", "live", L, "    ")
    L += ["    for i in range(W - 1):",
          "        for q in range(C):",
          "            " + _call("pdbl", S, "x", "x"),
          "        col = bb * W + (W - 2 - i)"]
    _load(S, "p", "tw", "col", "live", L, "        ")
    L += ["        " + _call("padd", S, "x", "x", "p"),
          "    " + _call("pnorm", S, "x", "x")]
    _store(S, "x", "res", "bb", "live", L)
    return "\n".join(L) + "\n"


def module_source(GS, strategy, device_type: str) -> str:
    """The device MSM's Triton module for group GS: device functions, helpers, kernels."""
    fns, out_maps = [], {}
    forms = _formulas()
    for name, key, kinds in PROGRAMS:
        c = msm_ec.compiled(GS.params, key, kinds, forms[name], device_type, strategy, "triton")
        src, om = device_function(c, name)
        fns.append(src)
        out_maps[name] = om
        limbs = c.limbs
    S = Shape(GS.K, limbs, GS.degree)
    ident = _ident_words(GS)
    head = '"""Generated by zktensor (kernels/msm_device.py). Do not edit: the kernel cache rewrites it."""\n' \
           "import triton\nimport triton.language as tl\n\n"
    return head + "\n".join(fns) + "\n" + _helpers(S, ident, out_maps) + "\n" + kernels_source(S, ident)


_modules: dict = {}
_lock = threading.Lock()


def module(GS, strategy, device_type: str, interpret: bool):
    """The loaded module (cached on disk by its source, and per process)."""
    from ..runtime.target import choose
    strategy = choose(device_type, strategy, "triton")[0]
    k = (GS.name, strategy, device_type, interpret)
    with _lock:
        mod = _modules.get(k)
        if mod is None:
            src = module_source(GS, strategy, device_type)
            key = cache.entry_key(src, TEMPLATE_VERSION, "triton-msm-device")

            def build(d):
                with open(f"{d}/kernels.py", "w") as f:
                    f.write(src)
                return {"kind": "msm_device", "kernels": ["accumulate", "bucket_reduce", "window_sums", "combine"]}
            entry = cache.lookup(key) or cache.build(key, build)
            mod = _modules[k] = load_triton_module(str(entry / "kernels.py"), interpret)
        return mod


def strides(t: torch.Tensor) -> list:
    """A point array (L, K, m) as kernel arguments: pointer, column, word, component strides."""
    return [t, t.stride(2), t.stride(0), t.stride(1)]
