"""Report generation on synthetic results in a tmp dir (no peers, no GPU).

The rule under test: a ratio only against a peer row of the same run (one results
file, one machine, one run id), with the same thread count, both rows undisturbed;
everything else is listed as context with the reason it has no ratio.
"""

import re

import pytest

from bench.common import load_all_results, make_row as plain_row, write_results
from bench.report import _flatten, clean_runs, disturbance, find_reference, generate_report, speed_ratio

from bench_synthetic import CLEAN, CPU_MACHINE, GPU_MACHINE, make_row, peer_rows, zk_cpu_rows, zk_gpu_rows


def _tables(md: str) -> dict[str, list[list[str]]]:
    """Markdown tables by their '## ' heading -> rows of cells (header excluded)."""
    out, head = {}, None
    for line in md.splitlines():
        if line.startswith("## "):
            head = line[3:]
            out[head] = []
        elif line.startswith("| ") and head is not None and not line.startswith(("| system", "| tag", "| run")):
            out[head].append([c.strip() for c in line.strip("|").split(" | ")])
    return out


def _rows(path):
    rows, _machines = _flatten(load_all_results(path), path)
    return rows


def _pick(rows, **kw):
    found = [r for r in rows if all(r.get(k) == v for k, v in kw.items())]
    assert len(found) == 1, (kw, len(found))
    return found[0]


@pytest.fixture
def results(tmp_path):
    # one run with zktensor and the peers side by side, one peers-only run (another
    # invocation), and a GPU run without peers
    write_results("zk_cpu", zk_cpu_rows() + peer_rows(), CPU_MACHINE, results_dir=tmp_path,
                  notes="zktensor and peers in the same run")
    write_results("peers", peer_rows(), CPU_MACHINE, results_dir=tmp_path, notes="synthetic peer figures")
    write_results("zk_gpu", zk_gpu_rows(), GPU_MACHINE, results_dir=tmp_path)
    return tmp_path


def test_report_tables_and_plots(results):
    pytest.importorskip("matplotlib")
    path = generate_report(results)
    assert path == results / "REPORT.md"
    md = path.read_text()
    tables = _tables(md)
    keys = [k for k in tables if k.split(" (")[0] not in ("Machines and files", "Runs")]
    assert [k.split(" (")[0] for k in keys] == [
        "fr_mul — bn254", "fr_fft — bn254", "g1_msm — bls12-381", "g1_msm — bn254"]
    n_rows = {k.split(" (")[0]: len(v) for k, v in tables.items()}
    assert n_rows["fr_mul — bn254"] == 2 * 5 + 1  # per run: 2 ark + 3 gnark; 1 zktensor
    assert n_rows["fr_fft — bn254"] == 3 + 2 * 6
    assert n_rows["g1_msm — bls12-381"] == 2 * 2
    assert n_rows["g1_msm — bn254"] == 2 * 2 * 5 + 3 + 2
    assert sum(n_rows[k.split(" (")[0]] for k in keys) == 2 * len(peer_rows()) + len(zk_cpu_rows()) + len(zk_gpu_rows())
    assert n_rows["Runs"] == 3
    assert "gpu/zk_gpu.json" in md and "Test GPU" in md
    assert "- `peers.json`: synthetic peer figures" in md
    pngs = sorted(p.name for p in (results / "plots").glob("*.png"))
    assert pngs == ["fr_fft_bn254.png", "fr_mul_bn254.png", "g1_msm_bls12-381.png", "g1_msm_bn254.png"]
    for name in pngs:
        assert f"(plots/{name})" in md
        data = (results / "plots" / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_ratio_only_within_the_run(results):
    rows = _rows(results)
    zk = _pick(rows, system="zktensor", op="g1_msm", size=1 << 16, target="cpu")
    ref, why = find_reference(zk, rows, "gnark-crypto")
    assert why == "" and ref["_file"] == "zk_cpu.json" and ref["threads"] == 2 and ref["size"] == 1 << 16
    assert speed_ratio(zk, ref) == pytest.approx(2.4e-6 / 3.0e-6)
    # the GPU run has no peers: the CPU machine's peer rows are context, not a ratio
    gpu = _pick(rows, target="cuda", size=1 << 16)
    assert find_reference(gpu, rows, "arkworks") == (None, "other run")
    # FFT: natural-order reference when the op names differ
    fft = _pick(rows, system="zktensor", op="fr_fft", size=1 << 20)
    assert find_reference(fft, rows, "gnark-crypto")[0]["op"] == "fr_fft_dif_bitrev"
    fft18 = _pick(rows, system="zktensor", op="fr_fft", size=1 << 18)
    assert find_reference(fft18, rows, "gnark-crypto") == (None, "no peer")
    # multiplication compares throughput with the peer's fastest non-chain op
    mul = _pick(rows, system="zktensor", op="fr_mul_array")
    ref, _ = find_reference(mul, rows, "gnark-crypto")
    assert ref["op"] == "fr_mul_vector" and ref["_file"] == "zk_cpu.json"
    assert speed_ratio(mul, ref) == pytest.approx(((1 << 20) / 0.02) / (20_480_000 / 0.168))
    assert find_reference(mul, rows, "arkworks")[0]["op"] == "fr_mul_array"
    chain = dict(mul, op="fr_mul_chain", _op="fr_mul_chain")
    assert find_reference(chain, rows, "gnark-crypto")[0]["op"] == "fr_mul_chain"


def test_disturbed_peer_in_the_run_gives_no_ratio_even_with_a_quiet_one_elsewhere(tmp_path):
    # issue 23's case: the same run's peer row is disturbed (0 clean runs), an undisturbed
    # row of the same program exists in another run; neither may give a ratio
    n = 1 << 20
    write_results("ntt", [make_row("zktensor", "fr_fft", "bn254", n, 2, 0.287, 0.28),
                          plain_row("gnark-crypto", "fr_fft_dif_bitrev", "bn254", n, 2, 0.470, 0.46,
                                    extra="clean 0/20 runs")], CPU_MACHINE, results_dir=tmp_path)
    write_results("peers", [make_row("gnark-crypto", "fr_fft_dif_bitrev", "bn254", n, 2, 0.096, 0.095)],
                  CPU_MACHINE, results_dir=tmp_path)
    rows = _rows(tmp_path)
    zk = _pick(rows, system="zktensor")
    assert find_reference(zk, rows, "gnark-crypto") == (None, "peer disturbed")
    md = generate_report(tmp_path, plots=False).read_text()
    zk_line = next(line for line in md.splitlines() if line.startswith("| zktensor"))
    assert "— (peer disturbed)" in zk_line and "1.64" not in zk_line and "0.33" not in zk_line


@pytest.mark.parametrize("peer_extra, own_extra, why", [
    (CLEAN, CLEAN, ""),
    ("clean 3/5 runs", "clean 5/9 runs", ""),
    ("clean 15/80 runs", CLEAN, "peer disturbed"),          # most tries disturbed
    ("clean 0/20 runs", CLEAN, "peer disturbed"),
    ("others' load 0.04 cores before", CLEAN, "peer unchecked"),
    (CLEAN, "clean 2/8 runs", "disturbed"),
    (CLEAN, "", "unchecked"),
    (CLEAN, {"clean": "5/5", "window": 13}, ""),            # bench/msm.py writes a dict
    (CLEAN, {"clean": "1/6", "window": 13}, "disturbed"),
])
def test_disturbance_rule(tmp_path, peer_extra, own_extra, why):
    write_results("msm", [plain_row("zktensor", "g1_msm", "bn254", 1 << 16, 2, 0.12, 0.11, extra=own_extra),
                          plain_row("arkworks", "g1_msm", "bn254", 1 << 16, 2, 0.18, 0.17, extra=peer_extra)],
                  CPU_MACHINE, results_dir=tmp_path)
    rows = _rows(tmp_path)
    ref, got = find_reference(_pick(rows, system="zktensor"), rows, "arkworks")
    assert got == why and (ref is None) == bool(why)


def test_clean_runs_parsing():
    assert clean_runs({"extra": "random scalars; clean 10/11 runs"}) == (10, 11)
    assert clean_runs({"extra": {"clean": "5/6"}}) == (5, 6)
    assert clean_runs({"extra": "others' load 0.00 cores before"}) is None
    assert disturbance({"extra": "clean 1/2 runs"}) == "undisturbed"
    assert disturbance({"extra": "clean 1/3 runs"}) == "disturbed"
    assert disturbance({"extra": None}) == "unchecked"


def test_other_threads_and_other_workload(tmp_path):
    write_results("msm", [make_row("zktensor", "g1_msm", "bn254", 1 << 16, 1, 0.2, 0.2),
                          make_row("zktensor", "g1_msm_sparse", "bn254", 1 << 16, 2, 0.05, 0.05),
                          make_row("gnark-crypto", "g1_msm", "bn254", 1 << 16, 2, 0.13, 0.13)],
                  CPU_MACHINE, results_dir=tmp_path)
    rows = _rows(tmp_path)
    assert find_reference(_pick(rows, op="g1_msm", threads=1), rows, "gnark-crypto") == (None, "other threads")
    assert find_reference(_pick(rows, op="g1_msm_sparse"), rows, "gnark-crypto") == (None, "other workload")


def test_copied_peer_rows_keep_their_run(tmp_path):
    # bench/ntt.py --no-peers copies peers.json rows into its own file: they carry the
    # run they were measured in, so they stay context
    write_results("peers", [make_row("arkworks", "g1_msm", "bn254", 1 << 16, 2, 0.18, 0.17)],
                  CPU_MACHINE, results_dir=tmp_path)
    copied = load_all_results(tmp_path)[0]["rows"]
    assert copied[0]["run"]
    write_results("msm", [make_row("zktensor", "g1_msm", "bn254", 1 << 16, 2, 0.12, 0.11)] + copied,
                  CPU_MACHINE, results_dir=tmp_path)
    rows = [r for r in _rows(tmp_path) if r["_file"] == "msm.json"]
    assert find_reference(_pick(rows, system="zktensor"), rows, "arkworks") == (None, "other run")
    # rows of one write_results call share one run
    assert len({r["_run"] for r in _rows(tmp_path) if r["_file"] == "peers.json"}) == 1


def test_zktensor_field_names_map_to_peer_names(tmp_path):
    from bench.report import canonical_op_curve

    assert canonical_op_curve("mul_array", "bn254.fr") == ("fr_mul_array", "bn254")
    assert canonical_op_curve("mul_array", "bls12_381.fq") == ("fq_mul_array", "bls12-381")
    assert canonical_op_curve("fr_mul", "bn254.fr") == ("fr_mul", "bn254")
    assert canonical_op_curve("g1_msm", "bls12-381") == ("g1_msm", "bls12-381")
    assert canonical_op_curve("g1_msm", "mnt4753") == ("g1_msm", "mnt4-753")
    write_results("field", [make_row("zktensor", "mul_array", "bn254.fr", 1 << 20, 1, 0.01, 0.01)] + peer_rows(),
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
    # last columns: clean runs, run (R1 is peers.json: files in path order), x vs gnark-crypto,
    # x vs arkworks, machine tag (2 machines)
    assert zk20[-5:] == ["5/5", "R2", "0.75 (fr_fft_dif_bitrev)", "2.33 (fr_fft_in_place)", "M1"]
    gpu = next(v for k, v in t.items() if k.startswith("g1_msm — bn254"))
    g16 = next(c for c in gpu if c[3] == "cuda" and c[5] == "2^16")
    assert g16[-3:-1] == ["— (other run)", "— (other run)"] and g16[-1] == "M2"
    assert not (results / "plots").exists()


def test_files_without_rows_are_not_runs(tmp_path):
    (tmp_path / "ntt_aot.json").write_text('{"arch": "sm_90a", "cases": []}')
    (tmp_path / "sass.json").write_text('[{"kernel": "mul", "instructions": 416}]')   # another tool's list
    (tmp_path / "counts.json").write_text('{"rows": [{"op": "msm", "launches": 42}]}')   # rows, but not timed
    md = generate_report(tmp_path, plots=False).read_text()
    assert "No results yet." in md and not any(f in md for f in ("ntt_aot.json", "sass.json", "counts.json"))


def test_empty_results_dir(tmp_path):
    md = generate_report(tmp_path, plots=False).read_text()
    assert "No results yet." in md
    assert re.search(r"from 0 results file", md)
