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

The chunked MSM (`host_bases`) is checked against the unchunked device MSM and the oracle
with the same stand-in for the kernels; the sum of the chunks' partial results (one
`chain` launch, `device.point_sums`) runs interpreted.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import zktensor as zt
from tests.guard import SyncGuard, _Mode
from tests.oracle_msm import install
from tests.oracles import ec as O
from zktensor.algebra.curves import group as group_record
from zktensor.groth16.formats.json_io import Proof
from zktensor.groth16.host_bases import HostBases, row_sums
from zktensor.groth16.key import host_tables
from zktensor.groth16.prover import Prover
from zktensor.groth16.r1cs_to_qap import WitnessError, words_to_limbs
from zktensor.groth16.verifier import verify
from zktensor.ops.msm import MSMConfig, device


@pytest.fixture
def oracle_msm(monkeypatch):
    return install(monkeypatch)


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


@pytest.mark.slow
def test_guarded_proof_on_the_triton_target(fixtures, oracle_msm, monkeypatch):
    """The proof with its tables on the device and with every table in host memory in chunks of
    one point (table_budget=1): no host read in the graph, the same points (r, s fixed), a
    proof that verifies. Then a witness that breaks a constraint: the device check's flag,
    read with the proof, names the constraint as the host check does."""
    from zktensor.groth16 import blinding
    monkeypatch.setattr(blinding, "secrets", _FixedSecrets())
    from zktensor.groth16 import key
    fx = fixtures["multiplier"]
    points, sizes = {}, {}
    monkeypatch.setattr(key, "host_tables", lambda s, b, real=key.host_tables: sizes.update(s) or real(s, b))
    for budget in (None, 1):
        with zt.config(target="triton"):
            prover = Prover(fx.zkey, r1cs=fx.r1cs, device="cpu", helper=False, table_cache=False,
                            table_budget=budget)
            assert prover.on_device()
            assert bool(prover.host) == (budget is not None) and prover.chunk == (1 if budget else 0)
            if budget is None:      # the budget's bytes of each table: what its resident bases keep
                assert {n: b for n, (b, _) in sizes.items() if b} == {
                    n: t.prepared.memory_bytes() for n, t in prover.bases.items() if t.prepared is not None}
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

    bad = words.copy()
    bad[-1, 0] ^= 1                                                 # the last wire, one bit off
    with zt.config(target="triton"):
        want = prover.r1cs_check.first_unsatisfied(words_to_limbs(bad, "cpu"))
        assert want is not None
        *_, run, _, _, _ = _guarded_proof(prover, [int.from_bytes(w.astype("<u4").tobytes(), "little") for w in bad])
        with pytest.raises(WitnessError, match=f"constraint {want} ") as e:
            prover.proof_points(run, "w")
    assert e.value.constraint == want


def test_no_helper_process_for_the_device_graph(fixtures, monkeypatch):
    """The device graph has no helper node (its blinding takes the witness MSMs' units from
    this process's nodes): a Prover whose proofs run it makes no helper process, even on CPU
    tensors (the Triton target there: `zktensor.prebuild` proves this way), whatever helper
    and workers say. (A Triton-target key loads interpreted for minutes: the CPU target's
    Prover stands in, told that it runs the device graph.)"""
    prover = Prover(fixtures["multiplier"].zkey, device="cpu", helper=True, table_cache=False)
    assert not prover.on_device()
    monkeypatch.setattr(prover, "on_device", lambda: True)
    assert prover._helper_for(2) is None
    monkeypatch.undo()
    try:
        assert prover._helper_for(2) is not None
    finally:
        prover.close()


def test_host_tables_policy():
    """The largest tables go to the host until the rest fits; the chunk gives two buffers of
    each host table in what is left."""
    sizes = {"H": (1000, 10), "B2": (800, 20), "ab1c": (300, 10)}
    assert host_tables(sizes, None) == (set(), 0)
    assert host_tables(sizes, 2100) == (set(), 0)
    assert host_tables(sizes, 1200) == ({"H"}, (1200 - 1100) // (2 * 1 * 10))
    assert host_tables(sizes, 500) == ({"H", "B2"}, (500 - 300) // (2 * 2 * 20))
    assert host_tables(sizes, 10) == ({"H", "B2", "ab1c"}, 1)


def test_chunked_msm_exact(oracle_msm):
    """HostBases: 8 bases in chunks of 3 (the last of 2), a batch of two full-width MSMs with
    the identity, a repeated base, P and -P, scalars 0, 1 and r - 1: the chunks' slices of
    scalars and bases and the sum of their partial results give the unchunked sums (kernels
    by the oracle, `oracle_msm`; `test_row_sums_exact` runs the sum's own)."""
    name = "bn254.g1"
    g = group_record(name)
    G = zt.group(name)
    rng = np.random.default_rng(3)
    pts = [O.mul(g, g.generator, int(k)) for k in rng.integers(1, 1 << 30, size=8)]
    pts[1], pts[3], pts[5] = None, pts[2], O.neg(g, pts[4])
    rows = [[0, 1, g.r - 1] + [int(k) for k in rng.integers(0, 1 << 62, size=5)],
            [int(k) * 7919 % g.r for k in rng.integers(1, 1 << 62, size=8)]]
    P = G.tensor(pts)
    words = torch.from_numpy(np.array([[[(k >> (32 * j)) & 0xFFFFFFFF for k in row] for row in rows]
                                       for j in range(G.Fr.limbs)], dtype=np.uint32).view(np.int32))
    hb = HostBases(G, [(a, P.data[:, :, a:a + 3].contiguous()) for a in range(0, 8, 3)], "cpu")
    with zt.config(target="triton"):
        got = hb.msm(words)
        whole = device.device_msm(G, words, P, MSMConfig())
    assert [n for _, n, _ in oracle_msm] == [3, 3, 2, 8]            # three chunks, the whole (the chunks'
    # sum is `device.point_sums`, its kernel interpreted)
    assert got.to_affine() == whole.to_affine() == [O.msm(g, pts, row) for row in rows]


@pytest.mark.slow
def test_row_sums_exact():
    """The sum of the chunks' partial results with its kernel interpreted (`device.point_sums`)
    over two batches of two partial sums (one the identity, one a repeated point)."""
    name = "bn254.g1"
    g = group_record(name)
    G = zt.group(name)
    a, b = O.mul(g, g.generator, 5), O.mul(g, g.generator, 11)
    parts = [G.tensor([a, None]), G.tensor([a, b])]
    with zt.config(target="triton"):
        got = row_sums(G, parts)
    assert got.to_affine() == [O.add(g, a, a), b]


def test_validation_is_remembered(tmp_path, monkeypatch):
    """A device key's validation, kept under its file's identity: read back while it names this
    code's checks, not once they change; an edited file is another file, even with its
    modification time set back."""
    import os
    import time
    from zktensor.groth16 import key_check
    monkeypatch.setenv("ZKTENSOR_CACHE_DIR", str(tmp_path))
    key = tmp_path / "k.zkey"
    key.write_bytes(b"key")
    digest = key_check.file_identity(key)
    st = os.stat(key)
    time.sleep(0.01)
    key.write_bytes(b"kez")
    os.utime(key, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert key_check.file_identity(key) != digest
    assert key_check.remembered(digest) is None
    key_check.remember(digest, key_check.KEY_CHECK_STAMP)
    assert key_check.remembered(digest) == key_check.KEY_CHECK_STAMP
    key_check.remember(digest, "zkey-check-v0")
    assert key_check.remembered(digest) is None


@pytest.mark.parametrize("chunk", [None, 2])
def test_key_check_on_the_triton_target(fixtures, oracle_msm, tmp_path, chunk):
    """validate_zkey on the key's device (the Triton target), whole sections or chunks of 2
    points: a G2 point outside the subgroup is refused (its combinations are device MSMs of
    64-bit scalars), the valid key passes."""
    from test_key_check import _outside, _patched
    from zktensor.groth16.formats import FormatError, read_zkey
    from zktensor.groth16.formats.points import codec
    from zktensor.groth16.key_check import KEY_CHECK_STAMP, validate_zkey
    src = fixtures["multiplier"].zkey
    bad = _patched(src, tmp_path, 7, 2 * codec("bn254", "g2").size, codec("bn254", "g2").encode(_outside("bn254", "g2")))
    with zt.config(target="triton"):
        assert validate_zkey(read_zkey(src), on_curve_checked=True, device="cpu", chunk=chunk) == KEY_CHECK_STAMP
        with pytest.raises(FormatError, match="not in bn254's G2 subgroup"):
            validate_zkey(read_zkey(bad), on_curve_checked=True, device="cpu", chunk=chunk)
    assert {(name, rows) for name, _, rows in oracle_msm} == {("bn254.g2", 5)}
