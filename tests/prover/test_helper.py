"""The MSM helper process (`groth16.helper`): its MSMs equal Python-int sums, its proofs
verify, its failures are reported or survived, and it goes away with its Prover."""
import os
import random
import signal
import time

import pytest

from tests.oracles import ec, snarkjs_layout as sl
from zktensor.groth16.formats import read_wtns, read_zkey
from zktensor.groth16.helper import HelperError
from zktensor.groth16.prover import HELPER_UNITS, Prover, describe_run, words_to_limbs
from zktensor.runtime.threads import num_threads
from zktensor.kernels.field_programs import to_mont
from zktensor.tensor import FieldTensor

needs_two_cores = pytest.mark.skipif(num_threads() < 2, reason="the helper is for machines with 2+ cores")


def _alive(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return False
    return done == 0


def _oracle(G, raw: bytes, scalars: list[int]):
    """sum_i s_i·P_i by double-and-add on Python ints (tests/oracles/ec.py), the points parsed
    from the key's bytes as snarkjs reads them (tests/oracles/snarkjs_layout.py): neither is
    code the prover runs."""
    pts = sl.points_from_lem(G.params, raw)
    assert len(pts) == len(scalars)
    return ec.msm(G.params, pts, scalars)


@pytest.mark.parametrize("name", ["multi_public", "multiplier_bls"])
def test_helper_msms_equal_python_int_sums(fixtures, name):
    """B2 and C from the helper process against Python-int MSMs of the key's points; the
    same from this process (`_witness_msms`) for the units the helper does not run."""
    fx = fixtures[name]
    z = read_zkey(fx.zkey)
    w = list(read_wtns(fx.wtns))
    with Prover(z, device="cpu", helper=True) as P:
        h = P._helper_for(None)
        limbs = words_to_limbs(P.witness_words(fx.wtns)[0], P.device)
        s = FieldTensor(P.F, to_mont(P.F, limbs))          # as the graph's ``scalars`` node
        got = h.run(("witness", HELPER_UNITS, None), {"w": s.data}, threads=1)
        here = P._witness_msms(("a", "b1"), s)
        # the helper's share of H: the last terms, a second request over its second input
        D = P.domain_size
        rng = random.Random(5)
        p = [rng.randrange(P.F.p) for _ in range(D)]
        lo = D // 3
        h_part = h.run(("h", lo), {"p": P.F.tensor(p[lo:]).data}, threads=1)["H"]
    assert set(got) == set(HELPER_UNITS)
    k = z.n_public + 1

    def affine(p):
        return p.reshape(1).to_affine()[0]
    assert affine(got["B2"]) == _oracle(P.G2, z.B2.raw, w)
    assert affine(got["c"]) == _oracle(P.G1, z.C.raw, w[k:])
    assert affine(here["a"]) == _oracle(P.G1, z.A.raw, w)
    assert affine(here["b1"]) == _oracle(P.G1, z.B1.raw, w)
    size = len(z.H.raw) // D
    assert affine(h_part) == _oracle(P.G1, bytes(z.H.raw)[lo * size:], p[lo:])
    assert not _alive(h.pid)            # the context manager stopped it


@pytest.mark.parametrize("name", ["multi_public", "multiplier_bls"])
def test_helper_makes_the_blinding_terms(fixtures, name):
    """A request with (r, s) also returns the blinding terms, s·A + r·B1 from its own A and
    B1, each against Python-int sums of the key's points."""
    fx = fixtures[name]
    z = read_zkey(fx.zkey)
    w = list(read_wtns(fx.wtns))
    r, s = 0x1234567 + len(name), 0x7654321
    with Prover(z, device="cpu", helper=True) as P:
        h = P._helper_for(None)
        limbs = words_to_limbs(P.witness_words(fx.wtns)[0], P.device)
        got = h.run(("witness", ("B2", "a", "b1", "c"), (r, s)), {"w": FieldTensor(P.F, to_mont(P.F, limbs)).data},
                    threads=1)
    G1, G2, q = P.G1.params, P.G2.params, P.F.p
    bl = got["blinding"]
    A, B1 = _oracle(P.G1, z.A.raw, w), _oracle(P.G1, z.B1.raw, w)
    assert (bl["r"], bl["s"]) == (r, s)
    assert bl["r_delta_1"] == ec.msm(G1, [z.delta_1], [r])
    assert bl["c_fixed"] == ec.msm(G1, [z.alpha_1, z.beta_1, z.delta_1], [s, r, r * s % q])
    assert bl["s_delta_2"] == ec.msm(G2, [z.delta_2], [s])
    assert bl["ab"] == ec.msm(G1, [A, B1], [s, r])


@needs_two_cores
def test_prover_uses_the_helper_and_snarkjs_verifies(fixtures, snarkjs, tmp_path):
    fx = fixtures["range_check"]
    P = Prover(fx.zkey, r1cs=fx.r1cs, device="cpu")          # helper=None: on with 2+ cores
    P.prove_to_files(fx.wtns, tmp_path / "proof.json", tmp_path / "public.json", profile=True)
    names = {s.name for s in P.last_run.stats}
    assert "msm_helper" in names and "msm_b2" not in names
    assert P.last_run.by_name()["msm_helper"].lane == "helper"
    assert describe_run(P.last_run).endswith(" + helper process")
    assert snarkjs.verify_cli(fx.vk, tmp_path / "public.json", tmp_path / "proof.json")
    # one worker: a sequential proof, all in this process
    P.prove(fx.wtns, profile=True, workers=1)
    names = {s.name for s in P.last_run.stats}
    assert "msm_helper" not in names and "msm_b2" in names
    assert describe_run(P.last_run) == "graph, 1 worker"
    pid = P._helper.pid
    P.close()
    assert not _alive(pid)


@needs_two_cores
def test_lost_helper_is_survived(fixtures, snarkjs, tmp_path):
    """A helper killed between proofs: the next proof warns, computes the helper's MSMs in
    this process, and verifies; later proofs do not fork again."""
    fx = fixtures["multi_public"]
    P = Prover(fx.zkey, r1cs=fx.r1cs, device="cpu", helper=True)
    P.prove(fx.wtns)
    pid = P._helper.pid
    os.kill(pid, 9)
    time.sleep(0.05)
    with pytest.warns(RuntimeWarning, match="helper process .* died"):
        P.prove_to_files(fx.wtns, tmp_path / "proof.json", tmp_path / "public.json")
    assert snarkjs.verify_cli(fx.vk, tmp_path / "public.json", tmp_path / "proof.json")
    P.prove(fx.wtns, profile=True)
    assert "msm_helper" not in {s.name for s in P.last_run.stats}
    P.close()


@needs_two_cores
def test_helper_outlives_ctrl_c(fixtures):
    """SIGINT (Ctrl-C reaches the whole process group) leaves the helper serving."""
    fx = fixtures["multi_public"]
    with Prover(fx.zkey, device="cpu", helper=True) as P:
        P.prove(fx.wtns, check=False)
        os.kill(P._helper.pid, signal.SIGINT)
        time.sleep(0.05)
        assert _alive(P._helper.pid)
        P.prove(fx.wtns, check=False, profile=True)
        assert "msm_helper" in {s.name for s in P.last_run.stats}


def test_helper_errors_carry_the_child_traceback(fixtures):
    fx = fixtures["multi_public"]
    P = Prover(fx.zkey, device="cpu", helper=True)

    def broken(units, s):
        raise ZeroDivisionError("from the helper's work")
    P._witness_msms = broken                # before the fork: the child inherits it
    with pytest.raises(HelperError, match="(?s)ZeroDivisionError: from the helper's work"):
        P.prove(fx.wtns, check=False)
    assert P._helper.alive                  # a raising request does not end the helper
    P.close()


def test_helper_is_for_cpu_provers(fixtures):
    with pytest.raises(ValueError, match="CPU provers only"):
        Prover(fixtures["multi_public"].zkey, device="meta", helper=True)


def test_helper_split_follows_the_witness_weight():
    """A dense witness leaves A and B1 here (and C too from C_HERE_FROM); one of 0s and 1s
    sends all four witness MSMs to the helper; the rule's edge is 6·s = domain + MAIN_EXTRA."""
    import numpy as np
    from zktensor.groth16 import prover as pv
    rng = np.random.default_rng(7)
    n, L = 4096, 8
    light = ("B2", "a", "b1", "c")
    dense = rng.integers(0, 2**32, size=(n, L), dtype=np.uint32)
    bits = np.zeros((n, L), dtype=np.uint32)
    bits[:, 0] = rng.integers(0, 2, size=n)
    assert pv.helper_split(dense, n) == ("B2", "c")
    assert pv.helper_split(dense, pv.C_HERE_FROM) == ("B2",)
    assert pv.helper_split(bits, n) == light
    # k dense values and no ones: light exactly while 6·k <= domain + MAIN_EXTRA
    edge = (n + pv.MAIN_EXTRA) // 6
    for k, units in ((edge, light), (edge + 1, ("B2", "c"))):
        w = np.zeros((2 * edge + 8, L), dtype=np.uint32)
        w[:k, 1] = 5                       # a value > 1 in a higher word: dense
        assert pv.helper_split(w, n) == units, k


@needs_two_cores
@pytest.mark.parametrize("chosen", [("B2",), ("B2", "c"), ("B2", "a", "b1", "c")])
def test_every_helper_split_proves_and_snarkjs_verifies(fixtures, snarkjs, tmp_path, monkeypatch, chosen):
    """Each split of the witness MSMs between the processes gives a proof snarkjs accepts;
    where the helper has all four, this process runs its nodes on one worker."""
    from zktensor.groth16 import prover as pv
    monkeypatch.setattr(pv, "helper_split", lambda words, domain: chosen)
    fx = fixtures["multi_public"]
    with Prover(fx.zkey, r1cs=fx.r1cs, device="cpu") as P:
        P.prove_to_files(fx.wtns, tmp_path / "proof.json", tmp_path / "public.json", profile=True)
        local = {s.name for s in P.last_run.stats} & {"msm_ab1c", "msm_a", "msm_b1", "msm_c"}
        workers = P.last_run.workers
        nodes = {s.name for s in P.last_run.stats}
    assert bool(local) == (len(chosen) < 4)
    assert (workers == 1) == (len(chosen) == 4)
    # the blinding where A and B1 are: in the helper's request, or nodes of this process
    blinding_here = {"blinding", "blind_ab"}
    assert blinding_here <= nodes if len(chosen) < 4 else not blinding_here & nodes
    assert snarkjs.verify_cli(fx.vk, tmp_path / "public.json", tmp_path / "proof.json")


def test_h_share_follows_the_split_and_the_domain():
    """The helper takes its domain's share of H's points (`H_SHARES`) after all four witness
    MSMs; none after a dense witness's split or below the first domain listed; the graph
    refuses a share outside 0 .. domain - 1."""
    from zktensor.groth16 import prover as pv
    light = ("B2", "a", "b1", "c")
    for (D, f), nxt in zip(pv.H_SHARES, pv.H_SHARES[1:] + ((None, None),)):
        assert pv.h_share(D, light) == int(f * D) > 0
        if nxt[0] is not None and nxt[0] > 2 * D:
            assert pv.h_share(2 * D, light) == int(f * 2 * D)
    assert pv.h_share(pv.H_SHARES[0][0] // 2, light) == 0
    top = pv.H_SHARES[-1]
    assert pv.h_share(4 * top[0], light) == int(top[1] * 4 * top[0])
    D = pv.H_SHARES[0][0]
    assert pv.h_share(4 * D, ("B2",)) == pv.h_share(4 * D, ("B2", "c")) == 0


def test_graph_refuses_a_share_of_h_past_the_domain(fixtures):
    fx = fixtures["multi_public"]
    P = Prover(fx.zkey, device="cpu", helper=False)
    for bad in (-1, P.domain_size):
        with pytest.raises(ValueError, match="h_helper"):
            P.graph(helper=True, h_helper=bad)
    assert "msm_h_helper" in P.graph(helper=True, h_helper=1).nodes
    import zktensor as zt
    with zt.config(target="triton"), pytest.raises(ValueError, match="device graph has no helper"):
        P.graph(h_helper=1)


@needs_two_cores
def test_helper_share_of_h_proves_and_survives_a_lost_helper(fixtures, snarkjs, tmp_path, monkeypatch):
    """A third of H's terms in the helper (forced at a fixture's size): snarkjs accepts the
    proof; with the helper killed, the next proof computes both shares here and verifies."""
    from zktensor.groth16 import prover as pv
    monkeypatch.setattr(pv, "h_share", lambda domain, units: domain // 3)
    fx = fixtures["multi_public"]
    with Prover(fx.zkey, r1cs=fx.r1cs, device="cpu", helper=True) as P:
        P.prove_to_files(fx.wtns, tmp_path / "proof.json", tmp_path / "public.json", profile=True)
        assert {"msm_h", "msm_h_helper", "msm_helper"} <= {s.name for s in P.last_run.stats}
        assert P.last_run.by_name()["msm_h_helper"].lane == "helper"
        assert snarkjs.verify_cli(fx.vk, tmp_path / "public.json", tmp_path / "proof.json")
        os.kill(P._helper.pid, 9)
        time.sleep(0.05)
        with pytest.warns(RuntimeWarning, match="helper process .* died") as caught:
            P.prove_to_files(fx.wtns, tmp_path / "proof2.json", tmp_path / "public2.json")
        assert snarkjs.verify_cli(fx.vk, tmp_path / "public2.json", tmp_path / "proof2.json")
        # one warning, though both helper nodes found it gone (the second gets HelperGone)
        assert len([w for w in caught if "helper process" in str(w.message)]) == 1
