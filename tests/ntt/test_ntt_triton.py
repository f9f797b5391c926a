"""The Triton NTT pass kernel: its schedule on Python ints, the kernel under
the Triton interpreter on CPU tensors (tiny sizes: the interpreter runs a
BN254 multiplication in about a second per block, MNT4753 about ten), and
ahead-of-time compilation for sm_90a without register spills.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

try:
    from tests.oracles import field as ff
except ImportError:  # run without the repository root on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.oracles import field as ff

import zktensor as zt
from zktensor.kernels import ntt_triton
from zktensor.ops.ntt import NTTConfig


def rand(F, shape, seed):
    return F.random(shape, torch.Generator().manual_seed(seed))


# -- the schedule (pure Python) ------------------------------------------------------
@pytest.mark.parametrize("log_n", [1, 3, 5, 6])
@pytest.mark.parametrize("B,G", [(1, 1), (2, 4), (3, 16), (4, 2), (6, 64)])
def test_schedule_reference_is_the_dft(log_n, B, G):
    F = zt.field("bn254.fr")
    n = 1 << log_n
    vals = [(i * 2654435761 + 11) % F.p for i in range(n)]
    w = F.root_of_unity(n)
    want = ff.dft(vals, w, F.p)
    cfg = NTTConfig(B=B, G=G)
    dif = ntt_triton.schedule(log_n, n, False, cfg)
    assert sum(p.log_r for p in dif) == log_n
    for p in dif:
        assert p.Q * p.C <= max(G, 1) and p.programs * p.Q * p.C * (1 << p.log_r) == n
    assert ntt_triton.reference(vals, F.p, w, dif) == ff.bit_reverse(want)
    dit = ntt_triton.schedule(log_n, n, True, cfg)
    assert ntt_triton.reference(ff.bit_reverse(vals), F.p, w, dit, dit=True) == want


def test_template_shape():
    src = ntt_triton._template(24)           # MNT4753: 24 words, padded to 32 lanes of the limb axis
    assert "tl.arange(0, 32)" in src and "mask=(jj < 24)" in src
    assert src.count("tl.load(src") == 1 and src.count("tl.store(") == 1


# -- under the interpreter -------------------------------------------------------------
INTERPRETED = [
    # (field, strategy, n, batch, transform, kwargs) -- several passes, S < G and S >= G,
    # DIF and DIT, table and constant scaling, both orders
    ("bn254.fr", "int32", 16, 2, "ntt", dict(B=2, G=4, coset=7)),
    ("bn254.fr", "int32", 16, 1, "intt", dict(B=3, G=2, input_order="bitrev", coset=7)),
    ("bn254.fr", "int32", 8, 2, "intt", dict(B=1, G=8, output_order="bitrev")),
    ("bls12_381.fr", "int32", 8, 1, "ntt", dict(B=3, G=4)),
    ("bn254.fr", "fp64", 4, 1, "ntt", dict(B=2, G=2, output_order="bitrev")),
    ("mnt4753.fr", "int32", 4, 1, "ntt", dict(B=2, G=2, coset=5)),
]


@pytest.mark.parametrize("name,strategy,n,batch,fn,kw", INTERPRETED,
                         ids=[f"{c[0]}-{c[1]}-{c[2]}-{c[4]}-{i}" for i, c in enumerate(INTERPRETED)])
def test_interpreted_kernel(name, strategy, n, batch, fn, kw):
    F = zt.field(name)
    x = rand(F, (batch, n), n + batch)
    f = getattr(zt, fn)
    ref_kw = {k: v for k, v in kw.items() if k not in ("B", "G")}
    want = f(x, algorithm="stages", **ref_kw)
    with zt.config(target="triton", strategy=strategy):
        got = f(x, **kw)
    assert bool((got == want).all())


def test_interpreted_matches_dft():
    F = zt.field("bn254.fr")
    x = rand(F, (1, 8), 3)
    with zt.config(target="triton"):
        X = zt.ntt(x, B=3, G=8)
    assert X.to_ints() == [ff.dft(r, F.root_of_unity(8), F.p) for r in x.to_ints()]


# -- ahead of time for sm_90a --------------------------------------------------------------
AOT = [
    # (field, strategy, log_r, C, Q, dit, pre, post)
    ("bn254.fr", "int32", 2, 32, 1, False, 1, 0),
    ("bn254.fr", "int32", 1, 16, 2, True, 0, 1),
    ("bn254.fr", "fp64", 1, 32, 1, False, 1, 0),
]


@pytest.mark.parametrize("name,strategy,log_r,C,Q,dit,pre,post", AOT)
def test_aot_sm90a_no_spills(name, strategy, log_r, C, Q, dit, pre, post):
    pytest.importorskip("triton")
    F = zt.field(name)
    rep = ntt_triton.aot_compile(F.params, strategy, "sm_90a", 4, log_r=log_r, C=C, Q=Q, dit=dit, pre=pre,
                                 post=post)
    assert not rep["spills"], rep
    assert rep["local_bytes"] == 0 and 0 < rep["registers"] <= 255
    assert rep["sass"].get("IMAD", 0) > 0
    if strategy == "fp64":
        assert rep["sass"].get("DFMA", 0) > 0


def test_register_cap_reaches_ptxas():
    """NTTConfig.max_registers is ptxas's .maxnreg: a first DIF pass with the coset table, an
    fp64 tile that ptxas gives more than the cap left to itself (bench/results/ntt_aot.json),
    is held to it.
    Out-of-range caps are refused."""
    pytest.importorskip("triton")
    F = zt.field("bn254.fr")
    rep = ntt_triton.aot_compile(F.params, "fp64", "sm_90a", 4, log_r=3, C=32, Q=1, pre=1, maxnreg=128)
    assert 0 < rep["registers"] <= 128, rep["registers"]
    for bad in (True, 16, 256, "128", 128.0):
        with pytest.raises(ValueError, match="max_registers"):
            NTTConfig(max_registers=bad)
    assert NTTConfig(max_registers=128).max_registers == 128


# -- on a GPU, when there is one ------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("name", ["bn254.fr", "bls12_381.fr"])
@pytest.mark.parametrize("log_n", [3, 10, 16])
def test_gpu_matches_cpu(name, log_n):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    F = zt.field(name)
    n = 1 << log_n
    x = rand(F, (2, n), log_n)
    xg = x.to("cuda")
    for fn, kw in ((zt.ntt, {}), (zt.ntt, {"coset": 7}), (zt.intt, {}),
                   (zt.ntt, {"output_order": "bitrev"}), (zt.intt, {"input_order": "bitrev", "coset": 7})):
        assert bool((fn(xg, **kw).to("cpu") == fn(x, **kw)).all()), (fn.__name__, kw)
    assert bool((zt.intt(zt.ntt(xg)).to("cpu") == x).all())
