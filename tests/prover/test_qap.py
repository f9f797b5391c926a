"""r1cs_to_qap and fixed_base against Python-int oracles (no node needed)."""
import random

import numpy as np
import pytest
import torch

import zktensor as zt
from zktensor.algebra.curves import group as group_record
from zktensor.groth16.fixed_base import FixedBase
from zktensor.groth16.r1cs_to_qap import SparseFr, coset_shift, h_scalars, r2_form, words_to_limbs
from zktensor.groth16.segments import SegmentPlan
from zktensor.points import group

CURVES = ["bn254", "bls12_381"]


def words(vals, L):
    return np.frombuffer(b"".join(v.to_bytes(4 * L, "little") for v in vals), dtype="<u4").reshape(-1, L)


@pytest.mark.parametrize("curve", CURVES)
def test_segmented_sums(curve):
    F = zt.field(f"{curve}.fr")
    rng = random.Random(1)
    n_seg = 40
    lens = [0, 1, 2, 3, 17, 0, 64, 5] + [rng.randrange(0, 9) for _ in range(n_seg - 8)]
    keys = [s for s, k in enumerate(lens) for _ in range(k)]
    rng.shuffle(keys)
    vals = [F.p - 1 if i % 7 == 0 else rng.randrange(F.p) for i in range(len(keys))]
    plan = SegmentPlan(np.array(keys), n_seg)
    assert plan.max_len == 64 and plan.widths == [sum(k > j for k in lens) for j in range(64)]
    assert sorted(plan.order.tolist()) == list(range(len(keys)))
    out = zt.FieldTensor(F, torch.from_numpy(plan.sum(F, F.tensor(vals).data.numpy()))).to_ints()
    want = [0] * n_seg
    for k, v in zip(keys, vals):
        want[k] = (want[k] + v) % F.p
    assert out == want


@pytest.mark.parametrize("lens", [[], [0, 0], [1, 1, 0, 1], [2, 2, 2], [3, 1, 0, 2, 33, 1, 1]])
def test_segmented_sums_edge_shapes(lens):
    """No entries, only singletons, only pairs, and one long segment among short ones
    (the shape of a C matrix: the short ones finish first and leave the tree)."""
    F = zt.field("bn254.fr")
    rng = random.Random(len(lens))
    keys = [s for s, k in enumerate(lens) for _ in range(k)][::-1]
    vals = [rng.randrange(F.p) for _ in keys]
    plan = SegmentPlan(np.array(keys, dtype=np.int64), len(lens))
    data = F.tensor(vals).data.numpy() if vals else np.zeros((F.limbs, 0), dtype=np.int32)
    out = zt.FieldTensor(F, torch.from_numpy(plan.sum(F, data))).to_ints()
    want = [0] * len(lens)
    for k, v in zip(keys, vals):
        want[k] = (want[k] + v) % F.p
    assert out == want
    # out=: the middle row of a (L, 3, n) buffer full of junk; the empty segments' sums
    # are written too, and the other rows are left alone
    buf = np.full((F.limbs, 3, len(lens)), -1, dtype=np.int32)
    row = buf[:, 1]
    assert plan.sum(F, data, out=row) is row
    assert zt.FieldTensor(F, torch.from_numpy(buf[:, 1].copy())).to_ints() == want
    assert (buf[:, 0] == -1).all() and (buf[:, 2] == -1).all()


def test_segmented_sums_refuse_a_wrong_length():
    F = zt.field("bn254.fr")
    plan = SegmentPlan(np.array([0, 1, 1]), 2)
    with pytest.raises(ValueError, match="3 values"):
        plan.sum(F, np.zeros((F.limbs, 4), dtype=np.int32))
    with pytest.raises(ValueError, match="out must be int32"):
        plan.sum(F, np.zeros((F.limbs, 3), dtype=np.int32), out=np.zeros((F.limbs, 3), dtype=np.int32))


@pytest.mark.parametrize("curve", CURVES)
def test_sparse_matvec_with_stored_coefficients(curve):
    """c·R² coefficients times standard-form witness words give c·w (snarkjs's trick)."""
    F = zt.field(f"{curve}.fr")
    rng = random.Random(2)
    n_rows, n_cols, nnz = 9, 12, 30
    rows = np.array([rng.randrange(n_rows) for _ in range(nnz)])
    cols = np.array([rng.randrange(n_cols) for _ in range(nnz)])
    coef = [rng.choice([1, F.p - 1, rng.randrange(F.p)]) for _ in range(nnz)]
    w = [1] + [rng.randrange(F.p) for _ in range(n_cols - 1)]
    M = SparseFr(F, rows, cols, r2_form(F, words(coef, F.limbs)), n_rows)
    got = M.matvec(words_to_limbs(words(w, F.limbs))).to_ints()
    want = [0] * n_rows
    for r, c, k in zip(rows, cols, coef):
        want[r] = (want[r] + k * w[c]) % F.p
    assert got == want


def _eval(coeffs, x, p):
    acc = 0
    for c in reversed(coeffs):
        acc = (acc * x + c) % p
    return acc


@pytest.mark.parametrize("curve", CURVES)
def test_h_scalars_are_snarkjs_coset_evaluations(curve):
    """p = A·B − C on ω_2N·<ω_N>, where A, B, C interpolate a, b, c = a∘b on <ω_N>;
    p vanishes on <ω_N> and p(τ) = Σ_odd p(x_j)·L'_j(τ) for the 2N-th roots' Lagrange basis."""
    F = zt.field(f"{curve}.fr")
    p_ = F.p
    N = 8
    rng = random.Random(3)
    a = [rng.randrange(p_) for _ in range(N)]
    b = [rng.randrange(p_) for _ in range(N)]
    c = [x * y % p_ for x, y in zip(a, b)]
    g = coset_shift(F, N)
    assert g == F.root_of_unity(2 * N) and pow(g, 2, p_) == F.root_of_unity(N)
    got = h_scalars(F.tensor([a, b, c]), g).to_ints()
    w = F.root_of_unity(N)
    from tests.oracles import field as ff
    A, B, C = (ff.idft(v, w, p_) for v in (a, b, c))
    xs = [g * pow(w, i, p_) % p_ for i in range(N)]
    want = [(_eval(A, x, p_) * _eval(B, x, p_) - _eval(C, x, p_)) % p_ for x in xs]
    assert got == want
    # the identity the zkey's H points rely on, at a random tau
    tau = rng.randrange(p_)
    w2 = F.root_of_unity(2 * N)
    lag = lambda j: (pow(tau, 2 * N, p_) - 1) * pow(2 * N, -1, p_) * pow(w2, j, p_) * pow(tau - pow(w2, j, p_), -1, p_) % p_  # noqa: E731
    lhs = sum(got[i] * lag(2 * i + 1) for i in range(N)) % p_
    rhs = (_eval(A, tau, p_) * _eval(B, tau, p_) - _eval(C, tau, p_)) % p_
    assert lhs == rhs


def test_coset_shift_refuses_the_largest_domain():
    F = zt.field("bn254.fr")
    with pytest.raises(ValueError, match="Fr.shift"):
        coset_shift(F, 1 << F.two_adicity)


@pytest.mark.parametrize("name", ["bn254.g1", "bn254.g2", "bls12_381.g1"])
def test_fixed_base_against_oracle(name):
    from tests.oracles import ec
    G = group(name)
    rec = group_record(name)
    rng = random.Random(4)
    P = ec.mul(rec, rec.generator, 12345)
    fb = FixedBase(G.tensor([P, ec.mul(rec, rec.generator, 777)]))
    ks = [0, 1, 2, 255, 256, G.r - 1, rng.randrange(G.r)]
    got = fb.mul(ks).to_affine()
    assert got == [ec.mul(rec, P, k) for k in ks]
    rows = [[3, 5], [0, 0], [G.r - 1, 1]]
    got = fb.combine(rows).to_affine()
    Q = ec.mul(rec, rec.generator, 777)
    assert got == [ec.add(rec, ec.mul(rec, P, x), ec.mul(rec, Q, y)) for x, y in rows]
    kt = zt.field(G.Fr.name).tensor(ks)
    assert fb.mul(kt).to_affine() == [ec.mul(rec, P, k) for k in ks]
    with pytest.raises(ValueError, match="outside"):
        fb.mul([G.r])
