"""The GPU path on a CUDA device, against the CPU tests' oracles (skipped without CUDA).

Field operations against Python ints, NTT against an O(N^2) DFT on Python ints, MSM for
every group against double-and-add on Python ints (tests/oracles), and a whole Groth16
proof on each test circuit checked by the pairing verifier and against snarkjs's
public.json, with no host read inside the proof's graph (its nodes' counted syncs) and
once with the key's tables in host memory, uploaded in chunks. Meant for `scripts/gpu.sh`
on a lent GPU machine, which has no MLIR bindings: the Triton source comes from
`.zktensor-prebuilt/` (python -m zktensor.prebuild) and conversions on CPU tensors use
torch (kernels/mont_torch.py). The fixtures are read from $ZKT_FIXTURES_BUILD (default
tests/fixtures/build); a fixture whose files are absent is skipped, as nothing here can
run snarkjs.

Each test's work is a `check_*` function of a device: tests/field/test_prebuild.py runs
them on CPU tensors (`zktensor.prebuild.on_host`) to check that the pre-built folder
holds every Triton program they launch.
"""
from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

import pytest
import torch

import zktensor as zt
from tests.oracles import ec as O
from zktensor.algebra.curves import GROUP_NAMES
from tests.oracles import field as ff

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

# every group and its curve's two fields, BN254 first (a call's time budget reaches it first)
GROUPS = sorted(GROUP_NAMES, key=lambda g: (not g.startswith("bn254."), g))
CURVES = list(dict.fromkeys(g.split(".")[0] for g in GROUPS))
FIELDS = [f"{c}.{f}" for c in CURVES for f in ("fr", "fq")]
STRATEGIES = ["int32", "fp64"]
ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("ZKT_FIXTURES_BUILD", ROOT / "tests" / "fixtures" / "build"))


def _values(p: int, n: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    edges = [0, 1, 2, p - 1, p - 2, (p - 1) // 2, (1 << 32) % p, (1 << 64) % p, pow(2, 255, p)]
    return edges + [rng.randrange(p) for _ in range(n - len(edges))]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("name", FIELDS)
def test_field_ops(name, strategy):
    check_field_ops(name, strategy, "cuda")


def check_field_ops(name, strategy, device):
    F = zt.field(name)
    p = F.p
    a_i, b_i = _values(p, 4096, 1), _values(p, 4096, 2)[::-1]
    with zt.config(strategy=strategy):
        a, b = F.tensor(a_i, device=device), F.tensor(b_i, device=device)
        assert a.device.type == device
        assert (a + b).to_ints() == [ff.add(x, y, p) for x, y in zip(a_i, b_i)]
        assert (a - b).to_ints() == [ff.sub(x, y, p) for x, y in zip(a_i, b_i)]
        assert (a * b).to_ints() == [ff.mul(x, y, p) for x, y in zip(a_i, b_i)]
        assert (-a).to_ints() == [ff.neg(x, p) for x in a_i]
        assert a.square().to_ints() == [x * x % p for x in a_i]
        assert (a ** 5).to_ints() == [pow(x, 5, p) for x in a_i]
        nz = [x or 1 for x in a_i]
        assert F.tensor(nz, device=device).inverse().to_ints() == [pow(x, -1, p) for x in nz]


def _dft(values, omega, p):
    n = len(values)
    return [sum(v * pow(omega, j * k, p) for j, v in enumerate(values)) % p for k in range(n)]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("name", [f"{c}.fr" for c in CURVES])
@pytest.mark.parametrize("log_n", [4, 8])
def test_ntt(name, strategy, log_n):
    check_ntt(name, strategy, log_n, "cuda")


def check_ntt(name, strategy, log_n, device):
    F = zt.field(name)
    p, n = F.p, 1 << log_n
    rows = [_values(p, n, 10 + r) for r in range(2)]
    w = F.root_of_unity(n)
    g = F.nqr
    with zt.config(strategy=strategy):
        x = F.tensor(rows, device=device)
        assert zt.ntt(x).to_ints() == [_dft(r, w, p) for r in rows]
        assert zt.ntt(x, coset=g).to_ints() == [_dft([v * pow(g, j, p) % p for j, v in enumerate(r)], w, p)
                                                for r in rows]
        assert zt.intt(zt.ntt(x)).to_ints() == rows
        assert zt.intt(zt.ntt(x, coset=g), coset=g).to_ints() == rows
        assert zt.intt(zt.ntt(x, output_order="bitrev"), input_order="bitrev").to_ints() == rows


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("name", GROUPS)
def test_msm(name, strategy):
    check_msm(name, strategy, "cuda")


def check_msm(name, strategy, device):
    from zktensor.algebra.curves import group as group_record
    g = group_record(name)
    G = zt.group(name)
    rng = random.Random(5)
    n = 64
    pts = [O.mul(g, g.generator, rng.randrange(1, g.r)) for _ in range(n - 3)]
    pts += [pts[0], O.neg(g, pts[1]), None]                  # P twice, P + (-P), the identity
    ks = [rng.randrange(g.r) for _ in range(n - 4)] + [0, 1, g.r - 1, 2]
    want = O.msm(g, pts, ks)
    with zt.config(strategy=strategy):
        P = G.tensor(pts, device=device)
        k = G.Fr.tensor(ks, device=device)
        assert zt.msm(k, P).to_affine() == want
        assert zt.msm(k, zt.msm_prepare(P)).to_affine() == want
        mixed = zt.msm_prepare(P, config=zt.MSMConfig(mixed=True))       # affine bases, mixed additions
        assert zt.msm(k, mixed).to_affine() == want
        assert zt.msm(k, mixed, zt.MSMConfig(mixed=True, weighted=True)).to_affine() == want
        pm = zt.MSMConfig(point_major=True)                 # the same kernels over point-major arrays
        assert zt.msm(k, P, pm).to_affine() == want
        pm_mixed = zt.MSMConfig(point_major=True, mixed=True, weighted=True)
        assert zt.msm(k, zt.msm_prepare(P, config=pm_mixed), pm_mixed).to_affine() == want


def _fixtures():
    sys.path.insert(0, str(ROOT / "tests" / "groth16"))
    from fixture_support import FIXTURES
    return FIXTURES


@pytest.mark.parametrize("fx", _fixtures(), ids=lambda f: f.name)
def test_groth16_proof(fx):
    check_groth16_proof(fx, "cuda")


@pytest.mark.parametrize("fx", [f for f in _fixtures() if f.name in ("poseidon_like", "multiplier_bls")],
                         ids=lambda f: f.name)
def test_groth16_proof_host_tables(fx):
    """A key past the device's table budget: its tables in pinned host memory, uploaded in
    chunks of one point for every MSM (`host_bases`)."""
    check_groth16_proof(fx, "cuda", table_budget=1)


def check_groth16_proof(fx, device, table_budget=None):
    from zktensor.groth16.prover import Prover
    from zktensor.groth16.verifier import verify
    fdir = BUILD / fx.name
    zkey, wtns, r1cs = fdir / "circuit_final.zkey", fdir / "witness.wtns", fdir / f"{fx.source}.r1cs"
    if not (zkey.exists() and wtns.exists()):
        pytest.skip(f"fixture {fx.name} not built (scripts/fixtures.sh) or not carried")
    prover = Prover(zkey, r1cs=r1cs if r1cs.exists() else None, device=device, helper=False,
                    table_cache=False, table_budget=table_budget)
    assert prover.on_device() and bool(prover.host) == (table_budget is not None)
    proof, public = prover.prove(wtns, profile=True)
    if device == "cuda":            # (on CPU tensors `zktensor.prebuild.on_host` computes on the host)
        syncs = {s.name: s.syncs for s in prover.last_run.stats if s.syncs}
        assert not syncs, f"host reads inside the graph: {syncs}"
    assert verify(prover.zkey, public, proof)
    if (fdir / "public.json").exists():
        assert [str(v) for v in public] == json.loads((fdir / "public.json").read_text())
    # a wrong public input must not verify
    if public:
        assert not verify(prover.zkey, [(public[0] + 1) % prover.F.p] + public[1:], proof)
