"""`zktensor setup`: keys snarkjs proves and verifies with, and our prover too."""
import json

import pytest

from test_cli import cli
from zktensor.groth16.formats import read_zkey
from zktensor.groth16.prover import Prover
from zktensor.groth16.setup import domain_power, setup


def test_domain_power_is_snarkjs():
    # cirPower = log2(nConstraints + nPublic) + 1 (floor): always room for the public rows
    assert [domain_power(c, p) for c, p in ((1, 0), (3, 1), (4, 3), (7, 0), (8, 0))] == [1, 3, 3, 3, 4]


@pytest.mark.parametrize("name", ["multi_public", "multiplier_bls"])
def test_setup_keys_work_with_snarkjs_and_ours(fixtures, snarkjs, tmp_path, name):
    fx = fixtures[name]
    zkey, vk = tmp_path / "k.zkey", tmp_path / "vk.json"
    r = cli("setup", fx.r1cs, zkey, "--vk", vk, "--curve", fx.curve, "--device", "cpu")
    assert r.returncode == 0, r.stderr
    assert "INSECURE" in r.stderr
    theirs = read_zkey(fx.zkey)
    ours = read_zkey(zkey)
    assert (ours.n_vars, ours.n_public, ours.domain_size) == (theirs.n_vars, theirs.n_public, theirs.domain_size)
    assert bytes(ours.coefs.raw) == bytes(theirs.coefs.raw)     # same section 4, byte for byte
    # snarkjs proves with our key; its proof verifies under our verification key
    p, pub = tmp_path / "p.json", tmp_path / "pub.json"
    snarkjs.run("groth16", "prove", zkey, fx.wtns, p, pub)
    assert snarkjs.verify_cli(vk, pub, p)
    # snarkjs exports the same verification key from our zkey
    snarkjs.run("zkey", "export", "verificationkey", zkey, tmp_path / "vk2.json")
    assert json.loads((tmp_path / "vk2.json").read_text()) == json.loads(vk.read_text())
    # our prover with our key
    p2, pub2 = tmp_path / "p2.json", tmp_path / "pub2.json"
    Prover(zkey, r1cs=fx.r1cs, device="cpu").prove_to_files(fx.wtns, p2, pub2)
    assert snarkjs.verify_cli(vk, pub2, p2)
    assert pub2.read_bytes() == fx.public.read_bytes()


def test_setup_refuses_the_wrong_curve(fixtures, tmp_path):
    fx = fixtures["multiplier"]
    with pytest.raises(ValueError, match="not bls12381"):
        setup(fx.r1cs, tmp_path / "k.zkey", curve="bls12381")
    assert not (tmp_path / "k.zkey").exists()
