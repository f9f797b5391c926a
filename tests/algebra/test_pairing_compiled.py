"""The compiled pairing (zktensor.kernels.pairing_cpu): word for word the values of the
Python-int pairing (algebra.pairing), verdicts as py_ecc's, G2 membership as r·Q = O, vk_x's
Straus as the affine oracle (tests/oracles/ec), and the Python-int fallback without a compiler.

The module is compiled once per curve (cached on disk); the first test of a curve in a cold
cache pays that compile.
"""
from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.oracles import ec as ec_oracle
from tests.oracles.pyecc import g1_from_pyecc, g1_to_pyecc, g2_from_pyecc, g2_to_pyecc, pairing_product, pyecc
from zktensor.algebra import pairing as ate
from zktensor.algebra.curves import group, in_subgroup, is_on_curve
from zktensor.kernels import pairing_cpu

CURVES = ["bn254", "bls12_381"]
RNG = random.Random(20261125)


@pytest.fixture(scope="module", params=CURVES)
def curve(request):
    if pairing_cpu.compiled(request.param, build=True) is None:
        why = pairing_cpu.failed.get(request.param)
        if not isinstance(why, ImportError):         # a compile that failed is a bug here
            pytest.fail(f"the {request.param} pairing did not compile: {why!r}")
        pytest.skip(f"no compiled pairing here: {why}")
    return request.param


def _g1(curve, k):
    return g1_from_pyecc(curve, pyecc(curve).multiply(g1_to_pyecc(curve, group(f"{curve}.g1").generator), k))


def _g2(curve, k):
    return g2_from_pyecc(curve, pyecc(curve).multiply(g2_to_pyecc(curve, group(f"{curve}.g2").generator), k))


def _random12(p):
    return tuple(tuple((RNG.randrange(p), RNG.randrange(p)) for _ in range(3)) for _ in range(2))


def test_miller_loop_word_for_word(curve):
    """Full pairs, prepared pairs, both, identities, and an extra factor: the same Fq12 as
    algebra.pairing.miller_loop (both reduced: equal words)."""
    cp = pairing_cpu.compiled(curve)
    T = ate.pairing_curve(curve).tower
    r = group(f"{curve}.g1").r
    P = [_g1(curve, RNG.randrange(1, r)) for _ in range(3)]
    Q = [_g2(curve, RNG.randrange(1, r)) for _ in range(3)]
    prep = [ate.prepare_g2(curve, q) for q in Q]
    lines = [pairing_cpu.Lines(curve, x) for x in prep]
    extra = _random12(T.p)
    cases = [
        (list(zip(P, Q)), [], [], None),
        ([(P[0], Q[0])], [(P[1], prep[1]), (P[2], prep[2])], [(P[1], lines[1]), (P[2], lines[2])], None),
        ([], list(zip(P, prep)), list(zip(P, lines)), extra),
        ([(None, Q[0]), (P[1], None)], [(None, prep[2])], [(None, lines[2])], None),
    ]
    for pairs, prepared, prepared_words, x in cases:
        want = ate.miller_loop(curve, pairs, prepared)
        if x is not None:
            want = T.mul12(want, x)
        assert cp.miller_loop(pairs, prepared_words, extra=x) == T.reduce12(want)


def test_final_exponentiation_word_for_word(curve):
    """On a Miller loop value and on random elements of Fq12 (not in any subgroup)."""
    cp = pairing_cpu.compiled(curve)
    T = ate.pairing_curve(curve).tower
    f = ate.miller_loop(curve, [(group(f"{curve}.g1").generator, group(f"{curve}.g2").generator)])
    for x in (f, _random12(T.p), _random12(T.p)):
        assert cp.final_exponentiation(x) == ate.final_exponentiation(curve, x)


def test_check_agrees_with_pyecc(curve):
    cp = pairing_cpu.compiled(curve)
    G1 = group(f"{curve}.g1")
    r, p = G1.r, G1.p
    a = RNG.randrange(2, r)
    P, Q = _g1(curve, RNG.randrange(1, r)), _g2(curve, RNG.randrange(1, r))
    aP = g1_from_pyecc(curve, pyecc(curve).multiply(g1_to_pyecc(curve, P), a))
    aQ = g2_from_pyecc(curve, pyecc(curve).multiply(g2_to_pyecc(curve, Q), a))
    negP = (P[0], -P[1] % p)
    prepared = pairing_cpu.Lines(curve, ate.prepare_g2(curve, aQ))
    cases = [([(aP, Q), (negP, aQ)], [], True), ([(aP, Q), (negP, Q)], [], False),
             ([(aP, Q)], [(negP, prepared)], True), ([(aP, Q)], [(P, prepared)], False),
             ([(None, Q), (P, None)], [], True)]
    for pairs, prep, expected in cases:
        every = pairs + [(x, aQ) for x, _ in prep]
        oracle = pairing_product(curve, [(g1_to_pyecc(curve, x), g2_to_pyecc(curve, y)) for x, y in every])
        assert (oracle == pyecc(curve).FQ12.one()) is expected
        assert cp.check(pairs, prep) is expected


def _twist_points(curve, n):
    """Points of the twist that are not in G2 (the first with x = i + u)."""
    G2 = group(f"{curve}.g2")
    F = G2.F
    out, i = [], 0
    while len(out) < n:
        i += 1
        x = F.elem(i, 1)
        y = F.sqrt(F.add(F.mul(F.mul(x, x), x), G2.b))
        if y is not None and not in_subgroup(G2, (x, y)):
            out.append((x, y))
    return out


def test_g2_membership_against_r_times_q(curve):
    """psi(Q) = [t - 1]Q, compiled and on Python ints, against r·Q = O (curves.in_subgroup):
    points of G2, points of the twist outside it, points of the cofactor's subgroup
    ([r]T) and G2 points plus those."""
    cp = pairing_cpu.compiled(curve)
    G2 = group(f"{curve}.g2")
    r = G2.r
    inside = [_g2(curve, RNG.randrange(1, r)) for _ in range(2)]
    outside = _twist_points(curve, 2)
    torsion = [ec_oracle.mul(G2, T, r) for T in outside]
    mixed = [ec_oracle.add(G2, inside[0], T) for T in torsion]
    for Q in inside + outside + torsion + mixed:
        expected = in_subgroup(G2, Q)
        assert is_on_curve(G2, Q)
        assert cp.g2_in_subgroup(Q) is expected
        assert ate.g2_in_subgroup(curve, Q) is expected
    assert [in_subgroup(G2, Q) for Q in inside + outside + torsion + mixed] == [True] * 2 + [False] * 6


def test_g1_lincomb_against_the_affine_oracle(curve):
    """Straus with complete formulas: random terms, and the cases an incomplete addition
    misses (P + P, P + (-P), the identity on the way and as the result)."""
    cp = pairing_cpu.compiled(curve)
    G1 = group(f"{curve}.g1")
    r, p = G1.r, G1.p
    P = [_g1(curve, RNG.randrange(1, r)) for _ in range(4)]
    negP = (P[0][0], -P[0][1] % p)
    cases = [(P[3], [(RNG.randrange(r), x) for x in P]), (None, [(1, P[0]), (1, negP)]),
             (P[0], [(1, P[0])]), (negP, [(1, P[0])]), (None, [(3, P[1]), (0, P[2])]), (P[2], []),
             (None, []), (None, [(r, P[1])]), (P[1], [(2, P[0]), (5, negP), (1 << 200, P[2])])]
    for base, terms in cases:
        want = base
        for s, x in terms:
            want = ec_oracle.add(G1, want, ec_oracle.mul(G1, x, s))
        assert cp.g1_lincomb(base, terms) == want


def test_no_compiler_falls_back_to_python_ints(monkeypatch, tmp_path):
    """ZKTENSOR_NO_COMPILER and a cold cache: no compiled pairing, and the verifier still
    answers (on Python ints)."""
    from zktensor.groth16 import verifier
    from zktensor.groth16.formats.json_io import Proof, VerificationKey
    monkeypatch.setenv("ZKTENSOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ZKTENSOR_PREBUILT_DIR", str(tmp_path / "prebuilt"))
    monkeypatch.setenv("ZKTENSOR_NO_COMPILER", "1")
    monkeypatch.setattr(pairing_cpu, "_compiled", {})
    monkeypatch.setattr(pairing_cpu, "failed", {})
    assert pairing_cpu.compiled("bn254") is None
    assert pairing_cpu.compiled("bn254", build=True) is None
    r = group("bn254.g1").r
    al, be, ga, de, a, b, u0, u1 = (RNG.randrange(1, r) for _ in range(8))
    x = RNG.randrange(r)
    c = (a * b - al * be - ga * (u0 + x * u1)) * pow(de, -1, r) % r
    vk = VerificationKey("bn254", 1, _g1("bn254", al), _g2("bn254", be), _g2("bn254", ga), _g2("bn254", de),
                         (_g1("bn254", u0), _g1("bn254", u1)), None)
    proof = Proof("bn254", _g1("bn254", a), _g2("bn254", b), _g1("bn254", c))
    assert verifier.verify(vk, [x], proof) is True
    assert verifier.verify(vk, [(x + 1) % r], proof) is False
    assert pairing_cpu._compiled == {} and pairing_cpu.failed == {}     # asked again next time


def test_a_process_without_torch_does_not_compile(tmp_path):
    """A one-shot verifier (no torch loaded) with a cold cache neither compiles nor imports
    torch: it verifies on Python ints; with the module cached it uses it, still without torch."""
    root = Path(__file__).resolve().parents[2]
    code = ("import sys; sys.path.insert(0, '.')\n"
            "from bench.pairing import instance\n"
            "from zktensor.kernels import pairing_cpu\n"
            "from zktensor.groth16.verifier import verify\n"
            "vk, x, proof, _ = instance('bn254')\n"
            "print(pairing_cpu.compiled('bn254') is not None, verify(vk, x, proof), 'torch' in sys.modules)\n")
    env = {**os.environ, "PYTHONPATH": str(root), "ZKTENSOR_CACHE_DIR": str(tmp_path / "cache"),
           "ZKTENSOR_PREBUILT_DIR": str(tmp_path / "prebuilt")}
    run = lambda: subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,  # noqa: E731
                                 check=True, cwd=root, env=env).stdout.split()
    assert run() == ["False", "True", "False"]
    if pairing_cpu.compiled("bn254", build=True) is None:
        return
    # the same module in that cache (the key does not depend on the cache's place)
    import shutil
    entry = pairing_cpu.cache.lookup(pairing_cpu._cache_key("bn254"))
    shutil.copytree(entry, tmp_path / "cache" / "kernels" / entry.name)
    assert run() == ["True", "True", "False"]
