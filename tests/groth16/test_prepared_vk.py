"""prepared_vk: the key's fixed part of every check, and the check itself (compiled and on
Python ints) against py_ecc."""
from __future__ import annotations

import random

import pytest

from tests.oracles.pyecc import g1_to_pyecc, g2_to_pyecc, pairing_product, pyecc
from zktensor.algebra import pairing as ate
from zktensor.algebra.curves import group, lincomb
from zktensor.groth16 import prepared_vk as pv
from zktensor.groth16.formats.json_io import VerificationKey
from zktensor.kernels import pairing_cpu

RNG = random.Random(20261125)


def _instance(curve):
    """A key and a valid proof's points, made with known discrete logarithms."""
    G1, G2 = group(f"{curve}.g1"), group(f"{curve}.g2")
    r = G1.r
    al, be, ga, de, a, b, u = (RNG.randrange(1, r) for _ in range(7))
    c = (a * b - al * be - ga * u) * pow(de, -1, r) % r

    def m1(k):
        return lincomb(G1, None, [(k % r, G1.generator)])

    def m2(k):
        return lincomb(G2, None, [(k % r, G2.generator)])
    vk = VerificationKey(curve, 0, m1(al), m2(be), m2(ga), m2(de), (m1(u),), None)
    return vk, m1(a), m2(b), m1(c), m1(u), m1(c + 1)


@pytest.mark.parametrize("curve", ["bn254", "bls12_381"])
def test_prepare_holds_the_keys_miller_loop_and_lines(curve):
    vk = _instance(curve)[0]
    prep = pv.prepare(vk)
    assert prep.alphabeta_ml == ate.miller_loop(curve, [(vk.alpha_1, vk.beta_2)])
    assert prep.gamma_2 == ate.prepare_g2(curve, vk.gamma_2)
    assert prep.delta_2 == ate.prepare_g2(curve, vk.delta_2)
    assert pv.prepare(vk) is prep                                # cached per key


@pytest.mark.parametrize("curve", ["bn254", "bls12_381"])
def test_groth16_check_agrees_with_py_ecc(curve):
    vk, A, B, C, vx, C_wrong = _instance(curve)
    p = group(f"{curve}.g1").p
    neg_a = (A[0], -A[1] % p)
    modes = [False] + ([True] if pairing_cpu.compiled(curve, build=True) is not None else [])
    for C_, expected in ((C, True), (C_wrong, False)):
        pairs = [(neg_a, B), (vk.alpha_1, vk.beta_2), (vx, vk.gamma_2), (C_, vk.delta_2)]
        oracle = pairing_product(curve, [(g1_to_pyecc(curve, P), g2_to_pyecc(curve, Q)) for P, Q in pairs])
        assert (oracle == pyecc(curve).FQ12.one()) is expected
        for compiled in modes:
            assert pv.groth16_check(vk, neg_a, B, vx, C_, compiled=compiled) is expected, compiled
