"""bench/gpu_profile.py, on CPU ops (the GPU run is scripts/gpu.sh's `profile` step)."""
import json

import pytest

from bench import gpu_profile


def test_profile_rows_add_up():
    r = gpu_profile.profile_one("bn254.g1", 6, "cpu", 2, prepared=False)
    assert r["timed"] == "cpu" and r["n"] == 64 and r["calls"] == 2
    ks = r["kernels"]
    assert ks and all(k["us_per_msm"] > 0 and k["count"] >= 0 for k in ks)
    assert [k["us_per_msm"] for k in ks] == sorted((k["us_per_msm"] for k in ks), reverse=True)
    assert sum(k["share"] for k in ks) == pytest.approx(1.0)
    assert r["total_ms_per_msm"] == pytest.approx(sum(k["us_per_msm"] for k in ks) / 1e3)


def test_cli_writes_json(tmp_path, capsys):
    out = tmp_path / "p.json"
    assert gpu_profile.main(["--device", "cpu", "--log-sizes", "5,6", "--calls", "1", "--top", "3",
                             "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert [d["n"] for d in doc] == [32, 64]
    assert "2^5" in capsys.readouterr().out
