"""examples/zkml/digits.py runs end to end (few epochs): train, calibrate, compile, set up, prove,
verify (with snarkjs too when the fixtures installed it), so the example cannot rot."""
import importlib.util
from pathlib import Path

from zktensor.groth16.formats.json_io import read_proof, read_public

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "zkml" / "digits.py"


def load_example():
    spec = importlib.util.spec_from_file_location("zkml_digits_example", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_digits_example_runs(tmp_path, capsys):
    ex = load_example()
    assert ex.main(["--model", "mlp", "--epochs", "3", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "zktensor verify: OK" in out and "the proof says: class" in out
    for name in ("circuit.r1cs", "witness.wtns", "circuit.zkey", "circuit.vk.json", "proof.json", "public.json"):
        assert (tmp_path / name).is_file(), name
    from zktensor.groth16.verifier import verify
    assert verify(str(tmp_path / "circuit.vk.json"), read_public(tmp_path / "public.json"),
                  read_proof(tmp_path / "proof.json"))
