"""`zktensor setup`: keys snarkjs proves and verifies with, and our prover too; bad inputs and
outputs refused before any work; the key and its verification key written as a pair."""
import contextlib
import io
import json
import os
from pathlib import Path

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


# -- refusals: before any work, one line naming the file, nothing written ----------------------

DEMO_R1CS = Path(__file__).resolve().parents[2] / "examples" / "demo" / "demo.r1cs"
OLD_KEY, OLD_VK = b"OLD KEY", b"OLD VK"


def _setup_in_process(*argv):
    from zktensor.cli import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["setup", *map(str, argv), "--device", "cpu"])
    return rc, out.getvalue(), err.getvalue()


def _bad_setup(tmp_path, name):
    """(argv, the path the message must name) for one bad input of `zktensor setup`."""
    r1cs = tmp_path / "c.r1cs"
    data = DEMO_R1CS.read_bytes()
    r1cs.write_bytes({"truncated r1cs": data[:len(data) // 2], "empty r1cs": b"",
                      "wrong magic": b"zkey" + data[4:], "header only": data[:12]}.get(name, data))
    key, vk = tmp_path / "k.zkey", tmp_path / "vk.json"
    key.write_bytes(OLD_KEY)
    vk.write_bytes(OLD_VK)
    (tmp_path / "sub").mkdir()
    return {"truncated r1cs": ([r1cs, key, "--vk", vk], r1cs),
            "empty r1cs": ([r1cs, key, "--vk", vk], r1cs),
            "wrong magic": ([r1cs, key, "--vk", vk], r1cs),
            "header only": ([r1cs, key, "--vk", vk], r1cs),
            "missing r1cs": ([tmp_path / "nope.r1cs", key, "--vk", vk], tmp_path / "nope.r1cs"),
            "key = r1cs": ([r1cs, r1cs, "--vk", vk], r1cs),
            "vk = r1cs": ([r1cs, key, "--vk", r1cs], r1cs),
            "vk = key": ([r1cs, key, "--vk", key], key),
            "key in a missing directory": ([r1cs, tmp_path / "nodir" / "k.zkey", "--vk", vk],
                                           tmp_path / "nodir" / "k.zkey"),
            "key is a directory": ([r1cs, tmp_path / "sub", "--vk", vk], tmp_path / "sub"),
            "key under a file": ([r1cs, vk / "k.zkey"], vk / "k.zkey")}[name]


@pytest.mark.parametrize("name", ["truncated r1cs", "empty r1cs", "wrong magic", "header only", "missing r1cs",
                                  "key = r1cs", "vk = r1cs", "vk = key", "key in a missing directory",
                                  "key is a directory", "key under a file"])
def test_setup_refuses_bad_inputs_and_outputs(tmp_path, name):
    argv, blamed = _bad_setup(tmp_path, name)
    before = {p: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    rc, out, err = _setup_in_process(*argv)
    assert rc in (1, 2), (name, rc, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("zktensor: error: "), (name, err)
    assert str(blamed) in lines[0], (name, err)
    assert "INSECURE" not in err and "Traceback" not in err and out == ""
    assert {p: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before     # nothing written
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["c.r1cs", "k.zkey", "vk.json", "sub"])


def test_setup_writes_the_key_and_its_vk_as_a_pair(tmp_path, monkeypatch):
    """A failure writing the verification key leaves the old key too (not a new key beside an
    old verification key); then a good run writes both, and the vk is the new key's."""
    from zktensor.groth16 import outputs
    from zktensor.groth16.vk import vk_json
    key, vk = tmp_path / "k.zkey", tmp_path / "vk.json"
    key.write_bytes(OLD_KEY)
    vk.write_bytes(OLD_VK)
    real = os.replace

    def vk_fails(src, dst):
        if str(dst) == str(vk):
            raise OSError(28, "No space left on device")
        return real(src, dst)
    monkeypatch.setattr(outputs.os, "replace", vk_fails)
    rc, out, err = _setup_in_process(DEMO_R1CS, key, "--vk", vk)
    assert rc == 1 and "Traceback" not in err
    lines = [line for line in err.strip().splitlines() if "INSECURE" not in line]
    assert lines == [f"zktensor: error: {vk}: cannot write (No space left on device); no output was changed"]
    assert key.read_bytes() == OLD_KEY and vk.read_bytes() == OLD_VK
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.zkey", "vk.json"]
    monkeypatch.setattr(outputs.os, "replace", real)
    rc, out, err = _setup_in_process(DEMO_R1CS, key, "--vk", vk)
    assert rc == 0, err
    assert json.loads(vk.read_text()) == vk_json(read_zkey(key))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.zkey", "vk.json"]
