"""The MSM on the Triton target as a device program, on CPU tensors under the Triton
interpreter, inside the sync guard (tests/guard.py): no host read before the result, at
most 64 launches, and the exact sum of the Python-int oracle or py_ecc.

The public path: `zt.msm(..., stats=d)` with full-width scalars, d's launch and sync counts
and the guard's, py_ecc's sum (test_public_msm_no_sync). An interpreted kernel costs per
sequential point formula, not per lane, and every full-width MSM ends in a chain of ~254
doublings (the window combination; ~126 with the GLV split, test_glv.py), so that is
one BN254 G1 MSM of 2^10 points here; the
other groups and sizes run there on a CUDA device, interpreted with ZKTENSOR_INTERPRET_ALL=1.
Below it, the device program itself (`device_msm(bits=...)`: fewer windows, the same
kernels and host program) checks every group with every exceptional addition (in CI
BN254's; BLS12-381's and MNT4-753's, and BN254 G2 at 2^10, with ZKTENSOR_INTERPRET_ALL=1;
tests/gpu runs BN254 and BLS12-381 compiled on a GPU), and BN254 G1 and G2 at 2^12
points; launches are counted at 2^12..2^20 through `zt.msm` with the kernels'
interpreted runs left out.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import zktensor as zt
from ec_support import INTERPRETED_MINUTES, O, oracle_points, scalars
from tests.guard import SyncError, SyncGuard
from tests.oracle_msm import install as install_oracle_msm
from tests.oracles import pyecc
from zktensor.algebra.curves import group as group_record
from zktensor.algebra.glv import endomorphism
from zktensor.kernels import point_formulas as pts_mod
from zktensor.kernels import elementwise, msm_device, msm_ec, msm_triton
from zktensor.ops.msm import MSMConfig, device, scalars as msm_scalars
from zktensor.ops.msm.model import n_windows
from zktensor.runtime import counters

MAX_LAUNCHES = 64


def test_guard_fires_and_counts():
    """Every host read fails inside the guard; a Triton launch (whose interpreter reads
    its arguments on the host) does not, and is counted by the guard and by the counters."""
    t = torch.arange(6)
    reads = [lambda: t.sum().item(), lambda: bool(t.any()), lambda: int(t[0]), lambda: float(t[1]),
             lambda: t.numpy(), lambda: t.tolist(), lambda: t.cpu(), lambda: np.asarray(t),
             lambda: [0, 1][t[1]], lambda: 1 if t[2] else 0]
    for read in reads:
        with pytest.raises(SyncError):
            with SyncGuard():
                read()
    assert bool(t.any()) and t.numpy().shape == (6,)         # restored after the block
    g = group_record("bn254.g1")
    G = zt.group("bn254.g1")
    A = G.generator((3,))._flat().contiguous()
    neg = msm_ec.compiled(g, "neg", ("xyzz",), pts_mod.f_neg, "cpu", "int32", "triton")
    with SyncGuard() as guard, counters.record() as c:
        outs = msm_triton.run(neg, pts_mod.comps(A))
        s = outs[0] + 1                                                 # one torch op
    assert guard.triton_launches == 1 and guard.torch_ops == 1, (guard.kernels, guard.ops)
    assert (c.kernels, c.launches, c.syncs) == (1, 2, 0)
    D = torch.stack(outs, dim=1)
    assert zt.PointTensor(G, D).to_affine() == [O.neg(g, g.generator)] * 3 and s.shape == outs[0].shape


def _edge_case(name, n, bits=None):
    """n bases with the identity, a repeated base, P and -P; scalars with 0, 1, the
    largest value and repeats (below 2^bits, or any in [0, r))."""
    g = group_record(name)
    pts = list(oracle_points(name, n))
    pts[1] = None
    pts[3] = pts[2]
    pts[5] = O.neg(g, pts[4])
    top = (1 << bits) if bits else g.r
    ks = [k % top for k in scalars(name, n, seed=5)]
    ks[0], ks[2], ks[3], ks[4], ks[5] = 0, 1, 1, top - 1, top - 1
    ks[6] = ks[7] = ks[4]
    return g, pts, ks


# BN254 G2 here and in the weighted test below only with ZKTENSOR_INTERPRET_ALL=1 (and on a
# GPU, tests/gpu): CI's interpreted G2 device MSM is test_msm_exact_no_sync's, over the same
# exceptional bases, and the weighted table's logic is the group's-independent one G1 runs
@pytest.mark.parametrize("name", ["bn254.g1"] + [pytest.param(n, marks=INTERPRETED_MINUTES) for n in
                                                 ("bn254.g2", "bls12_381.g1", "bls12_381.g2", "mnt4753.g1")])
def test_small_scalars_exact_no_sync(name):
    """Every group on the device: a batch of two MSMs over 8 bases (scalars < 2^8: 3 windows
    of 3 bits), buckets cut into segments of 2 (three accumulation rounds), with every
    exceptional addition: the oracle's sums, no host read, at most 64 launches, and the
    counters of `runtime.counters` agree with the guard's. BLS12-381 G2 and MNT4-753 G1,
    whose elementwise point kernels are cut for the register budget, run the same fused
    formulas as the others here."""
    g, pts, ks = _edge_case(name, 8, bits=8)
    ks2 = [(k * 7 + 3) % 256 for k in ks]
    G = zt.group(name)
    P = G.tensor(pts)
    K = G.Fr.tensor([ks, ks2])
    st = {}
    with zt.config(target="triton"):
        with SyncGuard() as guard, counters.record() as c:
            res = device.device_msm(G, K, P, MSMConfig(window=3, segment=2), st, bits=8)
    assert guard.launches <= MAX_LAUNCHES and c.syncs == 0
    assert c.launches == guard.launches, (guard.kernels, guard.ops)
    assert guard.triton_launches == 1 + st["rounds"] + len(st["reduce_levels"]) + 1   # from_mont, rounds,
    # the reduction's levels, the windows
    assert res.to_affine() == [O.msm(g, pts, ks), O.msm(g, pts, ks2)]


@pytest.mark.parametrize("balanced", [False, True], ids=["in_order", "balanced"])
@pytest.mark.parametrize("mixed", [False, True], ids=["xyzz", "affine"])
def test_accumulation_lanes_every_case(mixed, balanced):
    """One accumulation launch with lanes laid out by hand (the order of equal sort keys is
    the sort's to choose, so an MSM cannot pin a case to a lane): a sum that falls to the
    identity and then meets a base, an identity base first and last, P + P, P + Q, P - P,
    and a single negated entry. Each bucket's sum against the oracle, for `padd` (XYZZ
    bases) and `mstep` (affine); `balanced`, the lanes run the buckets in another order
    (`last`, no full segments before them) and still store each sum at its bucket's column."""
    name = "bn254.g1"
    g, G = group_record(name), zt.group(name)
    Pp, Qp = oracle_points(name, 2)
    P = G.tensor([Pp, Qp, None])                         # bases 0, 1, 2 = P, Q, the identity
    src = device.AffinePoints.of(P).data if mixed else P.data
    # entry o reads base o % 3, negated where digits[o] < 0: o = 3 is -P, o = 6 is P again
    digits = torch.tensor([1, 1, 1, -1, 1, 1, 1, 1, 1], dtype=torch.int32)
    lanes = [([0, 3, 1], Qp), ([2, 1], Qp), ([1, 2], Qp), ([0, 6], O.double(g, Pp)),
             ([0, 1], O.add(g, Pp, Qp)), ([0, 3], None), ([3], O.neg(g, Pp))]
    order = torch.tensor([o for es, _ in lanes for o in es], dtype=torch.int64)
    start = torch.tensor(np.cumsum([0] + [len(es) for es, _ in lanes]), dtype=torch.int64)
    NB = len(lanes)
    seg_end = torch.arange(1, NB + 1, dtype=torch.int64)       # one segment a bucket
    out = torch.empty((G.L, G.K, NB), dtype=torch.int32)
    mod = msm_device.module(G, MSMConfig().strategy, "cpu", True)
    lane_map = [torch.zeros(NB, dtype=torch.int64), torch.tensor([3, 6, 0, 5, 1, 4, 2])] if balanced \
        else [seg_end, seg_end]
    args = (msm_device.strides(src) + [order, digits, 3, seg_end, start, *lane_map] + msm_device.strides(out)
            + [NB, NB, NB.bit_length(), 4, 1, int(balanced)])
    with zt.config(target="triton"):
        msm_device.launch(mod.accumulate_affine if mixed else mod.accumulate, (1,), args, True, 16)
    assert zt.points.PointTensor(G, out).to_affine() == [want for _, want in lanes]


def test_first_entry_starts_the_sum(monkeypatch):
    """A lane's first entry is its sum's start, not an addition to the identity: each
    accumulation launch runs the point formula (`mstep` in the first round over affine
    bases, `padd` after it) one time fewer than its longest segment's entries, and a round
    of one-entry segments runs it not at all (XYZZ bases: tests/bench/test_gpu_counts.py,
    block by block). 64 bases with the identity, a repeated base, P and -P among them;
    4-bit scalars in one window of 5 bits (digit = scalar), segments of 4: three rounds,
    whose longest segments follow from the largest bucket. The reduction's chains likewise
    copy where a sum is still the identity. The oracle's sum."""
    g, pts, ks = _edge_case("bn254.g1", 64, bits=4)
    G = zt.group("bn254.g1")
    bases = device.AffinePoints.of(G.tensor(pts))
    S, C = 4, 5
    mod = msm_device.module(G, MSMConfig().strategy, "cpu", True)
    calls, runs = [0], []
    for fn in ("padd", "pstep", "mstep"):
        orig = getattr(mod, fn)

        def counted(*a, _orig=orig, **k):
            calls[0] += 1
            return _orig(*a, **k)
        monkeypatch.setattr(mod, fn, counted)

    def launch(kernel, grid, args, interpret, block, max_registers=None):
        calls[0] = 0
        msm_device.launch(kernel, grid, args, interpret, block, max_registers)
        assert grid == (1,)                              # one interpreted program: calls = its trips
        runs.append((kernel.__name__ if hasattr(kernel, "__name__") else str(kernel), calls[0]))
    monkeypatch.setattr(device, "_launch", launch)
    st = {}
    with zt.config(target="triton"):
        res = device.device_msm(G, G.Fr.tensor(ks), bases, MSMConfig(window=C, segment=S), st, bits=4)
    assert res.to_affine() == [O.msm(g, pts, ks)]             # a batch of one
    biggest = max(ks.count(v) for v in set(ks) if v)      # entries of the largest bucket
    assert st["rounds"] == 3 and biggest <= S * S, (st, biggest)
    longest, e = [], biggest
    for _ in range(3):                                   # its segments' entries, round by round
        longest.append(min(S, e))
        e = -(-e // S)
    assert longest[-1] == 1
    steps = [n for name, n in runs if "accumulate" in name]
    assert steps == [m - 1 for m in longest], (runs, longest)
    # the reduction's levels (fan-ins of 4 for 16 buckets: [2, 2]) and the windows' Horner
    # (one window: a copy): each chain trip but the first two of a level is a formula, and
    # every level but the last doubles its r b times; bench.gpu_estimate's model agrees
    levels = st["reduce_levels"]
    assert levels == [2, 2]
    chains = [n for name, n in runs if name == "chain"]
    assert chains == [2 * 4 - 2 + 2, 3 * 4 - 1 - 2, 0], runs
    from bench.gpu_estimate import reduction_steps
    assert sum(chains) == sum(reduction_steps(levels))


@pytest.mark.parametrize("name", ["bn254.g1", pytest.param("bn254.g2", marks=INTERPRETED_MINUTES)])
def test_weighted_table_exact_no_sync(name):
    """The device program against a weighted table (`weighted=`, MSMConfig.weighted): the
    table is 2^(C·t)·P_i at column t·n + i, and with it the windows share one row of
    buckets, so each batch row has 2^(C-1) buckets, not W times as many, and nothing is
    left for the final Horner to double. The bases and scalars of test_small_scalars_exact_no_sync
    (every exceptional addition): the oracle's sums, no host read, at most 64 launches."""
    g, pts, ks = _edge_case(name, 8, bits=8)
    ks2 = [(k * 7 + 3) % 256 for k in ks]
    G = zt.group(name)
    P = G.tensor(pts)
    K = G.Fr.tensor([ks, ks2])
    C, W = 3, 3
    with zt.config(target="triton"):
        table = device.weighted_points(G, P, C, W)
        asked = []
        st = {}
        with SyncGuard() as guard, counters.record() as c:
            res = device.device_msm(G, K, P, MSMConfig(window=C, segment=2), st, bits=8,
                                    weighted=lambda w: asked.append(w) or table)
    assert table.to_affine() == [None if p is None else O.mul(g, p, 1 << (C * t)) for t in range(W) for p in pts]
    assert asked == [C] and st["weighted"] and st["windows"] == W
    assert st["buckets"] == 2 * (1 << (C - 1))                  # 2 batch rows, one row of buckets each
    assert guard.launches <= MAX_LAUNCHES and c.syncs == 0 and c.launches == guard.launches
    assert res.to_affine() == [O.msm(g, pts, ks), O.msm(g, pts, ks2)]


@pytest.mark.parametrize("name,segment", [("bn254.g1", 2), ("bn254.g1", 16), pytest.param("bn254.g2", 16, marks=pytest.mark.slow)]
                         + [pytest.param(n, s, marks=INTERPRETED_MINUTES) for n, s in
                            (("bn254.g2", 2), ("bls12_381.g1", 16), ("bls12_381.g2", 16), ("mnt4753.g1", 16))])
def test_mixed_bases_exact_no_sync(name, segment):
    """Affine bases (`AffinePoints`, MSMConfig.mixed): the first round adds them with
    `mstep` (madd-2008-s), the later ones add segment sums as before. The bases and scalars
    of test_small_scalars_exact_no_sync; segments of 16 put a whole bucket in one lane, so
    P + P, P + (-P) and an identity base meet in one lane's sum (in an order the sort
    chooses: test_accumulation_lanes_every_case pins each case to a lane); segments of 2:
    three rounds. The oracle's sums, no host read, the same
    launches as XYZZ bases, and the affine kernel in the first round only."""
    g, pts, ks = _edge_case(name, 8, bits=8)
    ks2 = [(k * 7 + 3) % 256 for k in ks]
    G = zt.group(name)
    A = device.AffinePoints.of(G.tensor(pts))
    K = G.Fr.tensor([ks, ks2])
    st = {}
    with zt.config(target="triton"):
        with SyncGuard() as guard, counters.record() as c:
            res = device.device_msm(G, K, A, MSMConfig(window=3, segment=segment), st, bits=8)
    assert st["mixed"] and c.syncs == 0 and c.launches == guard.launches
    assert guard.triton_launches == 1 + st["rounds"] + len(st["reduce_levels"]) + 1
    accumulations = [k for k in guard.kernels if "accumulate" in k]
    assert accumulations[0] == "accumulate_affine" and set(accumulations[1:]) <= {"accumulate"}, guard.kernels
    assert res.to_affine() == [O.msm(g, pts, ks), O.msm(g, pts, ks2)]


@pytest.mark.parametrize("name", ["bn254.g1", pytest.param("bn254.g2", marks=INTERPRETED_MINUTES)])
def test_mixed_weighted_table_exact_no_sync(name):
    """An affine weighted table (`AffinePoints.of(weighted_points(...))`, what
    `MSMBases.device_weighted` makes with MSMConfig.mixed): 2^(C·t)·P_i at column t·n + i,
    the identity as zero words; the device program over it gives the oracle's sums."""
    g, pts, ks = _edge_case(name, 8, bits=8)
    G = zt.group(name)
    C, W = 3, 3
    with zt.config(target="triton"):
        table = device.AffinePoints.of(device.weighted_points(G, G.tensor(pts), C, W))
        A, K, st = device.AffinePoints.of(G.tensor(pts)), G.Fr.tensor([ks]), {}
        with SyncGuard(), counters.record() as c:
            res = device.device_msm(G, K, A, MSMConfig(window=C, segment=4), st, bits=8, weighted=lambda w: table)
    assert table.points().to_affine() == [None if p is None else O.mul(g, p, 1 << (C * t))
                                          for t in range(W) for p in pts]
    assert st["weighted"] and st["mixed"] and c.syncs == 0
    assert res.to_affine() == [O.msm(g, pts, ks)]



def _point_major_strides(t) -> bool:
    L, K, _ = t.shape
    return t.stride(0) == 1 and t.stride(1) == L and t.stride(2) == K * L


@pytest.mark.parametrize("bases", ["xyzz", pytest.param("affine_weighted", marks=INTERPRETED_MINUTES)])
def test_point_major_exact_no_sync(monkeypatch, bases):
    """MSMConfig(point_major=True), XYZZ bases and an affine weighted table (both
    accumulation kernels): every point array the kernels read or write (bases, tables,
    round sums, the reduction's sums) keeps a point's words together, the kernels
    (stride-generic) give the oracle's sums over every exceptional addition, and the only
    extra launch is the one copy of bases given word-major (none for bases already so)."""
    g, pts, ks = _edge_case("bn254.g1", 8, bits=8)
    G = zt.group("bn254.g1")
    K = G.Fr.tensor([ks])
    C, W = 3, 3
    seen, real = [], device._launch
    with zt.config(target="triton"):
        P = G.tensor(pts)
        table = None
        if bases == "affine_weighted":
            P = device.AffinePoints.of(P)
            table = device.AffinePoints.of(device.weighted_points(G, G.tensor(pts), C, W))

        def run(given, pm, run_kernels):
            """Launches of one MSM over `given` bases (or the table in `given`'s layout)."""
            def launch(kernel, grid, args, interpret, block, max_registers=None):
                seen.append([a for a in args if isinstance(a, torch.Tensor) and a.dim() == 3])
                if run_kernels:
                    real(kernel, grid, args, interpret, block, max_registers)
                else:
                    with counters.kernel():
                        pass
            monkeypatch.setattr(device, "_launch", launch)
            seen.clear()
            st = {}
            weighted = None
            if table is not None:
                t = tables[given is not P]
                weighted = lambda w: t                                  # noqa: E731
            with SyncGuard(), counters.record() as c:
                res = device.device_msm(G, K, given, MSMConfig(window=C, segment=2, point_major=pm), st,
                                        bits=8, weighted=weighted)
            monkeypatch.setattr(device, "_launch", real)
            assert st["point_major"] == pm and c.syncs == 0
            return res, c.launches
        P_pm = device.point_major(P)
        tables = None if table is None else (table, device.point_major(table))
        run(P, False, False)                     # makes the shape's constants (`device._const`)
        word = run(P, False, False)[1]
        res, _ = run(P_pm, True, True)
        assert res.to_affine() == [O.msm(g, pts, ks)]
        assert seen and all(_point_major_strides(t) for args in seen[:-1] for t in args), \
            [[t.stride() for t in a] for a in seen]
        assert not _point_major_strides(seen[-1][-1])             # the result: a PointTensor as usual
        kept = run(P_pm, True, False)[1]
        copied = run(P, True, False)[1]
    assert kept == word and copied == word + 1, (word, kept, copied)


@pytest.mark.parametrize("name", ["bn254.g1", pytest.param("bn254.g2", marks=pytest.mark.slow)])
def test_point_sums_one_launch(name):
    """`device.point_sums`: groups of M points summed in one chain launch, no host read, the
    oracle's sums, for a group with an identity, one of equal points (a doubling), one of
    opposite points (the identity) and a generic one; M = 1 copies."""
    g = group_record(name)
    G = zt.group(name)
    P1, P2, P3 = (O.mul(g, g.generator, k) for k in (5, 11, 12345))
    groups = [[P1, None, P2], [P3, P3, None], [P2, O.neg(g, P2), P1], [P1, P2, P3]]
    pts = G.tensor([p for grp in groups for p in grp])
    with zt.config(target="triton"):
        with SyncGuard() as guard:
            res = device.point_sums(G, pts, 3)
        assert guard.triton_launches == 1 and guard.torch_ops == 0
        want = [None] * 4
        for i, grp in enumerate(groups):
            for p in grp:
                want[i] = O.add(g, want[i], p)
        assert res.to_affine() == want
        assert device.point_sums(G, G.tensor([P1, None]), 1).to_affine() == [P1, None]
        with pytest.raises(ValueError, match="groups of 2"):
            device.point_sums(G, G.tensor([P1, P2, P3]), 2)

def test_affine_points():
    """AffinePoints: (L, 2·degree, n) words, zero at the identity, back to the same XYZZ
    points; a wrong shape is refused by name."""
    name = "bn254.g2"
    g = group_record(name)
    pts = list(oracle_points(name, 5))
    pts[2] = None
    G = zt.group(name)
    P = G.tensor(pts).double()                   # ZZ != 1: the conversion normalises
    A = device.AffinePoints.of(P)
    assert A.shape == (5,) and tuple(A.data.shape) == (G.L, 4, 5)
    assert not A.data[:, :, 2].any() and all(A.data[:, :, i].any() for i in (0, 1, 3, 4))
    assert A.points().to_affine() == [None if p is None else O.add(g, p, p) for p in pts]
    with pytest.raises(ValueError, match=r"bn254.g2: affine bases are \(8, 4, n\) words"):
        device.AffinePoints(G, P.data)


def test_weighted_table_too_small():
    """A weighted table made for fewer windows than the scalars need is refused, not read
    past its end."""
    G = zt.group("bn254.g1")
    P = G.generator((4,))
    with zt.config(target="triton"):
        table = device.weighted_points(G, P, 3, 2)
        with pytest.raises(ValueError, match="weighted table of 8 points"):
            device.device_msm(G, G.Fr.tensor([1, 2, 3, 255]), P, MSMConfig(window=3), bits=8,
                              weighted=lambda w: table)


def test_layout_refuses_lanes_past_int32():
    """The accumulation stores each lane's sum at an int32 column: a round of 2^31 lanes or
    more is refused by `layout`, before anything is allocated; one lane fewer is laid out."""
    lay = device.layout(1 << 31, 1, 2, 1, 2)          # one row of 2 buckets, segments of 2
    assert lay["lanes"][0] == (1 << 30) + 2
    with pytest.raises(ValueError, match=r"accumulation lanes in a round; at most 2\^31 - 1"):
        device.layout(1 << 32, 1, 2, 1, 2)


def _count_launches(monkeypatch, name, n):
    """(guard, stats, kernels made) of `zt.msm` over n bases and full-width scalars (Python
    ints: host data, uploaded once) on the Triton target, every launch made and counted
    but the kernels' interpreted runs left out (their results are not looked at)."""
    made, field = [], []

    def launch(kernel, grid, args, interpret, block, max_registers=None):
        with counters.kernel():
            made.append(kernel)
    monkeypatch.setattr(device, "_launch", launch)
    # phi's product of the x-coordinates (GLV, G1): a field program, counted by its caller
    monkeypatch.setattr(elementwise.CompiledProgram, "_launch_triton", lambda self, name, *a: field.append(name))
    G = zt.group(name)
    P = G.generator((n,))
    rng = np.random.default_rng(1)
    words = rng.integers(0, 1 << 32, size=(n, G.Fr.limbs), dtype=np.uint64)
    words[:, -1] &= 0x0FFFFFFF                                         # < r
    ks = [int.from_bytes(w.astype("<u4").tobytes(), "little") for w in words]
    st = {}
    with zt.config(target="triton"):
        with SyncGuard() as guard:
            zt.msm(ks, P, stats=st)
    assert st["launches"] == guard.launches + len(made) + len(field) and st["syncs"] == 0
    # the GLV split is one of them, and phi's product a field program
    assert st["glv"] is (endomorphism(name) is not None) and len(field) == st["glv"]
    assert len(made) == st["glv"] + st["rounds"] + len(st["reduce_levels"]) + 1
    assert st["kernels"] == len(made) + len(field)
    return guard, st


@pytest.mark.parametrize("name", ["bn254.g1", "bn254.g2"])
@pytest.mark.parametrize("log_n", [12, 16])
def test_launches_at_scale(monkeypatch, name, log_n):
    """The host program of a full-width MSM through `zt.msm`: no host read, at most 64
    launches (stats and the guard agree), counted without running the kernels."""
    guard, st = _count_launches(monkeypatch, name, 1 << log_n)
    assert st["launches"] <= MAX_LAUNCHES, (guard.ops, st)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bn254.g1", "bn254.g2"])
def test_launches_2_20(monkeypatch, name):
    """As test_launches_at_scale, at the issue's size: 2^20 points, G1 and G2."""
    guard, st = _count_launches(monkeypatch, name, 1 << 20)
    assert st["launches"] <= MAX_LAUNCHES, (guard.ops, st)


def _py_ecc_msm(g, pts, ks):
    m = pyecc.module(g, optimized=True)
    acc = None
    for p, k in zip(pts, ks):
        if p is None or k == 0:
            continue
        t = m.multiply(pyecc.to_py_ecc(g, p, True), k)
        acc = t if acc is None else m.add(acc, t)
    return pyecc.from_py_ecc(g, acc)


def _public_case(name, log_n, in_ci=False):
    """On a CUDA device every case runs compiled; interpreted, those in CI and the others
    with ZKTENSOR_INTERPRET_ALL=1 (G2's chain of doublings interprets ~3x slower than G1's)."""
    marks = [pytest.mark.slow] if in_ci else [pytest.mark.slow, pytest.mark.skipif(
        not (torch.cuda.is_available() or os.environ.get("ZKTENSOR_INTERPRET_ALL") == "1"),
        reason="interpreted, minutes: ZKTENSOR_INTERPRET_ALL=1, or a CUDA device")]
    return pytest.param(name, log_n, marks=marks, id=f"{name}-2^{log_n}")


@pytest.mark.parametrize("name,log_n", [_public_case("bn254.g1", 10, in_ci=True), _public_case("bn254.g1", 12),
                                        _public_case("bn254.g2", 10), _public_case("bn254.g2", 12)])
def test_public_msm_no_sync(name, log_n):
    """The issue's test: `zt.msm(k, P, stats=d)` on the Triton target with 2^10..2^12 bases
    (the identity, a repeated base, P and -P among them) and full-width scalars (0, 1,
    r - 1, repeats, random): py_ecc's sum, d's launches at most 64 and no host read (d's
    counters and the guard's agree), on CPU tensors under the interpreter or on a GPU."""
    n = 1 << log_n
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    g, pts, ks = _edge_case(name, n)
    G = zt.group(name)
    P = G.tensor(pts, device=dev)
    K = G.Fr.tensor(ks, device=dev)
    d = {}
    with zt.config(target="triton"):
        with SyncGuard() as guard:
            res = zt.msm(K, P, stats=d)
    assert d["path"] == "device" and d["syncs"] == 0 and d["launches"] <= MAX_LAUNCHES, d
    # from_mont, the GLV split and phi's product, rounds, reduction, combination
    assert d["kernels"] == 1 + 2 * d["glv"] + d["rounds"] + len(d["reduce_levels"]) + 1, d
    if dev == "cpu":                        # the guard counts interpreted launches (not a GPU's)
        assert d["launches"] == guard.launches and d["kernels"] == guard.triton_launches, (d, guard.kernels, guard.ops)
    assert res.to_affine() == _py_ecc_msm(g, pts, ks)


@pytest.mark.parametrize("name,log_n,window", [("bn254.g1", 12, 7), pytest.param("bn254.g2", 10, 4, marks=INTERPRETED_MINUTES),
                                               pytest.param("bn254.g2", 12, 4, marks=pytest.mark.slow)])
def test_msm_exact_no_sync(name, log_n, window):
    """The device program at the issue's sizes with 16-bit scalars (0, 1, 2^16 - 1,
    repeats) and the bases of test_public_msm_no_sync: py_ecc's sum, no host read, at
    most 64 launches. Segments of 4 (5 and 6 accumulation rounds) and small windows keep
    the interpreted depth small: G1's of 7 bits (64 buckets a row, the reduction in three
    levels: blocks of 4 buckets merged 4 at a time twice), G2's of 4 (8 buckets: blocks of
    4 merged in pairs; the merge is group-independent host code and the same kernel); full
    width: test_public_msm_no_sync,
    and the digits' closed form in test_signed_digits_full_width."""
    n = 1 << log_n
    g, pts, ks = _edge_case(name, n, bits=16)
    G = zt.group(name)
    P = G.tensor(pts)
    K = G.Fr.tensor(ks)
    st = {}
    with zt.config(target="triton"):
        with SyncGuard() as guard, counters.record() as c:
            res = device.device_msm(G, K, P, MSMConfig(window=window, segment=4), st, bits=16)
    assert guard.launches <= MAX_LAUNCHES and c.syncs == 0 and c.launches == guard.launches
    assert st["rounds"] == -(-log_n // 2) and st["reduce_levels"] == device.reduce_levels(window)
    assert window < 7 or len(st["reduce_levels"]) == 3
    assert res.to_affine() == [_py_ecc_msm(g, pts, ks)]


def test_signed_digits_full_width():
    """Step 1 of the device program at full width, every window size: the digits of 0, 1,
    r - 1, 2^k - 1 and 2^k at window boundaries and random scalars are at most 2^(C-1) in
    size and sum back to the scalar (the top window's carry included), by Python ints."""
    import random
    from zktensor.ops.msm.model import n_windows
    g = group_record("bn254.g1")
    r, bits = g.r, g.r.bit_length()
    rng = random.Random(7)
    ks = [0, 1, r - 1, r - 2, (1 << (bits - 1)) - 1, 1 << (bits - 1)] + [rng.randrange(r) for _ in range(40)]
    for C in range(2, 17):
        ks_c = ks + [(1 << (C * t)) - 1 for t in range(1, bits // C)] + [1 << (C * t) for t in range(1, bits // C)]
        W = n_windows(bits, C)
        words = torch.tensor([[(k >> (32 * i)) & 0xFFFFFFFF for k in ks_c] for i in range(8)],
                             dtype=torch.int64).to(torch.int32)
        d = msm_scalars.signed_digits_torch(words, C, W).tolist()
        for j, k in enumerate(ks_c):
            col = [d[t][j] for t in range(W)]
            assert all(abs(x) <= 1 << (C - 1) for x in col), (C, k, col)
            assert sum(x << (C * t) for t, x in enumerate(col)) == k, (C, k, col)
        assert msm_scalars.signed_digits_torch(words, C, W).dtype == torch.int32
    for C in (0, 31):                       # int32 digits hold windows of up to 30 bits
        with pytest.raises(ValueError, match="signed digits of 1..30 bits"):
            msm_scalars.signed_digits_torch(words, C, 2)


# -- ahead-of-time compilation for sm_90a ---------------------------------------------------


def _aot(name, strategy, kernel, maxnreg=None, loop=False):
    """(registers, local bytes, spill instructions) of a device-MSM kernel for sm_90a, with
    the signature it is launched with (every size a runtime argument), at MSMConfig's block
    and the warps it launches with, and its register cap (`maxnreg`: MSMConfig.max_registers;
    None: the default, `device.register_cap`). `loop`: the main loop's trip
    (`aot.loop_mix`) as a fourth item, {opcode: count}."""
    from zktensor.runtime import aot
    G, cfg = zt.group(name), MSMConfig(max_registers=maxnreg)
    fn = getattr(msm_device.module(G, strategy, "cuda", interpret=False), kernel)
    sig, const = msm_device.aot_signature(fn, cfg.block)
    rep = aot.compile_kernel(fn, "sm_90a", sig, const, num_warps=msm_triton.num_warps(cfg.block),
                             maxnreg=device.register_cap(G, cfg))
    spills = rep["sass"].get("STL", 0) + rep["sass"].get("LDL", 0)
    return (rep["registers"], rep["local_bytes"], spills) + ((rep["loop"]["hot"],) if loop else ())


# BN254 G1's kernels in CI; ZKTENSOR_AOT_ALL=1 adds the other groups (G2's compile several
# times longer; BLS12-381 G2 and MNT4-753 G1 spill, a stated gap). `bench/sass_report.py
# --proof-kernels` records BN254's with registers, spills and cold compile seconds.
AOT_GROUPS = ("bn254.g1", "bn254.g2", "bls12_381.g1", "bls12_381.g2", "mnt4753.g1")
AOT_DEVICE = [pytest.param(g, k, s, id=f"{g}-{k}-{s}") for g in AOT_GROUPS for k in msm_device.KERNELS
              for s in ("int32", "fp64") if g == "bn254.g1" or os.environ.get("ZKTENSOR_AOT_ALL") == "1"]
# the accumulations, whose work grows with n, compile without spills for these
SPILL_FREE = {("bn254.g1", "accumulate", "int32"), ("bn254.g1", "accumulate_affine", "int32"),
              ("bn254.g1", "accumulate", "fp64")}
# and for these a trip of the loop (the code every addition runs, `aot.loop_mix`) has none
LOOP_SPILL_FREE = SPILL_FREE | {("bn254.g1", "accumulate_affine", "fp64")}


@pytest.mark.parametrize("name,kernel,strategy", AOT_DEVICE)
def test_aot_sm90a(name, kernel, strategy):
    """The device-MSM kernels compile for sm_90a within the register file; BN254 G1's int32
    accumulations and its fp64 XYZZ accumulation without spills, and a trip of its fp64
    accumulation over affine bases too.
    The other kernels' spills (G1's chain; every G2 kernel, whose points are twice as many
    words) are known and reported, not hidden (ARCHITECTURE.md,
    bench/results/sass_double_from.md)."""
    from zktensor.runtime import aot
    if not aot.available():
        pytest.skip("triton wheel without ptxas/cuobjdump")
    regs, local, spills, hot = _aot(name, strategy, kernel, loop=True)
    assert 0 < regs <= 255
    if name in ("bls12_381.g2", "mnt4753.g1"):      # left to itself, ptxas gave the fp64 chain 32 registers
        assert regs > 128, f"{name} {kernel} ({strategy}): {regs} registers, {spills} spills"
    if (name, kernel, strategy) in SPILL_FREE:
        assert local == 0 and spills == 0, f"{name} {kernel} ({strategy}): {regs} registers, {local} bytes local, " \
                                           f"{spills} spills"
    if (name, kernel, strategy) in LOOP_SPILL_FREE:
        loop_spills = hot.get("STL", 0) + hot.get("LDL", 0)
        assert loop_spills == 0 and hot.get("DFMA" if strategy == "fp64" else "IMAD", 0) > 0, \
            f"{name} {kernel} ({strategy}): {regs} registers, {loop_spills} spills a trip ({spills} in all)"


def test_max_registers_caps_every_launch(monkeypatch):
    """MSMConfig.max_registers reaches every launch of the device program (it is a compile
    option: `msm_device.launch` hands it to Triton as maxnreg), and ptxas keeps the kernel
    within it; values outside 24..255 are refused by name; left open, the group's record
    decides (`device.register_cap`)."""
    caps = []

    def launch(kernel, grid, args, interpret, block, max_registers=None):
        with counters.kernel():
            caps.append(max_registers)
    monkeypatch.setattr(device, "_launch", launch)
    G = zt.group("bn254.g1")
    with zt.config(target="triton"):
        device.device_msm(G, G.Fr.tensor([3, 5]), G.generator((2,)), MSMConfig(max_registers=128), {})
    assert caps and set(caps) == {128}
    caps.clear()
    with zt.config(target="triton"):
        device.device_msm(G, G.Fr.tensor([3, 5]), G.generator((2,)), MSMConfig(), {})
    assert caps and set(caps) == {None}                 # BN254 G1: ptxas's own choice
    # the group's record gives the default where ptxas's own choice spilled (`algebra.curves`)
    assert device.register_cap(zt.group("bls12_381.g2"), MSMConfig()) == 255
    assert device.register_cap(zt.group("bls12_381.g2"), MSMConfig(max_registers=168)) == 168
    assert device.register_cap(zt.group("mnt4753.g1"), MSMConfig()) == 255
    assert {device.register_cap(zt.group(g), MSMConfig()) for g in ("bn254.g1", "bn254.g2", "bls12_381.g1")} == {None}
    for bad in (16, 256):
        with pytest.raises(ValueError, match="max_registers must be in 24..255"):
            MSMConfig(max_registers=bad)
    from zktensor.runtime import aot
    if aot.available():
        regs, _, _ = _aot("bn254.g1", "fp64", "accumulate_affine", maxnreg=128)
        assert regs <= 128


@pytest.mark.parametrize("field,bad,msg", [("block", 48, "power of two"), ("block", 16, "power of two"),
                                           ("segment", 1, "at least 2"), ("balanced", "False", "True or False"),
                                           ("point_major", 1, "True or False"), ("sparse", None, "True or False")])
def test_msm_config_rejects_bad_values(field, bad, msg):
    """A value the kernels cannot take, or a flag that is not a bool (the string "False" is
    true), is refused where the config is made, naming the field."""
    with pytest.raises(ValueError, match=f"MSMConfig.{field} must .*{msg}"):
        MSMConfig(**{field: bad})


def test_cpu_target_reports_counts():
    """The CPU target's stats carry the same counters: its kernel launches and host reads
    (the CPU plan reads values on the host; its counts are what they are, not bounded)."""
    name = "bn254.g1"
    g = group_record(name)
    G = zt.group(name)
    pts = list(oracle_points(name, 12))
    ks = scalars(name, 12, seed=3)
    st = {}
    res = zt.msm(ks, G.tensor(pts), MSMConfig(window=4), stats=st)
    assert res.to_affine() == O.msm(g, pts, ks)
    assert st["kernels"] > 0 and st["launches"] >= st["kernels"] and st["syncs"] >= 0


def test_mixed_config_on_prepared_bases(monkeypatch):
    """MSMConfig(mixed=True) with msm_prepare on the Triton target: the bases are kept affine
    (half the words of XYZZ, the only copy), msm and msm_many over them and over part of
    them pass `AffinePoints` to the device program, and the weighted table is made from
    them and kept affine. The kernels are the oracle's stand-in (tests/oracle_msm.py),
    reading the affine bases, and the table's doublings a stand-in's copies; the affine
    kernels and a real table: test_mixed_bases_exact_no_sync, test_mixed_weighted_table_exact_no_sync."""
    install_oracle_msm(monkeypatch)
    made = []           # the weighted table's doublings take minutes interpreted: a stand-in
    monkeypatch.setattr(device, "weighted_points", lambda GS, P, C, W, point_major=False: made.append((C, W)) or
                        zt.PointTensor(GS, P.data.repeat(1, 1, W)))
    given = []
    real = device.device_msm
    monkeypatch.setattr(device, "device_msm", lambda GS, sc, pt, cfg, stats=None, bits=None, weighted=None,
                        glv=None: given.append(type(pt)) or real(GS, sc, pt, cfg, stats, bits=bits,
                                                                 weighted=weighted, glv=glv))
    name = "bn254.g1"
    g, pts, ks = _edge_case(name, 16)
    G = zt.group(name)
    K = G.Fr.tensor(ks)
    with zt.config(target="triton"):
        plain = zt.msm_prepare(G.tensor(pts), config=MSMConfig(window=8)).memory_bytes()
        bases = zt.msm_prepare(G.tensor(pts), config=MSMConfig(window=8, mixed=True))
        assert bases.memory_bytes() * 2 == plain and isinstance(bases.device_bases(), device.AffinePoints)
        st = {}
        one = zt.msm(K, bases, stats=st)
        many = zt.msm_many([(K, 0), (G.Fr.tensor(ks[8:]), 8)], bases)
        table = bases.device_weighted(8)
    assert given == [device.AffinePoints] * 2
    W = n_windows(G.r.bit_length(), 8)
    assert made == [(8, W)] and isinstance(table, device.AffinePoints) and table.shape == (W * 16,)
    assert table.points().to_affine() == pts * W             # the stand-in's copies, made affine
    assert one.to_affine() == O.msm(g, pts, ks)
    assert many.to_affine() == [O.msm(g, pts, ks), O.msm(g, pts[8:], ks[8:])]


@pytest.mark.parametrize("kernels", ["oracle", pytest.param("interpreted", marks=INTERPRETED_MINUTES)])
def test_prepared_many_and_plan_on_device(monkeypatch, kernels):
    """The full-width case: msm_prepare on the Triton target keeps the bases on the device;
    msm_many (its jobs: all scalars as one FieldTensor, half as a FieldTensor, half as
    Python ints) against them is one device program (its rows share the ~254 doublings an
    interpreted full-width MSM costs) with no host read, over scalars 0, 1, r - 1 and
    repeats and bases with the identity, P and -P: the oracle's sums. msm(plan, bases) is
    the device program over the plan's scalars and the resident bases (seen, not run).
    In CI the device program's kernels are the oracle's stand-in (tests/oracle_msm.py: the
    host program and its guard are real, the rows' sums the oracle's from the scalars and
    bases the program was given); interpreted, ~10 minutes, with ZKTENSOR_INTERPRET_ALL=1."""
    calls = install_oracle_msm(monkeypatch) if kernels == "oracle" else None
    name = "bn254.g1"
    g, pts, ks = _edge_case(name, 16)
    G = zt.group(name)
    P = G.tensor(pts)
    K = G.Fr.tensor(ks)
    jobs = [(K, 0), (G.Fr.tensor(ks[:8]), 0), (ks[8:], 8)]
    with zt.config(target="triton"):
        bases = zt.msm_prepare(P)
        assert bases.device_points is not None
        with SyncGuard():
            plan = zt.msm_plan(K, bases)
            st = {}
            many = zt.msm_many(jobs, bases, stats=st)
        seen = []
        monkeypatch.setattr(device, "device_msm", lambda GS, sc, pt, cfg, stats=None, bits=None, weighted=None,
                            glv=None: seen.append((sc, pt, glv)) or GS.identity((1,)))
        zt.msm(plan, bases)
    assert st["launches"] <= MAX_LAUNCHES and st["syncs"] == 0
    assert calls is None or calls == [(name, 16, 3)]
    assert many.to_affine() == [O.msm(g, pts, ks), O.msm(g, pts[:8], ks[:8]), O.msm(g, pts[8:], ks[8:])]
    assert len(seen) == 1 and seen[0][0] is K and torch.equal(seen[0][1].data, bases.device_bases().data)
    assert bases.glv and seen[0][2].data.data_ptr() == bases.device_points.data_ptr()      # the kept (P, phi(P))


def test_weighted_config_on_prepared_bases(monkeypatch):
    """MSMConfig(weighted=True) with bases from msm_prepare on the Triton target: msm and
    msm_many over every base run the device program against the bases' weighted table,
    made once and kept (and counted in memory_bytes); msm_many over part of the bases runs
    the plain program. The kernels are the oracle's stand-in (tests/oracle_msm.py), and the
    table is W copies of the bases, which the stand-in's sums do not read (its doublings
    take minutes interpreted; the weighted table and sums: test_weighted_table_exact_no_sync)."""
    install_oracle_msm(monkeypatch)
    made = []
    monkeypatch.setattr(device, "weighted_points", lambda GS, P, C, W, point_major=False: made.append((C, W)) or
                        zt.PointTensor(GS, P.data.repeat(1, 1, W)))
    name = "bn254.g1"
    g, pts, ks = _edge_case(name, 16)
    G = zt.group(name)
    K = G.Fr.tensor(ks)
    cfg = MSMConfig(window=8, weighted=True)
    W = n_windows(G.r.bit_length(), 8)
    with zt.config(target="triton"):
        bases = zt.msm_prepare(G.tensor(pts))
        plain_bytes = bases.memory_bytes()
        st1, st2, st3 = {}, {}, {}
        one = zt.msm(K, bases, cfg, stats=st1)
        table = bases.device_weighted(8)
        many = zt.msm_many([(K, 0)], bases, cfg, stats=st2)
        part = zt.msm_many([(G.Fr.tensor(ks[:8]), 0)], bases, cfg, stats=st3)
    assert st1["weighted"] and st2["weighted"] and not st3["weighted"]
    # the plain program splits G1's scalars (GLV): windows of half the bits
    assert st3["glv"] and st3["buckets"] == n_windows(endomorphism(name).bits, 8) << 7 and st1["buckets"] == 1 << 7
    assert bases.device_weighted(8) is table and table.shape[0] == W * 16 and made == [(8, W)]
    # the bases kept as (P, phi(P)) (GLV: 2n points), the weighted table W·n
    assert bases.glv and bases.memory_bytes() == plain_bytes + W * plain_bytes // 2
    want = O.msm(g, pts, ks)
    assert one.to_affine() == want and many.to_affine() == [want]
    assert part.to_affine() == [O.msm(g, pts[:8], ks[:8])]


def test_many_on_device_bad_input(monkeypatch):
    """msm_many against resident bases refuses what the CPU path refuses, naming the job,
    before the device program runs; jobs that are all empty are identities without it."""
    G = zt.group("bn254.g1")
    P = G.tensor(list(oracle_points("bn254.g1", 4)))
    with zt.config(target="triton"):
        bases = zt.msm_prepare(P)
        assert bases.device_points is not None
        monkeypatch.setattr(device, "device_msm", lambda *a, **k: pytest.fail("the device program ran"))
        for jobs, msg in [([(zt.field("bn254.fq").tensor([1, 2]), 0)], "job 0: scalars must be bn254.fr"),
                          ([([1], 0), (G.Fr.tensor([[1, 2], [3, 4]]), 0)], "job 1: scalars must be one vector"),
                          ([([1, 2], 3)], "job 0: 2 scalars from base 3 pass the 4 bases"),
                          ([([G.Fr.p], 0)], "outside")]:
            with pytest.raises(ValueError, match=msg):
                zt.msm_many(jobs, bases)
        res = zt.msm_many([([], 0), ([], 4)], bases)
    assert res.to_affine() == [None, None]
