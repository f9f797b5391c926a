"""The prover over snarkjs's keys: snarkjs accepts our proofs, public.json is snarkjs's,
proofs are randomised, bad witnesses are refused with the failing constraint."""
import json

import numpy as np
import pytest

from fixture_support import FIXTURE_NAMES
import zktensor as zt
from zktensor.groth16.formats import FormatError, read_r1cs, read_wtns, write_wtns
from zktensor.groth16.formats.json_io import proof_to_json, read_json
from zktensor.groth16.prover import Prover, WitnessError
from zktensor.groth16.r1cs_to_qap import words_to_limbs
from zktensor.groth16.verifier import verify


def test_all_fixtures_snarkjs_verifies_our_proofs(fixtures, provers, snarkjs, tmp_path):
    """Every fixture (BN254 and BLS12-381; public inputs: none, one, several; a mostly-0/1
    witness; long linear combinations): prove, write, `snarkjs groth16 verify` the files."""
    for name in FIXTURE_NAMES:
        fx = fixtures[name]
        d = tmp_path / name
        d.mkdir()
        proof, public = provers(name).prove_to_files(fx.wtns, d / "proof.json", d / "public.json")
        assert (d / "public.json").read_bytes() == fx.public.read_bytes(), name
        assert proof.curve == fx.curve
        assert snarkjs.verify_cli(fx.vk, d / "public.json", d / "proof.json"), name


def test_two_proofs_of_one_witness_differ(fixtures, provers, snarkjs, tmp_path):
    fx = fixtures["multi_public"]
    P = provers("multi_public")
    (p1, pub1), (p2, pub2) = P.prove(fx.wtns), P.prove(fx.wtns)
    assert pub1 == pub2
    assert p1.pi_a != p2.pi_a and p1.pi_b != p2.pi_b and p1.pi_c != p2.pi_c
    vk = read_json(fx.vk)
    cases = [(vk, [str(x) for x in pub1], proof_to_json(p)) for p in (p1, p2)]
    assert snarkjs.verify_many(cases, tmp_path) == [True, True]


def _corrupt(fx, tmp_path, wire=None):
    """A copy of the fixture's witness with one private wire changed; returns (path, oracle index)."""
    w = list(read_wtns(fx.wtns))
    rc = read_r1cs(fx.r1cs)
    wire = rc.n_public + 1 if wire is None else wire
    w[wire] = (w[wire] + 1) % rc.prime
    path = tmp_path / "bad.wtns"
    write_wtns(path, w, rc.prime)
    return path, rc.first_unsatisfied(w)


@pytest.mark.parametrize("name", ["range_check", "multiplier_bls"])
def test_bad_witness_refused_with_first_failing_constraint(fixtures, provers, tmp_path, name):
    fx = fixtures[name]
    bad, index = _corrupt(fx, tmp_path, wire=None if name != "range_check" else 200)
    assert index is not None
    out = tmp_path / "proof.json"
    with pytest.raises(WitnessError, match=f"constraint {index} ") as e:
        provers(name).prove_to_files(bad, out, tmp_path / "public.json")
    assert e.value.constraint == index
    assert not out.exists()


@pytest.mark.parametrize("name", ["range_check", "multiplier_bls"])
def test_check_with_the_keys_products_matches_the_oracle(fixtures, provers, tmp_path, name):
    """The prover's check takes A·w∘B·w from the key's matrices (POLY's Cw) and computes
    only C·w: the first failing constraint is the Python-int oracle's, wire after wire."""
    fx, P = fixtures[name], provers(name)
    rc = read_r1cs(fx.r1cs)
    w = list(read_wtns(fx.wtns))
    wires = sorted(set(range(rc.n_public + 1, rc.n_wires, max(1, rc.n_wires // 7))) | {rc.n_wires - 1})
    for wire in [None] + wires:
        v = list(w)
        if wire is not None:
            v[wire] = (v[wire] + 1) % rc.prime
        w_std = words_to_limbs(np.frombuffer(b"".join(x.to_bytes(P.F.limbs * 4, "little") for x in v),
                                             dtype="<u4").reshape(-1, P.F.limbs))
        ab = P.A_mat.matvec(w_std) * P.B_mat.matvec(w_std)
        want = rc.first_unsatisfied(v)
        assert P.r1cs_check.first_unsatisfied(w_std, ab) == want
        assert P.r1cs_check.first_unsatisfied(w_std) == want


def test_without_r1cs_the_proof_is_verified(fixtures, tmp_path):
    fx = fixtures["multiplier"]
    bad, _ = _corrupt(fx, tmp_path)
    P = Prover(fx.zkey, device="cpu")
    proof, public = P.prove(fx.wtns)                       # a good one passes the self-check
    assert verify(fx.vk, public, proof)
    with pytest.raises(WitnessError, match="does not verify"):
        P.prove(bad)
    proof, public = P.prove(bad, check=False)              # unchecked, as snarkjs: an invalid proof
    assert not verify(fx.vk, public, proof)


def test_witness_checks_before_any_work(fixtures, provers, tmp_path):
    P = provers("multiplier")
    w = list(read_wtns(fixtures["multiplier"].wtns))
    with pytest.raises(WitnessError, match="w\\[0\\] must be 1"):
        P.prove([2] + w[1:])
    with pytest.raises(WitnessError, match="has 3 values"):
        P.prove(w[:3])
    other = fixtures["multiplier_bls"].wtns           # another field
    with pytest.raises(FormatError, match="do not match"):
        P.prove(other)
    assert P.prove(w)[1] == w[1:1 + P.n_public]        # ints are accepted too


def test_truncated_files_are_named(fixtures, tmp_path):
    fx = fixtures["multiplier"]
    z = tmp_path / "cut.zkey"
    z.write_bytes(fx.zkey.read_bytes()[:-100])
    with pytest.raises(FormatError, match="cut.zkey"):
        Prover(z, device="cpu")
    wt = tmp_path / "cut.wtns"
    wt.write_bytes(fx.wtns.read_bytes()[:-5])
    P = Prover(fx.zkey, device="cpu")
    with pytest.raises(FormatError, match="cut.wtns"):
        P.prove(wt)


def test_profile_names_every_node(fixtures, provers, tmp_path, monkeypatch):
    from zktensor.groth16 import prover as prover_mod
    monkeypatch.setattr(prover_mod, "helper_split", lambda words, domain: prover_mod.HELPER_UNITS)
    P = provers("poseidon_like")
    P.prove(fixtures["poseidon_like"].wtns, profile=True)
    run = P.last_run
    names = {s.name for s in run.stats}
    side = {"msm_helper"} if P._helper is not None else {"msm_b2"}     # B2 (and C) in the helper
    assert {"Aw", "Bw", "Cw", "intt_abc", "coset_ntt_abc", "join_abc", "msm_h", "msm_ab1c",
            "check", "blinding", "blind_ab", "assemble"} | side <= names     # a small key: merged
    st = run.by_name()
    assert st["check"].start_s >= st["Cw"].end_s - 1e-6      # it takes POLY's A·w∘B·w
    for a, b in P.graph(helper=P._helper is not None).edges():
        assert st[b].start_s >= st[a].end_s - 1e-6 if a in st else True
    assert all(s.peak_host_bytes for s in run.stats)
    run.write_trace(tmp_path / "t.json")
    # one worker runs nodes one by one: the G2 MSM, the longest side node, before the G1 ones
    P.prove(fixtures["poseidon_like"].wtns, profile=True, workers=1)
    st = P.last_run.by_name()
    assert st["msm_b2"].start_s < st["msm_ab1c"].start_s
    # and the witness check, which only assemble waits for, after every other node but that
    assert all(st["check"].start_s >= s.end_s - 1e-6 for s in P.last_run.stats if s.name not in ("check", "assemble"))
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]


@pytest.mark.parametrize("name", ["range_check", "multi_public_bls"])
def test_weighted_bases_prove(fixtures, snarkjs, tmp_path, name):
    """checkpoint=1: every section's bases with GZKP's weighted copies for every window (the
    default from CONSOLIDATE_FROM bases), on BN254 and BLS12-381: snarkjs verifies."""
    fx = fixtures[name]
    P = Prover(fx.zkey, r1cs=fx.r1cs, device="cpu", checkpoint=1)
    assert all(b.prepared is None or b.prepared.M == 1 for b in P.bases.values())
    P.prove_to_files(fx.wtns, tmp_path / "proof.json", tmp_path / "public.json")
    assert snarkjs.verify_cli(fx.vk, tmp_path / "public.json", tmp_path / "proof.json")
    with pytest.raises(ValueError, match="checkpoint"):
        Prover(fx.zkey, device="cpu", checkpoint=0)


def test_auto_checkpoints_follow_size_and_budget():
    """M = 1 for sections of CONSOLIDATE_FROM to CONSOLIDATE_UPTO bases, in order of
    preference while the tables fit the budget; PLAIN for the rest."""
    import zktensor as zt
    from zktensor.groth16.key import CONSOLIDATE_FROM, CONSOLIDATE_UPTO, PLAIN, auto_checkpoints
    from zktensor.ops.msm import prepared_bytes
    G1, G2 = zt.group("bn254.g1"), zt.group("bn254.g2")
    n = CONSOLIDATE_FROM
    sections = {"B2": (G2, n, n), "H": (G1, n, n), "A": (G1, 3 * n, n - 1)}
    plain = sum(prepared_bytes(G, m, PLAIN, n_hint=k) for G, m, k in sections.values())
    extra = {name: prepared_bytes(G, m, 1, n_hint=k) - prepared_bytes(G, m, PLAIN, n_hint=k)
             for name, (G, m, k) in sections.items()}
    assert auto_checkpoints(sections, "cpu", budget=1 << 50) == {"B2": 1, "H": 1, "A": PLAIN}
    assert auto_checkpoints(sections, "cpu", budget=plain + extra["B2"]) == {"B2": 1, "H": PLAIN, "A": PLAIN}
    assert auto_checkpoints(sections, "cpu", budget=plain + extra["H"]) == {"B2": PLAIN, "H": 1, "A": PLAIN}
    assert auto_checkpoints(sections, "cpu", budget=plain) == {"B2": PLAIN, "H": PLAIN, "A": PLAIN}
    big = {"H": (G1, CONSOLIDATE_UPTO + 1, CONSOLIDATE_UPTO + 1), "A": (G1, 3 * CONSOLIDATE_UPTO, CONSOLIDATE_UPTO)}
    assert auto_checkpoints(big, "cpu", budget=1 << 50) == {"H": PLAIN, "A": 1}
    # the estimate is the table msm_prepare makes
    P = G1.tensor([G1.params.generator] * 40)
    for M in (1, 3, PLAIN):
        assert prepared_bytes(G1, 40, M) == zt.msm_prepare(P, checkpoint=M).memory_bytes()


def test_witness_msms_apart_for_large_keys(fixtures, snarkjs, tmp_path, monkeypatch):
    """Above MERGE_UPTO wires the G1 witness MSMs are three nodes over three tables, which
    share one msm_plan with B2 (G2) where their geometry agrees, and make their own where
    it does not (B2 consolidated here); the proofs are the kind snarkjs accepts."""
    from zktensor.groth16 import key as key_mod
    monkeypatch.setattr(key_mod, "MERGE_UPTO", 0)
    monkeypatch.setattr(key_mod, "PLAN_SHARE_SLACK", float("inf"))   # geometry alone (the live rule: below)
    fx = fixtures["multi_public"]
    auto = key_mod.auto_checkpoints
    for b2_checkpoint, shared in ((None, ("a", "b1", "c", "B2")), (1, ("a", "b1", "c"))):
        if b2_checkpoint is not None:
            monkeypatch.setattr(key_mod, "auto_checkpoints",
                                lambda *a, **k: {**auto(*a, **k), "B2": b2_checkpoint})
        P = Prover(fx.zkey, r1cs=fx.r1cs, device="cpu", helper=False)
        assert P.witness_tables == ("a", "b1", "c") and set(P.bases) == {"B2", "H", "a", "b1", "c"}
        assert P.shared_plan == shared
        P.prove_to_files(fx.wtns, tmp_path / "proof.json", tmp_path / "public.json", profile=True)
        assert {"msm_plan", "msm_a", "msm_b1", "msm_c", "msm_b2"} <= {s.name for s in P.last_run.stats}
        assert snarkjs.verify_cli(fx.vk, tmp_path / "public.json", tmp_path / "proof.json")
    # a config around prove applies to the plan and to every MSM that runs it
    with zt.config(msm={"reduction": "suffix"}):
        assert P.shared_plan == ("a", "b1", "c")
        P.prove_to_files(fx.wtns, tmp_path / "proof.json", tmp_path / "public.json")
    assert snarkjs.verify_cli(fx.vk, tmp_path / "public.json", tmp_path / "proof.json")
    # with the helper process running B2 and C (the split of a dense witness: `helper_split`,
    # which tests/prover/test_helper.py covers), A and B1 still share a plan here
    from zktensor.groth16 import prover as prover_mod
    monkeypatch.setattr(prover_mod, "helper_split", lambda words, domain: ("B2", "c"))
    P.helper = True
    P.prove_to_files(fx.wtns, tmp_path / "proof.json", tmp_path / "public.json", profile=True)
    names = {s.name for s in P.last_run.stats}
    assert {"msm_plan", "msm_a", "msm_b1", "msm_helper"} <= names and not {"msm_c", "msm_b2"} & names
    assert snarkjs.verify_cli(fx.vk, tmp_path / "public.json", tmp_path / "proof.json")
    P.close()


@pytest.mark.parametrize("slack", [1.1, 2.5, float("inf")])
def test_shared_plan_leaves_out_mostly_identity_tables(fixtures, snarkjs, tmp_path, monkeypatch, slack):
    """A witness MSM whose bases are mostly the identity (B1, B2 of a circuit with few wires
    in its B matrix) makes its own plan: in a shared one it would sum every other member's
    live bases. The rule (`key._plan_group`), restated here over the live bases counted from
    the .zkey's points: while the union of the members' live bases passes `slack` times the
    live bases of the member with the fewest, that member leaves. Every grouping proves."""
    from zktensor.groth16 import key as key_mod
    from zktensor.groth16.formats import read_zkey
    monkeypatch.setattr(key_mod, "MERGE_UPTO", 0)
    monkeypatch.setattr(key_mod, "PLAN_SHARE_SLACK", slack)
    fx = fixtures["multi_public"]
    z = read_zkey(fx.zkey)
    n = z.n_vars
    sections = {"a": list(z.A), "b1": list(z.B1), "B2": list(z.B2),
                "c": [None] * (z.n_public + 1) + list(z.C)}          # C's first wires have no points
    live = {t: {i for i, P in enumerate(pts[:n]) if P is not None} for t, pts in sections.items()}
    group = ["a", "b1", "c", "B2"]
    while len(group) > 1:
        fewest = min(group, key=lambda t: len(live[t]))
        if len(live[fewest]) * slack >= len(set().union(*(live[t] for t in group))):
            break
        group.remove(fewest)
    want = tuple(group) if len(group) > 1 else ()
    P = Prover(fx.zkey, r1cs=fx.r1cs, device="cpu", helper=False)
    assert P.shared_plan == want
    P.prove_to_files(fx.wtns, tmp_path / "proof.json", tmp_path / "public.json", profile=True)
    assert ("msm_plan" in {s.name for s in P.last_run.stats}) == bool(want)
    assert snarkjs.verify_cli(fx.vk, tmp_path / "public.json", tmp_path / "proof.json")
