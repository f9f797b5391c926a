"""End to end on scikit-learn's bundled 8x8 digits: train, calibrate, compile, prove with
zktensor, verify with snarkjs; a changed public output does not verify (the CLI: test_zkml_cli)."""
import json

import pytest
import torch
from torch import nn

import zktensor.zkml as zk
from zktensor.groth16.formats.json_io import write_proof, write_public
from zktensor.zkml import reference
from zktensor.zkml.lc import P
from zktensor.zkml.quant import quantise_input
from zkml_models import MLP, digits, train


class DigitsCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 4 * 4, 10)

    def forward(self, x):
        y = nn.functional.max_pool2d(torch.relu(self.bn(self.c1(x))), 2)
        return self.fc(y.flatten(1))


@pytest.fixture(scope="module")
def mlp_case():
    xtr, ytr, xte, yte = digits()
    torch.manual_seed(3)      # the initial weights too: from some, 60 epochs reach only 65% (dead ReLUs)
    m = train(MLP(64, 16, 10), xtr, ytr)
    with torch.no_grad():
        acc = float((m(xte).argmax(1) == yte).float().mean())
    assert acc > 0.85
    cal = zk.calibrate(m, xte)
    return m, cal, xte, yte


def test_calibrated_quantised_model_agrees(mlp_case):
    m, cal, xte, yte = mlp_case
    assert cal.options["input_scale"] == 2          # pixels 0..16 in 8 signed bits: x·4 <= 64
    assert cal.agreement >= 0.97, str(cal)
    c = zk.compile(m, xte[:1], **cal.options)
    ints, floats = c.output(xte)
    assert torch.equal(ints, reference.run(c.qm, quantise_input(xte, c.options, c.input_shape)))
    assert float((floats.argmax(1) == yte).double().mean()) > 0.85
    # issue 20's measure: fixed weights cost only the rescales (the input is public)
    assert c.num_constraints < 1000


@pytest.mark.snarkjs
def test_prove_and_snarkjs_verifies(mlp_case, snarkjs, tmp_path):
    m, cal, xte, _ = mlp_case
    c = zk.compile(m, xte[:1], **cal.options)
    x = xte[7]
    r1cs, wtns = tmp_path / "mlp.r1cs", tmp_path / "mlp.wtns"
    c.save_r1cs(r1cs)
    c.save_witness(x, wtns)
    info = snarkjs("r1cs", "info", r1cs).stdout
    assert f"# of Constraints: {c.num_constraints}" in info and "# of Outputs: 10" in info
    assert "# of Public Inputs: 64" in info
    assert "WITNESS IS CORRECT" in snarkjs("wtns", "check", r1cs, wtns).stdout
    res = c.setup(tmp_path / "mlp.zkey")
    proof, public = c.prove(x, res.zkey_path)
    out, floats, inp = c.decode(public)
    assert torch.equal(out, c.output(x)[0][0])
    assert torch.equal(inp, quantise_input(x, c.options, c.input_shape)[0])
    with torch.no_grad():
        assert int(floats.argmax()) == int(m(x[None]).argmax())
    write_proof(tmp_path / "proof.json", proof)
    write_public(tmp_path / "public.json", public)
    assert zk.verify(res.vk_path, public, proof, circuit=c)
    assert snarkjs("groth16", "verify", res.vk_path, tmp_path / "public.json", tmp_path / "proof.json").returncode == 0
    # a changed public output (the predicted class's logit) must not verify
    bad = list(public)
    j = int(out.argmax())
    bad[j] = (bad[j] + 1) % P
    write_public(tmp_path / "bad.json", bad)
    assert not zk.verify(res.vk_path, bad, proof, circuit=c)
    assert snarkjs("groth16", "verify", res.vk_path, tmp_path / "bad.json", tmp_path / "proof.json",
                   check=False).returncode != 0
    # a public input out of the circuit's range is refused by zkml.verify (not proven about)
    bad = list(public)
    bad[c.counts["output"]] = 1000
    assert not zk.verify(res.vk_path, bad, proof, circuit=c)


@pytest.mark.snarkjs
def test_snarkjs_setup_of_exported_files(mlp_case, snarkjs, bn254_ptau, tmp_path):
    """snarkjs makes the key from our .r1cs and the fixtures' powers of tau; it proves from our
    .wtns, and zktensor proves with its key; each side verifies the other's proof."""
    m, cal, xte, _ = mlp_case
    c = zk.compile(m, xte[:1], **cal.options)
    x = xte[11]
    r1cs, wtns, zkey, vk = (tmp_path / n for n in ("mlp.r1cs", "mlp.wtns", "mlp.zkey", "vk.json"))
    c.save_r1cs(r1cs)
    c.save_witness(x, wtns)
    snarkjs("groth16", "setup", r1cs, bn254_ptau, zkey)
    snarkjs("zkey", "export", "verificationkey", zkey, vk)
    # snarkjs proves from our witness
    snarkjs("groth16", "prove", zkey, wtns, tmp_path / "s_proof.json", tmp_path / "s_public.json")
    assert snarkjs("groth16", "verify", vk, tmp_path / "s_public.json", tmp_path / "s_proof.json").returncode == 0
    s_public = json.loads((tmp_path / "s_public.json").read_text())
    s_proof = json.loads((tmp_path / "s_proof.json").read_text())
    assert zk.verify(vk, s_public, s_proof, circuit=c)
    # zktensor proves with the snarkjs-made key
    proof, public = c.prove(x, zkey)
    assert [str(v) for v in public] == s_public
    out, floats, _ = c.decode(public)
    assert torch.equal(out, c.output(x)[0][0])
    with torch.no_grad():
        assert int(floats.argmax()) == int(m(x[None]).argmax())
    write_proof(tmp_path / "proof.json", proof)
    write_public(tmp_path / "public.json", public)
    assert snarkjs("groth16", "verify", vk, tmp_path / "public.json", tmp_path / "proof.json").returncode == 0
    bad = list(public)
    bad[int(out.argmax())] = (bad[int(out.argmax())] + 1) % P
    write_public(tmp_path / "bad.json", bad)
    assert snarkjs("groth16", "verify", vk, tmp_path / "bad.json", tmp_path / "proof.json",
                   check=False).returncode != 0


@pytest.mark.snarkjs
def test_private_weights_snarkjs(snarkjs, tmp_path):
    torch.manual_seed(11)
    c = zk.compile(MLP(16, 6, 4), torch.zeros(1, 16), input_scale=4, weights="private")
    x = torch.linspace(-4, 4, 16)
    res = c.setup(tmp_path / "p.zkey")
    proof, public = c.prove(x, res.zkey_path)
    assert public[4] == c.commitment and len(public) == 4 + 1 + 16
    write_proof(tmp_path / "proof.json", proof)
    write_public(tmp_path / "public.json", public)
    assert snarkjs("groth16", "verify", res.vk_path, tmp_path / "public.json", tmp_path / "proof.json").returncode == 0
    bad = list(public)
    bad[4] = (bad[4] + 1) % P                       # another commitment: other weights
    assert not zk.verify(res.vk_path, bad, proof, circuit=c)


@pytest.mark.slow
@pytest.mark.snarkjs
def test_cnn_private_weights_and_input(snarkjs, tmp_path):
    xtr, ytr, xte, _ = digits()
    torch.manual_seed(0)
    m = train(DigitsCNN(), xtr.reshape(-1, 1, 8, 8), ytr, epochs=40)
    imgs = xte.reshape(-1, 1, 8, 8)
    cal = zk.calibrate(m, imgs)
    assert cal.agreement >= 0.9, str(cal)
    c = zk.compile(m, imgs[:1], **cal.options, weights="private", input_visibility="private")
    assert c.counts["public_input"] == 0 and c.n_public == 11         # 10 logits and the commitment
    x = imgs[3]
    r1cs, wtns = tmp_path / "cnn.r1cs", tmp_path / "cnn.wtns"
    c.save_r1cs(r1cs)
    c.save_witness(x, wtns)
    assert "WITNESS IS CORRECT" in snarkjs("wtns", "check", r1cs, wtns).stdout
    res = c.setup(tmp_path / "cnn.zkey")
    proof, public = c.prove(x, res.zkey_path)
    assert public[10] == c.commitment
    write_proof(tmp_path / "proof.json", proof)
    write_public(tmp_path / "public.json", public)
    assert snarkjs("groth16", "verify", res.vk_path, tmp_path / "public.json", tmp_path / "proof.json").returncode == 0
    bad = list(public)
    bad[10] = (bad[10] + 1) % P                     # another commitment: other weights
    write_public(tmp_path / "bad.json", bad)
    assert snarkjs("groth16", "verify", res.vk_path, tmp_path / "bad.json", tmp_path / "proof.json",
                   check=False).returncode != 0
