"""The zkml tests: small models (zkml_models), snarkjs from the test fixtures' node_modules."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
BUILD = Path(os.environ.get("ZKT_FIXTURES_BUILD", ROOT / "tests" / "fixtures" / "build"))


def node_modules() -> Path:
    """tests/fixtures/build/node_modules with snarkjs and circomlibjs (scripts/fixtures.sh installs
    them); skip without node/npm."""
    if not (shutil.which("node") and shutil.which("npm")):
        pytest.skip("node/npm not installed")
    mods = BUILD / "node_modules"
    if not (mods / "snarkjs").is_dir() or not (mods / "circomlibjs").is_dir():
        _fixtures("multiplier")
    return mods


def _fixtures(*names: str) -> None:
    res = subprocess.run(["bash", str(ROOT / "scripts" / "fixtures.sh"), *names], capture_output=True,
                         text=True, timeout=1800)
    if res.returncode:
        pytest.fail(f"scripts/fixtures.sh failed:\n{res.stderr[-3000:]}")


@pytest.fixture(scope="session")
def bn254_ptau() -> Path:
    """The BN254 powers of tau the fixtures use: $ZKT_PTAU_BN254 when set, else the one
    scripts/fixtures.sh makes in the build directory (made here when missing)."""
    given = os.environ.get("ZKT_PTAU_BN254")
    if given:
        if not Path(given).is_file():
            pytest.fail(f"ZKT_PTAU_BN254={given}: no such file")
        return Path(given)
    node_modules()
    made = BUILD / "ptau" / "bn128_pot12_final.ptau"
    if not made.is_file():
        _fixtures("multiplier")
    return made


@pytest.fixture(scope="session")
def snarkjs():
    cli = node_modules() / "snarkjs" / "build" / "cli.cjs"

    def run(*args, check=True):
        res = subprocess.run(["node", str(cli), *map(str, args)], capture_output=True, text=True, timeout=600)
        if check and res.returncode:
            raise AssertionError(f"snarkjs {' '.join(map(str, args))} failed:\n{res.stdout[-2000:]}{res.stderr[-2000:]}")
        return res
    return run
