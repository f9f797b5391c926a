"""PointTensor against the Python-int oracle and py_ecc: every group, every edge case.

Exact equality of affine tuples throughout. Edge values: the identity as
either operand and as a result, P + P through add, P + (-P), scalars 0, 1,
r - 1, r and negative ints, points of the whole curve outside the subgroup.
"""
from __future__ import annotations

import pytest

from ec_support import PAIRING_GROUPS, O, oracle_points, scalars
from tests.oracles import pyecc, snarkjs_layout as sl
from zktensor.algebra.curves import group as group_record, in_subgroup, is_on_curve
import zktensor as zt
from zktensor.ir import ec as E


def _case(name, n=4):
    g = group_record(name)
    pts = list(oracle_points(name, n))
    return g, zt.group(name), pts


@pytest.fixture(params=["host", "kernels"])
def affine_path(request, monkeypatch):
    """`to_affine` of a few CPU points on Python ints (the default) or by the kernels'
    batch inversion (the path of large batches and of GPU tensors)."""
    if request.param == "kernels":
        import zktensor.points
        monkeypatch.setattr(zktensor.points, "HOST_AFFINE_UPTO", 0)
    return request.param


def test_roundtrip_and_shapes(any_group, affine_path):
    g, G, pts = _case(any_group)
    P = G.tensor(pts + [None])
    assert tuple(P.shape) == (5,) and P.to_affine() == pts + [None]
    assert G.tensor(pts[0]).to_affine() == pts[0] and G.tensor(None).to_affine() is None
    Q = G.tensor([[pts[0], None], [pts[1], pts[2]]])
    assert Q.to_affine() == [[pts[0], None], [pts[1], pts[2]]]
    assert Q[1, 0].to_affine() == pts[1]
    assert P.is_identity().tolist() == [False] * 4 + [True]
    assert G.generator().to_affine() == g.generator
    assert G.identity(3).to_affine() == [None] * 3


def test_add_double_neg_all_cases(any_group, affine_path):
    g, G, pts = _case(any_group)
    a, b, c, d = pts
    lhs = [a, a, a, None, a, None, b, c]
    rhs = [b, a, O.neg(g, a), c, None, None, O.neg(g, b), d]
    P, Q = G.tensor(lhs), G.tensor(rhs)
    assert (P + Q).to_affine() == [O.add(g, x, y) for x, y in zip(lhs, rhs)]
    assert (P - Q).to_affine() == [O.sub(g, x, y) for x, y in zip(lhs, rhs)]
    assert P.double().to_affine() == [O.double(g, x) for x in lhs]
    assert P.double(3).to_affine() == [O.mul(g, x, 8) for x in lhs]
    assert (-P).to_affine() == [O.neg(g, x) for x in lhs]
    # broadcasting: one point against a batch
    assert (G.tensor(a) + P).to_affine() == [O.add(g, a, x) for x in lhs]


def test_equality(any_group):
    g, G, pts = _case(any_group)
    a, b = pts[:2]
    P = G.tensor([a, a, None, None, a])
    Q = G.tensor([a, b, None, a, O.neg(g, a)])
    assert (P == Q).tolist() == [True, False, True, False, False]
    # the same point in different XYZZ representations
    assert ((G.tensor(a).double() - G.tensor(a)) == G.tensor(a)).item()
    assert (P != Q).tolist() == [False, True, False, True, True]


def test_scalar_mul(any_group):
    g, G, pts = _case(any_group)
    a = pts[0]
    ks = [0, 1, 2, g.r - 1, g.r, scalars(any_group, 1)[0]]
    P = G.tensor([a] * len(ks))
    assert (P * ks).to_affine() == [O.mul(g, a, k) for k in ks]
    assert (G.tensor(pts) * 5).to_affine() == [O.mul(g, x, 5) for x in pts]
    assert (G.tensor(a) * -3).to_affine() == O.mul(g, a, -3)
    assert (G.tensor(None) * 7).to_affine() is None


def test_scalar_mul_field_tensor():
    name = "bn254.g1"
    g, G, pts = _case(name)
    ks = scalars(name, 4)[:3] + [0]
    k = G.Fr.tensor(ks)
    assert (G.tensor(pts) * k).to_affine() == [O.mul(g, x, v) for x, v in zip(pts, ks)]
    with pytest.raises(TypeError, match="scalars must be bn254.fr"):
        G.tensor(pts) * zt.field("bn254.fq").tensor([1, 2, 3, 4])


def test_against_py_ecc(pairing_group):
    name = pairing_group
    g, G, pts = _case(name, 2)
    m = pyecc.module(g, optimized=True)
    a, b = pts
    k = scalars(name, 1, seed=9)[0]
    got = (G.tensor([a]) * k + G.tensor([b])).to_affine()[0]
    want = m.add(m.multiply(pyecc.to_py_ecc(g, a, True), k), pyecc.to_py_ecc(g, b, True))
    assert got == pyecc.from_py_ecc(g, want)


def test_snarkjs_bytes(pairing_group):
    g, G, pts = _case(pairing_group)
    points = pts + [None]
    data = G.tensor(points).to_bytes()
    assert data == sl.points_to_lem(g, points)
    assert G.from_bytes(data).to_affine() == points


def test_bad_points(any_group):
    g, G, pts = _case(any_group)
    a = pts[0]
    x, y = a
    off = (x, O._add(g, y, y))                          # (x, 2y): off the curve
    assert not is_on_curve(g, off)
    with pytest.raises(ValueError, match="point 1 is not on the curve"):
        G.tensor([a, off])
    big = (g.p, y) if g.degree == 1 else ((g.p, 0), y)
    with pytest.raises(ValueError, match="outside \\[0, q\\)"):
        G.tensor([big])
    with pytest.raises(TypeError):
        G.tensor([(1, 2, 3)])
    if any_group in PAIRING_GROUPS:
        data = bytearray(sl.points_to_lem(g, [a, a]))
        n8 = sl.word_bytes(g.p)
        data[-1] ^= 1                                   # corrupt the second point's last word
        with pytest.raises(ValueError, match="point 1"):
            G.from_bytes(bytes(data))
        with pytest.raises(ValueError, match="whole number"):
            G.from_bytes(bytes(data[:-1]))
        data[-n8:] = (g.p).to_bytes(n8, "little")        # a word >= q
        with pytest.raises(ValueError, match="not reduced"):
            G.from_bytes(bytes(data))


def test_subgroup_check():
    """BLS12-381 G1 has cofactor > 1: a curve point off the subgroup is found."""
    name = "bls12_381.g1"
    g = group_record(name)
    G = zt.group(name)
    x = 2
    while True:
        rhs = (x ** 3 + g.b) % g.p
        y = pow(rhs, (g.p + 1) // 4, g.p)
        if y * y % g.p == rhs:
            break
        x += 1
    stray = (x, y)
    assert not in_subgroup(g, stray)
    P = G.tensor([g.generator, stray])
    assert P.in_subgroup().tolist() == [True, False]


def test_sum():
    name = "bls12_381.g2"
    g, G, pts = _case(name)
    total = None
    for p in pts + pts[:1]:
        total = O.add(g, total, p)
    with zt.config(strategy="int64"):
        assert G.tensor(pts + pts[:1] + [None]).sum().to_affine() == total


def _negate_y(P):
    x, y = P.coords()
    return E.make("affine", x, -y)


def test_point_programs_follow_cpu_options(monkeypatch):
    """A point program compiled under one set of CPU options is not reused under another:
    the scalar-lane kernel (no vector twin) under ZKTENSOR_CPU_LANES=1, the same words."""
    from zktensor.kernels import msm_ec, msm_tree
    from zktensor.runtime.cpu_isa import cpu_options
    if cpu_options("fp64")["lanes"] == 1:
        pytest.skip("no vector lanes on this CPU: one variant only")
    G = zt.group("bn254.g1")
    xy, _ = G.tensor(list(oracle_points("bn254.g1", 20))).affine()
    cols = msm_tree._views(msm_tree.from_points_xy(xy), 2)
    args = (G.params, "negate_y", ("affine",), _negate_y)
    with zt.config(strategy="fp64"):
        vec = msm_ec.compiled(*args)
        want = msm_ec.run(*args, cols)
        monkeypatch.setenv("ZKTENSOR_CPU_LANES", "1")
        scalar = msm_ec.compiled(*args)
        got = msm_ec.run(*args, cols)
    kernel = vec.meta["calls"][0]["kernel"]
    assert vec._cpu_fn(kernel, "vrun") is not None and scalar._cpu_fn(kernel, "vrun") is None
    assert all(bool((a == b).all()) for a, b in zip(got, want))
