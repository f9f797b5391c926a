"""``zktensor zkml compile``: files that snarkjs and ``zktensor setup``/``prove`` take; outputs
checked before any work (exit 2); a hostile or wrong input is one line naming the file (exit 1);
the four outputs replaced as one set."""
import json

import pytest
import torch

import zktensor.zkml as zk
from zktensor.cli import main
from zktensor.zkml.lc import P
from zkml_models import MLP

X = [float(i % 5) for i in range(16)]


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    d = tmp_path_factory.mktemp("zkml_cli")
    torch.manual_seed(0)
    m = MLP(16, 6, 4).eval()
    torch.export.save(torch.export.export(m, (torch.zeros(1, 16),)), d / "m.pt2")
    (d / "in.json").write_text(json.dumps({"input": X}))
    return m, d / "m.pt2", d / "in.json"


def compile_cli(model, inp, out, *extra):
    return main(["zkml", "compile", str(model), "--input", str(inp), "--out", str(out), *extra])


def one_line_error(capsys, *words):
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("zktensor: error: "), err
    for w in words:
        assert w in err, err
    return err


@pytest.mark.snarkjs
def test_compile_then_zktensor_setup_and_prove_cli(program, snarkjs, tmp_path, capsys):
    """The exported files through the commands a user runs: zktensor setup, zktensor prove (with
    the witness check against the .r1cs), zktensor verify and snarkjs verify."""
    m, model, inp = program
    out = tmp_path / "out"
    assert compile_cli(model, inp, out, "--input-scale", "3") == 0
    info = json.loads((out / "circuit.json").read_text())
    c = zk.compile(m, torch.zeros(1, 16), input_scale=3)
    assert info["constraints"] == c.num_constraints and info["wires"] == c.num_wires
    assert json.loads((out / "output.json").read_text())["output"] == c.output(torch.tensor(X))[0][0].tolist()
    assert "WITNESS IS CORRECT" in snarkjs("wtns", "check", out / "circuit.r1cs", out / "witness.wtns").stdout
    r1cs, wtns, zkey, vk = out / "circuit.r1cs", out / "witness.wtns", tmp_path / "c.zkey", tmp_path / "vk.json"
    assert main(["setup", str(r1cs), str(zkey), "--vk", str(vk)]) == 0
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    assert main(["prove", str(zkey), str(wtns), str(proof), str(public), "--r1cs", str(r1cs),
                 "--no-serve", "--no-helper"]) == 0
    pub = json.loads(public.read_text())
    out_ints, _, inp_ints = c.decode([int(v) for v in pub])
    assert out_ints.tolist() == json.loads((out / "output.json").read_text())["output"]
    assert inp_ints.tolist() == [int(v * 8) for v in X]
    assert main(["verify", str(vk), str(public), str(proof)]) == 0
    assert snarkjs("groth16", "verify", vk, public, proof).returncode == 0
    pub[0] = str((int(pub[0]) + 1) % P)                 # another output: refused by both verifiers
    public.write_text(json.dumps(pub))
    assert main(["verify", str(vk), str(public), str(proof)]) == 1
    assert snarkjs("groth16", "verify", vk, public, proof, check=False).returncode != 0
    capsys.readouterr()


def test_bad_inputs_are_one_line_naming_the_file(program, tmp_path, capsys):
    _, model, _ = program
    out = tmp_path / "out"
    cases = {
        "deep.json": "[" * 5000 + "]" * 5000,                     # Python's parser would recurse
        "nan.json": json.dumps({"input": [float("nan")] * 16}),
        "huge.json": '{"input": [' + "9" * 5000 + "]}",
        "ragged.json": json.dumps([[1.0, 2.0], [3.0]]),
        "noinput.json": json.dumps({"x": X}),
        "shape.json": json.dumps([1.0, 2.0]),
        "range.json": json.dumps([100.0] * 16),                   # beyond 8 signed bits at 2^4
        "text.json": "not json",
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        assert compile_cli(model, tmp_path / name, out) == 1, name
        one_line_error(capsys, name)
    (tmp_path / "latin1.json").write_bytes(b'{"input": ["\xe9"]}')
    assert compile_cli(model, tmp_path / "latin1.json", out) == 1
    one_line_error(capsys, "latin1.json", "UTF-8")
    assert compile_cli(model, tmp_path / "missing.json", out) == 1
    one_line_error(capsys, "missing.json")
    (tmp_path / "ok.json").write_text(json.dumps(X))
    assert compile_cli(tmp_path / "ok.json", tmp_path / "ok.json", out) == 1     # not a program
    one_line_error(capsys, "ok.json", "not a torch.export program")
    assert not out.exists() or not any(out.iterdir())                             # nothing written


def test_outputs_checked_before_any_work(program, tmp_path, capsys):
    _, model, inp = program
    missing_model = tmp_path / "no_such_model.pt2"          # exit 2 before the model is looked at
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert compile_cli(missing_model, inp, afile) == 2
    one_line_error(capsys, "afile", "not a directory")
    assert compile_cli(missing_model, inp, afile / "sub") == 2
    one_line_error(capsys, "afile")
    out = tmp_path / "out"
    (out / "circuit.r1cs").mkdir(parents=True)
    assert compile_cli(missing_model, inp, out) == 2
    one_line_error(capsys, "circuit.r1cs", "is a directory")
    out2 = tmp_path / "out2"
    out2.mkdir()
    clash = out2 / "output.json"                             # the input is one of the outputs
    clash.write_text(json.dumps(X))
    assert compile_cli(missing_model, clash, out2) == 2
    one_line_error(capsys, "output.json", "is also an input")
    assert clash.read_text() == json.dumps(X)


def test_outputs_replaced_as_one_set(program, tmp_path, capsys):
    m, model, inp = program
    out = tmp_path / "out"
    assert compile_cli(model, inp, out) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert sorted(before) == ["circuit.json", "circuit.r1cs", "output.json", "witness.wtns"]
    (tmp_path / "bad.json").write_text(json.dumps([100.0] * 16))
    assert compile_cli(model, tmp_path / "bad.json", out) == 1           # fails after the checks
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before      # nothing changed, no temporaries
    x2 = [float(-(i % 3)) for i in range(16)]
    (tmp_path / "in2.json").write_text(json.dumps(x2))
    assert compile_cli(model, tmp_path / "in2.json", out) == 0
    after = {p.name: p.read_bytes() for p in out.iterdir()}
    assert sorted(after) == sorted(before) and after["witness.wtns"] != before["witness.wtns"]
    c = zk.compile(m, torch.zeros(1, 16))
    assert json.loads(after["output.json"])["output"] == c.output(torch.tensor(x2))[0][0].tolist()
    assert after["circuit.r1cs"] == b"".join(bytes(memoryview(b).cast("B")) for b in c.r1cs_chunks())
    capsys.readouterr()
