"""The CPU NTT kernels' torch-free entry, `kernels.ntt_cpu.transform`, on numpy arrays of
Montgomery words: against a radix-2 FFT on Python ints (itself checked against the O(N^2)
DFT of tests/oracles/field.py), bit for bit against `zt.ntt`/`zt.intt`, its knobs, `out`
and strided inputs, the errors it raises, and a fresh interpreter that cannot import torch
running it (the one-shot CLI proof's path).

The kernels need 8-lane vectors (AVX-512): elsewhere these tests skip, but for the one
that checks the error raised there.
"""
from __future__ import annotations

import functools
import os
import random
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

try:
    from tests.oracles import field as ff
except ImportError:  # run without the repository root on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.oracles import field as ff

from zktensor.algebra.fields import field
from zktensor.kernels import ntt_cpu
from zktensor.runtime.cpu_isa import cpu_options

ROOT = Path(__file__).resolve().parents[2]
FIELDS = ["bn254.fr", "bls12_381.fr"]
needs_kernels = pytest.mark.skipif(cpu_options("fp64")["lanes"] != 8,
                                   reason="the CPU NTT kernels need 8-lane vectors (AVX-512)")


# -- the oracle: Python ints ------------------------------------------------------------
def fft(values, w, p):
    """sum_j values[j]·w^(jk) for every k (natural order), radix-2 recursion, O(N log N)."""
    n = len(values)
    if n == 1:
        return list(values)
    even, odd = fft(values[0::2], w * w % p, p), fft(values[1::2], w * w % p, p)
    out, t = [0] * n, 1
    for k in range(n // 2):
        o = odd[k] * t % p
        out[k], out[k + n // 2] = (even[k] + o) % p, (even[k] - o) % p
        t = t * w % p
    return out


def expected(F, rows, inverse, coset):
    """zt.ntt(x, coset=g) / zt.intt(x, coset=g) of `rows` on Python ints: forward, the
    evaluations of x_j·g^j at w^k; inverse, N^-1·g^-j times the DFT at w^-1."""
    p, n = F.p, len(rows[0])
    w = F.root_of_unity(n)
    g = 1 if coset is None else coset
    if not inverse:
        return [fft([v * pow(g, j, p) % p for j, v in enumerate(r)], w, p) for r in rows]
    n_inv = pow(n, -1, p)
    return [[v * n_inv * pow(g, -j, p) % p for j, v in enumerate(fft(r, pow(w, -1, p), p))] for r in rows]


def to_words(F, rows) -> np.ndarray:
    """Rows of ints in [0, p) -> (L, B, N) int32 Montgomery words, R = 2^(32·L)."""
    L = F.limbs32
    raw = b"".join((v * F.R % F.p).to_bytes(4 * L, "little") for r in rows for v in r)
    words = np.frombuffer(raw, dtype="<u4").reshape(len(rows), len(rows[0]), L)
    return np.ascontiguousarray(words.transpose(2, 0, 1)).view(np.int32)


def from_words(F, words: np.ndarray):
    """(L, B, N) Montgomery words -> rows of ints in [0, p) (the words must be reduced)."""
    L, B, N = words.shape
    raw = np.ascontiguousarray(words.transpose(1, 2, 0)).view("<u4").tobytes()
    vals = [int.from_bytes(raw[4 * L * i:4 * L * (i + 1)], "little") for i in range(B * N)]
    assert all(v < F.p for v in vals), "a word is not reduced below p"
    return [[v * F.R_inv % F.p for v in vals[b * N:(b + 1) * N]] for b in range(B)]


def rand_rows(F, B, n, seed):
    """Random rows in [0, p), with 0, 1 and p - 1 at their start."""
    rng = random.Random(seed)
    rows = [[rng.randrange(F.p) for _ in range(n)] for _ in range(B)]
    rows[0][:3] = [0, 1, F.p - 1]
    return rows


def test_fft_oracle_is_the_dft():
    F = field("bls12_381.fr")
    rows = rand_rows(F, 1, 64, 1)
    w = F.root_of_unity(64)
    assert fft(rows[0], w, F.p) == ff.dft(rows[0], w, F.p)
    assert expected(F, rows, True, None)[0] == ff.idft(rows[0], w, F.p)


# -- against the oracle and the torch path ----------------------------------------------
@needs_kernels
@pytest.mark.parametrize("name", FIELDS)
@pytest.mark.parametrize("log_n", [6, 7, 10])
@pytest.mark.parametrize("B", [1, 3])
@pytest.mark.parametrize("inverse", [False, True], ids=["ntt", "intt"])
@pytest.mark.parametrize("coset", [None, "nqr"])
def test_transform_matches_oracle(name, log_n, B, inverse, coset):
    F = field(name)
    g = F.nqr if coset else None             # outside every 2-power subgroup
    rows = rand_rows(F, B, 1 << log_n, 31 * log_n + B)
    x = to_words(F, rows)
    x_before = x.copy()
    got = ntt_cpu.transform(F, x, inverse=inverse, coset=g)
    assert got.shape == x.shape and got.dtype == np.int32
    assert from_words(F, got) == expected(F, rows, inverse, g)
    assert np.array_equal(x, x_before)       # the input is left alone
    back = ntt_cpu.transform(F, got, inverse=not inverse, coset=g)
    assert np.array_equal(back, x)


@needs_kernels
@pytest.mark.parametrize("inverse", [False, True], ids=["ntt", "intt"])
@pytest.mark.parametrize("orders", [("natural", "bitrev"), ("bitrev", "natural"), ("bitrev", "bitrev")],
                         ids=lambda o: "-".join(o))
def test_transform_orders(inverse, orders):
    """Bit-reversed input or output (the H scalars' pair: inverse to bit-reversed
    coefficients, coset transform from them): the oracle's values at bit-reversed places."""
    F = field("bn254.fr")
    n, g = 1 << 7, F.nqr
    rows = rand_rows(F, 2, n, 17)
    rev = lambda rs: [ff.bit_reverse(r) for r in rs]            # noqa: E731
    ins = to_words(F, rev(rows) if orders[0] == "bitrev" else rows)
    want = expected(F, rows, inverse, g)
    got = ntt_cpu.transform(F, ins, inverse=inverse, coset=g, input_order=orders[0], output_order=orders[1])
    assert from_words(F, got) == (rev(want) if orders[1] == "bitrev" else want)


@needs_kernels
@pytest.mark.parametrize("name", FIELDS)
@pytest.mark.parametrize("log_n", [6, 10])
def test_transform_equals_torch_path(name, log_n):
    """The same words as zt.ntt / zt.intt (the same kernels behind a tensor), with a field
    space for F as well as a field's record."""
    torch = pytest.importorskip("torch")
    import zktensor as zt
    F = zt.field(name)
    x = F.random((3, 1 << log_n), torch.Generator().manual_seed(log_n))
    data = x.data.numpy()
    for fn, inverse in ((zt.ntt, False), (zt.intt, True)):
        for g in (None, 5):
            want = fn(x, coset=g).data.numpy()
            assert np.array_equal(ntt_cpu.transform(F, data, inverse=inverse, coset=g), want)
            assert np.array_equal(ntt_cpu.transform(F.params, data, inverse=inverse, coset=g), want)


@needs_kernels
def test_passes_gain_threads_while_they_run(monkeypatch):
    """A long pass's tiles are shares that threads take as they come (`runtime.threads.elastic`):
    under a budget that lets one thread work, then three, the later shares run on more
    threads (a short pass keeps the one it began with), and the words are those of one
    thread and of the FFT on Python ints."""
    import threading

    from zktensor.runtime import threads
    monkeypatch.setenv("ZKTENSOR_NUM_THREADS", "3")
    F = field("bn254.fr")
    n = 1 << 12
    rows = rand_rows(F, 3, n, 9)
    x = to_words(F, rows)
    want = ntt_cpu.transform(F, x, coset=7, threads=1)
    assert from_words(F, want[:, :1]) == expected(F, rows[:1], False, 7)
    seen, calls = set(), [0]
    fn = ntt_cpu.library(F, 4).fns      # the passes, wrapped to see which thread runs each share

    def budget():
        calls[0] += 1
        return 1 if calls[0] < 4 else 3
    def slow(f, *a):        # each share long enough that a pool thread has started before the last is taken
        seen.add(threading.get_ident())
        time.sleep(0.005)
        return f(*a)
    for name in ntt_cpu.PASSES:
        monkeypatch.setitem(fn, name, functools.partial(slow, fn[name]))
    with threads.launch_budget(budget):
        got = ntt_cpu.transform(F, x, coset=7, unroll=4)
    assert np.array_equal(got, want)
    assert len(seen) == 1                   # a short pass takes the threads there are at its start
    monkeypatch.setattr(ntt_cpu, "ELASTIC_FROM", 0)
    calls[0] = 0
    with threads.launch_budget(budget):
        got = ntt_cpu.transform(F, x, coset=7, unroll=4)
    assert np.array_equal(got, want)
    assert len(seen) > 1 and calls[0] >= 4


@needs_kernels
def test_knobs_out_and_strides():
    """rows/columns splits, unroll, threads, `out` (fresh, in place, overlapping), a batch
    view and an input with a non-unit stride in N all give the same words."""
    F = field("bn254.fr")
    n = 1 << 9
    rows = rand_rows(F, 3, n, 5)
    x = to_words(F, rows)
    want = ntt_cpu.transform(F, x, coset=7)
    assert from_words(F, want) == expected(F, rows, False, 7)
    for rows_log in (3, 6):
        for unroll in (1, 4):
            got = ntt_cpu.transform(F, x, coset=7, rows_log=rows_log, unroll=unroll, threads=1)
            assert np.array_equal(got, want), (rows_log, unroll)
    assert np.array_equal(ntt_cpu.transform(F, x, coset=7, threads=2), want)
    # out: a fresh array, then in place
    out = np.zeros_like(x)
    assert ntt_cpu.transform(F, x, coset=7, out=out) is out and np.array_equal(out, want)
    y = x.copy()
    assert ntt_cpu.transform(F, y, coset=7, out=y) is y and np.array_equal(y, want)
    # out overlapping the input, shifted by one row: computed aside, then written
    z = np.zeros((F.limbs32, 4, n), dtype=np.int32)
    z[:, :3] = x
    assert ntt_cpu.transform(F, z[:, :3], coset=7, out=z[:, 1:]) is not None
    assert np.array_equal(z[:, 1:], want)
    # every other row of a batch, and an input with stride 2 in N
    wide = np.zeros((F.limbs32, 6, n), dtype=np.int32)
    wide[:, ::2] = x
    assert np.array_equal(ntt_cpu.transform(F, wide[:, ::2], coset=7), want)
    spread = np.zeros((F.limbs32, 3, 2 * n), dtype=np.int32)
    spread[:, :, ::2] = x
    assert np.array_equal(ntt_cpu.transform(F, spread[:, :, ::2], coset=7), want)
    # an empty batch
    assert ntt_cpu.transform(F, np.zeros((F.limbs32, 0, n), dtype=np.int32)).shape == (F.limbs32, 0, n)


# -- bad input -----------------------------------------------------------------------------
@needs_kernels
def test_bad_inputs_raise():
    F = field("bn254.fr")
    L = F.limbs32
    x = np.zeros((L, 1, 64), dtype=np.int32)
    with pytest.raises(TypeError, match="numpy array"):
        ntt_cpu.transform(F, x.tolist())
    with pytest.raises(ValueError, match="int32"):
        ntt_cpu.transform(F, x.astype(np.int64))
    with pytest.raises(ValueError, match=r"shape \(8, batch, N\)"):
        ntt_cpu.transform(F, x[:, 0])
    with pytest.raises(ValueError, match=r"shape \(12, batch, N\)"):
        ntt_cpu.transform(field("bls12_381.fq"), x)
    with pytest.raises(ValueError, match="below 64"):
        ntt_cpu.transform(F, np.zeros((L, 1, 32), dtype=np.int32))
    with pytest.raises(ValueError, match="not a power of two"):
        ntt_cpu.transform(F, np.zeros((L, 1, 96), dtype=np.int32))
    with pytest.raises(ValueError, match="too large for bn254.fq"):
        ntt_cpu.transform(field("bn254.fq"), x)
    with pytest.raises(ValueError, match="non-zero"):
        ntt_cpu.transform(F, x, coset=F.p)
    with pytest.raises(TypeError, match="coset"):
        ntt_cpu.transform(F, x, coset=2.0)
    with pytest.raises(ValueError, match="at least 2"):
        ntt_cpu.transform(F, x, rows_log=2)
    with pytest.raises(ValueError, match="unroll"):
        ntt_cpu.transform(F, x, unroll=3)
    with pytest.raises(ValueError, match="threads"):
        ntt_cpu.transform(F, x, threads=0)
    with pytest.raises(ValueError, match="output_order must be 'natural' or 'bitrev'"):
        ntt_cpu.transform(F, x, output_order="reversed")
    with pytest.raises(ValueError, match="out"):
        ntt_cpu.transform(F, x, out=np.zeros((L, 2, 64), dtype=np.int32))
    frozen = np.zeros_like(x)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="out"):
        ntt_cpu.transform(F, x, out=frozen)


def test_no_eight_lanes_raises(monkeypatch):
    """Where the CPU has no 8-lane vectors the entry says so (the torch path would take
    the per-stage algorithm instead)."""
    monkeypatch.setattr(ntt_cpu, "cpu_options", lambda strategy: {"lanes": 4, "ifma": False})
    F = field("bn254.fr")
    with pytest.raises(ValueError, match="8-lane vectors"):
        ntt_cpu.transform(F, np.zeros((F.limbs32, 1, 64), dtype=np.int32))


# -- without torch -------------------------------------------------------------------------
SCRIPT = textwrap.dedent('''
    import sys

    class NoTorch:
        """Any import of torch or triton fails, as where neither is installed."""
        def find_spec(self, name, path=None, target=None):
            if name.startswith(("torch", "triton")):
                raise ImportError(f"blocked import of {name}")
            return None

    sys.meta_path.insert(0, NoTorch())

    import numpy as np
    from zktensor.algebra.fields import field
    from zktensor.kernels import ntt_cpu

    F = field("bn254.fr")
    p, L, n, g = F.p, F.limbs32, 256, 5
    vals = [[(i * 0x9E3779B97F4A7C15 + 17 * b) % p for i in range(n)] for b in range(3)]
    raw = b"".join((v * F.R % p).to_bytes(4 * L, "little") for r in vals for v in r)
    x = np.frombuffer(raw, dtype="<u4").reshape(3, n, L).transpose(2, 0, 1).copy().view(np.int32)
    ev = ntt_cpu.transform(F, x, coset=g)
    # the evaluation at g·w^k of row 1, directly
    k, w = 5, F.root_of_unity(n)
    word = b"".join(int(ev[j, 1, k]).to_bytes(4, "little", signed=True) for j in range(L))
    point = g * pow(w, k, p) % p
    assert int.from_bytes(word, "little") * F.R_inv % p == sum(v * pow(point, j, p) for j, v in enumerate(vals[1])) % p
    assert np.array_equal(ntt_cpu.transform(F, ev, inverse=True, coset=g), x)
    assert "torch" not in sys.modules and "triton" not in sys.modules
    print("transform without torch: ok")
''')


@needs_kernels
def test_transform_without_torch():
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=600)
    assert res.returncode == 0, res.stderr
    assert "transform without torch: ok" in res.stdout
