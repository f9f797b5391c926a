"""A cold compile is announced on stderr before it starts and when it ends (issue 21: no
silent first run), and ZKTENSOR_COMPILE_NOTES=off silences it; a warm cache says nothing."""
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = "import zktensor as zt; F = zt.field('bn254.fr'); a = F.tensor([3, 5]); print((a * a + a).to_ints())"


def run(cache: Path, **env):
    e = dict(os.environ, ZKTENSOR_CACHE_DIR=str(cache), **env)
    e.pop("ZKTENSOR_PREBUILT_DIR", None)
    return subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=e, capture_output=True, text=True,
                          timeout=300, check=True)


def test_cold_compile_is_announced_before_and_after(tmp_path):
    p = run(tmp_path / "cache")
    assert p.stdout.strip() == "[12, 30]"
    lines = p.stderr.splitlines()
    assert lines[0].startswith("zktensor: compiling kernels on first use")
    starts = [i for i, s in enumerate(lines) if re.fullmatch(r"zktensor: compiling kernel (\d+) \([^()]+\) \.\.\.", s)]
    ends = [i for i, s in enumerate(lines) if re.fullmatch(r"zktensor: compiled kernel (\d+) \([^()]+\) in [\d.]+ s", s)]
    assert starts and len(starts) == len(ends)
    assert any("bn254.fr" in lines[i] and "operations" in lines[i] for i in starts)   # names the program
    for n, (i, j) in enumerate(zip(starts, ends), 1):
        assert i < j and f"kernel {n} " in lines[i] and f"kernel {n} " in lines[j]
    # the same cache, warm: nothing to say
    assert run(tmp_path / "cache").stderr == ""


def test_notes_off(tmp_path):
    assert run(tmp_path / "cache", ZKTENSOR_COMPILE_NOTES="off").stderr == ""


def test_a_keys_first_tables_are_announced(tmp_path):
    """The first proof with a key prepares its MSM tables for the table cache: said before and
    after; the next proof maps them and says nothing of it."""
    from zktensor.groth16.demo import demo_files
    f = demo_files()
    env = dict(os.environ, ZKTENSOR_TABLE_CACHE_DIR=str(tmp_path / "tables"))
    cmd = [sys.executable, "-m", "zktensor.cli", "prove", "--no-serve", str(f["zkey"]), str(f["wtns"]),
           str(tmp_path / "proof.json"), str(tmp_path / "public.json")]

    def prove(**extra):
        p = subprocess.run(cmd, cwd=ROOT, env=dict(env, **extra), capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr
        return [s for s in p.stderr.splitlines() if "tables" in s]
    first = prove()
    assert len(first) == 2, first
    assert first[0].startswith("zktensor: preparing the MSM tables of demo.zkey") and str(tmp_path) in first[0]
    assert re.fullmatch(r"zktensor: prepared and stored the tables in [\d.]+ s", first[1])
    assert prove() == []
    (tmp_path / "proof.json").unlink()
    import shutil
    shutil.rmtree(tmp_path / "tables")
    assert prove(ZKTENSOR_COMPILE_NOTES="off") == []
