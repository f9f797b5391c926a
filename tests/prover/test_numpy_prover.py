"""The prover without torch (`groth16.numpy_prover`): the same proofs as the tensor prover,
snarkjs-verifiable, from a `zktensor prove` that never imports torch."""
import json
import os
import subprocess
import sys
import time
import types

import pytest

from fixture_support import ROOT
from zktensor.groth16 import blinding, prover as tensor_prover
from zktensor.groth16.formats import read_wtns
from zktensor.groth16.key import PLAIN
from zktensor.groth16.numpy_prover import NumpyProver, Unavailable
from zktensor.kernels import msm_small_cpu

pytestmark = [pytest.mark.snarkjs,
              pytest.mark.skipif(not msm_small_cpu.available(), reason="the lanes loop needs AVX-512")]

CASES = ["multiplier", "no_public", "multi_public", "multi_public_bls", "range_check", "poseidon_like"]




def _fixed_blinding(monkeypatch, r, s):
    vals = iter([r - 1, s - 1])          # `blinding.draw` draws randbelow(q - 1) + 1
    monkeypatch.setattr(blinding, "secrets", types.SimpleNamespace(randbelow=lambda q: next(vals)))


def _entries(d):
    return {e.name: json.loads((e / "meta.json").read_text()) for e in d.iterdir() if not e.name.startswith(".")}


@pytest.mark.parametrize("name", CASES)
def test_same_proof_as_the_tensor_prover(fixtures, snarkjs, monkeypatch, name, tmp_path):
    """A new key's tables made without torch (`numpy_tables`) are the tensor prover's rows;
    over either entry, for the same r, s both provers make the same points; the proof
    verifies in snarkjs."""
    fx = fixtures[name]
    tables = tmp_path / "tables"
    monkeypatch.setenv("ZKTENSOR_TABLE_CACHE", "on")
    monkeypatch.setenv("ZKTENSOR_TABLE_CACHE_DIR", str(tables))
    own = NumpyProver.load(fx.zkey)                                       # makes its own entry
    (host_entry, host_meta), = _entries(tables).items()
    assert host_meta["validated"] == {"zkey_check": "zkey-check-v1"}
    assert {t["scalars"]["__kind__"] for t in host_meta["tables"].values() if t} == {"PlainRows"}
    # the tensor prover's plain tables (one checkpoint), as `zktensor prove` makes them
    tp = tensor_prover.Prover(fx.zkey, device="cpu", helper=False, checkpoint=PLAIN)
    (tensor_entry, _), = ((k, v) for k, v in _entries(tables).items() if k != host_entry)
    for unit in ("a", "b1", "c", "B2", "H"):
        b = tp.bases.get(unit) or tp.bases["ab1c"]
        i = ("a", "b1", "c").index(unit) if b.name == "ab1c" else 0
        off, n, pn = b.offsets[i], b.sizes[i], b.prepared.n
        rows, T = b.prepared.rows.numpy(), own.tables[unit]
        assert T.n == n and T.neg_off == n + 1 and T.rows.shape == (2 * (n + 1), rows.shape[1])
        assert (T.rows[:n] == rows[off:off + n]).all(), unit                         # the bases
        assert (T.rows[n + 1:2 * n + 1] == rows[pn + 1 + off:pn + 1 + off + n]).all(), unit   # negated
        assert (T.rows[[n, 2 * n + 1]] == rows[[pn, 2 * pn + 1]]).all(), unit        # the generator, ±
    w = read_wtns(fx.wtns)
    r, s = 0x1234567 + len(name), 0x7654321
    with monkeypatch.context() as m:
        _fixed_blinding(m, r, s)
        want, want_public = tp.prove(w)
    for entry in (host_entry, tensor_entry):
        (tables / entry / "used").touch()            # load_host maps the most recently used entry
        os.utime(tables / entry / "used", (2e9, 2e9))
        prover = NumpyProver.load(fx.zkey)
        assert {os.path.dirname(t.rows.filename) for t in prover.tables.values()} == {str(tables / entry)}
        got, public = prover.prove(w, rs=(r, s))
        assert got == want and public == want_public
        os.utime(tables / entry / "used", (1e9, 1e9))
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
    """The first proof with a key makes its tables without torch (`numpy_tables`, said on
    stderr), and so do the next ones in a process of their own; snarkjs verifies them.
    With the table cache off, `--engine numpy` says why it cannot prove; `--engine tensor`
    uses torch, and --r1cs does not."""
    fx = fixtures["poseidon_like"]
    env = dict(os.environ, ZKTENSOR_TABLE_CACHE_DIR=str(tmp_path / "tables"), ZKTENSOR_TABLE_CACHE="on",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    args = ["prove", "--no-serve", fx.zkey, fx.wtns, proof, public]
    r = _cli(*args, "--engine", "numpy", env=dict(env, ZKTENSOR_TABLE_CACHE="off"))
    assert r.returncode == 1 and "table cache is off" in r.stderr and not proof.exists()
    for first in (True, False, False):
        r = _cli(*args, env=env)
        assert r.returncode == 0, r.stderr
        assert "torch imported: False" in r.stdout
        assert ("preparing the MSM tables of circuit_final.zkey" in r.stderr) == first, r.stderr
        assert snarkjs.verify_cli(fx.vk, public, proof)
        assert json.loads(public.read_text()) == json.loads(fx.public.read_text())
    r = _cli(*args, "--r1cs", fx.r1cs, env=env)              # the witness checked, still without torch
    assert r.returncode == 0 and "torch imported: False" in r.stdout, r.stderr
    assert snarkjs.verify_cli(fx.vk, public, proof)
    r = _cli(*args, "--engine", "tensor", env=env)
    assert r.returncode == 0 and "torch imported: True" in r.stdout, r.stderr
    r = _cli(*args, "--engine", "numpy", "--profile", env=env)
    assert r.returncode == 2 and "--profile" in r.stderr


@pytest.mark.parametrize("maker", ["tensor", "numpy"])
def test_a_corrupt_table_entry_is_not_used(fixtures, monkeypatch, tmp_path, capsys, maker):
    """A flipped bit in a mapped table (either prover's entry) is reported, the entry
    removed, and the tables made again (without torch); the proofs still verify."""
    fx = fixtures["range_check"]
    monkeypatch.setenv("ZKTENSOR_TABLE_CACHE_DIR", str(tmp_path / "tables"))
    if maker == "tensor":
        tensor_prover.Prover(fx.zkey, device="cpu", helper=False)
    else:
        NumpyProver.load(fx.zkey)            # which also remembers its files as checked
        time.sleep(0.1)                      # so that the change below gets a later change time
    (entry,) = (tmp_path / "tables").iterdir()
    rows = next(entry.glob("*.rows.bin"))
    data = bytearray(rows.read_bytes())
    data[100] ^= 1
    rows.write_bytes(bytes(data))                  # a new change time: checked in full again
    prover = NumpyProver.load(fx.zkey)
    err = capsys.readouterr().err
    assert f"{entry} is corrupt" in err and err.index("corrupt") < err.rindex("preparing the MSM tables")
    (again,) = (tmp_path / "tables").iterdir()       # this code's entry (the same name as the numpy one's)
    assert rows.read_bytes() != bytes(data) if again == entry else not entry.exists()
    proof, public = prover.prove(read_wtns(fx.wtns))
    assert prover.verify(proof, public)


def test_unavailable_with_the_table_cache_off(fixtures, monkeypatch):
    monkeypatch.setenv("ZKTENSOR_TABLE_CACHE", "off")
    with pytest.raises(Unavailable, match="the table cache is off"):
        NumpyProver.load(fixtures["multiplier"].zkey)


def test_rows_made_under_another_target_are_found(fixtures, monkeypatch, tmp_path):
    """The rows are the CPU target's whatever the configuration: made with the Triton target
    configured (as `zktensor.prebuild` runs the warmup), they are found, and prove."""
    import zktensor as zt
    monkeypatch.setenv("ZKTENSOR_TABLE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("ZKTENSOR_TABLE_CACHE", "on")
    fx = fixtures["multiplier"]
    with zt.config(target="triton"):
        NumpyProver.load(fx.zkey)
    (meta,) = _entries(tmp_path).values()
    assert (meta["device"], meta["target"]) == ("cpu", "cpu")
    prover = NumpyProver.load(fx.zkey)
    assert len(_entries(tmp_path)) == 1                  # found, not made again
    proof, public = prover.prove(fx.wtns)
    assert prover.verify(proof, public)


def test_a_bad_key_is_refused_before_any_table_is_stored(fixtures, monkeypatch, tmp_path):
    """A key with a point outside its subgroup: FormatError naming it, nothing in the cache."""
    from zktensor.groth16.formats import FormatError
    from zktensor.groth16.formats.binfile import read_binfile
    from zktensor.groth16.formats.points import codec
    from zktensor.algebra.curves import group, in_subgroup, is_on_curve
    fx = fixtures["multiplier"]
    G = group("bn254.g2")
    for i in range(1, 200):
        x = G.F.elem(i, 1)
        y = G.F.sqrt(G.F.add(G.F.mul(G.F.mul(x, x), x), G.b))
        if y is not None and is_on_curve(G, (x, y)) and not in_subgroup(G, (x, y)):
            break
    data = bytearray(fx.zkey.read_bytes())
    sec = next(s for s in read_binfile(fx.zkey, b"zkey", 1).sections if s.id == 7)
    cdc = codec("bn254", "g2")
    data[sec.offset + cdc.size:sec.offset + 2 * cdc.size] = cdc.encode((x, y))
    bad = tmp_path / "bad.zkey"
    bad.write_bytes(bytes(data))
    monkeypatch.setenv("ZKTENSOR_TABLE_CACHE_DIR", str(tmp_path / "tables"))
    with pytest.raises(FormatError, match=f"^{bad}: .*not in bn254's G2 subgroup"):
        NumpyProver.load(bad)
    assert not (tmp_path / "tables").exists() or not any((tmp_path / "tables").iterdir())
