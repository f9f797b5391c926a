"""The prover without torch (`groth16.numpy_prover`): the same proofs as the tensor prover,
snarkjs-verifiable, from a `zktensor prove` that never imports torch."""
import json
import os
import subprocess
import sys
import types

import pytest

from fixture_support import ROOT
from zktensor.groth16 import blinding, prover as tensor_prover
from zktensor.groth16.formats import read_wtns
from zktensor.groth16.numpy_prover import NumpyProver, Unavailable
from zktensor.kernels import msm_small_cpu

pytestmark = [pytest.mark.snarkjs,
              pytest.mark.skipif(not msm_small_cpu.available(), reason="the lanes loop needs AVX-512")]

CASES = ["multiplier", "no_public", "multi_public", "multi_public_bls", "range_check", "poseidon_like"]




def _fixed_blinding(monkeypatch, r, s):
    vals = iter([r - 1, s - 1])          # `blinding.draw` draws randbelow(q - 1) + 1
    monkeypatch.setattr(blinding, "secrets", types.SimpleNamespace(randbelow=lambda q: next(vals)))


@pytest.mark.parametrize("name", CASES)
def test_same_proof_as_the_tensor_prover(fixtures, snarkjs, monkeypatch, name, tmp_path):
    """For the same r, s both provers make the same points; the proof verifies in snarkjs."""
    fx = fixtures[name]
    monkeypatch.setenv("ZKTENSOR_TABLE_CACHE", "on")
    monkeypatch.setenv("ZKTENSOR_TABLE_CACHE_DIR", str(tmp_path / "tables"))
    with pytest.raises(Unavailable, match="no cached tables"):
        NumpyProver.load(fx.zkey)
    tp = tensor_prover.Prover(fx.zkey, device="cpu", helper=False)       # builds and stores the tables
    prover = NumpyProver.load(fx.zkey)
    w = read_wtns(fx.wtns)
    r, s = 0x1234567 + len(name), 0x7654321
    got, public = prover.prove(w, rs=(r, s))
    with monkeypatch.context() as m:
        _fixed_blinding(m, r, s)
        want, want_public = tp.prove(w)
    assert got == want and public == want_public
    proof, pub = tmp_path / "proof.json", tmp_path / "public.json"
    from zktensor.groth16.outputs import write_proof_pair
    write_proof_pair(proof, pub, got, public)
    assert snarkjs.verify_cli(fx.vk, pub, proof)
    other, _ = prover.prove(w)                       # r, s from the CSPRNG: another proof, valid too
    assert other != got and prover.verify(other, public)


def test_a_bad_witness_is_refused(fixtures, monkeypatch, tmp_path):
    fx = fixtures["range_check"]
    monkeypatch.setenv("ZKTENSOR_TABLE_CACHE_DIR", str(tmp_path / "tables"))
    tensor_prover.Prover(fx.zkey, device="cpu", helper=False)
    prover = NumpyProver.load(fx.zkey)
    w = list(read_wtns(fx.wtns).values)
    w[-1] = (w[-1] + 1) % prover.F.p
    from zktensor.groth16.formats.errors import WitnessError
    with pytest.raises(WitnessError, match="does not verify"):
        prover.prove(w)
    with pytest.raises(WitnessError, match="w\\[0\\] must be 1"):
        prover.prove([0] + w[1:])
    with pytest.raises(WitnessError, match="values"):
        prover.prove(w[:-1])


@pytest.mark.parametrize("name", ["range_check", "multi_public_bls"])
def test_the_r1cs_check_names_the_tensor_provers_constraint(fixtures, monkeypatch, tmp_path, name):
    """With the .r1cs, a witness that breaks constraints is refused naming the first one
    that fails, the one the tensor prover names; check=False proves it anyway, unverified."""
    fx = fixtures[name]
    monkeypatch.setenv("ZKTENSOR_TABLE_CACHE_DIR", str(tmp_path / "tables"))
    tp = tensor_prover.Prover(fx.zkey, r1cs=fx.r1cs, device="cpu", helper=False)
    prover = NumpyProver.load(fx.zkey, r1cs=fx.r1cs)
    from zktensor.groth16.formats.errors import WitnessError
    w = list(read_wtns(fx.wtns).values)
    for k in (len(w) - 1, len(w) // 2):
        bad = w[:k] + [(w[k] + 1) % prover.F.p] + w[k + 1:]
        with pytest.raises(WitnessError) as want:
            tp.prove(bad)
        with pytest.raises(WitnessError) as got:
            prover.prove(bad)
        assert got.value.constraint == want.value.constraint is not None
        assert f"constraint {got.value.constraint} " in str(got.value)
        proof, _ = prover.prove(bad, check=False)
        assert proof.pi_a is not None
    assert prover.prove(w)[1] == tp.prove(w)[1]


def _cli(*args, env):
    """`zktensor prove` in a fresh interpreter; prints whether torch was imported."""
    code = ("import sys; from zktensor import cli; rc = cli.main(sys.argv[1:]); "
            "print('torch imported:', 'torch' in sys.modules); sys.exit(rc)")
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=900)


def test_cli_proves_without_torch(fixtures, snarkjs, tmp_path):
    """The first proof with a key makes its tables (the tensor prover); the next ones in a
    process of their own prove without importing torch, and snarkjs verifies them.
    `--engine numpy` says why it cannot prove; `--engine tensor` and --r1cs use torch."""
    fx = fixtures["poseidon_like"]
    env = dict(os.environ, ZKTENSOR_TABLE_CACHE_DIR=str(tmp_path / "tables"), ZKTENSOR_TABLE_CACHE="on",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    args = ["prove", "--no-serve", fx.zkey, fx.wtns, proof, public]
    r = _cli(*args, "--engine", "numpy", env=env)
    assert r.returncode == 1 and "no cached tables" in r.stderr and not proof.exists()
    for expect_torch in (True, False, False):
        r = _cli(*args, env=env)
        assert r.returncode == 0, r.stderr
        assert f"torch imported: {expect_torch}" in r.stdout
        assert snarkjs.verify_cli(fx.vk, public, proof)
        assert json.loads(public.read_text()) == json.loads(fx.public.read_text())
    r = _cli(*args, "--r1cs", fx.r1cs, env=env)              # the witness checked, still without torch
    assert r.returncode == 0 and "torch imported: False" in r.stdout, r.stderr
    assert snarkjs.verify_cli(fx.vk, public, proof)
    r = _cli(*args, "--engine", "tensor", env=env)
    assert r.returncode == 0 and "torch imported: True" in r.stdout, r.stderr
    r = _cli(*args, "--engine", "numpy", "--profile", env=env)
    assert r.returncode == 2 and "--profile" in r.stderr


def test_a_corrupt_table_entry_is_not_used(fixtures, monkeypatch, tmp_path, capsys):
    fx = fixtures["range_check"]
    monkeypatch.setenv("ZKTENSOR_TABLE_CACHE_DIR", str(tmp_path / "tables"))
    tensor_prover.Prover(fx.zkey, device="cpu", helper=False)
    (entry,) = (tmp_path / "tables").iterdir()
    rows = next(entry.glob("*.rows.bin"))
    data = bytearray(rows.read_bytes())
    data[100] ^= 1
    rows.write_bytes(bytes(data))                  # a new change time: checked in full again
    with pytest.raises(Unavailable, match="no cached tables"):
        NumpyProver.load(fx.zkey)
    assert "corrupt" in capsys.readouterr().err and not entry.exists()
