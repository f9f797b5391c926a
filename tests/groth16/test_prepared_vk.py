"""prepared_vk: the same Miller loop value as algebra.pairing's, py_ecc as the oracle."""
from __future__ import annotations

import random

import pytest

from tests.oracles.pyecc import g1_to_pyecc, g2_to_pyecc, pairing_product, pyecc
from zktensor.algebra import pairing as ate
from zktensor.algebra.curves import group, lincomb
from zktensor.groth16 import prepared_vk as pv
from zktensor.groth16.formats.json_io import VerificationKey

RNG = random.Random(20261125)


def _points(curve, n):
    G1, G2 = group(f"{curve}.g1"), group(f"{curve}.g2")
    P = [lincomb(G1, None, [(RNG.randrange(1, G1.r), G1.generator)]) for _ in range(n)]
    Q = [lincomb(G2, None, [(RNG.randrange(1, G1.r), G2.generator)]) for _ in range(n)]
    return P, Q


@pytest.mark.parametrize("curve", ["bn254", "bls12_381"])
def test_miller_loop_equals_the_unprepared_one(curve):
    T = ate.pairing_curve(curve).tower
    P, Q = _points(curve, 3)
    prep = [pv.prepare_g2(curve, q) for q in Q]
    ref = ate.multi_miller_loop(curve, list(zip(P, Q)))
    got = pv.miller_loop(curve, [(P[0], Q[0])], [(P[1], prep[1]), (P[2], prep[2])])
    assert T.reduce12(got) == T.reduce12(ref)
    assert T.reduce12(pv.miller_loop(curve, [], list(zip(P, prep)))) == T.reduce12(ref)
    # identities contribute 1
    one = pv.miller_loop(curve, [(None, Q[0])], [(None, prep[1]), (P[2], ())])
    assert one == T.one


def test_groth16_check_agrees_with_py_ecc():
    curve = "bn254"
    G1 = group(f"{curve}.g1")
    r, p = G1.r, G1.p
    al, be, ga, de, a, b, u = (RNG.randrange(1, r) for _ in range(7))
    c = (a * b - al * be - ga * u) * pow(de, -1, r) % r

    def m1(k):
        return lincomb(G1, None, [(k, G1.generator)])

    def m2(k):
        G2 = group(f"{curve}.g2")
        return lincomb(G2, None, [(k, G2.generator)])
    vk = VerificationKey(curve, 0, m1(al), m2(be), m2(ga), m2(de), (m1(u),), None)
    A, B, C, vx = m1(a), m2(b), m1(c), m1(u)
    for C_, expected in ((C, True), (m1(c + 1), False)):
        neg_a = (A[0], -A[1] % p)
        pairs = [(neg_a, B), (vk.alpha_1, vk.beta_2), (vx, vk.gamma_2), (C_, vk.delta_2)]
        oracle = pairing_product(curve, [(g1_to_pyecc(curve, P), g2_to_pyecc(curve, Q)) for P, Q in pairs])
        assert (oracle == pyecc(curve).FQ12.one()) is expected
        assert pv.groth16_check(vk, neg_a, B, vx, C_) is expected
