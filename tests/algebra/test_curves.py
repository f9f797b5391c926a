"""Curves as data (zktensor.algebra.curves, .towers) and the oracles in tests/oracles.

py_ecc is pure Python: sizes are tiny and the optimized variants carry the
scalar-multiplication cross-checks, so the whole file runs in a few seconds.
"""
from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

try:
    from tests.oracles import ec, field as ff, pyecc, snarkjs_layout as sl
except ImportError:  # run without the repository root on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.oracles import ec, field as ff, pyecc, snarkjs_layout as sl

from zktensor.algebra.curves import GROUP_NAMES, doublings, group, in_subgroup, is_on_curve
from zktensor.algebra.fields import field
from zktensor.algebra.towers import TOWER_NAMES, tower

PAIRING_GROUPS = ["bn254.g1", "bn254.g2", "bls12_381.g1", "bls12_381.g2"]
RNG = random.Random(20240521)


def _whole_curve_point(G):
    """A point of the whole curve (outside the subgroup when h > 1), from x = 2, 3, ... (2 + u, ... over Fq2)."""
    F = G.F
    for i in range(2, 200):
        x = i if G.degree == 1 else F.elem(i, 1)
        y = F.sqrt(F.add(F.add(F.mul(F.mul(x, x), x), F.mul(G.a, x)), G.b))
        if y is not None:
            return (x, y)
    raise AssertionError("no point found")


def _bump(G, P):
    """P with y's first component plus one: almost surely off the curve."""
    x, y = P
    if G.degree == 1:
        return (x, (y + 1) % G.p)
    return (x, ((y[0] + 1) % G.p, y[1]))


# -- records ----------------------------------------------------------------------


def test_group_names_and_aliases():
    assert set(GROUP_NAMES) == {"bn254.g1", "bn254.g2", "bls12_381.g1", "bls12_381.g2", "mnt4753.g1"}
    assert group("bn128.g1") is group("bn254.g1")
    assert group("BLS12-381.G2") is group("bls12_381.g2")
    with pytest.raises(ValueError, match="unknown group"):
        group("secp256k1.g1")


@pytest.mark.parametrize("name", GROUP_NAMES)
def test_record_fields(name):
    G = group(name)
    curve = name.split(".")[0]
    assert G.curve == curve and G.base_field == curve + ".fq" and G.scalar_field == curve + ".fr"
    assert G.r == field(G.scalar_field).p and G.p == field(G.base_field).p
    assert G.cofactor * G.r == G.order
    assert G.trace == G.p ** G.degree + 1 - G.order
    assert G.trace ** 2 <= 4 * G.p ** G.degree                     # Hasse
    assert G.degree == (2 if name.endswith("g2") else 1)


@pytest.mark.parametrize("name", GROUP_NAMES)
def test_generator_on_curve_and_in_subgroup(name):
    G = group(name)
    assert is_on_curve(G, G.generator) and in_subgroup(G, G.generator)
    # independently, with the oracle
    assert ec.on_curve(G, G.generator)
    assert ec.mul(G, G.generator, G.r) is None
    assert ec.mul(G, G.generator, G.r - 1) == ec.neg(G, G.generator)


@pytest.mark.parametrize("name", GROUP_NAMES)
def test_cofactor_clears_to_subgroup(name):
    """h·P lands in the r-subgroup for a point P of the whole curve."""
    G = group(name)
    P = _whole_curve_point(G)
    assert is_on_curve(G, P)
    hP = ec.mul(G, P, G.cofactor)
    assert in_subgroup(G, hP)
    assert ec.mul(G, P, G.order) is None
    if G.cofactor > 1:
        assert not in_subgroup(G, P)


def test_known_cofactors():
    # Well-known values (BLS12-381: IETF draft h1, h2; BN254: G1 prime order, G2 h = 2q - r).
    assert group("bn254.g1").cofactor == 1
    assert group("mnt4753.g1").cofactor == 1
    G2 = group("bn254.g2")
    assert G2.cofactor == 2 * G2.p - G2.r
    assert group("bls12_381.g1").cofactor == 0x396C8C005555E1568C00AAAB0000AAAB
    assert group("bls12_381.g2").cofactor == int(
        "5d543a95414e7f1091d50792876a202cd91de4547085abaa68a205b2e5a7ddfa628f1cb4d9e82ef215"
        "37e293a6691ae1616ec6e786f0c70cf1c38e31c7238e5", 16)


def test_mnt4753_trace_matches_arkworks_ate_loop_count():
    """arkworks ark-mnt4-753: ATE_LOOP_COUNT = |t - 1| with ATE_IS_LOOP_COUNT_NEG = true."""
    limbs = [8824542903220142080, 7711082599397206192, 8303354903384568230,
             5874150271971943936, 9717849827920685054, 95829799234282493]
    loop = sum(w << (64 * i) for i, w in enumerate(limbs))
    G = group("mnt4753.g1")
    assert G.trace - 1 == -loop
    assert G.a == 2


@pytest.mark.parametrize("name", GROUP_NAMES)
def test_off_curve_detected(name):
    G = group(name)
    bad = _bump(G, G.generator)
    assert not is_on_curve(G, bad) and not in_subgroup(G, bad) and not ec.on_curve(G, bad)
    assert is_on_curve(G, None) and in_subgroup(G, None)
    # non-canonical coordinates are refused even though they are congruent
    x, y = G.generator
    big = ((x + G.p) if G.degree == 1 else (x[0] + G.p, x[1]), y)
    assert not is_on_curve(G, big)
    with pytest.raises(TypeError):
        is_on_curve(G, (1, 2, 3))
    with pytest.raises(TypeError):
        is_on_curve(G, ((1, 2), (3, 4)) if G.degree == 1 else (1, 2))


# -- towers -----------------------------------------------------------------------


@pytest.mark.parametrize("name", TOWER_NAMES)
def test_fq2_against_py_ecc(name):
    F = tower(name)
    m = pyecc.module(group(name.split(".")[0] + ".g2"))
    assert F.beta == -1 and m.FQ2.FQ2_MODULUS_COEFFS == (1, 0)    # u^2 + 1 = 0
    for _ in range(5):
        a = F.elem(RNG.randrange(F.p), RNG.randrange(F.p))
        b = F.elem(RNG.randrange(F.p), RNG.randrange(F.p))
        pa, pb = m.FQ2(list(a)), m.FQ2(list(b))
        for ours, theirs in [(F.mul(a, b), pa * pb), (F.add(a, b), pa + pb), (F.sub(a, b), pa - pb),
                             (F.inv(a), pa.inv()), (F.div(a, b), pa / pb)]:
            assert ours == tuple(int(c) for c in theirs.coeffs)
        assert ff.fq2_mul(a, b, F.p, F.beta) == F.mul(a, b)
        assert ff.fq2_inv(a, F.p, F.beta) == F.inv(a)
        sq = F.mul(a, a)
        root = F.sqrt(sq)
        assert root in (a, F.neg(a))
    # xi: w^6 = xi in py_ecc's FQ12 modulus w^12 - 2·xi0·w^6 + norm(xi)
    coeffs = m.FQ12.FQ12_MODULUS_COEFFS
    assert (coeffs[0], coeffs[6]) == (F.norm(F.xi), -2 * F.xi[0]) and F.xi[1] == 1


def test_fq2_sqrt_edge_cases():
    F = tower("bn254.fq2")
    assert F.sqrt(F.zero) == F.zero
    r = F.sqrt((F.p - 1, 0))                       # -1 = u^2
    assert F.mul(r, r) == (F.p - 1, 0)
    nonsq = next(F.elem(i, 1) for i in range(1, 50) if not F.is_square(F.elem(i, 1)))
    assert F.sqrt(nonsq) is None


# -- against py_ecc -----------------------------------------------------------------


@pytest.mark.parametrize("name", PAIRING_GROUPS)
def test_parameters_match_py_ecc(name):
    G = group(name)
    for optimized in (False, True):
        m = pyecc.module(G, optimized)
        gen = m.G1 if G.degree == 1 else m.G2
        b = m.b if G.degree == 1 else m.b2
        assert pyecc.from_py_ecc(G, gen) == G.generator
        assert (int(b) if G.degree == 1 else tuple(int(c) for c in b.coeffs)) == G.b
        assert m.curve_order == G.r and m.field_modulus == G.p
    assert G.a == (0 if G.degree == 1 else (0, 0))


@pytest.mark.parametrize("name", ["bn254.g2", "bls12_381.g2"])
def test_py_ecc_g2_representation_converts(name):
    G = group(name)
    m = pyecc.module(G)
    x, y = m.G2
    assert G.generator == ((int(x.coeffs[0]), int(x.coeffs[1])), (int(y.coeffs[0]), int(y.coeffs[1])))
    P = ec.mul(G, G.generator, 5)
    for optimized in (False, True):
        assert pyecc.from_py_ecc(G, pyecc.to_py_ecc(G, P, optimized)) == P
        assert pyecc.from_py_ecc(G, pyecc.to_py_ecc(G, None, optimized)) is None
    mo = pyecc.module(G, optimized=True)
    assert mo.is_on_curve(pyecc.to_py_ecc(G, P, True), mo.b2)
    assert pyecc.from_py_ecc(G, mo.multiply(mo.G2, 5)) == P      # projective with Z != 1


def _scalars(r):
    return [0, 1, 2, 3, r - 1, r, r + 1, RNG.randrange(r), RNG.randrange(r)]


@pytest.mark.parametrize("name", PAIRING_GROUPS)
def test_scalar_mul_against_py_ecc(name):
    G = group(name)
    m = pyecc.module(G, optimized=True)
    base = m.G1 if G.degree == 1 else m.G2
    for k in _scalars(G.r):
        ours = ec.mul(G, G.generator, k)
        assert ours == pyecc.from_py_ecc(G, m.multiply(base, k)), k
        assert in_subgroup(G, ours)
    assert ec.mul(G, G.generator, -3) == ec.neg(G, ec.mul(G, G.generator, 3))


@pytest.mark.parametrize("name", PAIRING_GROUPS)
def test_add_double_against_py_ecc(name):
    G = group(name)
    m = pyecc.module(G, optimized=False)
    P = ec.mul(G, G.generator, RNG.randrange(1, G.r))
    Q = ec.mul(G, G.generator, RNG.randrange(1, G.r))
    pP, pQ = pyecc.to_py_ecc(G, P), pyecc.to_py_ecc(G, Q)
    assert ec.add(G, P, Q) == pyecc.from_py_ecc(G, m.add(pP, pQ))
    assert ec.double(G, P) == pyecc.from_py_ecc(G, m.double(pP))
    assert ec.add(G, P, P) == ec.double(G, P)                            # P + P
    assert ec.neg(G, P) == pyecc.from_py_ecc(G, m.neg(pP))
    assert ec.add(G, P, ec.neg(G, P)) is None                            # P + (-P)
    assert ec.add(G, P, None) == P and ec.add(G, None, Q) == Q           # identity
    assert ec.add(G, None, None) is None and ec.double(G, None) is None and ec.neg(G, None) is None
    assert ec.add(G, P, Q) == ec.add(G, Q, P)
    assert ec.sub(G, ec.add(G, P, Q), Q) == P
    assert is_on_curve(G, ec.add(G, P, Q)) and ec.on_curve(G, ec.double(G, P))


@pytest.mark.parametrize("name", PAIRING_GROUPS)
def test_naive_msm_against_py_ecc(name):
    G = group(name)
    m = pyecc.module(G, optimized=True)
    ks = [RNG.randrange(1, 1000) for _ in range(3)]
    points = [ec.mul(G, G.generator, k) for k in ks]
    scalars = [RNG.randrange(G.r), 0, 1]
    expect = None
    for P, s in zip(points, scalars):
        expect = m.add(expect, m.multiply(pyecc.to_py_ecc(G, P, True), s)) if expect else \
            m.multiply(pyecc.to_py_ecc(G, P, True), s)
    assert ec.msm(G, points, scalars) == pyecc.from_py_ecc(G, expect)
    # linearity: sum s_i·(k_i·G) = (sum s_i·k_i)·G
    assert ec.msm(G, points, scalars) == ec.mul(G, G.generator, sum(s * k for s, k in zip(scalars, ks)) % G.r)
    assert ec.msm(G, [], []) is None
    with pytest.raises(ValueError):
        ec.msm(G, points, scalars[:2])


def test_mnt4753_oracle_group_law():
    G = group("mnt4753.g1")                                              # a = 2: the 'a' term matters
    P = ec.mul(G, G.generator, 12345)
    Q = ec.mul(G, G.generator, 678)
    assert ec.add(G, P, Q) == ec.mul(G, G.generator, 12345 + 678)
    assert ec.double(G, P) == ec.mul(G, G.generator, 2 * 12345)
    assert ec.add(G, P, ec.neg(G, P)) is None and in_subgroup(G, P)


# -- field oracle: DFT --------------------------------------------------------------


def test_dft_against_sympy_ntt():
    from sympy.discrete.transforms import intt, ntt
    p = 998244353                                                          # 119·2^23 + 1
    values = [RNG.randrange(p) for _ in range(16)]
    # sympy takes omega = g^((p-1)/n) for the smallest primitive root g (3 here)
    omega = pow(3, (p - 1) // 16, p)
    assert ff.dft(values, omega, p) == ntt(values, p)
    assert ff.idft(values, omega, p) == intt(values, p)


@pytest.mark.parametrize("fname", ["bn254.fr", "bls12_381.fr"])
def test_dft_is_evaluation_and_inverts(fname):
    F = field(fname)
    n = 8
    omega = F.root_of_unity(n)
    coeffs = [0, 1, F.p - 1] + [RNG.randrange(F.p) for _ in range(n - 3)]
    evals = ff.dft(coeffs, omega, F.p)
    for k in range(n):
        x = pow(omega, k, F.p)
        assert evals[k] == sum(c * pow(x, j, F.p) for j, c in enumerate(coeffs)) % F.p
    assert ff.idft(evals, omega, F.p) == coeffs
    with pytest.raises(ValueError):
        ff.dft(coeffs, pow(omega, 2, F.p), F.p)                            # not primitive
    assert ff.bit_reverse(list(range(8))) == [0, 4, 2, 6, 1, 5, 3, 7]


def test_field_oracle_ops():
    p = field("bn254.fq").p
    a, b = RNG.randrange(1, p), RNG.randrange(1, p)
    assert ff.inv(a, p) == pow(a, p - 2, p)                               # Fermat
    assert ff.mul(a, ff.inv(a, p), p) == 1 and ff.div(ff.mul(a, b, p), b, p) == a
    assert ff.add(ff.sub(a, b, p), b, p) == a and ff.add(a, ff.neg(a, p), p) == 0
    assert ff.power(a, -1, p) == ff.inv(a, p) and ff.power(a, p - 1, p) == 1
    with pytest.raises(ZeroDivisionError):
        ff.inv(0, p)


# -- snarkjs point layout -----------------------------------------------------------


def test_snarkjs_words_and_radix():
    for fname in ("bn254.fq", "bls12_381.fq"):
        F = field(fname)
        assert sl.word_bytes(F.p) == F.bytes == {"bn254.fq": 32, "bls12_381.fq": 48}[fname]
        assert sl.montgomery_r(F.p) == F.R                 # same Montgomery radix as the library
    # one in Montgomery form, as published (BN254: 2^256 mod q; BLS12-381: 2^384 mod q)
    assert sl.fq_to_lem(1, field("bn254.fq").p) == bytes.fromhex(
        "0e0a77c19a07df2f666ea36f7879462c0a78eb28f5c70b3dd35d438dc58f0d9d")[::-1]
    assert sl.fq_to_lem(1, field("bls12_381.fq").p) == bytes.fromhex(
        "15f65ec3fa80e4935c071a97a256ec6d77ce5853705257455f48985753c758ba"
        "ebf4000bc40c0002760900000002fffd")[::-1]


def test_snarkjs_g1_generator_bytes():
    G = group("bn254.g1")                                   # (1, 2): [R mod q | 2R mod q]
    data = sl.point_to_lem(G, G.generator)
    p, R = G.p, sl.montgomery_r(G.p)
    assert len(data) == 64
    assert data[:32] == R.to_bytes(32, "little") and data[32:] == (2 * R % p).to_bytes(32, "little")


@pytest.mark.parametrize("name", PAIRING_GROUPS)
def test_snarkjs_layout_round_trip(name):
    G = group(name)
    n8 = sl.word_bytes(G.p)
    P = ec.mul(G, G.generator, 7)
    data = sl.point_to_lem(G, P)
    assert len(data) == sl.point_size(G) == 2 * G.degree * n8
    assert sl.point_from_lem(G, data) == P
    coords = [P[0], P[1]] if G.degree == 1 else [P[0][0], P[0][1], P[1][0], P[1][1]]
    for i, c in enumerate(coords):                          # x (c0, c1) then y (c0, c1)
        word = int.from_bytes(data[i * n8:(i + 1) * n8], "little")
        assert word == c * sl.montgomery_r(G.p) % G.p
    assert sl.point_to_lem(G, None) == bytes(sl.point_size(G))
    assert sl.point_from_lem(G, bytes(sl.point_size(G))) is None
    pts = [P, None, G.generator]
    assert sl.points_from_lem(G, sl.points_to_lem(G, pts)) == pts
    with pytest.raises(ValueError):
        sl.point_from_lem(G, data[:-1])
    with pytest.raises(ValueError):                         # a word >= q
        sl.point_from_lem(G, b"\xff" * n8 + data[n8:])


# -- the build-time checks have teeth -------------------------------------------------


@pytest.mark.parametrize("name", GROUP_NAMES)
def test_pasted_records_pass_every_check(name):
    """`group` builds the pasted records without the scalar-multiplication checks (r·G = O,
    #E·P = O at trial points); here each is built again with them."""
    import dataclasses
    from zktensor.algebra.curves import Group
    G = group(name)
    assert G.check_orders is False
    kwargs = {f.name: getattr(G, f.name) for f in dataclasses.fields(Group) if f.init}
    again = Group(**{**kwargs, "check_orders": True})
    assert again == G and again.cofactor == G.cofactor


def test_build_rejects_wrong_twist_order_or_generator():
    import dataclasses

    from zktensor.algebra.curves import Group

    G = group("bn254.g2")
    F = G.F
    kwargs = {f.name: getattr(G, f.name) for f in dataclasses.fields(Group) if f.init}
    kwargs["check_orders"] = True        # the built record skipped them (test_pasted_records_pass_every_check)
    wrong_twist = F.mul(F.elem(3), F.xi)                     # the M-type b' on a D-type curve
    with pytest.raises(ValueError, match="generator"):
        Group(**{**kwargs, "b": wrong_twist})
    with pytest.raises(ValueError):
        Group(**{**kwargs, "order": G.order + G.r})          # a multiple of r, but not #E'
    with pytest.raises(ValueError, match="generator"):
        Group(**{**kwargs, "generator": _bump(G, G.generator)})
    G1 = group("bls12_381.g1")
    kwargs1 = {f.name: getattr(G1, f.name) for f in dataclasses.fields(Group) if f.init} | {"check_orders": True}
    with pytest.raises(ValueError, match="generator does not have order r"):
        Group(**{**kwargs1, "generator": _whole_curve_point(G1)})   # on the curve, outside G1


@pytest.mark.parametrize("name", PAIRING_GROUPS)
def test_doublings_against_py_ecc(name):
    """A fixed base's ladder 2^i·P against py_ecc's
    doublings; the identity's ladder, and a length of zero."""
    G = group(name)
    m = pyecc.module(G, optimized=True)
    P = ec.mul(G, G.generator, RNG.randrange(1, G.r))
    want, Q = [], pyecc.to_py_ecc(G, P, True)
    for _ in range(40):
        want.append(pyecc.from_py_ecc(G, Q))
        Q = m.double(Q)
    assert doublings(G, P, 40) == want
    assert doublings(G, None, 3) == [None] * 3 and doublings(G, P, 0) == []
