"""Triton kernels of the device-resident MSM: bucket accumulation and the reduction chain.

The group arithmetic is the compiler's: the `ec` programs below are traced, lowered by the
field pipeline and limbs-to-triton, and their device functions (`kernel_0_fn` of each,
renamed) are pasted into one module with the kernels:

    prod_fn   the products of add-2008-s: (U1, S1, H, R, ZZ1·ZZ2, ZZZ1·ZZZ2) of P and Q
    fin_fn    the rest of add-2008-s from those six coordinates (`msm_triton.ADD_PARTS`)
    dblin_fn  six coordinates whose finish is 2P (`f_double_inputs`): dbl-2008-s-1 is the
              addition's finish on P's representative (4X, 8Y, 4ZZ, 8ZZZ) with U1 = X' - Y',
              S1 = Y' - M'/2, H = 2Y', R = M' (M' = 3X'^2 + a·ZZ'^2)
    neg_fn    -P
    mprod_fn  H and R of madd-2008-s, P in XYZZ plus an affine Q: the products that remain
              when ZZ2 = ZZZ2 = 1 (2M against prod_fn's 6M), the other four of the six
              coordinates being P's own
    kin_fn    four coordinates whose finish, with H = R = 1, is P itself (`f_keep_inputs`:
              U1 = -2X, S1 = -(6X + 8Y), ZZ12 = 4ZZ, ZZZ12 = 8ZZZ; additions only)
    cneg_fn   -y of a coordinate (an affine -Q is (x, -y))

so a kernel holds one instance of the finish whether it adds, doubles or returns an
operand. Each program is fused into one device function whatever the group's
`triton_cuts` say: those cut the elementwise point kernels for the register budget, but
the device MSM's loop needs one function per formula, so the big groups (BLS12-381 G2,
MNT4-753 G1) compile here with register spills (reported by `bench/sass_report.py`,
tests/ec/test_msm_device.py).

What a straight-line formula cannot do is done here, branch-free per lane: `padd` (the
accumulation's) is the complete XYZZ addition, `pstep` (the chain's) the same or a
doubling, by its trip. Every case is a choice of the finish's six inputs,
made per lane with `tl.where`: the products (P + Q), the doubling's (P = Q), `kin_fn`'s
for the operand that is the result (the other one is the identity, ZZ = 0), and
ZZ12 = ZZZ12 = 0 for the identity (P = -Q); the rare ones are computed only when some lane
of the block needs them, and an identity result is stored as `GroupSpace.identity` stores
it. Choosing inputs, not results, keeps no operand live across the finish's eight
products: selecting the result after it held a whole point (4·L words) in registers
there. `padd` doubles P = Q from the products, (U1, S1, ZZ12, ZZZ12), which is P in XYZZ
form, not from P's own words (the accumulation's SASS before and after:
`bench/results/sass_double_from.md`). Values are canonical (< p), so a component is zero
exactly when its words are.

`mstep` is the same complete addition with an affine second operand, its identity all-zero
words ((0, 0) lies on none of the curves: their b is nonzero).

A point is K = 4·degree components of L words (X, Y, ZZ, ZZZ, each an Fq2 pair for G2),
held as K·L uint32 tensors of [BLOCK] lanes; in memory a point array is int32 with a
column stride, a word stride and a component stride (`PointTensor` data (L, K, n):
1, K·n, n).

    accumulate[lanes]   lane j sums one segment (at most S entries, the first of them the
                        sum's start; a block loops as often as its longest segment needs
                        more, so a round of one-entry segments only copies) of one bucket: the
                        lanes of bucket b are seg_end[b-1] .. seg_end[b]-1; entries are
                        the sorted digits (indirect: entry e is base order[e] % n, negated
                        where its digit is < 0) or the previous round's segment sums
    accumulate_affine[lanes]  the same over affine bases (L, 2·degree, n) with `mstep`: the
                        first round of `MSMConfig.mixed` (half the words a base to read, and
                        8M + 2S an addition against add-2008-s's 12M + 2S)
    chain[lanes]        lane i keeps a running sum r and an accumulator a: n_run steps
                        r += x_k; a += r for k = M-1 .. 0, x_k = src[run_off + i·M + k]
                        (so a = sum_k (k+1)·x_k; without the last a += r, last_a = 0:
                        a = sum_k k·x_k), then n_groups Horner groups (a += src[add_off +
                        i·M2 + M2-1-g], after d doublings of a in every group but the
                        first), then r_dbl doublings of r; stores r and a. Its first
                        trips, which add to a sum still the identity, are copies. It is
                        each level of the bucket reduction (blocks of m buckets: r = m·sum
                        of the block, a = its weighted sum; then blocks of G blocks merged
                        as r = G·sum r_k, a = sum k·r_k + sum a_k) and the window
                        combination (Horner, C doublings between windows)

Every size is a runtime argument and no argument is specialised on its value or alignment,
so each kernel compiles once per group, strategy and BLOCK (a warm-up at any size serves
every size); only BLOCK is a constexpr.

Kernel, host wrapper (`ops.msm.device`), reference (`ops.msm` on the CPU target, and the
tests' Python-int oracle).
"""
from __future__ import annotations

import torch

from ..passes.limbs_to_triton import HEADER
from ..runtime import counters
from . import msm_ec
from .elementwise import get_program
from ..runtime.triton_modules import loaded_module, triton_mode
from ..runtime.triton_passes import skip_coalesce
from .msm_triton import ADD_PARTS, _join_words, _split_words, num_warps

TEMPLATE_VERSION = "8"
KERNELS = ("accumulate", "accumulate_affine", "chain")


def f_double_inputs(P):
    """The six coordinates (U1, S1, H, R, ZZ12, ZZZ12) whose add-2008-s finish is 2P (see
    the module docstring): only additions but X^2 (and a·ZZ^2 where a != 0)."""
    X, Y, ZZ, ZZZ = P.coords()
    XX = X.square()
    M = XX + XX + XX
    a = P.prog.group.a
    if a not in (0, (0, 0)):
        M = M + ZZ.square() * a
    X4, Y8, M8 = _twice(X, 2), _twice(Y, 3), _twice(M, 3)
    return X4 - Y8, Y8 - M8, Y8 + Y8, M8 + M8, _twice(ZZ, 2), _twice(ZZZ, 3)


def _twice(v, k: int):
    """2^k·v by k additions."""
    for _ in range(k):
        v = v + v
    return v


def f_keep_inputs(P):
    """Four of six coordinates (U1 = -2X, S1 = -(6X + 8Y), ZZ12 = 4ZZ, ZZZ12 = 8ZZZ; with
    H = R = 1) whose add-2008-s finish is P itself, as (4X, 8Y, 4ZZ, 8ZZZ), the same point
    (lambda = 2): X3 = 1 - 1 + 4X, Y3 = (-2X - 4X) + 6X + 8Y. Additions only; lambda = 1 would
    need X/2. A step whose result is one of its operands runs the finish on these instead of
    keeping that operand live across it (`mstep`)."""
    X, Y, ZZ, ZZZ = P.coords()
    X2 = X + X
    return -X2, -(_twice(X2, 1) + X2 + _twice(Y, 3)), _twice(ZZ, 2), _twice(ZZZ, 3)


def _f_neg(P):
    return -P


def f_mixed_products(P, Q):
    """H and R of madd-2008-s for P in XYZZ and Q affine (ZZ2 = ZZZ2 = 1, so U1 = X1 and
    S1 = Y1): the other four of the finish's six coordinates are P's own (X1, Y1, ZZ1, ZZZ1)."""
    X1, Y1, ZZ1, ZZZ1 = P.coords()
    x2, y2 = Q.coords()
    return x2 * ZZ1 - X1, y2 * ZZZ1 - Y1


def _f_coord_neg(y):
    return -y


def _programs():
    (_, k_prod, f_prod), (_, k_fin, f_fin) = ADD_PARTS
    return (("prod", "add_products", ("xyzz", "xyzz"), f_prod),
            ("fin", "add_finish", ("coord",) * 6, f_fin),
            ("dblin", "double_inputs", ("xyzz",), f_double_inputs),
            ("neg", "neg", ("xyzz",), _f_neg),
            ("mprod", "mixed_products", ("xyzz", "affine"), f_mixed_products),
            ("kin", "keep_inputs", ("xyzz",), f_keep_inputs),
            ("cneg", "coord_neg", ("coord",), _f_coord_neg))


def device_function(compiled, name: str) -> tuple[str, list[int], int]:
    """The compiled program's device function renamed `{name}_fn`, for each program output
    the index of the function's result that holds it (each result is L words), and the
    number of results. The function must take every program input, in order."""
    plan = compiled.meta
    if plan["kernels"] != ["kernel_0"] or len(plan["calls"]) != 1:
        raise RuntimeError(f"{name}: the point program did not fuse into one kernel ({plan['kernels']}); "
                           "the device MSM needs one device function per formula")
    call = plan["calls"][0]
    if [tuple(v) for v in call["inputs"]] != [(i, None) for i in range(plan["n_inputs"])]:
        raise RuntimeError(f"{name}: the device function does not take every program input in order")
    src = compiled.source
    a = src.index("@triton.jit\ndef kernel_0_fn(")
    b = src.index("@triton.jit\ndef kernel_0(")
    return (src[a:b].replace("def kernel_0_fn(", f"def {name}_fn("), [v[1] for v in plan["outputs"]],
            len(call["outputs"]))


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

    def names(self, p: str, comps: int | None = None) -> list[str]:
        return [f"{p}{k}_{j}" for k in range(self.K if comps is None else comps) for j in range(self.L)]

    def comp(self, p: str, k: int) -> list[str]:
        return [f"{p}{k}_{j}" for j in range(self.L)]

    def comps(self, p: str, ks) -> list[str]:
        return [w for k in ks for w in self.comp(p, k)]


def _zero(words) -> str:
    return "((" + " | ".join(words) + ") == 0)"


def _results(S: Shape, p: str, fn: dict) -> str:
    """`{p}0_0, ... = ` for all results of a device function (`fn`: its n_results)."""
    return ", ".join(S.names(p, fn["n"])) + " = "


def _finish(S: Shape, ident: list[int], fns: dict, t: list[str]) -> list[str]:
    """The end of `pstep` and `mstep`, from the six coordinates u (and the flags aid, bid,
    opp) to the returned words. A step whose result is one of its operands (`t`: that
    operand's XYZZ words, by lane) finishes on `kin_fn`'s inputs for it (H = R = 1), and
    P = -Q on ZZ12 = ZZZ12 = 0, both only where a lane of the block needs it: so no operand
    stays live across the finish, where selecting the result after it kept 4·L words of
    registers live through its eight products. The identity comes out as stored (X = Y = 1,
    ZZ = ZZZ = 0) whatever X3, Y3 the finish left."""
    K, L, d = S.K, S.L, S.d
    kin, fin = fns["kin"]["map"], fns["fin"]["map"]
    one = [ident[k * L + j] for k in range(d) for j in range(L)]            # 1 of Fq or Fq2
    lines = ["    keep = aid | bid",
             "    if tl.reduce((keep | opp).to(tl.int32), 0, _any) > 0:"]
    lines += [f"        {w} = {x}" for w, x in zip(S.names("t"), t)]
    lines.append(f"        {_results(S, 'h', fns['kin'])}kin_fn({', '.join(S.names('t'))})")
    # kin's outputs (U1, S1, ZZ12, ZZZ12) into u's components 0..2d and 4d..6d
    for q, src in [(q, q) for q in range(2 * d)] + [(4 * d + q, 2 * d + q) for q in range(2 * d)]:
        for j in range(L):
            w = f"tl.where(keep, h{kin[src]}_{j}, u{q}_{j})"
            lines.append(f"        u{q}_{j} = " + (f"tl.where(opp, tl.full([], 0, tl.uint32), {w})" if q >= 4 * d else w))
    for q in range(2 * d, 4 * d):                                             # H = R = 1
        for j in range(L):
            lines.append(f"        u{q}_{j} = tl.where(keep, tl.full([], {one[(q % d) * L + j]}, tl.uint32), u{q}_{j})")
    lines.append(f"    {_results(S, 'x', fns['fin'])}fin_fn({', '.join(S.names('u', 6 * d))})")
    lines.append(f"    oid = {_zero([f'x{fin[k]}_{j}' for k in range(2 * d, 3 * d) for j in range(L)])}")
    outs = []
    for k in range(K):
        for j in range(L):
            w = f"x{fin[k]}_{j}"
            outs.append(w if 2 * d <= k < 3 * d else f"tl.where(oid, tl.full([], {ident[k * L + j]}, tl.uint32), {w})")
    return lines + [f"    return {', '.join(outs)}", ""]


def _cases(S: Shape, ind: str) -> list[str]:
    """A lane's case from the products u and the operands' identity flags aid, bid: P = Q
    (`same`: H = R = 0) or P = -Q (`opp`: H = 0, R != 0), neither operand the identity."""
    d = S.d
    return [f"{ind}hz = {_zero(S.comps('u', range(2 * d, 3 * d)))}",
            f"{ind}rz = {_zero(S.comps('u', range(3 * d, 4 * d)))}",
            f"{ind}both = (aid == 0) & (bid == 0)",
            f"{ind}same = hz & rz & both",
            f"{ind}opp = hz & (rz == 0) & both"]


def _double_from(S: Shape, fns: dict) -> list[str]:
    """Where a lane has P = Q (`same`), the doubling's inputs in place of the six
    coordinates u, made only where a lane of the block needs them, from P as u holds it:
    (U1, S1, ZZ12, ZZZ12) = (X1·ZZ2, Y1·ZZZ2, ZZ1·ZZ2, ZZZ1·ZZZ2) is P in XYZZ form (x =
    U1/ZZ12 = X1/ZZ1, y = S1/ZZZ12 = Y1/ZZZ1, and ZZ12^3 = ZZZ12^2 as ZZ^3 = ZZZ^2 for both
    operands). `mstep`'s u holds P's own coordinates there (ZZ2 = ZZZ2 = 1)."""
    d = S.d
    lines = ["    if tl.reduce(same.to(tl.int32), 0, _any) > 0:",
             f"        {_results(S, 'g', fns['dblin'])}"
             f"dblin_fn({', '.join(S.comps('u', [*range(2 * d), *range(4 * d, 6 * d)]))})"]
    for q in range(6 * d):
        for j in range(S.L):
            lines.append(f"        u{q}_{j} = tl.where(same, g{fns['dblin']['map'][q]}_{j}, u{q}_{j})")
    return lines


def _helpers(S: Shape, ident: list[int], fns: dict) -> str:
    K, L, d = S.K, S.L, S.d
    a, b = S.names("a"), S.names("b")
    six = 6 * d                                  # components of the finish's six coordinates
    u = S.names("u", six)
    # builtins only (and jit functions of this module): the standard library's jit functions
    # (tl.sum, tl.zeros) fail under the interpreter when triton was imported without it
    lines = ["@triton.jit", "def _any(x, y):", "    return x | y", "",
             "@triton.jit", "def _max(x, y):", "    return tl.maximum(x, y)", ""]

    def mapped(p, fn, q):                        # words of program output q of `fn`
        return [f"{p}{fns[fn]['map'][q]}_{j}" for j in range(L)]
    # padd: P + Q, complete (the accumulation's step); the doubling reads P from the products
    # (`_double_from`)
    lines += ["@triton.jit", f"def padd({', '.join(a + b)}):",
              f"    aid = {_zero(S.comps('a', range(2 * d, 3 * d)))}",
              f"    bid = {_zero(S.comps('b', range(2 * d, 3 * d)))}",
              f"    {_results(S, 'f', fns['prod'])}prod_fn({', '.join(a + b)})"]
    lines += [f"    {', '.join(S.comp('u', q))} = {', '.join(mapped('f', 'prod', q))}" for q in range(six)]
    lines += _cases(S, "    ")
    lines += _double_from(S, fns)
    lines += _finish(S, ident, fns, [f"tl.where(aid, {y}, {x})" for x, y in zip(a, b)])
    # pstep: P + Q (do_add) or 2P, complete (the chain's step, which doubles or adds by its
    # trip). Its doubling reads P itself: from the products, the fp64 chain spilled more
    # (a static reading of its SASS, `bench/results/sass_double_from.md`)
    lines += ["@triton.jit", f"def pstep({', '.join(a + b)}, do_add):",
              f"    aid = {_zero(S.comps('a', range(2 * d, 3 * d)))}",
              "    if do_add:",
              f"        {_results(S, 'f', fns['prod'])}prod_fn({', '.join(a + b)})"]
    lines += [f"        {', '.join(S.comp('u', q))} = {', '.join(mapped('f', 'prod', q))}" for q in range(six)]
    lines += [f"        bid = {_zero(S.comps('b', range(2 * d, 3 * d)))}"] + _cases(S, "        ")
    lines += ["    else:",
              f"        {', '.join(u)} = {', '.join(S.names('a', six) if six <= K else (a * 2)[:len(u)])}",
              "        bid = aid != aid",
              "        opp = bid",
              "        same = aid == aid",
              # the doubling's inputs only where a lane of the block needs them (P = Q is rare)
              "    if tl.reduce(same.to(tl.int32), 0, _any) > 0:",
              f"        {_results(S, 'g', fns['dblin'])}dblin_fn({', '.join(a)})"]
    for q in range(six):
        for j, w in zip(range(L), mapped("g", "dblin", q)):
            lines.append(f"        u{q}_{j} = tl.where(same, {w}, u{q}_{j})")
    lines += _finish(S, ident, fns, [f"tl.where(aid, {y}, {x})" for x, y in zip(a, b)])
    # pneg: -P (the identity stays the identity: its ZZ stays 0)
    lines += ["@triton.jit", f"def pneg({', '.join(a)}):",
              f"    {_results(S, 'n', fns['neg'])}neg_fn({', '.join(a)})",
              "    return " + ", ".join(w for k in range(K) for w in mapped("n", "neg", k)), ""]
    # pnorm: the identity as stored (X = Y = 1), whatever X, Y a computation left
    lines += ["@triton.jit", f"def pnorm({', '.join(a)}):",
              f"    aid = {_zero(S.comps('a', range(2 * d, 3 * d)))}",
              "    return " + ", ".join(f"tl.where(aid, tl.full([], {ident[i]}, tl.uint32), {a[i]})"
                                      for i in range(K * L)), ""]
    return "\n".join(lines) + "\n" + _mixed_helpers(S, ident, fns)


def _lifted(S: Shape, ident: list[int], p: str) -> list[str]:
    """The XYZZ words of an affine point `p` (its x and y words, then ZZ = ZZZ = 1 of Fq, or
    of Fq2 as (1, 0), in Montgomery form)."""
    xy = S.names(p, 2 * S.d)
    return [xy[i] if i < len(xy) else f"tl.full([], {ident[(k % S.d) * S.L + j]}, tl.uint32)"
            for i, (k, j) in enumerate((k, j) for k in range(S.K) for j in range(S.L))]


def _mixed_helpers(S: Shape, ident: list[int], fns: dict) -> str:
    """`mstep`: the complete addition P + Q of an XYZZ P and an affine Q (all-zero words: the
    identity), madd-2008-s's products (`mprod_fn`: H, R) and the shared finish, with the same
    per-lane choices as `pstep`; `pnegy`: -Q of an affine Q (x, -y)."""
    L, d = S.L, S.d
    a, b = S.names("a"), S.names("b", 2 * d)
    u = [S.comp("a", k) for k in range(2 * d)] + \
        [[f"f{fns['mprod']['map'][q]}_{j}" for j in range(L)] for q in range(2 * d)] + \
        [S.comp("a", k) for k in range(2 * d, 4 * d)]             # (U1, S1, H, R, ZZ12, ZZZ12)
    lines = ["@triton.jit", f"def mstep({', '.join(a + b)}):",
             f"    aid = {_zero(S.comps('a', range(2 * d, 3 * d)))}",
             f"    bid = {_zero(b)}",
             f"    {_results(S, 'f', fns['mprod'])}mprod_fn({', '.join(a + b)})"]
    lines += [f"    {', '.join(S.comp('u', q))} = {', '.join(u[q])}" for q in range(6 * d)]
    lines += _cases(S, "    ")
    lines += _double_from(S, fns)
    t = [f"tl.where(aid & (bid == 0), {lift}, {w})" for lift, w in zip(_lifted(S, ident, "b"), a)]
    lines += _finish(S, ident, fns, t)
    ys = S.comps("b", range(d, 2 * d))
    lines += ["@triton.jit", f"def pnegy({', '.join(b)}):",
              f"    {', '.join(S.names('n', fns['cneg']['n']))} = cneg_fn({', '.join(ys)})",
              "    return " + ", ".join(S.comps("b", range(d)) +
                                      [f"n{fns['cneg']['map'][q]}_{j}" for q in range(d) for j in range(L)]), ""]
    return "\n".join(lines) + "\n"


def _load(S: Shape, p: str, base: str, col: str, mask: str, lines: list, ind: str):
    """Words of the points at columns `col` ([BLOCK] int64) of array `base` (strides
    {base}_c, {base}_w, {base}_k), masked lanes all-zero words (the identity)."""
    LP = 1 << (S.L - 1).bit_length()
    lines.append(f"{ind}jj = tl.arange(0, {LP})")
    lines.append(f"{ind}wm = ({mask})[:, None] & (jj < {S.L})[None, :]")
    for k in range(S.K):
        t = f"{p}t{k}"
        lines.append(f"{ind}{t} = tl.load({base} + ({col})[:, None] * {base}_c + (jj * {base}_w)[None, :] + "
                     f"{k} * {base}_k, mask=wm, other=0).to(tl.uint32, bitcast=True)")
        names, body = {}, []
        _split_words(t, list(range(LP)), names, body, f"{p}{k}_x")
        lines += [ind + x for x in body]
        for j in range(S.L):
            lines.append(f"{ind}{p}{k}_{j} = {names[j]}")


def _store(S: Shape, p: str, base: str, col: str, mask: str, lines: list, ind: str = "    "):
    LP = 1 << (S.L - 1).bit_length()
    lines.append(f"{ind}jj = tl.arange(0, {LP})")
    lines.append(f"{ind}wm = ({mask})[:, None] & (jj < {S.L})[None, :]")
    for k in range(S.K):
        names = {j: f"{p}{k}_{j}" for j in range(S.L)}
        names.update({j: f"{p}{k}_0" for j in range(S.L, LP)})
        body = []
        tile = _join_words(list(range(LP)), names, body, f"{p}s{k}")
        lines += [ind + x for x in body]
        lines.append(f"{ind}tl.store({base} + ({col})[:, None] * {base}_c + (jj * {base}_w)[None, :] + "
                     f"{k} * {base}_k, {tile}.to(tl.int32, bitcast=True), mask=wm)")


def _arr(name: str) -> list[str]:
    return [name, f"{name}_c: tl.int64", f"{name}_w: tl.int64", f"{name}_k: tl.int64"]


def _ident_init(S: Shape, p: str, ident: list[int], lines: list, ind: str = "    "):
    for k in range(S.K):
        for j in range(S.L):
            lines.append(f"{ind}{p}{k}_{j} = tl.full([BLOCK], {ident[k * S.L + j]}, tl.uint32)")


def _call(fn: str, S: Shape, out: str, *args: str) -> str:
    ins = [w for a in args for w in S.names(a)]
    return f"{', '.join(S.names(out))} = {fn}({', '.join(ins)})"


def _select(S: Shape, out: str, cond: str, x: str, y: str, ind: str) -> list[str]:
    return [f"{ind}{o} = tl.where({cond}, {a}, {b})" for o, a, b in zip(S.names(out), S.names(x), S.names(y))]


def _kernel_head(name: str, params: list[str]) -> list[str]:
    """A kernel specialised on nothing but BLOCK: sizes, strides and pointers are plain
    runtime arguments, so one compile serves every MSM size and every tensor. A scalar
    condition narrows a lane mask by `tl.where(cond, mask, False)`, not `mask & cond`: the
    interpreter broadcasts a scalar bool to int32, which tl.load refuses as a mask."""
    runtime = [p.split(":")[0] for p in params]
    return [f"@triton.jit(do_not_specialize={runtime!r})",
            f"def {name}({', '.join(params)}, BLOCK: tl.constexpr):"]


def _ints(*names: str) -> list[str]:
    return [f"{n}: tl.int64" for n in names]


def _entry(SP: Shape, mixed: bool, lines: list, ind: str):
    """Words `p` of entry e (masked by m): the base order[e] % n_points, negated where its
    digit is < 0, or (not indirect) column e of a previous round's sums."""
    lines += [f"{ind}mi = tl.where(ind, m, False)",
              f"{ind}o = tl.load(order + e, mask=mi, other=0)",
              f"{ind}col = tl.where(ind, o % n_points, e)",
              f"{ind}neg = tl.load(digits + o, mask=mi, other=0) < 0"]
    _load(SP, "p", "src", "col", "m", lines, ind)
    lines.append(ind + _call("pnegy" if mixed else "pneg", SP, "q", "p"))
    lines += _select(SP, "p", "neg", "q", "p", ind)


def _accumulate(S: Shape, ident: list[int], name: str, mixed: bool) -> list[str]:
    """The accumulation kernel; `mixed`: its entries are affine bases (`src` (L, 2·degree,
    n), all-zero words at the identity), added by `mstep`. A lane's first entry is its sum's
    start, not an addition to the identity: a round whose segments hold one entry each (the
    later rounds, at most sizes) copies them without a point formula."""
    L = _kernel_head(name, _arr("src") + ["order", "digits"] + _ints("n_points") + ["seg_end", "start", "ends", "last"]
                     + _arr("out") + _ints("n_lanes", "NB", "log_nb", "S", "indirect", "balanced"))
    L += ["    j = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)",
          "    live = j < n_lanes",
          "    ind = indirect != 0",
          # balanced: lanes [0, F) are the buckets' full segments (F = ends[NB - 1], `ends`
          # the running count of full segments), then one lane a bucket for its last
          # segment, in the order `last` gives (by its entries, longest first); otherwise
          # lane j is segment j (`ends` = seg_end)
          "    bal = (j * 0 + balanced) != 0",                 # a lane tensor (see _kernel_head)
          "    F = tl.load(ends + NB - 1)",
          "    tail = bal & (j >= F)",
          # the lane's bucket: the first b with ends[b] > j (a binary search in registers)
          "    lo = tl.full([BLOCK], 0, tl.int64)",
          "    hi = tl.full([BLOCK], 0, tl.int64) + NB",
          "    for _ in range(log_nb):",
          "        act = lo < hi",
          "        mid = (lo + hi) // 2",
          "        v = tl.load(ends + mid, mask=act, other=0)",
          "        up = act & (v <= j)",
          "        lo = tl.where(up, mid + 1, lo)",
          "        hi = tl.where(act & (v > j), mid, hi)",
          "    k = j - F",
          "    lo = tl.where(tail, tl.load(last + k, mask=live & tail & (k < NB), other=NB), lo)",
          "    valid = live & (lo < NB)",
          "    b = tl.minimum(lo, NB - 1)",
          "    e_b = tl.load(ends + b, mask=valid, other=0)",
          "    before = tl.load(ends + b - 1, mask=valid & (b > 0), other=0)",
          "    i = tl.where(tail, e_b - before, j - before)",      # the segment's index in its bucket
          "    col0 = tl.load(seg_end + b - 1, mask=valid & (b > 0), other=0)",
          # where its sum goes (bucket-major), as int32: it is live across the loop, and as a
          # pair of registers ptxas spilled it (a round has fewer than 2^31 lanes: `layout`)
          "    oc = tl.where(bal, col0 + i, j).to(tl.int32)",
          "    e0 = tl.load(start + b, mask=valid, other=0) + i * S",
          "    e1 = tl.minimum(e0 + S, tl.load(start + b + 1, mask=valid, other=0))",
          "    e = e0",
          "    m = valid & (e < e1)"]
    SP = Shape(2 * S.d, S.L, S.d) if mixed else S          # an entry's words
    _entry(SP, mixed, L, "    ")
    # the sum starts at the first entry (the identity as stored where there is none); an
    # affine entry is lifted to XYZZ (ZZ = ZZZ = 1)
    start = _lifted(S, ident, "p") if mixed else S.names("p")
    have = "m & (pid == 0)" if mixed else "m"
    if mixed:
        L.append(f"    pid = {_zero(SP.names('p'))}")
    L += [f"    {c} = tl.where({have}, {w}, tl.full([], {ident[i]}, tl.uint32))"
          for i, (c, w) in enumerate(zip(S.names("c"), start))]
    # as many more trips as the block's longest segment needs (at most S - 1): short
    # buckets, sparse or small MSMs do not pay S point steps a round
    L += ["    trips = tl.reduce(tl.where(valid, e1 - e0, 0), 0, _max)",
          "    for s in range(1, trips):",
          "        e = e0 + s",
          "        m = valid & (e < e1)"]
    _entry(SP, mixed, L, "        ")
    step = "mstep(" if mixed else "padd("
    L.append(f"        {', '.join(S.names('c'))} = {step}{', '.join(S.names('c') + SP.names('p'))})")
    _store(S, "c", "out", "oc", "tl.where(bal, valid, live)", L)
    L.append("")
    return L


def _chain_operands(S: Shape, q: str, valid: str | None, L: list, ind: str):
    """`chain`'s trip q: its phase (run_p: r += src, run_r: a += r, Horner: a doubles or
    a += src, tail: r doubles), the point it loads (p) and its operands x + y. `valid`: a
    condition the trip holds only under (its loads masked otherwise)."""
    L += [f"{ind}run = {q} < run_steps",
          f"{ind}run_p = run & ({q} % 2 == 0)",
          f"{ind}run_r = run & ({q} % 2 == 1)",
          f"{ind}tail = {q} >= body",
          f"{ind}on_r = run_p | tail",
          f"{ind}h = tl.maximum({q} - run_steps, 0) + d",        # Horner: trip w of group g (the first
          f"{ind}g = h // (d + 1)",                              # group has no doublings)
          f"{ind}w = h % (d + 1)",
          f"{ind}dbl = (run == 0) & (tail == 0) & (w < d)",
          f"{ind}col = tl.where(run, run_off + lane * M + (M - 1 - {q} // 2), add_off + lane * M2 + (M2 - 1 - g))"]
    loads = "run_p | ((run == 0) & (tail == 0) & (dbl == 0))"
    _load(S, "p", "src", "col", f"tl.where({loads}{f' & ({valid})' if valid else ''}, live, False)", L, ind)
    L += _select(S, "x", "on_r", "r", "a", ind)
    L += _select(S, "y", "dbl", "a", "p", ind)
    L += _select(S, "y", "run_r", "r", "y", ind)
    L += _select(S, "y", "tail", "r", "y", ind)


def kernels_source(S: Shape, ident: list[int]) -> str:
    L = []
    # -- accumulate: XYZZ entries (bases or a round's segment sums), affine bases ----------
    L += _accumulate(S, ident, "accumulate", mixed=False)
    L += _accumulate(S, ident, "accumulate_affine", mixed=True)
    # -- chain -----------------------------------------------------------------------------
    L += _kernel_head("chain", _arr("src") + _arr("dst") + _ints("n_lanes", "M", "run_off", "n_run", "last_a", "M2",
                                                             "add_off", "n_groups", "d", "r_dbl", "r_off", "a_off"))
    L += ["    lane = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)",
          "    live = lane < n_lanes",
          "    run_steps = 2 * n_run - 1 + last_a",
          "    body = run_steps + tl.where(n_groups > 0, n_groups + (n_groups - 1) * d, 0)"]
    _ident_init(S, "r", ident, L)
    _ident_init(S, "a", ident, L)
    # The first trip adds to a sum still the identity (r, or a where nothing runs), and so
    # does the second where the run has steps (a += r, or the first Horner trip): both are
    # copies of their operand y, peeled off the loop (a branch inside it costs the loop's
    # registers), since a chain is one lane deep and each formula is on the critical path.
    for q, on in (("0", "body > 0"), ("1", "(run_steps > 0) & (body > 1)")):
        L.append(f"    copy = {on}")
        _chain_operands(S, q, "copy", L, "    ")
        L += _select(S, "r", "copy & on_r", "y", "r", "    ")
        L += _select(S, "a", "copy & (on_r == 0)", "y", "a", "    ")
    # then one step a trip, one pstep in the code: which operands, whether it loads and
    # whether it doubles follow from the trip count alone (the same for every lane)
    L += ["    for q in range(1 + ((run_steps > 0) & (body > 1)).to(tl.int32), body + r_dbl):"]
    _chain_operands(S, "q", None, L, "        ")
    L.append(f"        {', '.join(S.names('s'))} = pstep({', '.join(S.names('x') + S.names('y'))}, (dbl | tail) == 0)")
    L += _select(S, "r", "on_r", "s", "r", "        ")
    L += _select(S, "a", "on_r", "a", "s", "        ")
    L.append("    " + _call("pnorm", S, "r", "r"))
    L.append("    " + _call("pnorm", S, "a", "a"))
    _store(S, "r", "dst", "r_off + lane", "tl.where(r_off >= 0, live, False)", L)
    _store(S, "a", "dst", "a_off + lane", "live", L)
    return "\n".join(L) + "\n"


def module_source(GS, strategy, device_type: str) -> str:
    """The device MSM's Triton module for group GS: device functions, helpers, kernels."""
    srcs, fns = [], {}
    for name, key, kinds, fn in _programs():
        # one kernel per formula, whatever the group's triton_cuts (see the module docstring)
        c = get_program(msm_ec.program(GS.params, key, kinds, fn), strategy, "triton")
        src, om, n = device_function(c, name)
        srcs.append(src)
        fns[name] = {"map": om, "n": n}
        limbs = c.limbs
    S = Shape(GS.K, limbs, GS.degree)
    ident = _ident_words(GS)
    head = '"""Generated by zktensor (kernels/msm_device.py). Do not edit: the kernel cache rewrites it."""\n' \
           + HEADER + "\n\n"
    return head + "\n".join(srcs) + "\n" + _helpers(S, ident, fns) + "\n" + kernels_source(S, ident)


def module(GS, strategy, device_type: str, interpret: bool):
    """The loaded module (cached on disk by its source, and per process)."""
    from ..runtime.target import choose
    strategy = choose(device_type, strategy, "triton")[0]
    return loaded_module("msm_device", (GS.name, strategy, device_type, interpret),
                         lambda: module_source(GS, strategy, device_type), TEMPLATE_VERSION, "triton-msm-device",
                         list(KERNELS), interpret)


def launch(kernel, grid, args, interpret: bool, block: int, max_registers: int | None = None) -> None:
    """Launch a kernel of this module's convention (or of one built on it, `sparse_device`):
    one lane a thread, so the warps follow from BLOCK; compiled without Triton's coalescing
    pass (`runtime.triton_passes`); counted (`runtime.counters`). `max_registers`: ptxas's
    .maxnreg (`MSMConfig.max_registers`; a compile option, so each cap is its own binary).
    Returns what Triton's launch returns (compiled: the kernel, with its n_regs and n_spills)."""
    with counters.kernel():
        if interpret:
            with triton_mode(True):
                return kernel[grid](*args, BLOCK=block)
        cap = {} if max_registers is None else {"maxnreg": max_registers}
        with skip_coalesce():
            return kernel[grid](*args, BLOCK=block, num_warps=num_warps(block), **cap)


def strides(t: torch.Tensor) -> list:
    """A point array (L, K, m) as kernel arguments: pointer, column, word, component strides."""
    return [t, t.stride(2), t.stride(0), t.stride(1)]


INDEX_ARGS = ("order", "seg_end", "start", "ends", "last")        # int64 tensors; digits int32; other pointers: points


def aot_signature(fn, block: int) -> tuple[dict, dict]:
    """(signature, constexprs) of a device-MSM kernel as it is launched, for `runtime.aot`:
    index arrays *i64, digits and point arrays *i32, every size i64, BLOCK the only constexpr."""
    sig, const = {}, {}
    for a in fn.arg_names:
        if a == "BLOCK":
            sig[a], const[a] = "constexpr", block
        elif a in INDEX_ARGS:
            sig[a] = "*i64"
        elif a in ("digits", "src", "out", "dst"):
            sig[a] = "*i32"
        else:
            sig[a] = "i64"
    return sig, const
