"""Results writer, rows, timer and machine description (fast; no GPU needed)."""

import csv
import json
import time

import pytest

from bench import common
from bench.common import (
    Timing, fmt_rate, fmt_size, fmt_time, machine_info, make_row, op_group, read_results,
    row_from_timing, time_alternating, time_runs, write_results,
)

from bench_synthetic import CPU_MACHINE, GPU_MACHINE, peer_rows, zk_cpu_rows, zk_gpu_rows


def test_write_results_json_and_csv(tmp_path):
    rows = peer_rows() + zk_cpu_rows()
    p = write_results("demo", rows, CPU_MACHINE, results_dir=tmp_path, notes="synthetic")
    assert p == tmp_path / "demo.json"
    doc = read_results(p)
    assert doc["name"] == "demo" and doc["notes"] == "synthetic"
    assert doc["machine"]["cpu_model"] == "Test CPU"
    assert len(doc["rows"]) == len(rows)
    r0 = doc["rows"][0]
    for k in common.ROW_FIELDS:
        assert k in r0
    assert r0["system"] == "gnark-crypto" and r0["target"] == "cpu"
    with open(tmp_path / "demo.csv") as f:
        data = list(csv.DictReader(f))
    assert len(data) == len(rows)
    assert list(data[0])[: len(common.ROW_FIELDS)] == list(common.ROW_FIELDS)
    assert float(data[0]["median_s"]) == pytest.approx(rows[0]["median_s"])
    assert data[0]["machine"].startswith("testbox")


def test_gpu_results_go_to_gpu_dir(tmp_path):
    p = write_results("g", zk_gpu_rows(), GPU_MACHINE, results_dir=tmp_path)
    assert p == tmp_path / "gpu" / "g.json"
    assert (tmp_path / "gpu" / "g.csv").exists()
    # CPU rows measured on a GPU machine also live under gpu/
    assert write_results("c", zk_cpu_rows(), GPU_MACHINE, results_dir=tmp_path).parent.name == "gpu"


def test_gpu_rows_refused_without_gpu(tmp_path):
    with pytest.raises(ValueError, match="GPU"):
        write_results("g", zk_gpu_rows(), CPU_MACHINE, results_dir=tmp_path)
    assert not list(tmp_path.rglob("*.json"))


def test_results_dir_env(tmp_path, monkeypatch):
    monkeypatch.setenv("ZKTENSOR_RESULTS_DIR", str(tmp_path / "out"))
    p = write_results("x", zk_cpu_rows(), CPU_MACHINE)
    assert p == tmp_path / "out" / "x.json"


def test_row_validation(tmp_path):
    with pytest.raises(ValueError):
        write_results("bad", [{"system": "zktensor"}], CPU_MACHINE, results_dir=tmp_path)
    with pytest.raises(ValueError):
        write_results("../escape", zk_cpu_rows(), CPU_MACHINE, results_dir=tmp_path)


def test_make_row_units():
    r = make_row("zktensor", "fr_mul_ifma", "bn254", 1000, 1, 1e-5, 9e-6)
    assert r["unit"] == "mul/s" and r["unit_value"] == pytest.approx(1e8)
    assert make_row("zktensor", "g1_msm", "bn254", 8, 1, 1.0, 1.0)["unit"] == "points/s"
    assert make_row("zktensor", "fr_fft_dif", "bn254", 8, 1, 1.0, 1.0)["unit"] == "elements/s"
    t = Timing(median_s=2.0, min_s=1.0, clean=3, tried=4)
    r = row_from_timing("zktensor", "groth16_prove", "bn254", 1, 2, t, strategy="s", extra="note")
    assert r["median_s"] == 2.0 and r["runs"] == 3 and r["extra"] == "note; clean 3/4 runs"
    assert r["unit"] == "proofs/s" and r["unit_value"] == pytest.approx(0.5)


def test_op_group():
    assert op_group("fr_mul_vector") == "fr_mul"
    assert op_group("fr_fft_dif_bitrev") == "fr_fft"
    assert op_group("g1_msm") == "g1_msm"
    assert op_group("fr_multiply") == "fr_multiply"  # prefix must end at "_"
    assert op_group("custom") == "custom"


def test_time_runs_counts_and_median():
    calls = []
    t = time_runs(lambda: calls.append(1), runs=5)
    assert 1 + 5 <= len(calls) <= 1 + 20  # warm-up + runs (up to 4x when disturbed)
    assert t.tried == len(calls) - 1
    assert t.min_s <= t.median_s
    v = sorted(t.times_s if t.clean else t.all_s)
    assert t.median_s == v[len(v) // 2] and t.min_s == v[0]


def test_time_runs_number_and_sync():
    syncs = []
    n = [0]

    def f():
        n[0] += 1
        time.sleep(0.001)

    t = time_runs(f, runs=3, number=4, sync=lambda: syncs.append(1))
    assert n[0] == 4 * (1 + t.tried)
    assert t.median_s >= 0.001 * 0.9
    assert syncs


def test_time_runs_discards_disturbed_runs(monkeypatch):
    # fake /proc/stat: other processes burn 1 s of CPU during every other run
    busy = {"v": 0.0, "n": 0}

    def fake_busy():
        busy["n"] += 1
        if busy["n"] % 4 == 2:  # the reading after each odd run
            busy["v"] += 1.0
        return busy["v"]

    monkeypatch.setattr(common, "_machine_busy_s", fake_busy)
    monkeypatch.setattr(common, "_self_cpu_s", lambda: 0.0)
    t = time_runs(lambda: None, runs=3)
    assert t.clean == 3 and t.tried == 6
    assert len(t.all_s) == 6 and len(t.times_s) == 3


def test_time_runs_all_disturbed(monkeypatch):
    c = {"v": 0.0}

    def always_busy():
        c["v"] += 1.0
        return c["v"]

    monkeypatch.setattr(common, "_machine_busy_s", always_busy)
    monkeypatch.setattr(common, "_self_cpu_s", lambda: 0.0)
    t = time_runs(lambda: None, runs=2)
    assert t.clean == 0 and t.tried == 8 and t.extra == "clean 0/8 runs"


def disturb_run(monkeypatch, k: int) -> None:
    """Fake /proc/stat: other processes burn 1 s of CPU during the k-th timed run (from 1)
    and no other (`time_runs` reads the machine's busy time before and after each run)."""
    busy = {"v": 0.0, "n": 0}

    def fake_busy():
        busy["n"] += 1
        if busy["n"] == 2 * k:
            busy["v"] += 1.0
        return busy["v"]

    monkeypatch.setattr(common, "_machine_busy_s", fake_busy)
    monkeypatch.setattr(common, "_self_cpu_s", lambda: 0.0)


def test_time_runs_marks_kept_runs(monkeypatch):
    disturb_run(monkeypatch, 2)
    t = time_runs(lambda: None, runs=3, warmup=0)
    assert t.kept == [True, False, True, True] and t.clean == 3


def test_time_alternating_order_and_alignment(monkeypatch):
    # every call sleeps its own length; calls are logged to check the A B, B A order
    calls = []

    def fn(name, secs):
        def f():
            calls.append(name)
            time.sleep(secs)
        return f

    disturb_run(monkeypatch, 3)
    a, b = time_alternating([fn("a", 0.002), fn("b", 0.006)], runs=4, warmup=1)
    assert calls == ["a", "b", "b", "a", "a", "b", "b", "a", "a", "b", "b", "a"]    # warm-up, then 5 turns
    assert a.tried == b.tried == 5 and a.clean == b.clean == 4
    assert a.kept == b.kept == [True, True, False, True, True]
    assert len(a.all_s) == len(b.all_s) == 5 and len(a.times_s) == len(b.times_s) == 4
    assert all(tb > ta for ta, tb in zip(a.times_s, b.times_s))       # aligned turn by turn
    assert a.median_s >= 0.002 * 0.9 and b.median_s >= 0.006 * 0.9
    with pytest.raises(ValueError):
        time_alternating([fn("a", 0)], number=2)


def test_machine_info_without_torch():
    m = machine_info(with_torch=False)
    for k in ("cpu_model", "cpu_cores", "cpu_flags", "memory_bytes", "os", "python", "git_commit", "date"):
        assert k in m
    assert m["cpu_cores"] >= 1
    json.dumps(m)


def test_formatting():
    assert fmt_time(16.8e-9) == "16.8 ns"
    assert fmt_time(0.0051) == "5.1 ms"
    assert fmt_time(1.898) == "1.9 s"
    assert fmt_time(293e-3) == "293 ms"
    assert fmt_rate(121.4e6, "mul/s") == "121 Mmul/s"
    assert fmt_size(1 << 20) == "2^20" and fmt_size(20_000_000) == "20,000,000"
