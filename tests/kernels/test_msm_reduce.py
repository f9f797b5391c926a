"""The bucket reductions (`kernels.msm_reduce`) on their own: T_r = sum_v v·B_{r,v}
against the Python-int oracle, for buckets built to meet every exceptional case
(identity buckets, equal buckets, a bucket and its negation, equal partial sums),
for both the halving and the suffix-sum reduction, and on G1 and G2."""
from __future__ import annotations

import numpy as np
import pytest

from tests.ec.ec_support import O, oracle_points
from zktensor.algebra.curves import GROUP_NAMES, group as group_record
from zktensor.kernels import msm_reduce, msm_tree
from zktensor.points import PointTensor
import zktensor as zt


def _buckets(name, rows, N, kind):
    g = group_record(name)
    pts = list(oracle_points(name, 5))
    rng = np.random.default_rng(len(kind) * 100 + rows * 10 + N)
    B = [[pts[int(rng.integers(5))] for _ in range(N)] for _ in range(rows)]
    if kind == "exceptional":
        for r in range(rows):
            B[r][0] = None                                  # an identity bucket
            if N >= 4:
                B[r][1] = B[r][N // 2 + 1]                   # equal: merged by the first halving
                B[r][2] = O.neg(g, B[r][N // 2 + 2])         # opposite: their merge is the identity
                B[r][N - 1] = None
    if kind == "all-equal":
        B = [[pts[0]] * N for _ in range(rows)]
    return g, B


def _table(G, B, rows, N):
    """Limb-major affine table, column (v - 1)·rows + r, and identity flags."""
    flat = [B[r][v] for v in range(N) for r in range(rows)]
    xy, inf = G.tensor(flat).affine()
    return msm_tree.from_points_xy(xy), inf.clone()


@pytest.mark.parametrize("name", ["bn254.g1", "bn254.g2"])
@pytest.mark.parametrize("rows,N", [(1, 2), (3, 8), (2, 32), (4, 16)])
@pytest.mark.parametrize("kind", ["random", "exceptional", "all-equal"])
@pytest.mark.parametrize("tail", [0, 20, 10 ** 6])
@pytest.mark.parametrize("host_rows", [0, 4])
def test_reduce_halving(monkeypatch, name, rows, N, kind, tail, host_rows):
    """Every step batch-affine (tail 0), the last steps in XYZZ (20: steps of at most 20
    pairs), or all of them (10^6); the Horner chain on tensors (host_rows 0) or on the
    host (4: every row count here)."""
    monkeypatch.setattr(msm_reduce, "XYZZ_TAIL", tail)
    monkeypatch.setattr(msm_reduce, "HOST_HORNER_ROWS", host_rows)
    g, B = _buckets(name, rows, N, kind)
    G = zt.group(name)
    want = [O.msm(g, B[r], list(range(1, N + 1))) for r in range(rows)]
    table, inf = _table(G, B, rows, N)
    stats = {}
    got = PointTensor(G, msm_reduce.reduce_halving(G, table, inf, rows, N, stats=stats)).to_affine()
    assert got == want
    if kind != "random" and N >= 4 and tail == 0:
        assert stats.get("exceptional", 0) > 0             # the batch-affine pairs found them


@pytest.mark.parametrize("kind", ["random", "exceptional"])
def test_reduce_suffix_agrees(kind):
    """The suffix-sum reduction over the same buckets (its own column layout)."""
    name, rows, N, K = "bn254.g1", 3, 16, 4
    g, B = _buckets(name, rows, N, kind)
    G = zt.group(name)
    Lc = N // K
    order = [[B[r][k * Lc + j] for k in range(K) for r in range(rows)] for j in range(Lc)]
    xy, inf = G.tensor([p for col in order for p in col]).affine()
    T = msm_reduce.reduce_buckets(G, msm_tree.from_points_xy(xy), inf.clone(), rows, K, Lc)
    assert PointTensor(G, T).to_affine() == [O.msm(g, B[r], list(range(1, N + 1))) for r in range(rows)]


@pytest.mark.parametrize("name", ["bn254.g1", "bn254.g2"])
@pytest.mark.parametrize("rows,N,live", [(1, 2, 1), (3, 64, 5), (2, 1024, 40), (1, 32768, 9), (2, 16, 0)])
def test_reduce_sparse(name, rows, N, live):
    """Buckets mostly the identity (a sparse plan's): every live index (v = N, the top one,
    v = 1, digits of every base-16 position, equal and opposite live buckets in a row)
    against the Python-int oracle, as the halving reduction's layout gives them."""
    g = group_record(name)
    G = zt.group(name)
    pts = list(oracle_points(name, 6))
    rng = np.random.default_rng(N + rows + live)
    B = [[None] * N for _ in range(rows)]
    for r in range(rows):
        idx = set(int(v) for v in rng.choice(N, size=min(live, N), replace=False))
        if live:
            idx |= {0, N - 1}
        for v in sorted(idx):
            B[r][v] = pts[int(rng.integers(len(pts)))]
        if live >= 5 and N >= 64:
            B[r][3], B[r][N // 2] = pts[0], pts[0]                   # equal buckets
            B[r][5], B[r][17] = pts[1], O.neg(g, pts[1])             # opposite: their digit sums cancel
    table, inf = _table(G, B, rows, N)
    want = [O.msm(g, B[r], list(range(1, N + 1))) for r in range(rows)]
    got = PointTensor(G, msm_reduce.reduce_sparse(G, table, inf, rows, N)).to_affine()
    assert got == want


@pytest.mark.parametrize("name", GROUP_NAMES)
def test_host_points_round_trip(name):
    """`point_formulas.to_host`/`from_host` against the tensor conversions: affine points
    (the identity among them) to XYZZ words as `GroupSpace.tensor` writes them, and XYZZ
    data with ZZ != 1 (sums) back to the points `PointTensor.to_affine` reads."""
    from zktensor.kernels.point_formulas import add_complete, from_host, to_host
    G = zt.group(name)
    pts = list(oracle_points(name, 4)) + [None]
    T = G.tensor(pts).data
    assert (from_host(G, pts) == T).all()
    assert to_host(G, T) == pts
    S = add_complete(G, T, G.tensor(pts[1:] + pts[:1]).data)            # Z != 1, one P + O
    assert to_host(G, S) == PointTensor(G, S).to_affine()
