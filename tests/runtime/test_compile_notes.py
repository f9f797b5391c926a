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
