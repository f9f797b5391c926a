"""The device MSM's point kernels with the fp64 strategy, interpreted: exact sums.

The fp64 strategy (52-bit limbs in doubles, products split by fused multiply-adds) is
the alternative to int32 that a GPU measurement decides between (ARCHITECTURE.md, "Data layout"); both must
be bit-exact. Here every kernel of the device MSM (from_mont of the scalars, the
accumulation rounds, the chain kernel as bucket reduction, window sums and combination)
runs with fp64 under the Triton interpreter, for every group (and affine bases' mixed
additions), on a batch of two MSMs with
every exceptional addition (the identity, P + P, P + (-P), scalars 0, 1 and repeats),
against the Python-int oracle, with no host read (tests/guard.py). sm_90a compilation of
the same kernels with fp64: tests/ec/test_msm_device.py::test_aot_sm90a (BN254 G1; every
group with ZKTENSOR_AOT_ALL=1) and bench/sass_report.py --proof-kernels.
"""
from __future__ import annotations

import pytest

import zktensor as zt
from ec_support import INTERPRETED_MINUTES, O, oracle_points, scalars
from tests.guard import SyncGuard
from zktensor.algebra.curves import group as group_record
from zktensor.ops.msm import MSMConfig, device


# BN254's groups in CI; BLS12-381's and MNT4-753's (12- and 24-word fields, interpreted several
# times slower) with ZKTENSOR_INTERPRET_ALL=1 (tests/gpu runs BN254 and BLS12-381 on a GPU)
@pytest.mark.slow        # minutes: every point formula of the MSM interpreted
@pytest.mark.parametrize("name,affine", [("bn254.g1", False), ("bn254.g1", True), ("bn254.g2", False)] + [
    pytest.param(n, a, marks=INTERPRETED_MINUTES) for n, a in (("bn254.g2", True), ("bls12_381.g1", False),
                                                               ("bls12_381.g2", False), ("mnt4753.g1", False))])
def test_device_msm_fp64_exact(name, affine):
    """`affine`: the bases as `device.AffinePoints` (MSMConfig.mixed), the first round's
    mixed additions in fp64 too."""
    g = group_record(name)
    pts = list(oracle_points(name, 8))
    pts[1], pts[3], pts[5] = None, pts[2], O.neg(g, pts[4])
    ks = [k % 256 for k in scalars(name, 8, seed=9)]
    ks[0], ks[2], ks[3], ks[4], ks[5] = 0, 1, 1, 255, 255
    ks2 = [(k * 5 + 1) % 256 for k in ks]
    G = zt.group(name)
    P, K = G.tensor(pts), G.Fr.tensor([ks, ks2])
    if affine:
        P = device.AffinePoints.of(P)
    st = {}
    with zt.config(target="triton", strategy="fp64"):
        with SyncGuard() as guard:
            res = device.device_msm(G, K, P, MSMConfig(window=3, segment=2), st, bits=8)
    assert guard.triton_launches == 1 + st["rounds"] + len(st["reduce_levels"]) + 1   # from_mont, rounds,
    # the reduction's levels, the windows
    assert res.to_affine() == [O.msm(g, pts, ks), O.msm(g, pts, ks2)]
