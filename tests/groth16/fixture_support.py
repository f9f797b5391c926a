"""What the Groth16 tests know about the snarkjs fixtures, and snarkjs as an oracle.

A module of its own (not conftest.py) so that test modules can import it by a
name no other test directory uses.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # make ``import zktensor`` work under a bare ``pytest``
    sys.path.insert(0, str(ROOT))

BUILD = Path(os.environ.get("ZKT_FIXTURES_BUILD", ROOT / "tests" / "fixtures" / "build"))
CIRCUITS = ROOT / "tests" / "circuits"
HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Fixture:
    name: str
    source: str
    prime: str  # circom's name: bn128 | bls12381
    dir: Path

    @property
    def curve(self) -> str:
        return {"bn128": "bn254", "bls12381": "bls12_381"}[self.prime]

    @property
    def r1cs(self) -> Path:
        return self.dir / f"{self.source}.r1cs"

    @property
    def wtns(self) -> Path:
        return self.dir / "witness.wtns"

    @property
    def zkey(self) -> Path:
        return self.dir / "circuit_final.zkey"

    @property
    def zkey0(self) -> Path:
        return self.dir / "circuit_0000.zkey"

    @property
    def vk(self) -> Path:
        return self.dir / "verification_key.json"

    @property
    def proof(self) -> Path:
        return self.dir / "proof.json"

    @property
    def public(self) -> Path:
        return self.dir / "public.json"


def fixture_list() -> list[Fixture]:
    out = []
    for line in (CIRCUITS / "fixtures.txt").read_text().splitlines():
        parts = line.split()
        if parts and not parts[0].startswith("#"):
            out.append(Fixture(parts[0], parts[1], parts[2], BUILD / parts[0]))
    return out


FIXTURES = fixture_list()
FIXTURE_NAMES = [f.name for f in FIXTURES]
SMALL = ["multiplier", "multi_public", "no_public", "multi_public_bls"]  # for slow per-point checks


def build_fixtures() -> dict[str, Fixture]:
    """The session's fixtures by name, built by scripts/fixtures.sh (skip without node/npm)."""
    import shutil

    import pytest
    if not (shutil.which("node") and shutil.which("npm")):
        pytest.skip("node/npm not installed: cannot build the snarkjs fixtures")
    res = subprocess.run(["bash", str(ROOT / "scripts" / "fixtures.sh")], capture_output=True,
                         text=True, timeout=1800)
    if res.returncode:
        pytest.fail(f"scripts/fixtures.sh failed:\n{res.stderr[-4000:]}")
    return {f.name: f for f in FIXTURES}


class Snarkjs:
    """The pinned snarkjs CLI and library, as the oracle."""

    def __init__(self, build: Path):
        self.build = build
        self.cli = build / "node_modules" / "snarkjs" / "build" / "cli.cjs"

    def run(self, *args, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(["node", str(self.cli), *map(str, args)], capture_output=True,
                              text=True, check=check, timeout=600)

    def verify_cli(self, vk, public, proof) -> bool:
        """``snarkjs groth16 verify``: exit status 0 for a valid proof, 1 otherwise."""
        res = self.run("groth16", "verify", vk, public, proof, check=False)
        if res.returncode not in (0, 1):
            raise RuntimeError(f"snarkjs groth16 verify failed: {res.stderr or res.stdout}")
        return res.returncode == 0

    def verify_many(self, cases, tmp: Path) -> list:
        """snarkjs's groth16.verify on many (vk, public, proof) dicts in one node process:
        True/False, or "error: ..." where snarkjs throws."""
        path = tmp / "snarkjs_cases.json"
        path.write_text(json.dumps([{"vk": v, "public": p, "proof": q} for v, p, q in cases]))
        res = subprocess.run(["node", str(HERE / "snarkjs_verify.cjs"), str(self.build), str(path)],
                             capture_output=True, text=True, check=True, timeout=600)
        return json.loads(res.stdout.strip().splitlines()[-1])
