"""Report generation on synthetic results in a tmp dir (no peers, no GPU)."""

import re

import pytest

from bench.common import write_results
from bench.report import find_reference, generate_report, speed_ratio, _flatten
from bench.common import load_all_results

from bench_synthetic import CPU_MACHINE, GPU_MACHINE, peer_rows, zk_cpu_rows, zk_gpu_rows

pytest.importorskip("matplotlib")


def _tables(md: str) -> dict[str, list[list[str]]]:
    """Markdown tables by their '## ' heading -> rows of cells (header excluded)."""
    out, head = {}, None
    for line in md.splitlines():
        if line.startswith("## "):
            head = line[3:]
            out[head] = []
        elif line.startswith("| ") and head is not None and not line.startswith("| system") \
                and not line.startswith("| tag"):
            out[head].append([c.strip() for c in line.strip("|").split(" | ")])
    return out


@pytest.fixture
def results(tmp_path):
    write_results("peers", peer_rows(), CPU_MACHINE, results_dir=tmp_path, notes="synthetic peer figures")
    write_results("zk_cpu", zk_cpu_rows(), CPU_MACHINE, results_dir=tmp_path)
    write_results("zk_gpu", zk_gpu_rows(), GPU_MACHINE, results_dir=tmp_path)
    return tmp_path


def test_report_tables_and_plots(results):
    path = generate_report(results)
    assert path == results / "REPORT.md"
    md = path.read_text()
    tables = _tables(md)
    keys = [k for k in tables if not k.startswith("Machines")]
    assert [k.split(" (")[0] for k in keys] == [
        "fr_mul — bn254", "fr_fft — bn254", "g1_msm — bls12-381", "g1_msm — bn254"]
    # every synthetic row appears once, in its group's table
    n_rows = {k.split(" (")[0]: len(v) for k, v in tables.items()}
    assert n_rows["fr_mul — bn254"] == 6  # 2 ark + 3 gnark + 1 zktensor
    assert n_rows["fr_fft — bn254"] == 9  # 3 zk + 2x(dif, dif_bitrev, ark)
    assert n_rows["g1_msm — bls12-381"] == 2
    assert n_rows["g1_msm — bn254"] == 2 * 5 + 3 + 2
    assert sum(n_rows[k.split(" (")[0]] for k in keys) == len(peer_rows()) + len(zk_cpu_rows()) + len(zk_gpu_rows())
    # both machines are listed, the GPU file lives in gpu/
    assert "gpu/zk_gpu.json" in md and "Test GPU" in md
    assert "- `peers.json`: synthetic peer figures" in md
    # one PNG per table, non-trivial, linked from the report
    for k in keys:
        assert re.search(r"!\[.*\]\(plots/[\w.-]+\.png\)", md)
    pngs = sorted(p.name for p in (results / "plots").glob("*.png"))
    assert pngs == ["fr_fft_bn254.png", "fr_mul_bn254.png", "g1_msm_bls12-381.png", "g1_msm_bn254.png"]
    for p in (results / "plots").glob("*.png"):
        data = p.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_ratios(results):
    docs = load_all_results(results)
    rows, machines = _flatten(docs, results)
    assert len(machines) == 2
    zk = next(r for r in rows if r["system"] == "zktensor" and r["op"] == "g1_msm"
              and r["size"] == 1 << 16 and r["target"] == "cpu")
    ref, marks = find_reference(zk, rows, "gnark-crypto")
    assert ref["threads"] == 2 and ref["size"] == 1 << 16 and marks == ""
    assert speed_ratio(zk, ref) == pytest.approx((2.4e-6) / (3.0e-6))
    # GPU row: peers from the other machine (†), their largest thread count
    gpu = next(r for r in rows if r["target"] == "cuda" and r["size"] == 1 << 16)
    ref, marks = find_reference(gpu, rows, "arkworks")
    assert marks == "†" and ref["threads"] == 2
    # FFT: natural-order reference when the op names differ
    fft = next(r for r in rows if r["system"] == "zktensor" and r["op"] == "fr_fft" and r["size"] == 1 << 20)
    assert find_reference(fft, rows, "gnark-crypto")[0]["op"] == "fr_fft_dif_bitrev"
    # no peer row at 2^18 for FFT
    fft18 = next(r for r in rows if r["system"] == "zktensor" and r["op"] == "fr_fft" and r["size"] == 1 << 18)
    assert find_reference(fft18, rows, "gnark-crypto") == (None, "")
    # multiplication compares throughput with the peer's fastest non-chain op
    mul = next(r for r in rows if r["system"] == "zktensor" and r["op"] == "fr_mul_array")
    ref, _ = find_reference(mul, rows, "gnark-crypto")
    assert ref["op"] == "fr_mul_vector"  # faster than gnark's fr_mul_array
    assert speed_ratio(mul, ref) == pytest.approx(((1 << 20) / 0.02) / (20_480_000 / 0.168))
    assert find_reference(mul, rows, "arkworks")[0]["op"] == "fr_mul_array"
    # ... and a dependent chain with the peer's chain
    chain = dict(mul, op="fr_mul_chain", _op="fr_mul_chain")
    assert find_reference(chain, rows, "gnark-crypto")[0]["op"] == "fr_mul_chain"


def test_zktensor_field_names_map_to_peer_names(tmp_path):
    from bench.common import make_row
    from bench.report import canonical_op_curve

    assert canonical_op_curve("mul_array", "bn254.fr") == ("fr_mul_array", "bn254")
    assert canonical_op_curve("mul_array", "bls12_381.fq") == ("fq_mul_array", "bls12-381")
    assert canonical_op_curve("fr_mul", "bn254.fr") == ("fr_mul", "bn254")
    assert canonical_op_curve("g1_msm", "bls12-381") == ("g1_msm", "bls12-381")
    assert canonical_op_curve("g1_msm", "mnt4753") == ("g1_msm", "mnt4-753")
    write_results("peers", peer_rows(), CPU_MACHINE, results_dir=tmp_path)
    write_results("field", [make_row("zktensor", "mul_array", "bn254.fr", 1 << 20, 1, 0.01, 0.01)],
                  CPU_MACHINE, results_dir=tmp_path)
    md = generate_report(tmp_path, plots=False).read_text()
    t = _tables(md)
    fr = next(v for k, v in t.items() if k.startswith("fr_mul — bn254"))
    zk = next(c for c in fr if c[0] == "zktensor")
    assert zk[1] == "mul_array" and zk[-2].endswith("(fr_mul_vector)")
    assert not any(k.startswith("mul_array") for k in t)


def test_report_table_cells(results):
    md = generate_report(results, plots=False).read_text()
    t = _tables(md)
    fft = next(v for k, v in t.items() if k.startswith("fr_fft"))
    zk20 = next(c for c in fft if c[0] == "zktensor" and c[5] == "2^20")
    # gnark dif_bitrev at 2^20: 9e-8 n; zktensor 1.2e-7 n -> 0.75; arkworks 2.8e-7 n -> 2.33
    # last columns: clean runs, x vs gnark-crypto, x vs arkworks, machine tag (2 machines)
    assert zk20[-3] == "0.75 (fr_fft_dif_bitrev)"
    assert zk20[-2] == "2.33 (fr_fft_in_place)"
    assert zk20[-1] == "M1"  # the CPU machine's files come first
    assert not (results / "plots").exists()


def test_empty_results_dir(tmp_path):
    md = generate_report(tmp_path).read_text()
    assert "No results yet." in md
