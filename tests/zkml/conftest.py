"""The zkml tests: small models (zkml_models), snarkjs from the test fixtures' node_modules."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
BUILD = ROOT / "tests" / "fixtures" / "build"


def node_modules() -> Path:
    """tests/fixtures/build/node_modules with snarkjs and circomlibjs (scripts/fixtures.sh installs
    them); skip without node/npm."""
    if not (shutil.which("node") and shutil.which("npm")):
        pytest.skip("node/npm not installed")
    mods = BUILD / "node_modules"
    if not (mods / "snarkjs").is_dir() or not (mods / "circomlibjs").is_dir():
        res = subprocess.run(["bash", str(ROOT / "scripts" / "fixtures.sh"), "multiplier"], capture_output=True,
                             text=True, timeout=1800)
        if res.returncode:
            pytest.fail(f"scripts/fixtures.sh failed:\n{res.stderr[-3000:]}")
    return mods


@pytest.fixture(scope="session")
def snarkjs():
    cli = node_modules() / "snarkjs" / "build" / "cli.cjs"

    def run(*args, check=True):
        res = subprocess.run(["node", str(cli), *map(str, args)], capture_output=True, text=True, timeout=600)
        if check and res.returncode:
            raise AssertionError(f"snarkjs {' '.join(map(str, args))} failed:\n{res.stdout[-2000:]}{res.stderr[-2000:]}")
        return res
    return run
