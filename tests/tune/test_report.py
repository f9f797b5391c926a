"""bench/report.py: the zktensor-vs-peer panel of the plots and the tuned-configurations table."""
import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from bench.common import load_all_results, write_results  # noqa: E402
from bench.report import _flatten, generate_report, speedup_series  # noqa: E402
from bench_synthetic import CPU_MACHINE, peer_rows, zk_cpu_rows  # noqa: E402


def test_speedups_and_tuning_table(tmp_path):
    # one run: the report computes a ratio only against a peer measured in the same run
    write_results("zk_cpu", zk_cpu_rows() + peer_rows(), CPU_MACHINE, results_dir=tmp_path)
    rows, _ = _flatten(load_all_results(tmp_path), tmp_path)
    fft = [r for r in rows if r["_group"] == "fr_fft"]
    sp = speedup_series(fft, rows, show_machine=False)
    assert {peer for _, peer in sp} == {"gnark-crypto", "arkworks"}
    assert all(y > 0 for pts in sp.values() for _, y in pts)
    (tmp_path / "tune.json").write_text(json.dumps({"format": 1, "zktensor_version": "0.1.0", "entries": {
        "k": {"device": "cpu:Test x2", "field": "bn254.fr", "op": "ntt", "bucket": 4096,
              "config": {"cpu_rows_log": 6}, "time_s": 1e-3, "default_time_s": 2e-3, "complete": True,
              "measured": {"a": 1e-3, "b": 2e-3}, "rejected": {"c": "wrong result"}}}}))
    md = generate_report(tmp_path).read_text()
    assert "## Tuned configurations" in md
    assert "| cpu:Test x2 | ntt | bn254.fr | 2^12 | cpu_rows_log=6 | 1 ms | 2 ms | 2.00 | 2 (1) |" in md
    png = tmp_path / "plots" / "fr_fft_bn254.png"
    assert png.stat().st_size > 20_000
    from matplotlib.image import imread
    h, w = imread(png).shape[:2]
    assert w > 1.8 * h                      # the time plot and the speed-up panel side by side
