"""The two-pass CPU NTT kernels (`kernels.ntt_cpu`) against the O(N^2) DFT on Python ints
(tests/oracles/field.py): their knobs (rows per pass, unroll, threads), the FMA split
where IFMA is off, every order/coset/direction combination, and the schedule they
follow written on Python ints. The stage-wise path (`algorithm="stages"`) is compared
too, but it is no oracle: it reads the same twiddle tables and butterflies (`ntt_plan`).
"""
from __future__ import annotations

import functools

import pytest
import torch

import zktensor as zt
from tests.oracles import field as ff
from zktensor.ops.ntt import NTTConfig


def rand(F, shape, seed):
    return F.random(shape, torch.Generator().manual_seed(seed))


def transform(F, rows, inverse=False, coset=None, input_order="natural", output_order="natural"):
    """zt.ntt / zt.intt of `rows` (lists of ints) on Python ints: the DFT of the natural-order
    input, x_j scaled by g^j first (forward coset), X_j by g^-j after (inverse coset)."""
    p = F.p
    w = F.root_of_unity(len(rows[0]))
    out = []
    for r in rows:
        v = ff.bit_reverse(r) if input_order == "bitrev" else list(r)
        if inverse:
            v = ff.idft(v, w, p)
            if coset is not None:
                v = [a * pow(coset, -j, p) % p for j, a in enumerate(v)]
        else:
            if coset is not None:
                v = [a * pow(coset, j, p) % p for j, a in enumerate(v)]
            v = ff.dft(v, w, p)
        out.append(ff.bit_reverse(v) if output_order == "bitrev" else v)
    return out


@functools.lru_cache(maxsize=None)
def _dft_of_rand(name, n, seed):
    F = zt.field(name)
    return transform(F, rand(F, (2, n), seed).to_ints())


@pytest.mark.parametrize("n", [16, 128])
def test_kernels_match_stage_path(n):
    """Every order/coset/direction combination: default path == stage path == the DFT."""
    F = zt.field("bls12_381.fr")
    x = rand(F, (3, n), 2 * n)
    rows = x.to_ints()
    for fn in (zt.ntt, zt.intt):
        for kw in ({}, {"coset": 5}, {"output_order": "bitrev"}, {"input_order": "bitrev"},
                   {"input_order": "bitrev", "output_order": "bitrev", "coset": 5}):
            got = fn(x, **kw)
            assert bool((got == fn(x, algorithm="stages", **kw)).all()), (fn.__name__, kw)
            assert got.to_ints() == transform(F, rows, fn is zt.intt, **kw), (fn.__name__, kw)


# -- the CPU kernels' knobs ---------------------------------------------------------------
@pytest.mark.parametrize("rows_log", [3, 4, 6])
@pytest.mark.parametrize("unroll", [1, 4])
def test_cpu_splits_and_unroll(rows_log, unroll):
    from zktensor.kernels import ntt_cpu
    F = zt.field("bn254.fr")
    plan_ok = ntt_cpu.available(type("P", (), {"device": torch.device("cpu"), "log_n": 9})())
    if not plan_ok:
        pytest.skip("no 8-lane CPU NTT kernels on this machine")
    x = rand(F, (2, 512), rows_log)
    ref = zt.ntt(x, algorithm="stages")
    cfg = NTTConfig(cpu_rows_log=rows_log, cpu_unroll=unroll, threads=2, algorithm="kernels")
    got = zt.ntt(x, config=cfg)
    assert bool((got == ref).all())
    assert got.to_ints() == _dft_of_rand("bn254.fr", 512, rows_log)
    assert bool((zt.intt(ref, config=cfg) == x).all())


def test_cpu_fma_split_kernels(monkeypatch):
    """Without IFMA (forced off) the same passes take their products from the
    FMA split on 8-lane doubles."""
    from zktensor.kernels import ntt_cpu
    monkeypatch.setenv("ZKTENSOR_CPU_IFMA", "0")
    if not ntt_cpu.available(type("P", (), {"device": torch.device("cpu"), "log_n": 7})()):
        pytest.skip("no 8-lane CPU NTT kernels on this machine")
    F = zt.field("bn254.fr")
    x = rand(F, (2, 128), 11)
    cfg = NTTConfig(algorithm="kernels")
    got = zt.ntt(x, config=cfg, coset=5)
    assert bool((got == zt.ntt(x, algorithm="stages", coset=5)).all())
    assert got.to_ints() == transform(F, x.to_ints(), coset=5)
    assert ntt_cpu.cpu_options("fp64")["ifma"] is False


def test_cpu_reference_schedule():
    """The two-pass schedule (on Python ints) is the DFT in natural order."""
    from zktensor.kernels.ntt_cpu import reference
    F = zt.field("bn254.fr")
    vals = [(i * 7919 + 3) % F.p for i in range(64)]
    w = F.root_of_unity(64)
    for n1 in (2, 3, 4):
        assert reference(vals, F.p, w, n1) == ff.dft(vals, w, F.p)
        assert reference(vals, F.p, w, n1, bitrev_out=True) == ff.bit_reverse(ff.dft(vals, w, F.p))
