"""The bucket reductions (`kernels.msm_reduce`) on their own: T_r = sum_v v·B_{r,v}
against the Python-int oracle, for buckets built to meet every exceptional case
(identity buckets, equal buckets, a bucket and its negation, equal partial sums),
for both the halving and the suffix-sum reduction, and on G1 and G2."""
from __future__ import annotations

import numpy as np
import torch
import pytest

from ec_support import O, oracle_points
from zktensor.algebra.curves import group as group_record
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
def test_reduce_halving(monkeypatch, name, rows, N, kind, tail):
    """Every step batch-affine (tail 0), the last steps in XYZZ (20: steps of at most 20
    pairs), or all of them (10^6)."""
    monkeypatch.setattr(msm_reduce, "XYZZ_TAIL", tail)
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


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("threads", [1, 3])
def test_take_cols_point_major(monkeypatch, threads, compiled):
    """The point-major gather (the compiled vector gathers, or numpy's chunks transposed into
    place; shared by threads) gives the words of the row-by-row one, for repeated, unsorted
    and out-of-order indices and into a strided destination view."""
    from zktensor.kernels import cpu_gather
    monkeypatch.setattr(cpu_gather, "ENABLED", compiled)
    monkeypatch.setenv("ZKTENSOR_NUM_THREADS", str(threads))
    monkeypatch.setattr(msm_tree, "GATHER_SPLIT", 1)
    monkeypatch.setattr(msm_tree, "CHUNK", 7)
    monkeypatch.setattr(msm_tree, "POINT_MAJOR_FROM", 0)
    g = torch.Generator().manual_seed(5)
    t = torch.randint(-2**31, 2**31 - 1, (16, 301), dtype=torch.int32, generator=g)
    idx = np.concatenate([np.arange(300, -1, -3), np.full(9, 17), np.arange(0, 301, 2)]).astype(np.int64)
    rows = msm_tree.point_major(t)
    assert rows is not None and torch.equal(rows, t.T)
    want = t[:, torch.from_numpy(idx)]
    assert torch.equal(msm_tree.take_cols(t, idx, rows=rows), want)
    wide = torch.zeros((16, len(idx) + 10), dtype=torch.int32)
    msm_tree.take_cols(t, idx, out=wide[:, 4:4 + len(idx)], rows=rows)
    assert torch.equal(wide[:, 4:4 + len(idx)], want) and not wide[:, :4].any() and not wide[:, 4 + len(idx):].any()
    monkeypatch.setattr(msm_tree, "POINT_MAJOR_FROM", 1 << 40)
    assert msm_tree.point_major(t) is None


def test_gather_cols(monkeypatch):
    """`cpu_gather.gather_cols` against torch's indexing: columns [lo, hi) of a few blocks
    with a ragged end (not a multiple of the 8 lanes), repeated and descending indices, from
    a point-major table into a strided view; the columns outside [lo, hi) untouched; bad
    arguments refused."""
    from zktensor.kernels import cpu_gather
    if not cpu_gather.available():
        pytest.skip(f"no compiled gather: {cpu_gather.LOOPS.error}")
    monkeypatch.setattr(cpu_gather, "BLOCK", 16)
    g = torch.Generator().manual_seed(7)
    t = torch.randint(-2**31, 2**31 - 1, (12, 97), dtype=torch.int32, generator=g)
    idx = np.concatenate([np.arange(96, -1, -1), np.full(5, 40), np.arange(0, 97, 3)]).astype(np.int64)
    table = t.T.contiguous().numpy()
    wide = np.zeros((12, len(idx) + 6), dtype=np.int32)
    lo, hi = 3, len(idx) - 2
    cpu_gather.gather_cols(table, idx, wide[:, 2:2 + len(idx)], lo, hi)
    want = t[:, torch.from_numpy(idx)].numpy()
    assert np.array_equal(wide[:, 2 + lo:2 + hi], want[:, lo:hi])
    assert not wide[:, :2 + lo].any() and not wide[:, 2 + hi:].any()
    with pytest.raises(ValueError, match="int64 indices"):
        cpu_gather.gather_cols(table, idx.astype(np.int32), wide, 0, 4)
    with pytest.raises(ValueError, match="outside"):
        cpu_gather.gather_cols(table, idx, wide, 0, len(idx) + 1)
    with pytest.raises(ValueError, match="unit column stride"):
        cpu_gather.gather_cols(table, idx, wide[:, ::2], 0, 4)


@pytest.mark.parametrize("name,kind,layout,cap,part_cols", [
    ("bn254.g1", "random", "limb", None, None), ("bn254.g1", "exceptional", "limb", None, None),
    ("bn254.g1", "exceptional", "point", None, None), ("bn254.g1", "exceptional", "limb", 5, None),
    ("bn254.g1", "opposite", "limb", None, None), ("bn254.g2", "exceptional", "limb", None, None),
    ("bn254.g1", "exceptional", "limb", None, 40), ("bn254.g1", "exceptional", "point", 5, 24),
    ("bn254.g2", "opposite", "limb", None, 8)])
def test_segment_sums_every_length(monkeypatch, name, kind, layout, cap, part_cols):
    """The bucket tree (`msm_tree.segment_sums`) on segments of every length 0..40 and a few
    long ones, so that rank blocks of every width meet (odd blocks left over, block pairs
    with and without columns past the last whole vector), and segments longer than
    `RANK_CAP` are summed in pieces (cap 5: pieces of pieces), with repeated table columns
    (a base in several windows), written to permuted destinations: each sum against the
    Python-int oracle. "exceptional" adds identity rows, equal and opposite points in one
    segment, and a segment of one point repeated; "opposite" the same without identity
    rows, so that the first identity is a sum. "point" gives the table point-major only
    (as `MSMBases` keeps large ones). part_cols: the layout summed in parts of at most that
    many gathered columns (`msm_tree.GATHER_BYTES`), some segments longer than a part."""
    if cap is not None:
        monkeypatch.setattr(msm_tree, "RANK_CAP", cap)
    G = zt.group(name)
    g = group_record(name)
    pts = list(oracle_points(name, 12))
    if kind != "random":
        pts[4] = pts[5]
        pts[6] = O.neg(g, pts[7])
    if kind == "exceptional":
        pts[3] = None
    xy, inf = G.tensor(pts).affine()
    table, tinf = msm_tree.from_points_xy(xy), inf.clone()
    parts = []
    if part_cols is not None:
        monkeypatch.setattr(msm_tree, "GATHER_BYTES", part_cols * 4 * table.shape[0])
        whole = msm_tree.RankBlocks.parts

        def counted(self, src, seg, max_cols):
            for part in whole(self, src, seg, max_cols):
                assert part[0].width.sum() <= max_cols or int(part[0].width[0]) == 1, "a part over its size"
                parts.append(part)
                yield part
        monkeypatch.setattr(msm_tree.RankBlocks, "parts", counted)
    rng = np.random.default_rng(7)
    lens = list(range(41)) + [63, 64, 65, 100, 127]
    idx = [int(rng.integers(len(pts))) for _ in range(sum(lens))]
    if kind != "random":
        start = sum(lens[:9])
        idx[start:start + 8] = [4] * 8                      # eight equal points: doublings
        start = sum(lens[:6])
        idx[start:start + 6] = [6, 7, 6, 7, 3, 3]           # opposite pairs (and identities)
        start = sum(lens[:3])
        idx[start:start + 3] = [6, 7, 1]                    # a sum that is the identity, then a point
    dest = rng.permutation(len(lens) + 3)[:len(lens)]
    given = dict(table=table) if layout == "limb" else dict(table=None, rows=table.T.contiguous())
    out, oinf = msm_tree.segment_sums(G, tinf=tinf, idx=np.array(idx), lens=np.array(lens), dest=dest,
                                      out_cols=len(lens) + 3, **given)
    got = msm_tree.to_points(G, out, oinf).to_affine()
    pos = 0
    for s, n in enumerate(lens):
        want = O.msm(g, [pts[i] for i in idx[pos:pos + n]], [1] * n) if n else None
        assert got[dest[s]] == want, (s, n)
        pos += n
    assert part_cols is None or len(parts) > 3


@pytest.mark.parametrize("threads", [1, 2])
def test_run_many_matches_one_launch_per_job(monkeypatch, threads):
    """`CompiledProgram.run_many` (all jobs' columns shared out as one launch: pieces of jobs
    on different threads, scalar and vector loops) writes what one launch per job writes,
    for jobs of 1 to 300 columns at odd offsets, given as views or as addresses, on a program
    whose kernel reads a subset of its inputs (tree_up reads only x)."""
    from zktensor.kernels import elementwise, msm_ec
    monkeypatch.setenv("ZKTENSOR_NUM_THREADS", str(threads))
    monkeypatch.setattr(elementwise, "SPLIT_FROM", 1)
    monkeypatch.setattr(elementwise, "SPLIT_WORK", 0)       # split whatever the measured cost
    G = zt.group("bn254.g1")
    g = group_record("bn254.g1")
    msm_tree._beta(g)
    pts = list(oracle_points("bn254.g1", 40))
    xy, _ = G.tensor(pts).affine()
    rng = np.random.default_rng(3)
    T = msm_tree.take_cols(msm_tree.from_points_xy(xy), rng.integers(0, 40, 4000))
    B, C, L = 4, 2, G.L
    key, kinds, fn = ("tree_up", B), ("affine",) * (2 * B), msm_tree._f_up(B)
    jobs, want, got, at = [], [], [], 3
    for q in (1, 7, 16, 33, 300, 2):
        xs = []
        for k in range(B):
            xs += msm_tree._views(T, C, slice(at + k * q, at + (k + 1) * q))
            xs += msm_tree._views(T, C, slice(1 + at + k * q, 1 + at + (k + 1) * q))
        at += B * q + 5
        want.append(msm_ec.run(g, key, kinds, fn, xs))
        got.append([torch.zeros((L, q), dtype=torch.int32) for _ in range(B - 1)])
        if q % 2:            # odd jobs by address (data pointer, limb stride)
            jobs.append(([(t.data_ptr(), t.stride(0)) for t in xs],
                         [(t.data_ptr(), t.stride(0)) for t in got[-1]], q))
        else:
            jobs.append((xs, got[-1], q))
    msm_ec.run_many(g, key, kinds, fn, jobs)
    for w, o in zip(want, got):
        assert all(torch.equal(a, b) for a, b in zip(w, o))


def test_run_many_refuses_bad_jobs():
    """`run_many` refuses a job with the wrong number of operands or an operand of the wrong
    shape, dtype or column stride, before it launches anything."""
    from zktensor.kernels import msm_ec
    G = zt.group("bn254.g1")
    g = group_record("bn254.g1")
    msm_tree._beta(g)
    B, L, q = 4, G.L, 8
    key, kinds, fn = ("tree_up", B), ("affine",) * (2 * B), msm_tree._f_up(B)
    xs = [torch.zeros((L, q), dtype=torch.int32) for _ in range(4 * B)]
    outs = [torch.zeros((L, q), dtype=torch.int32) for _ in range(B - 1)]
    with pytest.raises(TypeError, match="inputs"):
        msm_ec.run_many(g, key, kinds, fn, [(xs[:-1], outs, q)])
    for bad in (torch.zeros((L, q + 1), dtype=torch.int32), torch.zeros((L, q), dtype=torch.int64),
                torch.zeros((L, 2 * q), dtype=torch.int32)[:, ::2]):
        with pytest.raises(ValueError, match="run_many operands"):
            msm_ec.run_many(g, key, kinds, fn, [([bad] + xs[1:], outs, q)])     # x of the first left point
    assert not any(o.any() for o in outs)



def _words(F, values) -> torch.Tensor:
    """Raw 32-bit words (L, k) of integers below 2^(32·L), as the tree holds them."""
    return torch.from_numpy(np.array([np.frombuffer(v.to_bytes(4 * F.limbs, "little"), "<u4")
                                      for v in values]).T.copy().view(np.int32))


def _ints(t: torch.Tensor) -> list[int]:
    return [int.from_bytes(t[:, i].numpy().astype("<u4").tobytes(), "little") for i in range(t.shape[1])]


@pytest.mark.parametrize("name", ["bn254.fq", "bls12_381.fq", "mnt4753.fq"])
def test_other_x_is_canonical_and_different(name):
    """The x that a tree pair with x_L = x_R gets before the shared inversion: another
    canonical word string (below p), for 0, 1, p - 1, p - 2 and low words of 0 and 1."""
    F = zt.field(name)
    top = (F.p >> 32) << 32                       # below p, low word 0
    xs = [0, 1, 2, F.p - 1, F.p - 2, 1 << 32, (1 << 32) + 1, top, top - (1 << 32), 1 << 64]
    got = _ints(msm_tree.other_x(F, _words(F, xs)))
    assert all(0 <= v < F.p for v in got) and all(a != b for a, b in zip(got, xs))
    assert got[:4] == [1, 0, 1, F.p - 2] and got[-1] == (1 << 64) + 1
    assert _ints(torch.from_numpy(msm_tree.other_x(F, _words(F, xs).numpy()))) == got     # the numpy form


def test_other_x_refuses_a_field_where_x_plus_one_may_leave_it():
    """p = 1 (mod 2^32): x = p - 1 has a low word of 0, and x + 1 would be p."""
    from types import SimpleNamespace
    fake = SimpleNamespace(name="fake", p=(1 << 40) + 1)
    with pytest.raises(ValueError, match="p = 1"):
        msm_tree.other_x(fake, torch.zeros((2, 3), dtype=torch.int32))
