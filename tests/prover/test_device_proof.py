"""A whole Groth16 proof on the Triton target inside the sync guard (issue 19), and keys
kept in host memory in chunks (a key larger than the device).

The proof runs on CPU tensors under the Triton interpreter, every graph node inside
tests/guard.py's SyncGuard (its dispatch mode entered on each worker thread): no host
read of a value before the proof's points are read at the end, the witness check's flag
included. The device MSM's own kernels are left out of the interpretation (a full-width
one is hundreds of sequential interpreted point formulas, minutes each; their exactness
and freedom from syncs are tests/ec/test_msm_device.py's): the MSM's host program runs
inside the guard as it would on a GPU, and its result is written by the Python-int
oracle (tests/oracles/ec.py) outside the guard. Everything else (witness upload, sparse
products, NTTs, the QAP, the witness check, the blinding and assembly, the chunked
uploads and the sums of their partial results) runs on the Triton target. The proof
then passes the pairing verifier and snarkjs's public signals.

The chunked MSM itself is checked with its kernels interpreted (scalars below 2^8, as
test_msm_device does): exactly the unchunked device MSM and the oracle.
"""
from __future__ import annotations

import json
from contextlib import contextmanager

import numpy as np
import pytest
import torch

import zktensor as zt
from tests.guard import SyncGuard, _Mode, _state
from tests.oracles import ec as O
from zktensor.algebra.curves import group as group_record
from zktensor.groth16.formats.json_io import Proof
from zktensor.groth16.host_bases import HostBases
from zktensor.groth16.key import host_tables
from zktensor.groth16.prover import Prover
from zktensor.groth16.r1cs_to_qap import WitnessError, words_to_limbs
from zktensor.groth16.verifier import verify
from zktensor.ops.msm import MSMConfig, device


@contextmanager
def _unguarded():
    """The oracle's host work: exempt from the guard as the interpreter's own launches are."""
    _state.triton = getattr(_state, "triton", 0) + 1
    try:
        yield
    finally:
        _state.triton -= 1


def _scalar_rows(GS, scalars) -> list[list[int]]:
    if isinstance(scalars, torch.Tensor):                       # standard-form words (Lr, B, n)
        w = scalars.numpy().astype(np.uint32).transpose(1, 2, 0)
        return [[int.from_bytes(v.tobytes(), "little") for v in row] for row in w]
    ints = scalars.to_ints()
    return ints if isinstance(ints[0], list) else [ints]


@pytest.fixture
def oracle_msm(monkeypatch):
    """device_msm with its host program run (digits, sort, launches' arguments) and its kernels
    replaced by the Python-int oracle's sums; returns the list of (group, n, rows) it did."""
    calls = []
    real = device.device_msm
    monkeypatch.setattr(device, "_launch", lambda *a, **k: None)

    def msm(GS, scalars, points, cfg, stats=None, bits=None):
        out = real(GS, scalars, points, cfg, stats, bits=bits)
        with _unguarded(), zt.config(target="cpu"):
            rows = _scalar_rows(GS, scalars)
            pts = points.to_affine()
            g = group_record(GS.name)
            out.data.copy_(GS.tensor([O.msm(g, pts, row) for row in rows]).data)
        calls.append((GS.name, points.shape[0], len(rows)))
        return out
    monkeypatch.setattr(device, "device_msm", msm)
    return calls


def _guard_nodes(g, guard):
    """Each node's work inside the guard's dispatch mode (per thread: the scheduler's workers)."""
    for node in g.nodes.values():
        def run(*args, fn=node.fn):
            with _Mode(guard):
                return fn(*args)
        node.fn = run


def _guarded_proof(prover, wtns):
    words, where = prover.witness_words(wtns)
    w_std = words_to_limbs(words, prover.device)
    g = prover.graph(check=True, where=where)
    guard = SyncGuard()
    _guard_nodes(g, guard)
    with guard:
        run = g.run({"w_std": w_std}, workers=2, device=prover.device, keep=["assemble"])
    public = [int.from_bytes(words[i].astype("<u4").tobytes(), "little") for i in range(1, prover.n_public + 1)]
    return g, guard, run, words, where, public


class _FixedSecrets:
    """r, s of the blinding, the same in two proofs (their points can then be compared)."""

    def __init__(self):
        self.values = [0x1234567890ABCDEF1234567890ABCDEF, 0xFEDCBA0987654321FEDCBA0987654321]

    def randbelow(self, n):
        v = self.values.pop(0)
        self.values.append(v)
        return v % n


def test_guarded_proof_on_the_triton_target(fixtures, oracle_msm, monkeypatch):
    """The proof with its tables on the device and with every table in host memory in chunks of
    one point (table_budget=1): no host read in the graph, the same points (r, s fixed), a
    proof that verifies."""
    from zktensor.groth16 import prover as prover_mod
    monkeypatch.setattr(prover_mod, "secrets", _FixedSecrets())
    fx = fixtures["multiplier"]
    points = {}
    for budget in (None, 1):
        with zt.config(target="triton"):
            prover = Prover(fx.zkey, r1cs=fx.r1cs, device="cpu", helper=False, table_cache=False,
                            table_budget=budget)
            assert prover.on_device()
            assert bool(prover.host) == (budget is not None) and prover.chunk == (1 if budget else 0)
            g, guard, run, words, where, public = _guarded_proof(prover, fx.wtns)
            assert {"blind_ab", "blind_b", "check", "assemble"} <= set(g.nodes)
            points[budget] = prover.proof_points(run, where)        # the first host read
        assert guard.triton_launches > 0 and guard.torch_ops > 0
    assert {name for name, _, _ in oracle_msm} == {"bn254.g1", "bn254.g2"}
    assert any(n == 1 for _, n, _ in oracle_msm)                    # the chunks' MSMs
    assert points[1] == points[None]
    proof = Proof(prover.curve, *points[None])
    assert public == [int(v) for v in json.loads(fx.public.read_text())]
    assert verify(prover.zkey, public, proof)
    assert not verify(prover.zkey, [(public[0] + 1) % prover.F.p] + public[1:], proof)


def test_bad_witness_flag_read_at_the_end(fixtures, oracle_msm):
    """A witness that breaks a constraint: the device check's flag, read with the proof,
    names the constraint as the host check does."""
    fx = fixtures["multiplier"]
    with zt.config(target="triton"):
        prover = Prover(fx.zkey, r1cs=fx.r1cs, device="cpu", helper=False, table_cache=False)
        words, where = prover.witness_words(fx.wtns)
        bad = words.copy()
        bad[-1, 0] ^= 1                                         # the last wire, one bit off
        want = prover.r1cs_check.first_unsatisfied(words_to_limbs(bad, "cpu"))
        assert want is not None
        g, guard, run, *_ = _guarded_proof(prover, [int.from_bytes(w.astype("<u4").tobytes(), "little")
                                                   for w in bad])
        with pytest.raises(WitnessError, match=f"constraint {want} ") as e:
            prover.proof_points(run, "w")
    assert e.value.constraint == want


def test_host_tables_policy():
    """The largest tables go to the host until the rest fits; the chunk gives two buffers of
    each host table in what is left."""
    sizes = {"H": (1000, 10), "B2": (800, 20), "ab1c": (300, 10)}
    assert host_tables(sizes, None) == (set(), 0)
    assert host_tables(sizes, 2100) == (set(), 0)
    assert host_tables(sizes, 1200) == ({"H"}, (1200 - 1100) // (2 * 1 * 10))
    assert host_tables(sizes, 500) == ({"H", "B2"}, (500 - 300) // (2 * 2 * 20))
    assert host_tables(sizes, 10) == ({"H", "B2", "ab1c"}, 1)


def test_chunked_msm_exact():
    """HostBases: 4 bases in chunks of 2, a batch of two MSMs with the identity, a repeated base,
    scalars 0, 1 and the largest below 2^4; the chunks' device MSMs and the sum of their
    partial results interpreted: the oracle's sums."""
    name = "bn254.g1"
    g = group_record(name)
    G = zt.group(name)
    rng = np.random.default_rng(3)
    pts = [O.mul(g, g.generator, int(k)) for k in rng.integers(1, 1 << 30, size=4)]
    pts[1], pts[3] = None, pts[2]
    rows = [[0, 1, 15, 15], [int(k) for k in rng.integers(0, 16, size=4)]]
    P = G.tensor(pts)
    words = torch.from_numpy(np.array([[[(k >> (32 * j)) & 0xFFFFFFFF for k in row] for row in rows]
                                       for j in range(G.Fr.limbs)], dtype=np.uint32).view(np.int32))
    hb = HostBases(G, [(a, P.data[:, :, a:a + 2].contiguous()) for a in (0, 2)], "cpu", MSMConfig(window=2))
    with zt.config(target="triton"):
        got = hb.msm(words, bits=4)
    assert got.to_affine() == [O.msm(g, pts, row) for row in rows]
