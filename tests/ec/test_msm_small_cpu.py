"""The window-lane MSM loop (`kernels/msm_small_cpu.py`) against the Python-int oracle
(tests/oracles/ec.py): every group, windows of 1 to 13 bits, and the cases its complete
additions choose between (an empty bucket, P = Q in a bucket, P = -Q in a bucket, an
identity partial sum in the reduction)."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import zktensor as zt
from tests.ec.ec_support import ALL_GROUPS, PAIRING_GROUPS, oracle_points, scalars
from tests.oracles import ec as O
from zktensor.kernels import msm_small_cpu as ms
from zktensor.ops.msm.bases import _weighted_table
from zktensor.ops.msm.model import n_windows
from zktensor.ops.msm.scalars import scalar_words, signed_digits

pytestmark = pytest.mark.skipif(not ms.available(), reason="needs 8-lane AVX-512 vectors")


def _run(name, pts, ks, c):
    """The loop's MSM of affine oracle points (None: the identity) and scalars, windows of c bits."""
    GS = zt.group(name)
    xy, inf = GS.tensor(pts).affine()
    n = len(pts)
    table = _weighted_table(GS, xy, inf, c, 1, 1, 1, point_major=True)[0].numpy()
    words = scalar_words(GS, ks)[0]
    dig = signed_digits(words, c, n_windows(GS.r.bit_length(), c))
    out = ms.lane_sums(GS, table, n + 1, np.arange(n, dtype=np.int64), dig, c)
    return ms.combine(GS, out)


@pytest.mark.parametrize("name", ALL_GROUPS)
def test_random(name):
    pts = list(oracle_points(name, 24))
    ks = scalars(name, 24)
    assert _run(name, pts, ks, 6) == O.msm(zt.group(name).params, pts, ks)


@pytest.mark.parametrize("c", [1, 2, 5, 8, 13])
def test_windows(c):
    name = "bn254.g1"
    pts = list(oracle_points(name, 12))
    ks = scalars(name, 12, seed=c)
    assert _run(name, pts, ks, c) == O.msm(zt.group(name).params, pts, ks)


@pytest.mark.parametrize("name", PAIRING_GROUPS)
def test_exceptional(name):
    """Equal points in one bucket (the doubling), a point and its negation in one bucket
    (the identity), identity bases (all-zero words in the table), scalars 0, 1, r - 1, and a
    sum that is the identity."""
    G = zt.group(name).params
    P, Q, R = oracle_points(name, 3)
    k = scalars(name, 1, seed=7)[0]
    pts = [P, P, Q, O.neg(G, Q), R, R, P, Q, None, None]
    ks = [k, k, k, k, 0, 1, G.r - 1, 1, k, 1]
    assert _run(name, pts, ks, 4) == O.msm(G, pts, ks)
    # the identity: k·P + (r - k)·P
    assert _run(name, [P, P], [k, G.r - k], 5) is None
    assert _run(name, [P], [0], 3) is None
    assert _run(name, [None, None], [k, k], 3) is None
    # equal sums in the reduction: with 3-bit windows, buckets 3 and 2 both hold P, so the
    # running sum meets r = P, bucket = P (a doubling there), and a = r at its first step
    assert _run(name, [P, P], [3, 2], 3) == O.mul(G, P, 5)


def test_bad_inputs():
    GS = zt.group("bn254.g1")
    pts = list(oracle_points("bn254.g1", 4))
    xy, inf = GS.tensor(pts).affine()
    table = _weighted_table(GS, xy, inf, 4, 1, 1, 1, point_major=True)[0].numpy()
    cols = np.arange(4, dtype=np.int64)
    dig = np.zeros((64, 4), dtype=np.int32)
    with pytest.raises(ValueError, match="past"):
        ms.lane_sums(GS, table, 5, cols, dig + 9, 4)
    with pytest.raises(ValueError, match="outside the table"):
        ms.lane_sums(GS, table, 5, cols + 100, dig, 4)
    with pytest.raises(ValueError, match="int32 point-major"):
        ms.lane_sums(GS, table.astype(np.int64), 5, cols, dig, 4)
    with pytest.raises(ValueError, match="windows of 1 to"):
        ms.lane_sums(GS, table, 5, cols, dig, 17)


def test_many_jobs_share_the_cores():
    """`msm_many`: jobs of several groups (one of a single point, one of many groups of
    windows), each against the oracle, `done` once per job; the group's record works as
    well as its space (host code without torch passes records)."""
    jobs, want = [], []
    for name, n in (("bn254.g2", 20), ("bn254.g1", 1), ("bls12_381.g1", 30), ("bn254.g1", 40)):
        GS = zt.group(name)
        pts = list(oracle_points(name, n))
        ks = scalars(name, n, seed=n)
        xy, inf = GS.tensor(pts).affine()
        table = _weighted_table(GS, xy, inf, 4, 1, 1, 1, point_major=True)[0].numpy()
        jobs.append(((GS.params if n == 1 else GS), table, n + 1, np.arange(n, dtype=np.int64),
                     scalar_words(GS, ks)[0]))
        want.append(O.msm(GS.params, pts, ks))
    done = []
    assert ms.msm_many(jobs, done=done.append) == want
    assert sorted(done) == [0, 1, 2, 3]
    assert [ms.msm(*job) for job in jobs] == want


def _table(GS, pts):
    xy, inf = GS.tensor(pts).affine()
    return _weighted_table(GS, xy, inf, 4, 1, 1, 1, point_major=True)[0].numpy()


@pytest.mark.parametrize("name", ALL_GROUPS)
def test_unit_scalars(name):
    """A 0/1 witness's MSM: past `UNITS_MIN` scalars 1 and r - 1 take the eight-bases-a-trip
    call (`msm_units`). Its lanes meet the same base twice (P + P: bases repeat at a stride
    of 8), a base and its negation (P - P), identity bases and the padding of the last
    trip; beside it a few full scalars, and a job of ±1 alone."""
    G = zt.group(name).params
    base = list(oracle_points(name, 12)) + [None]
    n = ms.UNITS_MIN + 45
    pts = [base[i % 13] for i in range(n)]
    ks = [G.r - 1 if i % 5 == 0 else 1 for i in range(n)]
    ks[3], ks[11], ks[17], ks[40] = 0, scalars(name, 1, seed=3)[0], 2, G.r - 2
    GS = zt.group(name)
    table = _table(GS, pts)
    job = (GS, table, n + 1, np.arange(n, dtype=np.int64), scalar_words(GS, ks)[0])
    assert ms._Job(*job, None).units is not None
    assert ms.msm(*job) == O.msm(G, pts, ks)
    ones = [1] * n
    ones[8:n:16] = [G.r - 1] * len(ones[8:n:16])        # P at lane 0 of a trip, -P at lane 0 of the next
    pts2 = [base[0]] * n
    want = O.msm(G, pts2, ones)
    job2 = (GS, _table(GS, pts2), n + 1, np.arange(n, dtype=np.int64), scalar_words(GS, ones)[0])
    assert ms._Job(*job2, None).sums is None
    assert ms.msm_many([job2, job], threads=2) == [want, O.msm(G, pts, ks)]


@pytest.mark.parametrize("name", ["bn254.g1", "bn254.g2"])
def test_few_unit_scalars_alone(name):
    """A job whose scalars are all ±1, fewer than `UNITS_MIN`: `_Units` takes them all (no
    windows loop), down to a single one; one other scalar beside them sends them back to the
    windows loop. Both against the Python-int oracle."""
    G = zt.group(name).params
    GS = zt.group(name)
    pts = list(oracle_points(name, 10)) + [None]
    table = _table(GS, pts)
    for ks in ([1], [G.r - 1, 1, 1], [1 if i % 3 else G.r - 1 for i in range(11)]):
        job = (GS, table, len(pts) + 1, np.arange(len(ks), dtype=np.int64), scalar_words(GS, ks)[0])
        j = ms._Job(*job, None)
        assert j.units is not None and j.sums is None
        assert ms.msm(*job) == O.msm(G, pts[:len(ks)], ks)
    ks = [1] * 10 + [5]
    job = (GS, table, len(pts) + 1, np.arange(11, dtype=np.int64), scalar_words(GS, ks)[0])
    j = ms._Job(*job, None)
    assert j.units is None and j.sums is not None
    assert ms.msm(*job) == O.msm(G, pts, ks)


def test_unit_scalars_bad_inputs():
    """The ±1 path checks its table and columns as the windows path does: a column past the
    table, or a table of another word type, is refused before the compiled loop reads it."""
    GS = zt.group("bn254.g1")
    n = ms.UNITS_MIN
    pts = list(oracle_points("bn254.g1", 4)) * (n // 4)
    table = _table(GS, pts)
    ones = scalar_words(GS, [1] * n)[0]
    cols = np.arange(n, dtype=np.int64)
    with pytest.raises(ValueError, match="outside the table"):
        ms.msm(GS, table, n + 1, cols + table.shape[0], ones)
    with pytest.raises(ValueError, match="int32 point-major"):
        ms.msm(GS, table.astype(np.int64), n + 1, cols, ones)


@pytest.mark.parametrize("name", ["bn254.g1", "bn254.g2"])
def test_unit_sum(name):
    """`unit_sum`: Σ ±Q over chosen columns, a column twice (P + P in a lane), a base and its
    negation, the identity, no columns at all; signs other than ±1 are refused."""
    G = zt.group(name).params
    pts = list(oracle_points(name, 11)) + [None]
    GS = zt.group(name)
    table = _table(GS, pts)
    n = len(pts)
    cols = [0, 3, 3, 5, 11, 7, 2, 9, 1, 0, 6]
    signs = [1, 1, 1, -1, 1, 1, -1, 1, 1, -1, 1]
    assert ms.unit_sum(GS, table, n + 1, cols, signs) == O.msm(G, [pts[c] for c in cols], signs)
    assert ms.unit_sum(GS, table, n + 1, [], []) is None
    with pytest.raises(ValueError, match="±1"):
        ms.unit_sum(GS, table, n + 1, [0, 1], [1, 2])


@pytest.mark.parametrize("name", ["bn254.g1", "bn254.g2"])
def test_lane_fold_meets_equal_points(name):
    """The lanes' fold in `msm_combine` (Horner from lane 7 down) meets P = Q, where its
    complete addition hands over to the doubling: lane 6 equal to 2^c·(lane 7), with
    windows of c = 4 bits and the bases P and 2^4·P; and two ±1 lanes holding one point
    (`unit_sum` of one column twice: lanes 0 and 1)."""
    G = zt.group(name).params
    P = oracle_points(name, 1)[0]
    P16 = O.mul(G, P, 16)
    ks = [3 << 28, 3 << 24]                     # digit 3 in window 7 of P and in window 6 of 16·P
    assert _run(name, [P, P16], ks, 4) == O.mul(G, P, 6 << 28)
    table = _table(zt.group(name), [P, None])
    assert ms.unit_sum(zt.group(name), table, 3, [0, 0], [1, 1]) == O.mul(G, P, 2)
    assert ms.unit_sum(zt.group(name), table, 3, [0, 0], [1, -1]) is None


@pytest.mark.parametrize("name", ["bn254.g1", "bn254.g2"])
def test_host_combination_inverts_in_one_batch(name):
    """The lanes' conversion to affine points (`host_words.xyzz_to_affine`) inverts all of
    them with one inversion (`batch_inverse`): its inverses are those of Python's pow, over
    Fq and Fq2, identities (ZZ = 0) among the lanes left as None."""
    import random
    from zktensor.algebra.curves import group as group_record
    from zktensor.kernels.host_words import batch_inverse, xyzz_to_affine
    G = group_record(name)
    F, p, d, L = G.F, G.p, G.degree, G.fq.limbs32
    rng = random.Random(5)
    elem = (lambda: rng.randrange(1, p)) if d == 1 else (lambda: (rng.randrange(p), rng.randrange(1, p)))
    xs = [elem() for _ in range(9)]
    assert batch_inverse(F, xs) == [F.inv(x) for x in xs] and batch_inverse(F, []) == []
    with pytest.raises((ValueError, ZeroDivisionError)):      # zero has no inverse: refused, as by F.inv
        batch_inverse(F, xs[:3] + [F.zero] + xs[3:])
    pts = oracle_points(name, 5, seed=2)
    # XYZZ with random ZZ = z^2, ZZZ = z^3; lanes 1 and 3 the identity
    rows, want = [], []
    for i, P in enumerate(pts):
        if i in (1, 3):
            rows.append([F.zero] * 4)
            want.append(None)
            continue
        z = elem()
        zz = F.mul(z, z)
        zzz = F.mul(zz, z)
        rows.append([F.mul(P[0], zz), F.mul(P[1], zzz), zz, zzz])
        want.append(P)
    R = G.fq.R
    vals = np.zeros((4 * d, len(rows), L), dtype=np.uint32)
    for i, row in enumerate(rows):
        for k, c in enumerate(row):
            for j, v in enumerate([c] if d == 1 else c):
                vals[k * d + j, i] = np.frombuffer((v * R % p).to_bytes(4 * L, "little"), dtype="<u4")
    assert xyzz_to_affine(G, vals) == want


def test_many_jobs_gain_a_thread_when_the_budget_grows(monkeypatch):
    """`msm_many` under a budget read at every call (a graph's share of the cores): one
    thread while the budget is 1, and a second one joins once it is 2 (here after the first
    job); the points against the oracle."""
    from zktensor.runtime import threads
    monkeypatch.setenv("ZKTENSOR_NUM_THREADS", "2")
    name = "bn254.g1"
    GS = zt.group(name)
    jobs, want = [], []
    for n in (6, 30, 30):
        pts = list(oracle_points(name, n))
        ks = scalars(name, n, seed=n + len(jobs))
        jobs.append((GS, _table(GS, pts), n + 1, np.arange(n, dtype=np.int64), scalar_words(GS, ks)[0]))
        want.append(O.msm(GS.params, pts, ks))
    share, caller = [1], threading.get_ident()
    ran, other_ran = [], threading.Event()
    run = ms._Job.run

    def traced(self, g):
        ran.append((share[0], threading.get_ident()))
        if threading.get_ident() != caller:
            other_ran.set()
        elif share[0] == 2:             # the caller waits until the second thread has joined
            assert other_ran.wait(10), "no second thread joined after the budget grew"
        run(self, g)

    def grow(k):
        if k == 0:
            share[0] = 2
            threads.budget_changed()
    monkeypatch.setattr(ms._Job, "run", traced)
    with threads.launch_budget(lambda: share[0]):
        assert ms.msm_many(jobs, c=4, done=grow) == want
    assert {t for s, t in ran if s == 1} == {caller}
    assert len({t for s, t in ran if s == 2}) == 2
