"""zt.msm against naive double-and-add (tests/oracles/ec.py) and py_ecc.

Every group (G1 and G2 of BN254 and BLS12-381, MNT4-753 G1), the edge cases
the doctrine asks for (identity bases, scalars 0, 1, r - 1, repeated bases,
all-zero scalars), the algorithm's knobs (window, chunks, blocks, offsets on
and off, sparse path on and off, GZKP checkpoints), the batched form, inputs
built to hit the exceptional paths, and the errors.
"""
from __future__ import annotations

import numpy as np
import pytest

from ec_support import PAIRING_GROUPS, O, edge_case, oracle_points, scalars
from tests.oracles import pyecc
from zktensor.algebra.curves import group as group_record
import zktensor as zt
from zktensor.kernels.msm_tree import RANK_CAP
from zktensor.ops.msm import MSMConfig, choose_window, msm_many, n_windows, signed_digits, scalar_words


# Every group runs the default configuration in test_msm_matches_oracle (the cost model's
# window and, on a CPU with AVX-512 IFMA, the fp64 vector kernels); the tests that set
# knobs run G2 and MNT4-753 on the int64 kernels, so that both strategies stay covered.
G1_DEFAULT = ("bn254.g1", "bls12_381.g1")


def _cfg(name, **kw):
    if not kw:
        return None
    return MSMConfig(**({"strategy": "int64"} if name not in G1_DEFAULT else {}), **kw)


@pytest.mark.parametrize("name", PAIRING_GROUPS + ["mnt4753.g1"])
def test_msm_matches_oracle(name, monkeypatch):
    """Edge scalars and bases, by the default accumulation (the lanes loop at this size,
    where it runs) and by the tree; the plain table point-major (compiled gathers) and
    limb-major (numpy's, where the gathers do not compile)."""
    from zktensor.kernels import cpu_gather
    g, G, bases, ks = edge_case(name, 12 if name == "mnt4753.g1" else 20)
    want = O.msm(g, bases, ks)
    tree = MSMConfig(accumulation="tree")
    assert zt.msm(ks, G.tensor(bases), _cfg(name)).to_affine() == want
    assert zt.msm(ks, G.tensor(bases), tree).to_affine() == want
    assert zt.msm(G.Fr.tensor(ks), G.tensor(bases), _cfg(name)).to_affine() == want
    monkeypatch.setattr(cpu_gather, "ENABLED", False)
    assert zt.msm(ks, G.tensor(bases), _cfg(name)).to_affine() == want
    assert zt.msm(ks, G.tensor(bases), tree).to_affine() == want


@pytest.mark.parametrize("name", PAIRING_GROUPS)
def test_msm_matches_py_ecc(name):
    g = group_record(name)
    G = zt.group(name)
    pts = list(oracle_points(name, 5))
    ks = scalars(name, 5, seed=7)
    m = pyecc.module(g, optimized=True)
    want = None
    for p, k in zip(pts, ks):
        t = m.multiply(pyecc.to_py_ecc(g, p, True), k)
        want = t if want is None else m.add(want, t)
    assert zt.msm(ks, G.tensor(pts), _cfg(name, window=5)).to_affine() == pyecc.from_py_ecc(g, want)


CONFIGS = [
    MSMConfig(window=2, accumulation="tree"),
    MSMConfig(window=3, chunks=1, reduction="suffix", accumulation="tree"),
    MSMConfig(window=5, chunks=16, reduction="suffix", accumulation="tree"),
    MSMConfig(window=8, tree_block=1, inverse_block=2, accumulation="tree"),
    MSMConfig(window=6, tree_block=2, inverse_block=8, accumulation="tree"),
    MSMConfig(window=7, tree_block=4, inverse_block=4, accumulation="tree"),
    MSMConfig(window=4, offset=False, accumulation="tree"),
    MSMConfig(window=4, offset=False, reduction="suffix", accumulation="tree"),
    MSMConfig(window=4, sparse=False, accumulation="tree"),
    MSMConfig(window=16, accumulation="tree"),
    MSMConfig(accumulation="lanes"),
    MSMConfig(accumulation="lanes", sparse=False),
]


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: f"{c.accumulation}-c{c.window}-K{c.chunks}-B{c.tree_block}"
                         f"-{c.reduction}{'' if c.offset else '-nooffset'}{'' if c.sparse else '-nosparse'}")
def test_msm_configs(cfg):
    name = "bn254.g1"
    g, G, bases, ks = edge_case(name, 24)
    assert zt.msm(ks, G.tensor(bases), cfg).to_affine() == O.msm(g, bases, ks)


@pytest.mark.parametrize("name", ["bn254.g2", "bls12_381.g1"])
def test_msm_configs_other_groups(name):
    g, G, bases, ks = edge_case(name, 16)
    want = O.msm(g, bases, ks)
    P = G.tensor(bases)
    for kw in (dict(window=3, offset=False, accumulation="tree"),
               dict(window=7, sparse=False, chunks=2, reduction="suffix", accumulation="tree"),
               dict(window=6, offset=False, reduction="suffix", accumulation="tree"),
               dict(accumulation="lanes")):
        assert zt.msm(ks, P, _cfg(name, **kw)).to_affine() == want


def test_zero_one_and_sizes():
    name = "bn254.g1"
    g = group_record(name)
    G = zt.group(name)
    pts = list(oracle_points(name, 9))
    P = G.tensor(pts)
    assert zt.msm([0] * 9, P).to_affine() is None
    assert zt.msm([0] * 9, P, MSMConfig(offset=False)).to_affine() is None     # no entries at all
    total = None
    for p in pts:
        total = O.add(g, total, p)
    assert zt.msm([1] * 9, P).to_affine() == total
    assert zt.msm([1] * 9, P, MSMConfig(sparse=False)).to_affine() == total
    assert zt.msm([5], G.tensor(pts[:1])).to_affine() == O.mul(g, pts[0], 5)
    assert zt.msm([], G.tensor([])).to_affine() is None
    assert zt.msm([3, 4], G.tensor([None, None])).to_affine() is None
    assert zt.msm([g.r - 1] * 2, G.tensor([pts[0], O.neg(g, pts[0])])).to_affine() is None


@pytest.mark.parametrize("tail,host", [(0, True), (None, True), (0, False)])
def test_exceptional_inputs(monkeypatch, tail, host):
    """Every base equal: tree pairs are P + P (doubling) and P + (-P) (identity); without
    offsets the bucket reduction meets identities and equal sums: all recomputed exactly.
    The halving reduction's steps all batch-affine (tail 0), or as the default has them
    (these small ones in XYZZ); exceptional pairs handled through numpy views (host) or
    torch ops (as on a GPU)."""
    from zktensor.kernels import msm_reduce, msm_tree
    if tail is not None:
        monkeypatch.setattr(msm_reduce, "XYZZ_TAIL", tail)
    monkeypatch.setattr(msm_tree, "_on_host", lambda dev: host)
    name = "bn254.g1"
    g = group_record(name)
    G = zt.group(name)
    p = oracle_points(name, 1)[0]
    n = 16
    P = G.tensor([p] * n)
    for ks in ([3] * n, [3] * 8 + [g.r - 3] * 8, [2 ** 40 + 7] * n):
        want = O.mul(g, p, sum(ks) % g.r)
        for cfg in (MSMConfig(window=3, accumulation="tree"), MSMConfig(window=3, offset=False, accumulation="tree"),
                    MSMConfig(window=6, chunks=1, accumulation="tree"), MSMConfig(accumulation="lanes")):
            stats = {}
            assert zt.msm(ks, P, cfg, stats=stats).to_affine() == want
    # ... and the reductions did meet them (the halving one in its batch-affine pairs, the
    # suffix one in its lanes)
    stats = {}
    zt.msm([3] * n, P, MSMConfig(window=3, offset=False, accumulation="tree"), stats=stats)
    assert stats["reduce_exceptional"] > 0 or tail is None
    stats = {}
    zt.msm([3] * n, P, MSMConfig(window=3, offset=False, reduction="suffix", accumulation="tree"), stats=stats)
    assert stats.get("slow_lanes", 0) > 0


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_thread_counts(monkeypatch, threads):
    """Launches, gathers, digits and the bucket sort shared by 1 to 3 threads (ranges that do
    not divide the sizes): the oracle's points for plain, batched, prepared and exceptional
    inputs."""
    from zktensor.kernels import elementwise, msm_reduce, msm_tree
    from zktensor.runtime import threads as host_threads
    monkeypatch.setattr(elementwise, "SPLIT_FROM", 8)
    monkeypatch.setattr(elementwise, "SPLIT_WORK", 0)
    monkeypatch.setattr(host_threads, "HOST_SPLIT", 1)     # digits and sort shared too
    monkeypatch.setattr(msm_tree, "GATHER_SPLIT", 1)       # and the tree's gathers
    monkeypatch.setattr(msm_tree, "POINT_MAJOR_FROM", 0)   # first levels gathered point-major,
    monkeypatch.setattr(msm_tree, "PREPARED_POINT_MAJOR_FROM", 1)   # (prepared: kept so)
    monkeypatch.setattr(msm_tree, "CHUNK", 5)              # in chunks that do not divide the sizes
    monkeypatch.setattr(msm_reduce, "XYZZ_TAIL", 0)        # every halving step batch-affine
    monkeypatch.setenv("ZKTENSOR_NUM_THREADS", str(threads))
    name = "bn254.g1"
    g, G, bases, ks = edge_case(name, 20)
    P = G.tensor(bases)
    tree = MSMConfig(accumulation="tree")
    assert zt.msm(ks, P, MSMConfig(window=5, accumulation="tree")).to_affine() == O.msm(g, bases, ks)
    rows = [ks, scalars(name, 20, seed=3)]
    assert zt.msm(rows, P, MSMConfig(window=6, accumulation="tree")).to_affine() == [O.msm(g, bases, r) for r in rows]
    assert zt.msm(rows, P, MSMConfig(accumulation="lanes")).to_affine() == [O.msm(g, bases, r) for r in rows]
    prepared = zt.msm_prepare(P, window=5, checkpoint=4, config=tree)
    assert prepared.table is None and prepared.rows is not None      # kept point-major only
    assert zt.msm(ks, prepared).to_affine() == O.msm(g, bases, ks)
    p = oracle_points(name, 1)[0]
    for red, key in (("halving", "reduce_exceptional"), ("suffix", "slow_lanes")):
        stats = {}
        same = zt.msm([3] * 16, G.tensor([p] * 16), MSMConfig(window=3, offset=False, reduction=red,
                                                              accumulation="tree"),
                      stats=stats)
        assert same.to_affine() == O.mul(g, p, 48) and stats.get(key, 0) > 0


@pytest.mark.parametrize("host_rows", [0, 4])
def test_batched(monkeypatch, host_rows):
    """Several scalar rows over shared bases, the windows combined by the tensor Horner
    chain (host_rows=0) and on the host."""
    from zktensor.ops.msm import reduce as msm_reduce_op
    monkeypatch.setattr(msm_reduce_op, "HOST_COMBINE_ROWS", host_rows)
    name = "bls12_381.g1"
    g = group_record(name)
    G = zt.group(name)
    pts = list(oracle_points(name, 10))
    rows = [scalars(name, 10, seed=s) for s in range(3)]   # (BLS12-381 G1: default strategy)
    rows[1] = [0] * 10
    rows[2][:5] = [1] * 5
    want = [O.msm(g, pts, r) for r in rows]
    P = G.tensor(pts)
    assert zt.msm(rows, P, MSMConfig(window=4)).to_affine() == want
    got = zt.msm(G.Fr.tensor(rows), P)
    assert tuple(got.shape) == (3,) and got.to_affine() == want


@pytest.mark.parametrize("layout", ["limb", "point"])
def test_prepared_bases(monkeypatch, layout):
    """GZKP weighted bases for several checkpoint intervals and plain ones, the table kept
    limb-major (small ones, where the compiled gather is missing) or point-major only."""
    from zktensor.kernels import cpu_gather, msm_tree
    monkeypatch.setattr(msm_tree, "PREPARED_POINT_MAJOR_FROM", 1 if layout == "point" else 1 << 40)
    if layout == "limb":
        monkeypatch.setattr(cpu_gather, "ENABLED", False)
    name = "bn254.g1"
    g = group_record(name)
    G = zt.group(name)
    pts = list(oracle_points(name, 12))
    P = G.tensor(pts + [None])
    for checkpoint in (1, 3, None):
        bases = zt.msm_prepare(P, window=5, checkpoint=checkpoint, config=MSMConfig(accumulation="tree"))
        assert bases.M == (checkpoint or 1) and bases.J == -(-bases.W // bases.M)
        assert (bases.table is None) == (layout == "point")
        for seed in (1, 2):
            ks = scalars(name, 13, seed=seed)
            stats = {}
            assert zt.msm(ks, bases, stats=stats).to_affine() == O.msm(g, pts + [None], ks)
            assert stats["rounds"] == bases.M
            # the lanes loop over the same table: its first checkpoint and the negations
            lanes = MSMConfig(accumulation="lanes")
            assert zt.msm(ks, bases, lanes, stats=stats).to_affine() == O.msm(g, pts + [None], ks)
            assert stats["accumulation"] == "lanes"
            # counted: a call per group of eight windows and one to combine them
            assert stats["kernels"] == -(-stats["windows"] // 8) + 1
    full = zt.msm_prepare(P, window=5, checkpoint=n_windows(g.r.bit_length(), 5),
                          config=MSMConfig(accumulation="tree"))
    assert full.J == 1 and (full.table is None) == (layout == "point")
    ks = scalars(name, 13, seed=3)
    assert zt.msm(ks, full).to_affine() == O.msm(g, pts + [None], ks)


@pytest.mark.parametrize("way", ["closed form", "carry chain"])
def test_signed_digits_recode(way, monkeypatch):
    """Both ways of `signed_digits` (few scalars: the closed form; many: the carry chain)
    give digits in (-2^(c-1), 2^(c-1)] that sum back to the scalar, by Python ints, for
    every window width and for mixed widths."""
    from zktensor.kernels import signed_digits as sd
    monkeypatch.setattr(sd, "CLOSED_FORM_UPTO", 1 << 30 if way == "closed form" else 0)
    name = "bn254.g1"
    G = zt.group(name)
    r = G.r
    ks = [0, 1, r - 1, 2 ** 253, (1 << 254) - 1 - (1 << 254) % 7] + scalars(name, 20)
    ks = [k % r for k in ks]
    ks += [(1 << (5 * t)) - 1 for t in range(1, 51)] + [1 << (13 * t) for t in range(1, 19)]
    words = scalar_words(G, ks)[0]
    for c in list(range(1, 31)) + [[5, 7, 9] * 12 + [3], [16] * 15 + [15]]:
        widths = c if isinstance(c, list) else [c] * n_windows(r.bit_length(), c)
        d = signed_digits(words, c, None if isinstance(c, list) else len(widths))
        assert d.dtype == np.int32 and d.shape == (len(widths), len(ks))
        offs = [sum(widths[:t]) for t in range(len(widths))]
        for t, ct in enumerate(widths):
            assert -(1 << (ct - 1)) < d[t].min() and d[t].max() <= 1 << (ct - 1), (c, t)
        assert [sum(int(d[t, i]) << offs[t] for t in range(len(widths))) for i in range(len(ks))] == ks, c
    with pytest.raises(AssertionError, match="overflowed"):      # r - 1 needs more than 250 bits
        signed_digits(words, [10] * 25)


def test_cost_model():
    # larger inputs take larger windows; every choice is a valid window
    cs = [choose_window(n, 254) for n in (2 ** 4, 2 ** 10, 2 ** 16, 2 ** 20)]
    assert cs == sorted(cs) and all(2 <= c <= 16 for c in cs)
    assert choose_window(2 ** 16, 254, checkpoint=1) >= cs[2]
    # the lanes loop: eight windows a group, so a window count just under a multiple of 8
    # (c = 8: 32 windows of a 254-bit scalar) and wider windows for more entries
    from zktensor.kernels import msm_small_cpu
    from zktensor.ops.msm import LANES_UPTO, choose_accumulation, lanes_window
    assert lanes_window(2 ** 12, 254) == 8 and n_windows(254, 8) == 32
    assert lanes_window(2 ** 6, 254) <= lanes_window(2 ** 12, 254) <= lanes_window(2 ** 16, 254)
    here = "lanes" if msm_small_cpu.available() else "tree"
    assert choose_accumulation(LANES_UPTO, MSMConfig()) == here
    assert choose_accumulation(LANES_UPTO + 1, MSMConfig()) == "tree"
    assert choose_accumulation(1, MSMConfig(accumulation="tree")) == "tree"


def test_errors():
    name = "bn254.g1"
    g = group_record(name)
    G = zt.group(name)
    P = G.tensor(list(oracle_points(name, 3)))
    with pytest.raises(ValueError, match=r"scalar 1 = .* outside \[0, r\)"):
        zt.msm([1, g.r, 2], P)
    with pytest.raises(ValueError, match="outside"):
        zt.msm([1, -1, 2], P)
    with pytest.raises(TypeError, match="expected an int"):
        zt.msm([1, 2.0, 2], P)
    with pytest.raises(ValueError, match="3 points"):
        zt.msm([1, 2], P)
    with pytest.raises(ValueError, match="bn254.fr"):
        zt.msm(zt.field("bn254.fq").tensor([1, 2, 3]), P)
    with pytest.raises(ValueError, match="1-D"):
        zt.msm([1, 2, 3, 4], G.tensor([[None, None], [None, None]]))
    with pytest.raises(TypeError, match="PointTensor"):
        zt.msm([1], [g.generator])
    with pytest.raises(ValueError, match="window"):
        zt.msm([1, 2, 3], P, MSMConfig(window=21))
    with pytest.raises(ValueError, match="reduction must be one of"):
        MSMConfig(reduction="prefix")
    with pytest.raises(ValueError, match="accumulation must be one of"):
        MSMConfig(accumulation="loop")


def test_cpu_strategy_is_fp64_for_every_group_where_ifma():
    """Every group takes the 8-lane IFMA kernels where the CPU has them (G2 and MNT4-753
    too, since their kernels compile in seconds), the default strategy elsewhere."""
    from zktensor.runtime.cpu_isa import cpu_options
    from zktensor.ops.msm import auto_strategy
    o = cpu_options("fp64")
    want = "fp64" if o["lanes"] == 8 and o["ifma"] else None
    for name in ("bn254.g1", "bn254.g2", "bls12_381.g2", "mnt4753.g1"):
        assert auto_strategy(zt.group(name), "cpu") == want, name
    assert auto_strategy(zt.group("bn254.g1"), "cuda") is None


def test_sparse_scalars_window_and_ones():
    """90% zeros and ones: the window is the cost model's for the other scalars, not for
    all n, and the ones (single entries of bucket 1) add up with the rest exactly."""
    name = "bn254.g1"
    g = group_record(name)
    G = zt.group(name)
    pts = list(oracle_points(name, 6))
    n = 2048
    bases = [pts[i % 6] for i in range(n)]
    ks = scalars(name, n, seed=5)
    for i in range(n):
        if i % 10 < 5:
            ks[i] = 0
        elif i % 10 < 9:
            ks[i] = 1
    coef = [sum(ks[i] for i in range(j, n, 6)) % g.r for j in range(6)]     # same bases, summed
    want = O.msm(g, pts, coef)
    stats = {}
    tree = MSMConfig(accumulation="tree")
    assert zt.msm(ks, G.tensor(bases), tree, stats=stats).to_affine() == want
    dense = sum(1 for k in ks if k > 1)
    assert stats["dense"] == dense and stats["ones"] == sum(1 for k in ks if k == 1)
    bits = g.r.bit_length()
    assert stats["window"] == choose_window(dense, bits) < choose_window(n, bits)
    assert zt.msm(ks, G.tensor(bases), MSMConfig(sparse=False, accumulation="tree")).to_affine() == want
    # the ones' bucket is longer than RANK_CAP: summed in pieces, with and without offsets
    assert stats["ones"] > RANK_CAP
    assert zt.msm(ks, G.tensor(bases), MSMConfig(offset=False, accumulation="tree")).to_affine() == want
    # the lanes loop: the ones are entries of the first group of windows only
    assert zt.msm(ks, G.tensor(bases), MSMConfig(accumulation="lanes"), stats=stats).to_affine() == want
    assert stats["accumulation"] == "lanes"


@pytest.mark.parametrize("name", ["bn254.g1", "bls12_381.g2"])
def test_msm_many_matches_separate_oracles(name):
    """Several MSMs over slices of one prepared table, in one bucket tree: each equals the
    oracle on its slice (overlapping and empty slices, an identity base, all-zero scalars,
    ones), for plain and weighted (M = 1) tables; bad jobs are refused."""
    g = group_record(name)
    G = zt.group(name)
    pts = list(oracle_points(name, 12))
    pts[5] = None
    P = G.tensor(pts)
    ks = scalars(name, 12, seed=4)
    jobs = [(ks[:7], 0), (ks[3:12], 3), ([0] * 4, 8), ([], 2), ([1, 1, 1] + ks[:2], 6)]
    want = [O.msm(g, pts[off:off + len(k)], k) if k else None for k, off in jobs]
    for checkpoint in (1, 1024):
        bases = zt.msm_prepare(P, window=4, checkpoint=checkpoint)
        got = msm_many([(k, off) for k, off in jobs], bases)
        assert tuple(got.shape) == (len(jobs),) and got.to_affine() == want
    with pytest.raises(ValueError, match="pass the 12 bases"):
        msm_many([(ks[:4], 10)], bases)
    with pytest.raises(ValueError, match="one vector"):
        msm_many([([ks[:2], ks[2:4]], 0)], bases)
    with pytest.raises(ValueError, match="no jobs"):
        msm_many([], bases)
    with pytest.raises(TypeError, match="MSMBases"):
        msm_many([(ks, 0)], P)


@pytest.mark.parametrize("cap", [None, 5])
def test_msm_plan_shared_by_g1_and_g2(monkeypatch, cap):
    """One plan (digits, sort, layout) run against G1 and G2 bases of one geometry, each
    with identity bases where the other has points: every result equals its oracle, for
    plain and weighted tables, a batch, and a heavy bucket of ones cut into pieces (cap)."""
    from zktensor.kernels import msm_tree
    if cap:
        monkeypatch.setattr(msm_tree, "RANK_CAP", cap)
    names = ("bn254.g1", "bn254.g2")
    n = 40
    pts = {nm: list(oracle_points(nm, n)) for nm in names}
    pts["bn254.g1"][5] = pts["bn254.g1"][2] = None
    pts["bn254.g2"][9] = pts["bn254.g2"][2] = None
    ks = scalars("bn254.g1", n, seed=9)
    r = group_record("bn254.g1").r
    ks[:12] = [1] * 12
    ks[12], ks[13], ks[9] = 0, r - 1, 0
    rows = [ks, ks[::-1]]
    for checkpoint in (1, 1024):
        bases = {nm: zt.msm_prepare(zt.group(nm).tensor(pts[nm]), window=4, checkpoint=checkpoint)
                 for nm in names}
        plan = zt.msm_plan(ks, *bases.values())
        batch = zt.msm_plan(rows, *bases.values())
        for nm in names:
            g = group_record(nm)
            assert zt.msm(plan, bases[nm]).to_affine() == O.msm(g, pts[nm], ks)
            assert zt.msm(batch, bases[nm]).to_affine() == [O.msm(g, pts[nm], k) for k in rows]
    g1 = zt.group("bn254.g1")
    other = zt.msm_prepare(g1.tensor(pts["bn254.g1"]), window=5, checkpoint=1024)
    with pytest.raises(ValueError, match="one geometry"):
        zt.msm_plan(ks, bases["bn254.g1"], other)
    with pytest.raises(ValueError, match="another geometry"):
        zt.msm(plan, other)
    with pytest.raises(TypeError, match="MSMBases"):
        zt.msm(plan, g1.tensor(pts["bn254.g1"]))
    with pytest.raises(ValueError, match="39 scalars but 40 bases"):
        zt.msm_plan(ks[:39], bases["bn254.g1"])
    with pytest.raises(ValueError, match="no bases"):
        zt.msm_plan(ks)


@pytest.mark.parametrize("counting", [True, False])
@pytest.mark.parametrize("cap", [None, 5])
def test_msm_plan_rows_sorted_in_pieces(monkeypatch, cap, counting):
    """A bucket row cut into pieces of digit positions (threads share a one-row plan): the
    pieces' sorts merged by rank give the oracle's sums, with identity bases, zeros, r - 1
    and a heavy bucket of ones (cap) cut into pieces across the row's pieces; by the
    compiled counting sort and by numpy's argsort."""
    from zktensor.kernels import msm_place, msm_tree
    from zktensor.runtime.threads import launch_budget
    from zktensor.ops.msm import plan as msm_plan_mod
    if cap:
        monkeypatch.setattr(msm_tree, "RANK_CAP", cap)
    monkeypatch.setattr(msm_place, "ENABLED", counting)
    assert msm_place.available() == counting
    monkeypatch.setattr(msm_plan_mod, "PIECE_MIN", 16)
    nm, n = "bn254.g1", 48
    pts = list(oracle_points(nm, n))
    pts[3] = pts[30] = None
    ks = scalars(nm, n, seed=11)
    ks[::4] = [1] * 12
    ks[5], ks[6] = 0, group_record(nm).r - 1
    bases = zt.msm_prepare(zt.group(nm).tensor(pts), window=4, checkpoint=1)
    want = O.msm(group_record(nm), pts, ks)
    for threads in (1, 3):
        with launch_budget(threads):
            plan = zt.msm_plan(ks, bases)
        assert zt.msm(plan, bases).to_affine() == want


def test_split_scalars_zeros_and_ones():
    """The live and ones masks, from 64-bit pairs of words and from the plain form (odd word
    count, strided), against Python ints: 0, 1, 2^32 (word 1 set), 2^64 + 1, 2^255 + 1,
    r - 1, and identity bases dropped."""
    from zktensor.ops.msm import split_scalars
    r = group_record("bn254.g1").r
    vals = [0, 1, 2, 1 << 32, (1 << 64) + 1, (1 << 255) + 1, r - 1, 1, 0, 1 << 200]
    inf = np.array([False] * 7 + [True, False, False])
    words = np.array([[np.frombuffer(v.to_bytes(32, "little"), "<u4") for v in vals]])
    want_live = [v != 0 and not i for v, i in zip(vals, inf)]
    for w in (words, np.ascontiguousarray(words[:, :, :7]), np.repeat(words, 2, axis=1)[:, ::2]):
        cut = [v % (1 << (32 * w.shape[2])) for v in vals]
        live, ones = split_scalars(w, inf, True)
        assert live[0].tolist() == [c != 0 and not i for c, i in zip(cut, inf)]
        assert ones[0].tolist() == [c == 1 and not i for c, i in zip(cut, inf)]
    live, ones = split_scalars(words, inf, False)          # not sparse: no ones set apart
    assert live[0].tolist() == want_live and not ones.any()


def test_signed_digits_refuses_wide_windows():
    """Digits are computed in 32-bit lanes: windows of more than 30 bits are refused."""
    words = np.zeros((3, 8), dtype=np.uint32)
    with pytest.raises(ValueError, match="at most 30 bits"):
        signed_digits(words, 31, 9)
    assert signed_digits(words, 30, 9).shape == (9, 3)


@pytest.mark.parametrize("counting", [True, False])
def test_window_past_16_bits(monkeypatch, counting):
    """Windows of 17 bits (|digit| up to 2^16, past a uint16 key) by the counting sort and by
    numpy's argsort, plain and with weighted bases at M = 1: the oracle's sums."""
    from zktensor.kernels import msm_place
    monkeypatch.setattr(msm_place, "ENABLED", counting)
    name = "bn254.g1"
    g = group_record(name)
    pts = list(oracle_points(name, 9))
    ks = scalars(name, 9, seed=4)
    ks[0], ks[1] = 1 << 16, g.r - (1 << 16)          # digits +-2^16 in the first window
    P = zt.group(name).tensor(pts)
    want = O.msm(g, pts, ks)
    stats = {}
    tree = MSMConfig(accumulation="tree")
    assert zt.msm(ks, P, MSMConfig(window=17, accumulation="tree"), stats=stats).to_affine() == want
    assert stats["window"] == 17
    assert zt.msm(ks, zt.msm_prepare(P, window=17, checkpoint=1, config=tree)).to_affine() == want


@pytest.mark.parametrize("checkpoint", [1, 1024])
def test_sparse_plan_against_prepared_bases(checkpoint):
    """A witness-like vector (mostly 0 and 1, a few short values, two full-width ones)
    against prepared bases whose window was fixed for many dense scalars: the plan leaves
    its buckets without offset points and reduces only the live ones (`reduce_sparse`);
    shared by G1 and G2 bases, in a batch of two rows too, every result equal to the
    oracle. A dense vector against the same bases keeps the offsets."""
    from zktensor.ops.msm.plan import SPARSE_BUCKETS
    names = ("bn254.g1", "bn254.g2")
    n = 300
    pts = {nm: list(oracle_points(nm, n)) for nm in names}
    pts["bn254.g1"][7] = None
    r = group_record("bn254.g1").r
    rng = np.random.default_rng(3)
    ks = [int(v) for v in rng.integers(0, 2, n)]
    for i in range(0, n, 97):
        ks[i] = int(rng.integers(2, 1 << 12))                  # short values
    ks[5], ks[200] = r - 1, scalars("bn254.g1", 1, seed=4)[0]  # two full-width
    rows = [ks, ks[::-1]]
    bases = {nm: zt.msm_prepare(zt.group(nm).tensor(pts[nm]), window=12, checkpoint=checkpoint,
                                config=MSMConfig(accumulation="tree"))
             for nm in names}
    plan = zt.msm_plan(ks, *bases.values())
    batch = zt.msm_plan(rows, *bases.values())
    assert plan.sparse and batch.sparse and not plan.offset and not batch.offset
    for nm in names:
        g = group_record(nm)
        stats = {}
        assert zt.msm(plan, bases[nm], stats=stats).to_affine() == O.msm(g, pts[nm], ks)
        assert "reduce_sparse_rows" in stats["time"]
        assert zt.msm(batch, bases[nm]).to_affine() == [O.msm(g, pts[nm], k) for k in rows]
    dense = scalars("bn254.g1", n, seed=6)
    plan = zt.msm_plan(dense, bases["bn254.g1"])
    assert plan.offset and not plan.sparse and plan.entries * SPARSE_BUCKETS >= plan.rows * plan.N
    assert zt.msm(plan, bases["bn254.g1"]).to_affine() == O.msm(group_record("bn254.g1"), pts["bn254.g1"], dense)


@pytest.mark.parametrize("checkpoint", [None, 3])
def test_unit_scalars_in_the_lanes_loop(checkpoint):
    """A 0/1 witness's rows in the lanes loop: past `UNITS_MIN` ones a row, they are summed
    eight bases a trip (`msm_small_cpu.msm_many`: `_Units`), the rest by windows, over plain and
    GZKP-weighted tables, two batch rows (one of ones alone)."""
    from zktensor.kernels import msm_small_cpu
    if not msm_small_cpu.available():
        pytest.skip("the lanes loop needs AVX-512")
    name = "bn254.g1"
    g = group_record(name)
    G = zt.group(name)
    base = list(oracle_points(name, 9)) + [None]
    n = msm_small_cpu.UNITS_MIN + 70
    pts = [base[i % 10] for i in range(n)]
    mixed = [1] * n
    mixed[5], mixed[6], mixed[30:34] = 0, g.r - 1, scalars(name, 4, seed=9)
    rows = [mixed, [1] * n]
    bases = zt.msm_prepare(G.tensor(pts), window=5, checkpoint=checkpoint, config=MSMConfig(accumulation="tree"))
    got = zt.msm(G.Fr.tensor(rows), bases, MSMConfig(accumulation="lanes")).to_affine()
    assert got == [O.msm(g, pts, r) for r in rows]
