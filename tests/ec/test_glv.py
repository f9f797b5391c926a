"""The GLV endomorphism (algebra/glv.py) and the device's split (kernels/glv_split.py), for
G1 and G2 of BN254 and BLS12-381.

The data against its definition on Python ints (tests/oracles): beta and lambda are cube
roots of unity, phi(P) = (beta·x, y) equals lambda·P by double-and-add, the basis lies in
the lattice and spans it. The interpreted kernel against the split's two properties, for
edge scalars, scalars on Babai's rounding boundaries and random ones: k1 + lambda·k2 = k
(mod r) and |k1|, |k2| < 2^bits <= 2^127. The MSM through it against py_ecc is in
test_msm_device.py (every BN254 G1 device MSM with full-width scalars takes this path).
"""
from __future__ import annotations

import random

import pytest
import torch

import zktensor as zt
from ec_support import O, oracle_points
from zktensor.algebra.curves import group as group_record
from zktensor.algebra.glv import endomorphism
from zktensor.ops.msm import MSMConfig, device, resident_bytes
from zktensor.ops.msm.model import n_windows

GLV_GROUPS = ["bn254.g1", "bls12_381.g1", "bn254.g2", "bls12_381.g2"]


@pytest.mark.parametrize("name", GLV_GROUPS)
def test_endomorphism_is_lambda_times_p(name):
    e, g = endomorphism(name), group_record(name)
    q, r = g.p, g.r
    assert e.beta != 1 and pow(e.beta, 3, q) == 1 and e.lam != 1 and pow(e.lam, 3, r) == 1
    for P in list(oracle_points(name, 3)) + [g.generator]:
        x = tuple(e.beta * c % q for c in P[0]) if g.degree == 2 else e.beta * P[0] % q     # beta in Fq
        assert (x, P[1]) == O.mul(g, P, e.lam)
    (a1, b1), (a2, b2) = e.v1, e.v2
    assert (a1 + e.lam * b1) % r == 0 and (a2 + e.lam * b2) % r == 0 and abs(a1 * b2 - a2 * b1) == r
    assert e.bits <= 127 and max(map(abs, (a1, b1, a2, b2))).bit_length() <= 128


def test_no_endomorphism_elsewhere():
    assert endomorphism("mnt4753.g1") is None           # a = 2: not a j = 0 curve


def _boundary_scalars(e, count):
    """Scalars whose Babai coefficient k·b2/det (or -k·b1/det) lies within 1/r of a half
    integer: where a rounding of lower precision than the kernel's would go the other way."""
    (a1, b1), (a2, b2) = e.v1, e.v2
    det = a1 * b2 - a2 * b1
    out = []
    for b in (b2, -b1):
        step = det // b if b else 0
        for j in range(1, count + 1):
            k = ((2 * j + 1) * abs(step)) // 2 % e.r
            out += [k, (k + 1) % e.r, (k - 1) % e.r]
    return out


@pytest.mark.parametrize("name", GLV_GROUPS)
@pytest.mark.parametrize("C", [16, 13, 5])
def test_split_kernel_digits(name, C):
    """The kernel's digits rebuild k1 and k2 (sum of d_t·2^(tC), Python ints) with
    k1 + lambda·k2 = k (mod r), |k1|, |k2| < 2^bits and every |d_t| <= 2^(C-1)."""
    e, G = endomorphism(name), zt.group(name)
    r, Lr = e.r, G.Fr.limbs
    rng = random.Random(11 + C)
    edges = [0, 1, 2, r - 1, r - 2, e.lam, r - e.lam, (r - 1) // 2, (r + 1) // 2, e.v2[0] % r, abs(e.v1[1]) % r]
    ks = edges + _boundary_scalars(e, 8)
    ks += [rng.randrange(r) for _ in range(96 - len(ks))]
    B, n = 2, len(ks) // 2
    rows = [ks[:n], ks[n:2 * n]]
    words = torch.tensor([[[(k >> 32 * j) & 0xFFFFFFFF for k in row] for row in rows] for j in range(Lr)],
                         dtype=torch.int64).to(torch.int32)
    W = n_windows(e.bits, C)
    d = device.glv_digits(e, words, C, W, interpret=True, block=64)
    assert d.shape == (W, B, 2 * n) and d.abs().max().item() <= 1 << (C - 1)
    digits = d.tolist()

    def value(b, col):
        return sum(digits[t][b][col] << (t * C) for t in range(W))
    for b, row in enumerate(rows):
        for j, k in enumerate(row):
            k1, k2 = value(b, j), value(b, n + j)
            assert (k1 + e.lam * k2 - k) % r == 0, (name, k)
            assert abs(k1) < 1 << e.bits and abs(k2) < 1 << e.bits, (name, k, k1, k2)


@pytest.mark.parametrize("name", GLV_GROUPS)
def test_glv_points_are_phi(name):
    """The 2n bases (P, phi(P)), XYZZ and affine, against lambda·P on Python ints, the
    identity kept."""
    e, g, G = endomorphism(name), group_record(name), zt.group(name)
    pts = list(oracle_points(name, 3)) + [None]
    with zt.config(target="triton"):
        P = G.tensor(pts)
        both = device.glv_points(G, e, P)
        want = pts + [None if p is None else O.mul(g, p, e.lam) for p in pts]
        assert both.to_affine() == want
        aff = device.glv_points(G, e, device.AffinePoints.of(P))
        assert aff.points().to_affine() == want


@pytest.mark.parametrize("name,mixed,pm", [("bn254.g1", False, False), ("bn254.g1", True, False),
                                           ("bn254.g1", False, True), ("bn254.g2", True, True)])
def test_resident_bases_keep_phi(monkeypatch, name, mixed, pm):
    """msm_prepare on the Triton target keeps the bases as (P, phi(P)): 2n points, in the
    config's layout, against lambda·P on Python ints. msm and msm_many over every base hand
    that table to the device program, whose first accumulation round reads it and which
    makes no other (msm_many over part of the bases makes its own); without the split
    (glv=False, or a weighted config) the bases are n points. `resident_bytes` (the device
    key's budget) says what each keeps. The kernels' launches are dropped: what they
    compute is the other tests' (test_msm_device.py)."""
    e, g, G = endomorphism(name), group_record(name), zt.group(name)
    pts = list(oracle_points(name, 3)) + [None]
    want = pts + [None if p is None else O.mul(g, p, e.lam) for p in pts]
    cfg = MSMConfig(mixed=mixed, point_major=pm)
    made, reads = [], []
    real = device.glv_points
    monkeypatch.setattr(device, "glv_points", lambda *a, **k: made.append(1) or real(*a, **k))
    monkeypatch.setattr(device, "_launch", lambda kernel, grid, args, *a, **k: reads.append((kernel.__name__, args[0])))
    with zt.config(target="triton"):
        bases = zt.msm_prepare(G.tensor(pts), config=cfg)
        kept = bases.device_glv()
        assert bases.glv and kept.shape == (8,) and bases.device_bases().shape == (4,)
        assert (kept.points() if mixed else kept).to_affine() == want
        assert kept.data.stride(2) == (kept.data.shape[1] * G.L if pm else 1)
        assert bases.memory_bytes() == kept.data.numel() * 4 == resident_bytes(G, 4, cfg)
        K = G.Fr.tensor([3, 5, 7, 9])
        for run, whole in ((lambda: zt.msm(K, bases), True), (lambda: zt.msm_many([(K, 0), (K[:2], 2)], bases), True),
                           (lambda: zt.msm_many([(K[:2], 1)], bases), False)):      # bases 1..2 only
            reads.clear()
            made.clear()
            run()
            first = next(t for n, t in reads if n.startswith("accumulate"))
            assert (first.data_ptr() == kept.data.data_ptr()) is whole and len(made) == (not whole)
        for other in (MSMConfig(glv=False), MSMConfig(weighted=True)):
            b = zt.msm_prepare(G.tensor(pts), config=other)
            assert not b.glv and b.device_glv() is None and b.device_points.shape[2] == 4
            assert b.memory_bytes() == resident_bytes(G, 4, other)
        with pytest.raises(ValueError, match="GLV bases of 4 PointTensor for 4"):
            device.device_msm(G, K, G.tensor(pts), MSMConfig(), glv=G.tensor(pts))


def test_glv_off_and_short_scalars_take_the_plain_program(monkeypatch):
    """MSMConfig(glv=False), and scalars that fit the halves already (bits <= 128), keep
    the n bases and full windows; the flag must be a bool."""
    G = zt.group("bn254.g1")
    e = endomorphism(G.name)
    calls = []
    monkeypatch.setattr(device, "_launch", lambda kernel, *a, **kw: calls.append(kernel.__name__))
    for cfg, bits, glv in ((MSMConfig(), None, True), (MSMConfig(glv=False), None, False), (MSMConfig(), 64, False)):
        st = {}
        calls.clear()
        with zt.config(target="triton"):
            device.device_msm(G, G.Fr.tensor([3, 5, 7, 9]), G.generator((4,)), cfg, st, bits=bits)
        assert st["glv"] is glv and ("glv_split" in calls) is glv
        assert st["windows"] == n_windows(e.bits if glv else bits or G.r.bit_length(), st["window"])
    with pytest.raises(ValueError, match="MSMConfig.glv must be True or False"):
        MSMConfig(glv=1)


@pytest.mark.parametrize("name", GLV_GROUPS)
def test_split_kernel_compiles_for_sm90a(name):
    """The split compiles ahead of time for sm_90a (32-bit words in uint64 lanes) without
    spills: what the interpreter ran is what a GPU gets."""
    from zktensor.kernels import glv_split, msm_triton
    from zktensor.runtime import aot
    if not aot.available():
        pytest.skip("triton wheel without ptxas/cuobjdump")
    block = MSMConfig().block
    fn = glv_split.module(endomorphism(name), zt.group(name).Fr.limbs, False).glv_split
    sig, const = glv_split.aot_signature(fn, block)
    rep = aot.compile_kernel(fn, "sm_90a", sig, const, num_warps=msm_triton.num_warps(block))
    spills = rep["sass"].get("STL", 0) + rep["sass"].get("LDL", 0)
    assert 0 < rep["registers"] <= 255 and rep["local_bytes"] == 0 and spills == 0, rep["registers"]
