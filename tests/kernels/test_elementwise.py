"""How a compiled program (`kernels.elementwise`) shares a launch between threads, and its
broadcast rule.

A launch over one long row is cut into column ranges (whole vectors, pointer
offsets), a launch over many rows into row ranges; neither may change a word.
Checked against Python integers with thread counts that do not divide the
sizes, views with gaps between rows, and broadcast operands. `run_many` (several
batches as one launch) is checked against one launch per batch.
"""
import numpy as np
import pytest
import torch

import zktensor as zt
from tests.ec.ec_support import oracle_points
from zktensor.algebra.curves import group as group_record
from zktensor.kernels import elementwise, msm_tree
from zktensor.runtime import threads

P = zt.field("bn254.fr").p


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_launch_split_by_columns_and_rows(monkeypatch, threads):
    monkeypatch.setenv("ZKTENSOR_NUM_THREADS", str(threads))
    monkeypatch.setattr(elementwise, "SPLIT_WORK", 0)       # split whatever the measured cost
    F = zt.field("bn254.fr")
    f = zt.jit(lambda a, b: a * b + a)
    n = elementwise.SPLIT_FROM + 4 * elementwise.SPLIT_ALIGN + 3      # a ragged tail
    xs = [(i * 0x9E3779B97F4A7C15 + 7) % P for i in range(n)]
    ys = [(i * 0x632BE59BD9B4E019 + 11) % P for i in range(n)]
    a, b = F.tensor(xs), F.tensor(ys)
    assert f(a, b).to_ints() == [(x * y + x) % P for x, y in zip(xs, ys)]
    # one broadcast operand: a constant column against a long row
    c = F.tensor([5])
    assert f(a, c).to_ints() == [(x * 5 + x) % P for x in xs]
    # many rows, taken from a wider tensor (row stride > row length)
    rows, cols = 5, 700
    zs = [(i * 0x2545F4914F6CDD1D + 3) % P for i in range(rows * (cols + 9))]
    wide = F.tensor(zs).reshape(rows, cols + 9)[:, :cols]
    got = f(wide, wide).to_ints()
    want = [[(v * v + v) % P for v in zs[r * (cols + 9):r * (cols + 9) + cols]] for r in range(rows)]
    assert got == want


@pytest.fixture
def pool_sizes(monkeypatch):
    """The thread counts of the pools that CPU launches ask for, in order."""
    seen = []
    real = threads.pool

    def spy(k):
        seen.append(k)
        return real(k)
    monkeypatch.setattr(threads, "pool", spy)
    return seen


def test_launch_budget_caps_threads(monkeypatch, pool_sizes):
    """Inside launch_budget(k) a launch uses at most k threads (the Groth16 graph gives each
    worker its share of the cores); the result is the same words."""
    monkeypatch.setenv("ZKTENSOR_NUM_THREADS", "3")
    monkeypatch.setattr(elementwise, "SPLIT_WORK", 0)
    F = zt.field("bn254.fr")
    f = zt.jit(lambda a, b: a * b - b)
    n = 3 * elementwise.SPLIT_FROM
    xs = [(i * 0x9E3779B97F4A7C15 + 1) % P for i in range(n)]
    a = F.tensor(xs)
    want = [(x * x - x) % P for x in xs]
    seen = pool_sizes
    assert f(a, a).to_ints() == want and seen and set(seen) == {3}
    seen.clear()
    with threads.launch_budget(1):
        assert threads.launch_threads() == 1
        assert f(a, a).to_ints() == want
    assert seen == []                         # one thread: no pool at all
    with threads.launch_budget(2):
        assert f(a, a).to_ints() == want
    assert set(seen) == {2}
    assert threads.launch_threads() == 3  # the budget ends with its context


def test_split_follows_measured_cost(monkeypatch, pool_sizes):
    """A launch is shared by threads only when its kernel's measured one-thread time for the
    size reaches SPLIT_WORK; the words are the same either way."""
    F = zt.field("bn254.fr")
    f = zt.jit(lambda a, b: a * b + b * b)
    n = 4 * elementwise.SPLIT_FROM
    xs = [(i * 0x9E3779B97F4A7C15 + 5) % P for i in range(n)]
    a = F.tensor(xs)
    want = [(2 * x * x) % P for x in xs]
    seen = pool_sizes
    monkeypatch.setenv("ZKTENSOR_NUM_THREADS", "1")
    assert f(a, a).to_ints() == want                 # one thread: timed, the cost recorded
    monkeypatch.setenv("ZKTENSOR_NUM_THREADS", "2")
    monkeypatch.setattr(elementwise, "SPLIT_WORK", 1e9)
    assert f(a, a).to_ints() == want and not seen    # cheaper than SPLIT_WORK: not split
    monkeypatch.setattr(elementwise, "SPLIT_WORK", 0.0)
    assert f(a, a).to_ints() == want and set(seen) == {2}


def test_run_many_split_follows_measured_cost(monkeypatch, pool_sizes):
    """`run_many` (the MSM tree's and batch inversion's launches) shares its columns among
    threads by the rule of one launch: only when the kernel's measured one-thread time for
    them reaches SPLIT_WORK (a first run is on one thread, timed); the words are the same."""
    from zktensor.runtime.target import choose
    from zktensor.kernels.field_programs import program as _program
    F = zt.field("bn254.fr")
    prog = elementwise.get_program(_program(F, ("test_run_many_mul_add",), 2, lambda a, b: a * b + b),
                                   *choose("cpu", None, None))
    n = 4 * elementwise.SPLIT_FROM
    xs = [(i * 0x9E3779B97F4A7C15 + 3) % P for i in range(n)]
    ys = [(i * 0x632BE59BD9B4E019 + 5) % P for i in range(n)]
    a, b = F.tensor(xs), F.tensor(ys)
    want = [(x * y + y) % P for x, y in zip(xs, ys)]

    def run():
        out = torch.zeros_like(a.data)
        prog.run_many([([a.data, b.data], [out], n)])
        return zt.FieldTensor(F, out).to_ints()
    monkeypatch.setenv("ZKTENSOR_NUM_THREADS", "1")
    assert run() == want                              # one thread: timed, the cost recorded
    monkeypatch.setenv("ZKTENSOR_NUM_THREADS", "2")
    monkeypatch.setattr(elementwise, "SPLIT_WORK", 1e9)
    assert run() == want and not pool_sizes          # cheaper than SPLIT_WORK: not split
    monkeypatch.setattr(elementwise, "SPLIT_WORK", 0.0)
    assert run() == want and set(pool_sizes) == {2}


def test_broadcast_shapes_against_numpy():
    """Our broadcast rule (torch's would import sympy through torch._refs) is NumPy's, and a
    mismatch is a RuntimeError (torch's type) naming the shapes."""
    import numpy as np
    cases = [((2, 3), (3,)), ((1,), (4, 1)), ((), (5,)), ((2, 1, 3), (4, 1)), ((0,), (1,)), ((), ()),
             ((3, 1), (1, 1), (1, 4)), ((7,),)]
    for shapes in cases:
        assert elementwise.broadcast_shapes(*shapes) == np.broadcast_shapes(*shapes)
    for bad in [((2,), (3,)), ((2, 3), (3, 2))]:
        with pytest.raises(RuntimeError, match="do not broadcast"):
            elementwise.broadcast_shapes(*bad)


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
