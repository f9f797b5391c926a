"""zt.ntt / zt.intt (and cosets, bit-reversed orders, batches) against the
O(N^2) DFT on Python ints and sympy's NTT, on the default CPU path (the
two-pass IFMA kernels for N >= 64 on an AVX-512 CPU, else one elementwise
launch per stage) and on the stage-wise reference path.
"""
from __future__ import annotations

import functools
import sys
from pathlib import Path

import pytest
import sympy
import torch
from sympy.discrete.transforms import intt as sympy_intt
from sympy.discrete.transforms import ntt as sympy_ntt

try:
    from tests.oracles import field as ff
except ImportError:  # run without the repository root on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.oracles import field as ff

import zktensor as zt
from zktensor.kernels.ntt_plan import bitrev_index
from zktensor.ops.ntt import check_size

FFT_FIELDS = ["bn254.fr", "bls12_381.fr", "mnt4753.fr"]
SYMPY_FIELDS = ["bn254.fr", "bls12_381.fr"]   # sympy needs a primitive root: p - 1 factored


def rand(F, shape, seed):
    return F.random(shape, torch.Generator().manual_seed(seed))


def edge_row(F, n):
    """0, 1, p-1, R mod p, 2^32 - 1, 2^64 + 1, ... then counting."""
    vals = [0, 1, F.p - 1, F.R % F.p, 2 ** 32 - 1, 2 ** 64 + 1, F.p // 2, 2]
    return [vals[i] if i < len(vals) else (i * 0x9E3779B97F4A7C15) % F.p for i in range(n)]


def dft_rows(F, rows, omega):
    return [ff.dft(r, omega, F.p) for r in rows]


# -- against the O(N^2) DFT ------------------------------------------------------
@pytest.mark.parametrize("name", FFT_FIELDS)
@pytest.mark.parametrize("log_n", [1, 2, 3, 6, 7])
def test_ntt_matches_dft(name, log_n):
    F = zt.field(name)
    n = 1 << log_n
    x = rand(F, (2, n), log_n)
    x[0] = F.tensor(edge_row(F, n))
    rows = x.to_ints()
    w = F.root_of_unity(n)
    X = zt.ntt(x)
    assert X.to_ints() == dft_rows(F, rows, w)
    assert zt.intt(X).to_ints() == rows
    assert zt.intt(x).to_ints() == [ff.idft(r, w, F.p) for r in rows]


@pytest.mark.parametrize("name", ["bn254.fr", "bls12_381.fr"])
@pytest.mark.parametrize("algorithm", ["stages", "auto"])
def test_bigger_sizes_match_dft(name, algorithm):
    F = zt.field(name)
    n = 256
    x = rand(F, (1, n), 7)
    X = zt.ntt(x, algorithm=algorithm)
    assert X.to_ints() == dft_rows(F, x.to_ints(), F.root_of_unity(n))


@functools.lru_cache(maxsize=None)
def sympy_root_power(name: str, n: int) -> int:
    """t with w_ours^t == w_sympy (sympy takes its root from primitive_root(p))."""
    F = zt.field(name)
    w_s = pow(sympy.primitive_root(F.p), (F.p - 1) // n, F.p)
    w = F.root_of_unity(n)
    return next(t for t in range(1, n, 2) if pow(w, t, F.p) == w_s)


@pytest.mark.parametrize("name", SYMPY_FIELDS)
@pytest.mark.parametrize("log_n", [2, 6, 9])
def test_ntt_matches_sympy(name, log_n):
    F = zt.field(name)
    n = 1 << log_n
    x = rand(F, (n,), 100 + log_n)
    vals = x.to_ints()
    t = sympy_root_power(name, n)
    ours = zt.ntt(x).to_ints()
    theirs = sympy_ntt(vals, F.p)
    # sympy's root is w^t: its k-th output is our (t·k mod n)-th
    assert theirs == [ours[t * k % n] for k in range(n)]
    back = sympy_intt(theirs, F.p)
    assert back == vals
    assert zt.intt(zt.ntt(x)).to_ints() == vals


# -- round trips, cosets, orders ----------------------------------------------------
@pytest.mark.parametrize("name", FFT_FIELDS)
def test_round_trips(name):
    F = zt.field(name)
    sizes = [2, 64, 1024] if name != "mnt4753.fr" else [2, 64, 256]
    for n in sizes:
        x = rand(F, (3, n), n)
        assert bool((zt.intt(zt.ntt(x)) == x).all())
        assert bool((zt.ntt(zt.intt(x)) == x).all())


@pytest.mark.parametrize("name", FFT_FIELDS)
@pytest.mark.parametrize("n", [4, 64])
def test_coset_ntt(name, n):
    F = zt.field(name)
    g = F.nqr          # a non-residue: outside every 2-power subgroup (F.generator factors p - 1: slow for MNT4753)
    x = rand(F, (2, n), 3 * n)
    rows = x.to_ints()
    E = zt.ntt(x, coset=g)
    w = F.root_of_unity(n)
    expect = [ff.dft([v * pow(g, j, F.p) % F.p for j, v in enumerate(r)], w, F.p) for r in rows]
    assert E.to_ints() == expect
    # evaluations on g·w^k, directly
    assert E.to_ints()[0][5 % n] == sum(v * pow(g * pow(w, 5 % n, F.p), j, F.p) for j, v in enumerate(rows[0])) % F.p
    assert zt.intt(E, coset=g).to_ints() == rows
    # a FieldTensor shift works the same
    assert bool((zt.ntt(x, coset=F.tensor(g)) == E).all())


@pytest.mark.parametrize("n", [8, 64, 512])
@pytest.mark.parametrize("coset", [None, 7])
def test_orders(n, coset):
    F = zt.field("bn254.fr")
    x = rand(F, (2, n), n + 1)
    nat = zt.ntt(x, coset=coset)
    rev = bitrev_index(n, "cpu")
    br = zt.ntt(x, coset=coset, output_order="bitrev")
    assert br.to_ints() == [ff.bit_reverse(r) for r in nat.to_ints()]
    xb = zt.FieldTensor(F, x.data[:, :, rev])
    assert bool((zt.ntt(xb, coset=coset, input_order="bitrev") == nat).all())
    assert bool((zt.ntt(xb, coset=coset, input_order="bitrev", output_order="bitrev") == br).all())
    # chained without a bit reversal pass: bit-reversed out -> bit-reversed in
    assert bool((zt.intt(br, coset=coset, input_order="bitrev") == x).all())
    back = zt.intt(nat, coset=coset, output_order="bitrev")
    assert back.to_ints() == [ff.bit_reverse(r) for r in x.to_ints()]
    assert bool((zt.intt(br, coset=coset, input_order="bitrev", output_order="bitrev") == back).all())


def test_batched_leading_dims_and_views():
    F = zt.field("bn254.fr")
    x = rand(F, (2, 3, 64), 5)
    X = zt.ntt(x)
    assert X.shape == (2, 3, 64)
    for i in range(2):
        for j in range(3):
            assert bool((X[i, j] == zt.ntt(x[i, j])).all())
    # a strided view (every other row) and a transposed batch
    v = x[:, ::2]
    assert bool((zt.ntt(v) == X[:, ::2]).all())
    t = zt.FieldTensor(F, x.data.transpose(1, 2))    # (L, 3, 2, 64)
    assert bool((zt.ntt(t) == zt.FieldTensor(F, X.data.transpose(1, 2))).all())
    # a column of a (64, 2) tensor: non-unit stride along N
    y = rand(F, (64, 2), 6)
    col = zt.FieldTensor(F, y.data[:, :, 0])
    assert col.data.stride(1) == 2
    assert bool((zt.ntt(col) == zt.ntt(col.contiguous())).all())
    # empty batch
    e = F.zeros((0, 8))
    assert zt.ntt(e).shape == (0, 8)


def test_out_argument():
    F = zt.field("bn254.fr")
    x = rand(F, (2, 128), 9)
    X = zt.ntt(x)
    out = F.zeros((2, 128))
    r = zt.ntt(x, out=out)
    assert r is out and bool((out == X).all())
    y = x.clone()
    zt.ntt(y, out=y)                                   # in place
    assert bool((y == X).all())
    y = x.clone()
    zt.intt(zt.ntt(y, out=y, output_order="bitrev"), input_order="bitrev", out=y)
    assert bool((y == x).all())
    # overlapping but shifted: computed aside, then copied
    z = F.zeros((3, 128))
    z.data[:, :2] = x.data
    zt.ntt(z[:2], out=z[1:])
    assert bool((z[1:] == X).all())
    with pytest.raises(ValueError, match="shape"):
        zt.ntt(x, out=F.zeros((2, 64)))
    with pytest.raises(TypeError, match="out"):
        zt.ntt(x, out=zt.field("bls12_381.fr").zeros((2, 128)))


def test_linearity_and_delta():
    F = zt.field("bn254.fr")
    n = 256
    a, b = rand(F, (n,), 1), rand(F, (n,), 2)
    assert bool((zt.ntt(a + b) == zt.ntt(a) + zt.ntt(b)).all())
    delta = F.tensor([1] + [0] * (n - 1))
    assert bool((zt.ntt(delta) == F.ones((n,))).all())
    assert bool((zt.ntt(F.zeros((n,))) == F.zeros((n,))).all())
    # convolution theorem: ntt(a) * ntt(b) = ntt(cyclic a (*) b)
    av, bv = a.to_ints()[:8], b.to_ints()[:8]
    conv = [sum(av[j] * bv[(k - j) % 8] for j in range(8)) % F.p for k in range(8)]
    got = zt.intt(zt.ntt(F.tensor(av)) * zt.ntt(F.tensor(bv)))
    assert got.to_ints() == conv


def test_size_one():
    F = zt.field("bn254.fr")
    x = rand(F, (3, 1), 1)
    assert bool((zt.ntt(x) == x).all()) and bool((zt.intt(x) == x).all())
    assert zt.ntt(x, coset=3).to_ints() == x.to_ints()


def test_large_against_stage_path():
    F = zt.field("bn254.fr")
    x = rand(F, (1 << 14,), 14)
    X = zt.ntt(x)
    assert bool((X == zt.ntt(x, algorithm="stages")).all())
    assert bool((zt.intt(X) == x).all())


# -- bad input ----------------------------------------------------------------------------
def test_errors():
    F = zt.field("bn254.fr")
    with pytest.raises(ValueError, match="not a power of two"):
        zt.ntt(F.zeros((12,)))
    with pytest.raises(ValueError, match="not a power of two"):
        zt.intt(F.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"too large for bn254.fq: its 2-adicity is 1"):
        zt.ntt(zt.field("bn254.fq").zeros((4,)))
    with pytest.raises(ValueError, match="2-adicity is 15"):
        zt.ntt(zt.field("mnt4753.fq").zeros((1 << 16,)))
    mnt = zt.field("mnt4753.fr")
    assert check_size(mnt, 1 << mnt.two_adicity) == mnt.two_adicity == 30
    with pytest.raises(ValueError, match=r"2\^31 is too large for mnt4753.fr"):
        check_size(mnt, 1 << 31)
    with pytest.raises(TypeError, match="FieldTensor"):
        zt.ntt([1, 2, 3, 4])
    with pytest.raises(TypeError, match="FieldTensor"):
        zt.ntt(torch.zeros(8, 4, dtype=torch.int32))
    with pytest.raises(ValueError, match="0-d"):
        zt.ntt(F.ones(()))
    with pytest.raises(ValueError, match="non-zero"):
        zt.ntt(F.ones((4,)), coset=F.p)
    with pytest.raises(TypeError, match="bls12_381.fr value"):
        zt.ntt(F.ones((4,)), coset=zt.field("bls12_381.fr").tensor(3))
    with pytest.raises(TypeError, match="coset"):
        zt.ntt(F.ones((4,)), coset=2.0)
    with pytest.raises(ValueError, match="output_order"):
        zt.ntt(F.ones((4,)), output_order="reversed")
    with pytest.raises(ValueError, match="NTTConfig"):
        zt.ntt(F.ones((4,)), G=3)
    with pytest.raises(TypeError):
        zt.ntt(F.ones((4,)), nonsense=1)
