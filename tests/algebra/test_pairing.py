"""The tower pairing (zktensor.algebra.pairing), with py_ecc and snarkjs as oracles.

py_ecc's pairing is slow, so it is called a handful of times per curve. Values are
compared exactly:
our Fq12 tuples map to py_ecc's flat basis with ``gt_from_snarkjs`` (the same
layout: f[i][j] is the coefficient of v^j w^i).
"""
from __future__ import annotations

import importlib
import os
import random
from fractions import Fraction
import subprocess
import sys
from pathlib import Path

import pytest

from zktensor.algebra import pairing as pr
from zktensor.algebra.curves import FAMILY_POLYNOMIALS, group, lincomb
from zktensor.groth16.formats.json_io import proof_from_json, public_from_json, read_json, vk_from_json
from tests.oracles import ec as ec_oracle
from tests.oracles.pyecc import (bn_seed, g1_from_pyecc, g1_to_pyecc, g2_from_pyecc, g2_to_pyecc, gt_from_snarkjs,
                                 pairing_product, pyecc)
from zktensor.groth16.formats.gt import snarkjs_gt_exponent
from zktensor.groth16.verifier import verify

ROOT = Path(__file__).resolve().parents[2]
CURVES = ["bn254", "bls12_381"]
# Ours is py_ecc's pairing to this power (see the module doc): BN254 the same value;
# BLS12-381 is raised to m = 3 and conjugated for the negative seed.
PYECC_EXPONENT = {"bn254": 1, "bls12_381": -3}
RNG = random.Random(20260521)


class Curve:
    """A curve's groups and py_ecc helpers for the tests."""

    def __init__(self, name):
        self.name = name
        self.C = pr.pairing_curve(name)
        self.T = self.C.tower
        self.p = self.T.p
        self.r = group(f"{name}.g1").r
        self.G1 = group(f"{name}.g1").generator
        self.G2 = group(f"{name}.g2").generator
        self.m = pyecc(name)

    def g1(self, k, P=None):
        P = self.G1 if P is None else P
        return g1_from_pyecc(self.name, self.m.multiply(g1_to_pyecc(self.name, P), k % self.r))

    def g2(self, k, Q=None):
        Q = self.G2 if Q is None else Q
        return g2_from_pyecc(self.name, self.m.multiply(g2_to_pyecc(self.name, Q), k % self.r))

    def neg1(self, P):
        return (P[0], -P[1] % self.p)

    def pyecc_check(self, pairs) -> bool:
        """The py_ecc path: FE(prod of Miller loops) == 1."""
        f = pairing_product(self.name, [(g1_to_pyecc(self.name, P), g2_to_pyecc(self.name, Q))
                                        for P, Q in pairs])
        return f == self.m.FQ12.one()

    def random12(self):
        return tuple(tuple((RNG.randrange(self.p), RNG.randrange(self.p)) for _ in range(3))
                     for _ in range(2))

    def to_pyecc(self, f):
        return gt_from_snarkjs(self.name, self.T.reduce12(f))


@pytest.fixture(scope="module", params=CURVES)
def cv(request):
    return Curve(request.param)


# -- derived data --------------------------------------------------------------------


def test_seed_and_hard_part_are_derived_right(cv):
    C, p, r = cv.C, cv.p, cv.r
    # the Miller loop scalar against py_ecc's (6x + 2 for BN, |x| for BLS12, whose x < 0)
    ate_loop_count = importlib.import_module(f"py_ecc.optimized_{'bn128' if cv.name == 'bn254' else cv.name}"
                                             ".optimized_pairing").ate_loop_count
    assert (6 * C.x + 2 if C.family == "bn" else -C.x) == ate_loop_count
    assert C.loop_negative is (C.x < 0)
    if cv.name == "bn254":
        assert C.x == bn_seed(p)                   # solved from q by the oracle
    assert (C.family, C.twist) == {"bn254": ("bn", "D"), "bls12_381": ("bls12", "M")}[cv.name]
    # m·(p^4 - p^2 + 1)/r = sum_i sum_k c[i][k] x^k p^i, exactly, with small c
    d = (p**4 - p**2 + 1) // r
    assert (p**4 - p**2 + 1) % r == 0
    assert sum(c * C.x**k * p**i for i, row in enumerate(C.hard) for k, c in enumerate(row)) == C.m * d
    assert C.m == {"bn254": 1, "bls12_381": 3}[cv.name]
    assert max(abs(c) for row in C.hard for c in row) <= 36
    scalar = 6 * C.x + 2 if C.family == "bn" else C.x
    assert sum(dg * 2**i for i, dg in enumerate(reversed((1,) + C.loop))) == abs(scalar)


def test_naf():
    for k in [1, 2, 3, 7, 0xD201000000010000, RNG.getrandbits(200)]:
        digits = pr.naf(k)
        assert sum(d * 2**i for i, d in enumerate(reversed(digits))) == k
        assert all(a == 0 or b == 0 for a, b in zip(digits, digits[1:]))


def test_family_polynomials_give_the_moduli(cv):
    """curves.FAMILY_POLYNOMIALS (the one home of p(x), r(x), t(x)) at the seed: q, r, and
    the trace of G1's order."""
    polys = FAMILY_POLYNOMIALS[cv.C.family]

    def at(which):
        coeffs, den = polys[which]
        return Fraction(sum(c * cv.C.x**k for k, c in enumerate(coeffs)), den)
    G1 = group(f"{cv.name}.g1")
    assert (at("q"), at("r")) == (cv.p, cv.r)
    assert G1.order == cv.p + 1 - at("t")


# -- the tower against py_ecc's Fq12 -------------------------------------------------


def test_tower_arithmetic_matches_pyecc(cv):
    T = cv.T
    a, b = cv.random12(), cv.random12()
    A, B = cv.to_pyecc(a), cv.to_pyecc(b)
    assert cv.to_pyecc(T.mul12(a, b)) == A * B
    assert cv.to_pyecc(T.sqr12(a)) == A * A
    assert cv.to_pyecc(T.inv12(a)) == A.inv()
    assert cv.to_pyecc(T.frobenius(a, 1)) == A ** cv.p
    assert T.reduce12(T.frobenius(a, 2)) == T.reduce12(T.frobenius(T.frobenius(a, 1), 1))
    assert T.reduce12(T.frobenius(a, 3)) == T.reduce12(T.frobenius(T.frobenius(a, 2), 1))
    assert T.reduce12(T.frobenius(T.frobenius(a, 3), 3)) == T.reduce12(T.conj12(a))  # p^6
    # Sparse line products against the dense line.
    zero = (0, 0)
    ly, lx, lc = ((RNG.randrange(cv.p), RNG.randrange(cv.p)) for _ in range(3))
    dense_d = ((ly, zero, zero), (lx, lc, zero))    # ly + lx w + lc w^3
    dense_m = ((lc, lx, zero), (zero, ly, zero))    # lc + lx w^2 + ly w^3
    assert T.reduce12(T.mul_by_line_d(a, ly, lx, lc)) == T.reduce12(T.mul12(a, dense_d))
    assert T.reduce12(T.mul_by_line_m(a, ly, lx, lc)) == T.reduce12(T.mul12(a, dense_m))


def test_cyclotomic_squaring(cv):
    T = cv.T
    a = cv.random12()
    c = T.mul12(T.conj12(a), T.inv12(a))
    c = T.mul12(T.frobenius(c, 2), c)            # a^((p^6-1)(p^2+1)): cyclotomic
    assert T.reduce12(T.mul12(c, T.conj12(c))) == T.one
    x = c
    for _ in range(3):                            # repeated: the coefficients stay reduced
        y = T.cyclotomic_sqr(x)
        assert T.reduce12(y) == T.reduce12(T.sqr12(x))
        assert all(0 <= v < cv.p for half in y for c2 in half for v in c2)
        x = y


# -- the pairing -----------------------------------------------------------------------


def test_bilinear_and_non_degenerate(cv):
    T = cv.T
    e = pr.pairing(cv.name, cv.G1, cv.G2)
    assert e != T.one and T.pow12(e, cv.r) == T.one
    for _ in range(2):
        a, b = RNG.randrange(1, cv.r), RNG.randrange(1, cv.r)
        assert pr.pairing(cv.name, cv.g1(a), cv.g2(b)) == T.pow12(e, a * b % cv.r)
    a = RNG.randrange(1, cv.r)
    assert pr.pairing(cv.name, cv.g1(a), cv.G2) == pr.pairing(cv.name, cv.G1, cv.g2(a))


def test_value_is_a_fixed_power_of_pyeccs(cv):
    P, Q = cv.g1(RNG.randrange(1, cv.r)), cv.g2(RNG.randrange(1, cv.r))
    ours = cv.to_pyecc(pr.pairing(cv.name, P, Q))
    theirs = pairing_product(cv.name, [(g1_to_pyecc(cv.name, P), g2_to_pyecc(cv.name, Q))])
    assert ours == theirs ** (PYECC_EXPONENT[cv.name] % cv.r)


def test_prepared_lines_give_the_same_miller_loop(cv):
    """One Miller loop, G2 lines prepared or not: the same value; its final exponentiation is
    py_ecc's product of pairings to the known power; the identity contributes 1."""
    T = cv.T
    P = [cv.g1(RNG.randrange(1, cv.r)) for _ in range(3)]
    Q = [cv.g2(RNG.randrange(1, cv.r)) for _ in range(3)]
    prep = [pr.prepare_g2(cv.name, q) for q in Q]
    ref = pr.miller_loop(cv.name, list(zip(P, Q)))
    assert T.reduce12(pr.miller_loop(cv.name, [(P[0], Q[0])], [(P[1], prep[1]), (P[2], prep[2])])) == \
        T.reduce12(ref)
    assert T.reduce12(pr.miller_loop(cv.name, [], list(zip(P, prep)))) == T.reduce12(ref)
    theirs = pairing_product(cv.name, [(g1_to_pyecc(cv.name, a), g2_to_pyecc(cv.name, b)) for a, b in zip(P, Q)])
    assert cv.to_pyecc(pr.final_exponentiation(cv.name, ref)) == theirs ** (PYECC_EXPONENT[cv.name] % cv.r)
    assert pr.miller_loop(cv.name, [(None, Q[0])], [(None, prep[1]), (P[2], ())]) == T.one
    negP = cv.neg1(P[0])
    assert pr.pairing_check(cv.name, [(P[0], Q[0])], [(negP, prep[0])]) is True
    assert pr.pairing_check(cv.name, [(P[0], Q[0])], [(P[0], prep[0])]) is False


def test_check_agrees_with_pyecc(cv):
    a = RNG.randrange(2, cv.r)
    P, Q = cv.g1(RNG.randrange(1, cv.r)), cv.g2(RNG.randrange(1, cv.r))
    aP, aQ, negP = cv.g1(a, P), cv.g2(a, Q), cv.neg1(P)
    cases = {
        "e(aP, Q) e(-P, aQ)": ([(aP, Q), (negP, aQ)], True),
        "e(aP, Q) e(-P, (a+1)Q)": ([(aP, Q), (negP, cv.g2(a + 1, Q))], False),
        "e(aP, Q) e(-P, Q)": ([(aP, Q), (negP, Q)], False),
        "identities only": ([(None, Q), (P, None), (None, None)], True),
        "identities among": ([(None, Q), (aP, Q), (P, None), (negP, aQ)], True),
        "identity and one": ([(P, Q), (None, aQ)], False),
    }
    for name, (pairs, expected) in cases.items():
        assert pr.pairing_check(cv.name, pairs) is expected, name
        assert cv.pyecc_check(pairs) is expected, name
    assert pr.pairing_check(cv.name, []) is True


def test_alphabeta_matches_snarkjs_vk(cv):
    """e(alpha, beta) against snarkjs's vk_alphabeta_12 (py_ecc's value to a known power)."""
    fixture = "multiplier" if cv.name == "bn254" else "multiplier_bls"
    path = _fixture_dir(fixture) / "verification_key.json"
    d = read_json(path)
    vk = vk_from_json(d)
    snark = tuple(tuple(tuple(int(v) for v in c) for c in half) for half in d["vk_alphabeta_12"])
    k = snarkjs_gt_exponent(cv.name) * pow(PYECC_EXPONENT[cv.name], -1, cv.r) % cv.r
    assert cv.T.pow12(pr.pairing(cv.name, vk.alpha_1, vk.beta_2), k) == snark
    if cv.name == "bls12_381":  # the same value, no power needed
        assert pr.pairing(cv.name, vk.alpha_1, vk.beta_2) == snark


# -- Groth16: the verifier's equation on snarkjs's proofs -------------------------------


def _fixture_dir(name: str) -> Path:
    build = Path(os.environ.get("ZKT_FIXTURES_BUILD", ROOT / "tests" / "fixtures" / "build"))
    d = build / name
    if not (d / "proof.json").exists():
        pytest.skip(f"fixture {name} not built (scripts/fixtures.sh)")
    return d


def _groth16_pairs(cv, vk, pub, proof):
    """The four pairs of e(-A, B) e(alpha, beta) e(vk_x, gamma) e(C, delta) = 1, vk_x by py_ecc."""
    m, name = cv.m, cv.name
    vk_x = g1_to_pyecc(name, vk.IC[0])
    for s, P in zip(pub, vk.IC[1:]):
        vk_x = m.add(vk_x, m.multiply(g1_to_pyecc(name, P), s))
    return [(cv.neg1(proof.pi_a), proof.pi_b), (vk.alpha_1, vk.beta_2),
            (g1_from_pyecc(name, vk_x), vk.gamma_2), (proof.pi_c, vk.delta_2)]


@pytest.mark.parametrize("fixture", ["multi_public", "multi_public_bls"])
def test_groth16_proofs_agree_with_pyecc(fixture):
    d = _fixture_dir(fixture)
    vk = vk_from_json(read_json(d / "verification_key.json"))
    proof = proof_from_json(read_json(d / "proof.json"))
    pub = public_from_json(read_json(d / "public.json"))
    cv = Curve(vk.curve)
    assert pub, "the fixture should have public signals"
    tampered = [(pub[0] + 1) % cv.r] + pub[1:]
    for signals, expected in ((pub, True), (tampered, False)):
        pairs = _groth16_pairs(cv, vk, signals, proof)
        assert pr.pairing_check(vk.curve, pairs) is expected
        assert cv.pyecc_check(pairs) is expected
        assert verify(vk, signals, proof) is expected


def test_verifier_vk_x_matches_pyecc(cv):
    P, R = cv.g1(RNG.randrange(1, cv.r)), cv.g1(RNG.randrange(1, cv.r))
    s, t = RNG.randrange(cv.r), RNG.randrange(cv.r)
    expected = cv.g1(1, g1_from_pyecc(cv.name, cv.m.add(cv.m.add(
        g1_to_pyecc(cv.name, R), cv.m.multiply(g1_to_pyecc(cv.name, P), s)),
        cv.m.multiply(g1_to_pyecc(cv.name, cv.G1), t))))
    G = group(f"{cv.name}.g1")
    assert lincomb(G, R, [(s, P), (t, cv.G1)]) == expected
    assert lincomb(G, R, []) == R
    assert lincomb(G, None, [(0, P), (5, None)]) is None
    assert lincomb(G, cv.neg1(P), [(1, P)]) is None          # P + (-P)
    assert lincomb(G, P, [(1, P)]) == cv.g1(2, P)            # the addition meets a doubling
    assert lincomb(G, None, [(cv.r - 1, P), (1, P)]) is None


@pytest.mark.parametrize("name", ["mnt4753.g1", "bn254.g2", "bls12_381.g2"])
def test_lincomb_other_groups(name):
    """MNT4-753's G1 (a != 0: the doubling's a·Z^4 term) and the G2s (Fq2 coordinates),
    against the affine oracle (tests/oracles/ec), with an addition that meets a doubling and
    the identity."""
    G = group(name)
    P = ec_oracle.mul(G, G.generator, 5)
    s, t = RNG.randrange(G.r), RNG.randrange(G.r)
    want = ec_oracle.add(G, ec_oracle.add(G, ec_oracle.mul(G, P, s), ec_oracle.mul(G, G.generator, t)),
                         G.generator)
    assert lincomb(G, G.generator, [(s, P), (t, G.generator)]) == want
    assert lincomb(G, P, [(1, P), (0, G.generator)]) == ec_oracle.mul(G, P, 2)
    assert lincomb(G, None, [(G.r - 1, P), (1, P)]) is None


def test_verifier_imports_neither_torch_nor_pyecc():
    """`zktensor verify` starts in a fraction of a second: the package, the CLI and the
    verifier load neither torch (~2.5 s), sympy (~0.5 s) nor py_ecc."""
    code = ("import sys, zktensor.cli, zktensor.groth16.verifier; "
            "print('torch' in sys.modules, 'py_ecc' in sys.modules, 'sympy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.stdout.split() == ["False", "False", "False"]


def test_runtime_pairings_need_no_pyecc():
    """py_ecc is a test dependency only (setup.py's `test` extra): with it unimportable, a
    pairing check and vk_alphabeta_12 (what `zktensor verify` and the vk export compute)
    still work."""
    code = ("import sys; sys.modules['py_ecc'] = None\n"
            "from zktensor.algebra.curves import group\n"
            "from zktensor.algebra.pairing import pairing_check\n"
            "from zktensor.groth16.vk import alphabeta_12\n"
            "for c in ('bn254', 'bls12_381'):\n"
            "    g1, g2 = group(c + '.g1'), group(c + '.g2')\n"
            "    P, Q = g1.generator, g2.generator\n"
            "    negP = (P[0], -P[1] % g1.p)\n"
            "    print(pairing_check(c, [(P, Q), (negP, Q)]), pairing_check(c, [(P, Q), (P, Q)]),\n"
            "          len(alphabeta_12(c, P, Q)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.stdout.split() == ["True", "False", "2"] * 2
