"""Prove a digit classification with zktensor, verify it with snarkjs.

    python examples/zkml/digits.py                 # an MLP; --model cnn for a small CNN
    python examples/zkml/digits.py --model cnn --private-weights --out /tmp/digits

Trains a small network on scikit-learn's bundled 8x8 digits (no download) in seconds,
calibrates its fixed point, compiles it to a circuit, makes a development Groth16 key
(`zktensor setup`: single party, INSECURE), proves one test image's inference and verifies
the proof with zktensor and, when node and snarkjs are found (scripts/fixtures.sh installs
them under tests/fixtures/build; or --snarkjs PATH to its cli.cjs), with snarkjs. The files
(circuit.r1cs, witness.wtns, circuit.zkey, circuit.vk.json, proof.json, public.json) stay
in --out for snarkjs or `zktensor prove` to use again.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import zktensor.zkml as zkml  # noqa: E402
from zktensor.groth16.formats.json_io import write_proof, write_public  # noqa: E402


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 6, 3, padding=1)
        self.bn = nn.BatchNorm2d(6)
        self.fc = nn.Linear(6 * 4 * 4, 10)

    def forward(self, x):
        y = F.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        return self.fc(y.flatten(1))


def data(cnn: bool):
    from sklearn.datasets import load_digits
    d = load_digits()
    x = torch.tensor(d.data, dtype=torch.float32)
    y = torch.tensor(d.target)
    if cnn:
        x = x.reshape(-1, 1, 8, 8)
    return x[:1400], y[:1400], x[1400:], y[1400:]


def train(model, x, y, epochs):
    torch.manual_seed(0)
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    for _ in range(epochs):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    return model.eval()


def find_snarkjs(given):
    if given:
        return given
    local = ROOT / "tests" / "fixtures" / "build" / "node_modules" / "snarkjs" / "build" / "cli.cjs"
    return str(local) if local.is_file() and shutil.which("node") else None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    p.add_argument("--private-weights", action="store_true", help="weights private, Poseidon commitment public")
    p.add_argument("--private-input", action="store_true", help="the image is a private signal")
    p.add_argument("--out", help="directory for the files (default: a temporary one)")
    p.add_argument("--snarkjs", help="snarkjs's cli.cjs (default: the one scripts/fixtures.sh installs)")
    p.add_argument("--epochs", type=int, default=80, help="training epochs (default 80)")
    a = p.parse_args(argv)
    out = Path(a.out or tempfile.mkdtemp(prefix="zkml_digits_"))
    out.mkdir(parents=True, exist_ok=True)

    xtr, ytr, xte, yte = data(a.model == "cnn")
    t = time.perf_counter()
    torch.manual_seed(0)            # the initial weights too: the same model every run
    model = train(MLP() if a.model == "mlp" else CNN(), xtr, ytr, a.epochs)
    with torch.no_grad():
        acc = float((model(xte).argmax(1) == yte).float().mean())
    print(f"trained a {a.model.upper()} in {time.perf_counter() - t:.1f} s: {100 * acc:.1f}% test accuracy (float)")

    cal = zkml.calibrate(model, xte)
    print(cal)
    circuit = zkml.compile(model, xte[:1], **cal.options,
                           weights="private" if a.private_weights else "fixed",
                           input_visibility="private" if a.private_input else "public")
    print(f"circuit: {circuit.num_constraints} constraints, {circuit.num_wires} wires, "
          f"{circuit.n_public} public signals")

    x, label = xte[0], int(yte[0])
    circuit.save_r1cs(out / "circuit.r1cs")
    circuit.save_witness(x, out / "witness.wtns")
    t = time.perf_counter()
    key = circuit.setup(out / "circuit.zkey", out / "circuit.vk.json")
    print(f"development setup (INSECURE, one party) in {time.perf_counter() - t:.1f} s")
    t = time.perf_counter()
    proof, public = circuit.prove(x, key.zkey_path)
    print(f"proved in {time.perf_counter() - t:.2f} s (key loading included)")
    write_proof(out / "proof.json", proof)
    write_public(out / "public.json", public)

    logits, floats, _ = circuit.decode(public)
    print(f"the proof says: class {int(floats.argmax())} (label {label}), logits {[round(v, 2) for v in floats.tolist()]}")
    if circuit.commitment is not None:
        print(f"weight commitment (Poseidon, last public signal): {circuit.commitment}")
    ok = zkml.verify(key.vk_path, public, proof, circuit=circuit)
    print(f"zktensor verify: {'OK' if ok else 'INVALID'}")

    cli = find_snarkjs(a.snarkjs)
    if cli:
        res = subprocess.run(["node", cli, "groth16", "verify", key.vk_path, str(out / "public.json"),
                              str(out / "proof.json")], capture_output=True, text=True)
        print(f"snarkjs groth16 verify: {'OK' if res.returncode == 0 else 'INVALID'}")
        ok = ok and res.returncode == 0
    else:
        print("snarkjs not found (run scripts/fixtures.sh, or pass --snarkjs): skipped its check")
    print(f"files in {out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
