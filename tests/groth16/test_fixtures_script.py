"""scripts/fixtures.sh: what it builds, and that a second run rebuilds nothing."""
import subprocess
import time

from fixture_support import BUILD, ROOT


def _outputs(fx):
    return [fx.r1cs, fx.dir / f"{fx.source}_js" / f"{fx.source}.wasm", fx.wtns, fx.zkey0, fx.zkey,
            fx.vk, fx.proof, fx.public]


def test_every_fixture_is_built(fixtures):
    for fx in fixtures.values():
        for path in _outputs(fx):
            assert path.is_file() and path.stat().st_size > 0, path
        assert not list(fx.dir.glob(".tmp.*")), fx.dir  # no half-written outputs left
    assert (BUILD / "node_modules" / "snarkjs" / "package.json").is_file()
    assert list((BUILD / "ptau").glob("bls12381_pot*_final.ptau"))


def test_second_run_is_a_no_op(fixtures):
    before = {p: p.stat().st_mtime_ns for fx in fixtures.values() for p in _outputs(fx)}
    start = time.monotonic()
    res = subprocess.run(["bash", str(ROOT / "scripts" / "fixtures.sh")], capture_output=True,
                         text=True, check=True, timeout=600)
    assert time.monotonic() - start < 30, res.stderr
    after = {p: p.stat().st_mtime_ns for p in before}
    assert before == after
    assert "done: " in res.stderr
