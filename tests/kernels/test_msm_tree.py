"""The MSM's bucket tree (`kernels.msm_tree`): its gathers against torch's indexing, its
segment sums and levels against the Python-int oracle (tests/oracles/ec.py), and the x
that a pair with equal x gets before the shared inversion against Python ints."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.ec.ec_support import O, edge_case, oracle_points
from zktensor.algebra.curves import group as group_record
from zktensor.kernels import msm_tree
from zktensor.ops.msm import MSMConfig
import zktensor as zt


@pytest.mark.parametrize("keep", [True, False])
def test_g2_tree_denominators_kept_or_recomputed(monkeypatch, keep):
    """BN254 G2 tree levels with the up kernel's norms handed to the down kernel (the
    default over Fq2) and recomputed there: the oracle's point either way, on bases with
    repeats and identities and scalars with 0, 1, 2 and r - 1."""
    from zktensor.kernels import msm_tree
    monkeypatch.setattr(msm_tree, "keeps_dens", lambda G: keep)
    name = "bn254.g2"
    g, G, bases, ks = edge_case(name, 24)
    assert zt.msm(ks, G.tensor(bases), MSMConfig(window=4)).to_affine() == O.msm(g, bases, ks)


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


@pytest.mark.parametrize("name,kind,layout,cap,part_cols,halving", [
    ("bn254.g1", "random", "limb", None, None, None), ("bn254.g1", "exceptional", "limb", None, None, None),
    ("bn254.g1", "exceptional", "point", None, None, None), ("bn254.g1", "exceptional", "limb", 5, None, None),
    ("bn254.g1", "opposite", "limb", None, None, None), ("bn254.g2", "exceptional", "limb", None, None, None),
    ("bn254.g1", "exceptional", "limb", None, 40, None), ("bn254.g1", "exceptional", "point", 5, 24, None),
    ("bn254.g2", "opposite", "limb", None, 8, None), ("bn254.g1", "exceptional", "limb", None, None, 9),
    ("bn254.g1", "opposite", "point", 5, 24, 64), ("bn254.g2", "exceptional", "point", None, None, 40)])
def test_segment_sums_every_length(monkeypatch, name, kind, layout, cap, part_cols, halving):
    """The bucket tree (`msm_tree.segment_sums`) on segments of every length 0..40 and a few
    long ones, so that rank blocks of every width meet (odd blocks left over, block pairs
    with and without columns past the last whole vector), and segments longer than
    `RANK_CAP` are summed in pieces (cap 5: pieces of pieces), with repeated table columns
    (a base in several windows), written to permuted destinations: each sum against the
    Python-int oracle. "exceptional" adds identity rows, equal and opposite points in one
    segment, and a segment of one point repeated; "opposite" the same without identity
    rows, so that the first identity is a sum. "point" gives the table point-major only
    (as `MSMBases` keeps large ones). part_cols: the layout summed in parts of at most that
    many gathered columns (`msm_tree.GATHER_BYTES`), some segments longer than a part.
    halving: segments from that length on summed apart by `msm_tree.halving_sum` (9: the
    eight equal points and the opposite pairs among them)."""
    if halving is not None:
        monkeypatch.setattr(msm_tree, "HALVING_FROM", halving)
        plan = msm_tree.tree_plan(np.zeros(300, dtype=np.int64), np.array([3, 100, 9, 188]))
        assert [d for d, _ in plan.long] == ([1, 2, 3] if halving <= 9 else [1, 3] if halving <= 100 else [3])
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
