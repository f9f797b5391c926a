"""The blinding on the host (`groth16.blinding`) and its tables (`host_words.affine_table`),
against py_ecc: the lanes kernel's small MSMs, and snarkjs's formulas for pi_a, pi_b, pi_c
written out on py_ecc's points."""
from __future__ import annotations

import random

import numpy as np
import pytest

from oracles import pyecc
from zktensor.algebra.curves import group
from zktensor.groth16.blinding import Blinding, draw
from zktensor.kernels import msm_small_cpu
from zktensor.kernels.host_words import affine_table, words

pytestmark = pytest.mark.skipif(not msm_small_cpu.available(), reason="the lanes loop needs AVX-512")
CURVES = ["bn254", "bls12_381"]


def _oracle(G):
    m = pyecc.module(G, optimized=True)
    gen = m.G1 if G.degree == 1 else m.G2

    def point(k):
        return pyecc.from_py_ecc(G, m.multiply(gen, k)) if k else None

    def lin(terms):                       # Σ k·P over (k, P), P ours (None: the identity)
        acc = m.Z1 if G.degree == 1 else m.Z2
        for k, P in terms:
            if P is not None and k % G.r:
                acc = m.add(acc, m.multiply(pyecc.to_py_ecc(G, P, True), k % G.r))
        return pyecc.from_py_ecc(G, acc)
    return point, lin


@pytest.mark.parametrize("curve", CURVES)
@pytest.mark.parametrize("g", ["g1", "g2"])
def test_affine_table_msm(curve, g):
    """A table of points, the identity among them, read by the lanes kernel: full-width
    scalars, zero and r − 1 (its negated half), a base twice (P + P in a bucket)."""
    G = group(f"{curve}.{g}")
    point, lin = _oracle(G)
    rng = random.Random(f"{curve}{g}")
    pts = [point(rng.randrange(1, G.r)) for _ in range(4)] + [None]
    T, off = affine_table(G, pts)
    assert T.dtype == np.int32 and T.shape == (10, 2 * G.degree * G.fq.limbs32) and off == 5
    assert not T[4].any() and not T[9].any()
    n = -(-G.r.bit_length() // 32)
    for cols, ks in (([0, 1, 2, 3, 4], [rng.randrange(G.r) for _ in range(5)]),
                     ([0, 1, 2], [G.r - 1, 1, 0]),
                     ([3, 3, 1], [k := rng.randrange(G.r), k, rng.randrange(G.r)])):
        got = msm_small_cpu.msm(G, T, off, np.array(cols, dtype=np.int64), words(ks, n))
        assert got == lin([(k, pts[c]) for c, k in zip(cols, ks)])


@pytest.mark.parametrize("curve", CURVES)
def test_blinding_is_snarkjs_formula(curve):
    """pi_a, pi_b, pi_c from the jobs and `assemble` equal snarkjs's: pi_a = alpha_1 + A +
    r·delta_1, pi_b = beta_2 + B2 + s·delta_2, pi_c = C + H + s·pi_a + r·b1 − r·s·delta_1
    with b1 = beta_1 + B1 + s·delta_1; also with A and B1 the identity."""
    G1, G2 = group(f"{curve}.g1"), group(f"{curve}.g2")
    p1, lin1 = _oracle(G1)
    p2, lin2 = _oracle(G2)
    rng = random.Random(curve)
    alpha_1, beta_1, delta_1, A, B1, C, H = (p1(rng.randrange(1, G1.r)) for _ in range(7))
    beta_2, delta_2, B2 = (p2(rng.randrange(1, G1.r)) for _ in range(3))
    bl = Blinding(G1, G2, alpha_1, beta_1, delta_1, beta_2, delta_2)
    for A_, B1_ in ((A, B1), (None, None)):
        r, s = draw(G1.r)
        fixed = msm_small_cpu.msm_many(bl.fixed_jobs(r, s), threads=1)
        (ab,) = msm_small_cpu.msm_many([bl.ab_job(A_, B1_, r, s)], threads=1)
        pi_a, pi_b, pi_c = bl.assemble(A_, B2, C, [H], ab, *fixed)
        assert pi_a == lin1([(1, alpha_1), (1, A_), (r, delta_1)])
        assert pi_b == lin2([(1, beta_2), (1, B2), (s, delta_2)])
        b1 = lin1([(1, beta_1), (1, B1_), (s, delta_1)])
        assert pi_c == lin1([(1, C), (1, H), (s, pi_a), (r, b1), (-r * s, delta_1)])


@pytest.mark.parametrize("curve", CURVES)
def test_fixed_terms_from_the_ladders(curve):
    """The fixed points' ladders (`with_ladders`, a resident prover's) give `fixed_jobs`'
    three terms: r·delta_1, s·alpha_1 + r·beta_1 + r·s·delta_1 and s·delta_2, against
    py_ecc, for drawn r, s and the edges 1 and r − 1."""
    G1, G2 = group(f"{curve}.g1"), group(f"{curve}.g2")
    p1, lin1 = _oracle(G1)
    p2, lin2 = _oracle(G2)
    rng = random.Random("ladders" + curve)
    alpha_1, beta_1, delta_1 = (p1(rng.randrange(1, G1.r)) for _ in range(3))
    beta_2, delta_2 = (p2(rng.randrange(1, G1.r)) for _ in range(2))
    plain = Blinding(G1, G2, alpha_1, beta_1, delta_1, beta_2, delta_2)
    laddered = Blinding(G1, G2, alpha_1, beta_1, delta_1, beta_2, delta_2).with_ladders()
    assert plain.ladders is None and laddered.ladders is not None
    for r, s in (draw(G1.r), (1, G1.r - 1), (G1.r - 1, 1)):
        want = [lin1([(r, delta_1)]), lin1([(s, alpha_1), (r, beta_1), (r * s, delta_1)]), lin2([(s, delta_2)])]
        assert laddered.fixed_terms(r, s) == want
        assert plain.fixed_terms(r, s) == want


def test_draw_is_never_zero(monkeypatch):
    """r, s in [1, order): the lowest draw of the CSPRNG gives 1, not an unblinded 0."""
    from zktensor.groth16 import blinding
    monkeypatch.setattr(blinding.secrets, "randbelow", lambda n: 0)
    assert draw(17) == (1, 1)


def test_tensor_fixed_bases_give_the_same_proof(fixtures, monkeypatch):
    """The tensor prover's other way to the blinding terms (its fixed-base tables: a GPU's
    CPU twin, or a CPU without the lanes loop) makes the same proof for the same r, s."""
    import types

    from zktensor.groth16 import blinding, prover as tensor_prover
    from zktensor.groth16.formats import read_wtns
    fx = fixtures["multiplier"]
    p = tensor_prover.Prover(fx.zkey, device="cpu", helper=False, table_cache=False)
    w = read_wtns(fx.wtns)
    proofs = []
    for host in (True, False):
        if not host:
            monkeypatch.setattr(tensor_prover.Prover, "_host_blinding", property(lambda self: None))
        vals = iter([0x1234 - 1, 0x5678 - 1])               # draw: randbelow(q - 1) + 1
        with monkeypatch.context() as m:
            m.setattr(blinding, "secrets", types.SimpleNamespace(randbelow=lambda q: next(vals)))
            proofs.append(p.prove(w))
    assert proofs[0] == proofs[1]
