"""The point kernels on the Triton target: run under the interpreter, compiled ahead of time.

The same `ec` programs that the CPU runs are lowered by limbs-to-triton, and run
inside `msm_triton`'s tile kernel (one memory op per component). Under
TRITON_INTERPRET (CPU tensors) a point addition costs tens of seconds per block,
so BN254 G1's point kernels (every kind an MSM launches) run here on a few
columns, their words checked against the CPU target's and their values against
the Python-int oracle. Kernels are compiled ahead of time for sm_90a (ptxas ships
with triton; no GPU needed) and must not spill registers (see AOT_CASES for which,
and why not all by default); BN254 G2's addition, which would, is two kernels on
the Triton target (msm_triton.add_split), checked here against the fused one. Tests
marked `gpu` run the MSM itself on a CUDA device.
"""
from __future__ import annotations

import os

import pytest
import torch

from tests.ec.ec_support import O, oracle_points, scalars
from zktensor.algebra.curves import GROUP_NAMES, group as group_record
from zktensor.algebra.glv import endomorphism
import zktensor as zt
from zktensor.kernels import point_formulas as pts_mod
from zktensor.runtime import aot
from zktensor.kernels import msm_ec, msm_reduce, msm_tree, msm_triton
from zktensor.kernels.elementwise import TRITON_BLOCK
from zktensor.ops.msm import MSMConfig


def _triton(G, key, kinds, fn, strategy="int32"):
    """The program as the Triton target compiles it (cut into small kernels for the groups
    whose record has triton_cuts)."""
    return msm_ec.compiled(G, key, kinds, fn, "cpu", strategy, "triton")


# -- field elements as words, written out here so that the oracle's side does not go
# through the code under test: v is stored as the L words of v·2^(32L) mod p


def _words(g, values) -> torch.Tensor:
    """(L, m) int32 Montgomery words of Python ints over g's base field."""
    L = g.fq.limbs32
    mont = [v * (1 << 32 * L) % g.p for v in values]
    rows = [[(v >> 32 * i) & 0xFFFFFFFF for v in mont] for i in range(L)]
    return torch.tensor([[w - (1 << 32) if w >> 31 else w for w in r] for r in rows], dtype=torch.int32)


def _ints(g, t: torch.Tensor) -> list[int]:
    """The field elements of (L, m) words, which must be reduced (below p)."""
    L = t.shape[0]
    raw = [sum((int(t[i, j]) & 0xFFFFFFFF) << 32 * i for i in range(L)) for j in range(t.shape[1])]
    assert all(v < g.p for v in raw), "unreduced output"
    rinv = pow(1 << 32 * L, -1, g.p)
    return [v * rinv % g.p for v in raw]


def _affine_words(g, pts) -> list[torch.Tensor]:
    """x, y components (G1) of affine points."""
    return [_words(g, [P[0] for P in pts]), _words(g, [P[1] for P in pts])]


def _xyzz_words(g, pts, lam) -> list[torch.Tensor]:
    """G1 points as XYZZ (lam^2 x, lam^3 y, lam^2, lam^3): a representative other than Z = 1."""
    p = g.p
    cols = [(l * l * P[0], l ** 3 * P[1], l * l, l ** 3) for P, l in zip(pts, lam)]
    return [_words(g, [c[k] % p for c in cols]) for k in range(4)]


def _xyzz_affine(g, outs) -> list:
    X, Y, ZZ, ZZZ = (_ints(g, t) for t in outs)
    return [(x * pow(zz, -1, g.p) % g.p, y * pow(zzz, -1, g.p) % g.p)
            for x, y, zz, zzz in zip(X, Y, ZZ, ZZZ)]


def _interpreted(g, key, kinds, fn, inputs) -> list[torch.Tensor]:
    """The Triton kernel's outputs under the interpreter, after checking that they are the
    CPU target's, word for word."""
    outs = msm_triton.run(_triton(g, key, kinds, fn), inputs)
    cpu = msm_ec.run(g, key, kinds, fn, inputs)
    assert len(outs) == len(cpu) and all(torch.equal(x, y) for x, y in zip(outs, cpu))
    return outs


def test_interpreted_add_and_double():
    name = "bn254.g1"
    g = group_record(name)
    GS = zt.group(name)
    a, b, c = oracle_points(name, 3)
    lhs = [a, a, a, None, b]
    rhs = [b, a, O.neg(g, a), c, None]
    A = GS.tensor(lhs)._flat().contiguous()
    B = GS.tensor(rhs)._flat().contiguous()
    add = _triton(g, "add", ("xyzz", "xyzz"), pts_mod.f_add)
    outs = msm_triton.run(add, pts_mod.comps(A) + pts_mod.comps(B))   # CPU tensors: interpreter
    K, d = GS.K, GS.degree
    S = torch.stack(outs[:K], dim=1)
    h, r = torch.stack(outs[K:K + d], dim=1), torch.stack(outs[K + d:], dim=1)
    # the raw kernel outputs equal the CPU target's, word for word ...
    cpu = msm_ec.run(g, "add", ("xyzz", "xyzz"), pts_mod.f_add, pts_mod.comps(A) + pts_mod.comps(B))
    assert all(torch.equal(x, y) for x, y in zip(outs, cpu))
    # ... and patched into complete additions they match the oracle
    S = pts_mod.fix_sum(GS, S, h, r, A, B)
    assert zt.PointTensor(GS, S).to_affine() == [O.add(g, x, y) for x, y in zip(lhs, rhs)]
    dbl = _triton(g, "double", ("xyzz",), pts_mod.f_double)
    D = torch.stack(msm_triton.run(dbl, pts_mod.comps(A)), dim=1)
    assert zt.PointTensor(GS, D).to_affine() == [O.double(g, x) for x in lhs]


def test_point_launch_shape_follows_the_block():
    """A point kernel's BLOCK is the launch block in force (zt.config or the tuning cache's,
    the autotuner's `block` axis), else msm_triton.BLOCK, and its warps always BLOCK / 32
    (one column a thread); a field kernel's block below 32 becomes 32. The tuner's CUDA
    spaces offer no warps that repeat another's elements, and the device MSM's base window
    is its own model's. Interpreted, a negation over 70 columns at block 32 (three programs)
    is the CPU target's, word for word."""
    from zktensor.config import config
    from zktensor.ops.msm.device import device_window
    from zktensor.tune.space import msm_space, mul_space
    assert msm_triton.launch_shape() == (msm_triton.BLOCK, msm_triton.BLOCK // 32)
    for block, shape in ((128, (128, 4)), (256, (256, 8)), (16, (32, 1)), (96, (96, 3))):
        with config(block=block, num_warps=1):
            assert msm_triton.launch_shape() == shape
    cuda = torch.device("cuda")
    sp = mul_space(cuda, 8, thorough=True)
    cur = sp.base
    for axis in sp.axes:
        for v in axis.values:
            c = axis.apply(cur, v)
            assert c["num_warps"] * 32 <= c["block"], c
    g = group_record("bn254.g1")
    for n in (1 << 10, 1 << 16, 1 << 20):
        ms = msm_space(cuda, g, n)
        # the program's window: 2n points of GLV's half-width scalars (MSMConfig.glv)
        assert ms.base["window"] == device_window(2 * n, endomorphism(g.name).bits)
        assert {a.name for a in ms.axes} == {"window", "point_major", "segment", "balanced", "block", "max_registers",
                                             "strategy", "glv"}
        for axis in ms.axes:                     # every value is a valid MSMConfig
            for v in axis.values:
                MSMConfig(**{k: x for k, x in axis.apply(ms.base, v).items() if k in MSMConfig.__dataclass_fields__})
    GS = zt.group("bn254.g1")
    A = GS.generator((70,))._flat().contiguous()
    with config(block=32):
        _interpreted(g, "neg", ("xyzz",), pts_mod.f_neg, pts_mod.comps(A))


# The other MSM kernels on two columns (one program instance of BLOCK = 64; the cost is per
# instance, not per column). Measured on 2 shared cores, warm kernel cache: lane_step 9-15 s,
# tree_up 1-2 s, tree_down_add (B = 4) 9-21 s. The tree kernels are tested at the block
# the MSM launches (MSMConfig's default tree_block).
TREE_B = MSMConfig().tree_block


def test_interpreted_lane_step():
    """run += b; acc += run; and the product of the two steps' x-differences."""
    name = "bn254.g1"
    g = group_record(name)
    p = g.p
    pts = oracle_points(name, 6)
    run, b, acc = pts[0:2], pts[2:4], pts[4:6]
    lam, mu = [3, 0x1234567], [7, 0x89abcdef]
    kinds = ("xyzz", "affine", "xyzz")
    outs = _interpreted(g, "lane_step", kinds, msm_reduce._f_lane_step,
                        _xyzz_words(g, run, lam) + _affine_words(g, b) + _xyzz_words(g, acc, mu))
    run2 = [O.add(g, r, q) for r, q in zip(run, b)]
    assert _xyzz_affine(g, outs[0:4]) == run2
    assert _xyzz_affine(g, outs[4:8]) == [O.add(g, a, r) for a, r in zip(acc, run2)]
    # run = (l^2 x, ..) + affine b: h1 = l^2 (x_b - x_run), and the new run's ZZ is l^2 h1^2;
    # acc = (m^2 x_a, ..): h2 = m^2 ZZ' (x_run' - x_a), so h1 h2 = l^8 m^2 dx1^3 dx2
    want = [pow(l, 8, p) * m * m * pow(q[0] - r[0], 3, p) * (r2[0] - a[0]) % p
            for l, m, r, q, r2, a in zip(lam, mu, run, b, run2, acc)]
    assert _ints(g, outs[8]) == want and all(want)


def _tree_pairs(name, B, m):
    """B pairs of affine points per column: (left, right)[j][column]."""
    pts = oracle_points(name, 2 * B * m)
    return [(pts[2 * j * m:(2 * j + 1) * m], pts[(2 * j + 1) * m:(2 * j + 2) * m]) for j in range(B)]


def _tree_inputs(g, pairs) -> list[torch.Tensor]:
    return [t for left, right in pairs for t in _affine_words(g, left) + _affine_words(g, right)]


def _prefix_dens(g, pairs) -> list[list[int]]:
    """Per column, the prefix products p_0 .. p_{B-1} of den_j = x_Rj - x_Lj."""
    out, acc = [], None
    for left, right in pairs:
        den = [(R[0] - L[0]) % g.p for L, R in zip(left, right)]
        acc = den if acc is None else [a * d % g.p for a, d in zip(acc, den)]
        out.append(acc)
    return out


def test_interpreted_tree_up():
    name, B = "bn254.g1", TREE_B
    g = group_record(name)
    msm_tree._beta(g)
    pairs = _tree_pairs(name, B, 2)
    outs = _interpreted(g, ("tree_up", B), ("affine",) * (2 * B), msm_tree._f_up(B), _tree_inputs(g, pairs))
    assert [_ints(g, t) for t in outs] == _prefix_dens(g, pairs)[1:]


def test_interpreted_tree_down_add():
    """From 1/p_{B-1} and p_1 .. p_{B-2} (from the oracle), the B affine sums."""
    name, B = "bn254.g1", TREE_B
    g = group_record(name)
    msm_tree._beta(g)
    pairs = _tree_pairs(name, B, 2)
    pre = _prefix_dens(g, pairs)
    t = _words(g, [pow(v, -1, g.p) for v in pre[-1]])
    kinds = ("fq",) + ("affine",) * (2 * B) + ("fq",) * (B - 2)
    outs = _interpreted(g, ("tree_down_add", B), kinds, msm_tree._f_down_add(B),
                        [t] + _tree_inputs(g, pairs) + [_words(g, v) for v in pre[1:-1]])
    got = [list(zip(_ints(g, outs[2 * j]), _ints(g, outs[2 * j + 1]))) for j in range(B)]
    assert got == [[O.add(g, L, R) for L, R in zip(left, right)] for left, right in pairs]


# -- the split addition --------------------------------------------------------------------


def _sum_cases(name):
    """Operands that reach every branch of fix_sum: a generic pair, P + P, P + (-P), an
    identity on either side and on both."""
    g = group_record(name)
    a, b, c = oracle_points(name, 3)
    return [a, a, a, None, b, None, c], [b, a, O.neg(g, a), c, None, None, b]


@pytest.mark.parametrize("name", [g for g in GROUP_NAMES if group_record(g).triton_split_add])
def test_split_add_matches_fused(name):
    """The two kernels give the fused kernel's words (both on the CPU target, with int64 as
    G2's other tests in tests/ec: conftest.py), and complete sums equal to the oracle's."""
    g, GS = group_record(name), zt.group(name)
    lhs, rhs = _sum_cases(name)
    A = GS.tensor(lhs)._flat().contiguous()
    B = GS.tensor(rhs)._flat().contiguous()
    with zt.config(strategy="int64", target="cpu"):
        split = pts_mod.add_sum(GS, A, B, split=True)
        fused = pts_mod.add_sum(GS, A, B, split=False)
        assert len(split) == len(fused) == GS.K + 2 * GS.degree
        assert all(torch.equal(x, y) for x, y in zip(split, fused))
        K, d = GS.K, GS.degree
        S = pts_mod.fix_sum(GS, torch.stack(split[:K], dim=1), torch.stack(split[K:K + d], dim=1),
                            torch.stack(split[K + d:], dim=1), A, B)
        assert zt.PointTensor(GS, S).to_affine() == [O.add(g, x, y) for x, y in zip(lhs, rhs)]


def _lane_inputs(name):
    """(run, b, acc) for lane_step over G2: XYZZ run and acc with ZZ != 1 (doubled points),
    affine b; the last column has b = -run, where the step meets P = -Q (h1 = 0)."""
    g, GS = group_record(name), zt.group(name)
    a, c, e, f, q = oracle_points(name, 5)
    run_pts, acc_pts = [a, c, e], [f, q, a]
    run = GS.tensor(run_pts).double()._flat().contiguous()
    acc = GS.tensor(acc_pts).double()._flat().contiguous()
    b_pts = [q, f, O.neg(g, O.double(g, e))]
    xy, _ = GS.tensor(b_pts).affine()
    twice = [O.double(g, P) for P in run_pts], [O.double(g, P) for P in acc_pts]
    return g, GS, run, xy.contiguous(), acc, b_pts, twice


def test_split_lane_step_matches_fused():
    """BN254 G2's suffix-sum step in three kernels (msm_reduce.lane_step, split): the fused
    kernel's words on the CPU target, and the oracle's sums; h is 0 exactly where run = -b."""
    name = "bn254.g2"
    g, GS, run, xy, acc, b_pts, (run_pts, acc_pts) = _lane_inputs(name)
    d, K = GS.degree, GS.K
    got = {}
    with zt.config(strategy="int64", target="cpu"):
        for split in (True, False):
            r, a = run.clone(), acc.clone()
            h = torch.empty((GS.L, d, r.shape[2]), dtype=torch.int32)
            comps = [r[:, k] for k in range(K)]
            acomps = [a[:, k] for k in range(K)]
            msm_reduce.lane_step(g, comps + [xy[:, k] for k in range(2 * d)] + acomps,
                                 comps + acomps + [h[:, k] for k in range(d)], split=split)
            got[split] = (r, a, h)
    assert all(torch.equal(x, y) for x, y in zip(got[True], got[False]))
    r, a, h = got[True]
    run2 = [O.add(g, P, Q) for P, Q in zip(run_pts, b_pts)]
    assert zt.PointTensor(GS, r).to_affine()[:2] == run2[:2] and run2[2] is None
    assert zt.PointTensor(GS, a).to_affine()[:2] == [O.add(g, P, Q) for P, Q in zip(acc_pts, run2)][:2]
    zero = torch.all(h.reshape(-1, h.shape[2]) == 0, dim=0).tolist()
    assert zero == [False, False, True]


def test_interpreted_split_lane_step(monkeypatch):
    """On the Triton target (here the interpreter, ~40 s) BN254 G2's step runs as the three
    kernels, with the fused CPU kernel's words."""
    name = "bn254.g2"
    g, GS, run, xy, acc, _, _ = _lane_inputs(name)
    d, K = GS.degree, GS.K
    keys, run_ec = [], msm_ec.run

    def spy(G, key, *args, **kw):
        keys.append(key)
        return run_ec(G, key, *args, **kw)
    monkeypatch.setattr(msm_ec, "run", spy)
    outs = []
    for target, strategy in (("triton", None), ("cpu", "int64")):
        r, a = run.clone(), acc.clone()
        h = torch.empty((GS.L, d, r.shape[2]), dtype=torch.int32)
        comps, acomps = [r[:, k] for k in range(K)], [a[:, k] for k in range(K)]
        with zt.config(target=target, strategy=strategy):
            msm_reduce.lane_step(g, comps + [xy[:, k] for k in range(2 * d)] + acomps,
                                 comps + acomps + [h[:, k] for k in range(d)])
        outs.append((r, a, h))
    assert keys == ["lane_run", "add_products", "lane_finish", "lane_step"]
    assert all(torch.equal(x, y) for x, y in zip(*outs))


def test_interpreted_split_add(monkeypatch):
    """On the Triton target add_complete runs BN254 G2's addition as the two kernels (here
    under the interpreter, 18-21 s): the fused CPU kernel's words, the oracle's sums."""
    name = "bn254.g2"
    g, GS = group_record(name), zt.group(name)
    a, b, c = oracle_points(name, 3)
    # no P + P: its doubling would be one more interpreted G2 kernel
    lhs, rhs = [a, None, b, None, a], [b, c, None, None, O.neg(g, a)]
    A = GS.tensor(lhs)._flat().contiguous()
    B = GS.tensor(rhs)._flat().contiguous()
    calls, add_split = [], msm_triton.add_split

    def spy(G, inputs):
        calls.append(add_split(G, inputs))
        return calls[-1]
    monkeypatch.setattr(msm_triton, "add_split", spy)
    with zt.config(target="triton"):
        S = pts_mod.add_complete(GS, A, B)
    assert len(calls) == 1
    with zt.config(strategy="int64", target="cpu"):
        fused = pts_mod.add_sum(GS, A, B, split=False)
        assert len(calls[0]) == len(fused) and all(torch.equal(x, y) for x, y in zip(calls[0], fused))
        assert zt.PointTensor(GS, S).to_affine() == [O.add(g, x, y) for x, y in zip(lhs, rhs)]


@pytest.mark.parametrize("name", [g for g in GROUP_NAMES if group_record(g).triton_cuts])
def test_interpreted_chained_add(name):
    """The addition of the groups with triton_cuts on the Triton target is a chain of small
    kernels (under the interpreter): the CPU target's words, the oracle's sums, h = 0
    exactly at P = -Q."""
    g, GS = group_record(name), zt.group(name)
    a, b = oracle_points(name, 2)
    lhs, rhs = [a, b], [b, O.neg(g, b)]
    A = GS.tensor(lhs)._flat().contiguous()
    B = GS.tensor(rhs)._flat().contiguous()
    prog = _triton(g, "add", ("xyzz", "xyzz"), pts_mod.f_add)
    assert len(prog.meta["calls"]) > 10          # one kernel would spill
    outs = msm_triton.run(prog, pts_mod.comps(A) + pts_mod.comps(B))
    with zt.config(strategy="int64", target="cpu"):
        cpu = msm_ec.run(g, "add", ("xyzz", "xyzz"), pts_mod.f_add, pts_mod.comps(A) + pts_mod.comps(B))
    assert len(outs) == len(cpu) and all(torch.equal(x, y) for x, y in zip(outs, cpu))
    K, d = GS.K, GS.degree
    S = zt.PointTensor(GS, torch.stack(outs[:K], dim=1))
    assert S[0:1].to_affine() == [O.add(g, a, b)]
    h = torch.stack(outs[K:K + d], dim=1)
    assert bool((h[..., 1] == 0).all()) and not bool((h[..., 0] == 0).all())


# -- ahead-of-time compilation for sm_90a ---------------------------------------------------


def aot_compile(fn, block=msm_triton.BLOCK, num_warps=None):
    """Compile a point tile kernel (or a generated elementwise kernel) for sm_90a (in a fresh
    process: runtime.aot), a point kernel with the warps it launches with."""
    sig, const = aot.elementwise_signature(fn.arg_names, block=block)
    rep = aot.compile_kernel(fn, "sm_90a", sig, const, num_warps=num_warps or 4)
    return rep["registers"], rep["local_bytes"], rep["sass"].get("STL", 0) + rep["sass"].get("LDL", 0)


def _add_kernels(name):
    """The addition as the Triton target launches it: two kernels for the groups with triton_split_add."""
    if group_record(name).triton_split_add:
        return [(key, key, kinds, fn) for key, kinds, fn in msm_triton.ADD_PARTS]
    return [("add", "add", ("xyzz", "xyzz"), pts_mod.f_add)]


def _msm_kernels(name):
    """(label, key, kinds, fn) of every point kernel an MSM launches on the Triton target."""
    g = group_record(name)
    msm_tree._beta(g)
    B = TREE_B
    if group_record(name).triton_split_lane:       # its add_products part is in _add_kernels
        lane = [(key, key, kinds, fn) for key, kinds, fn in msm_reduce.LANE_PARTS]
    else:
        lane = [("lane_step", "lane_step", ("xyzz", "affine", "xyzz"), msm_reduce._f_lane_step)]
    return _add_kernels(name) + lane + [
        ("double", "double", ("xyzz",), pts_mod.f_double),
    ] + [(label, *spec) for label, spec in zip(("tree_up", "tree_down_add"), msm_tree.tree_kernels(g, B))]


# Point kernels are compiled without Triton's coalescing pass, as they are launched
# (runtime/triton_passes.py); measured 2026-11-21 on 2 cores: BN254 G1 addition 25 s (217
# registers), tree up-sweep 6 s (84 registers), no spills. The default run compiles every
# BN254 G1 kernel; ZKTENSOR_AOT_ALL=1 adds BLS12-381 G1 and both G2s (minutes each). BN254
# G2's addition is two kernels on the Triton target because, fused, it needs more than 255
# registers and spills (35 STL); its parts took 58 s (add_products, 234 registers) and 72 s
# (add_finish, 204 registers), no spills. No spills either: BN254 G2 doubling (209
# registers, 133 s), BLS12-381 G1 addition (242 registers, 153 s). BLS12-381 G2's fused
# addition spills (255 registers, 258 STL; 22 min to compile), and so did every hand cut
# with one or two Fq2 products in a kernel (23 to 302 STL), so on the Triton target all its
# point programs are chains of kernels of at most two Fq products (their records' triton_cuts):
# addition 20 kernels (96 to 254 registers), doubling 12, lane_step 36, tree_up 6,
# tree_down_add 27 (tree kernels at B = 4, the default then); all 101 compiled without
# spills in 12.7 min on 2 cores. BN254 G2's
# lane_step, two additions fused, spills (91 STL; 15 min): on the
# Triton target it is three kernels (msm_reduce.lane_step): lane_run 239 registers (147 s),
# add_products as above, lane_finish 240 registers (124 s), no spills.
AOT_ALL = [(name, case[0]) for name in ("bn254.g1", "bls12_381.g1", "bn254.g2", "bls12_381.g2", "mnt4753.g1")
           for case in _msm_kernels(name)]
# MNT4-753 G1 (24-word Fq), kernels of one product that read at most 4 values: no spills
# (measured 2026-11-21, after limb_arith's SOS square; CIOS squares had spilled, 75 STL
# each, and tree_down_add's first kernel, reading 8 x-coordinates, 80 STL).
AOT_CASES = [pytest.param(n, l, id=f"{n}-{l}") for n, l in AOT_ALL
             if os.environ.get("ZKTENSOR_AOT_ALL") == "1" or n == "bn254.g1"]


@pytest.mark.parametrize("name,label", AOT_CASES)
def test_aot_sm90a_no_spills(name, label):
    if not aot.available():
        pytest.skip("triton wheel without ptxas/cuobjdump")
    g = group_record(name)
    (case,) = [c for c in _msm_kernels(name) if c[0] == label]
    prog = _triton(g, case[1], case[2], case[3])
    if len(prog.meta["calls"]) == 1:
        kernels = [msm_triton.module(prog, interpret=False).point_kernel]
        block = msm_triton.BLOCK
        warps = msm_triton.num_warps(block)
    else:                                   # a chain of elementwise kernels (triton_cuts)
        mod = prog.triton_module(False)
        kernels = [getattr(mod, c["kernel"]) for c in prog.meta["calls"]]
        block = TRITON_BLOCK
        warps = None
    for k, fn in enumerate(kernels):
        regs, local, spills = aot_compile(fn, block, warps)
        assert local == 0 and spills == 0, f"{name} {label} kernel {k}/{len(kernels)}: {regs} registers, " \
                                           f"{local} bytes local memory, {spills} spill instructions"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("name", ["bn254.g1", "bn254.g2", "bls12_381.g1", "bls12_381.g2"])
def test_msm_on_gpu(name):
    g = group_record(name)
    G = zt.group(name)
    pts = list(oracle_points(name, 40))
    ks = scalars(name, 40)
    got = zt.msm(ks, G.tensor(pts, device="cuda")).to_affine()
    assert got == O.msm(g, pts, ks)
