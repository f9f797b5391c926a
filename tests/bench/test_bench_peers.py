"""Parsing of the peer programs' CSV output (no cargo or go needed)."""

import pytest

from bench.peers import PeerResult, parse_peer_line, parse_peer_output, split_system

# Lines in the formats that bench/peers/{arkworks,gnark} print.
GNARK_OUT = """\
# GOMAXPROCS = 2, NumCPU = 2, go1.26.8
system,op,curve,size,threads,runs,min_ms,median_ms,extra
gnark-crypto-v0.22.0,fr_mul_chain,bn254,20000000,1,5,335.112,336.001,16.76 ns/mul; 59.7 Mmul/s; clean 5/5 runs
gnark-crypto-v0.22.0,fr_mul_array,bn254,20480000,1,5,300.000,301.500,14.65 ns/mul; 68.3 Mmul/s; a[i].Mul(&a[i],&b[i]); clean 5/5 runs
gnark-crypto-v0.22.0,fr_mul_vector,bn254,20480000,1,4,167.900,168.200,8.20 ns/mul; 122.0 Mmul/s; fr.Vector.Mul (AVX-512 IFMA path when CPU has it); clean 4/6 runs
gnark-crypto-v0.22.0,g1_msm,bn254,65536,2,10,158.100,160.400,random scalars; affine bases; NbTasks=4; clean 10/10 runs
gnark-crypto-v0.22.0,g1_msm,bn254,65536,1,5,301.000,302.000,random scalars; affine bases; GOMAXPROCS=1 NbTasks=1; clean 5/5 runs
gnark-crypto-v0.22.0,fr_fft_dif_bitrev,bn254,1048576,2,5,98.000,99.100,Domain.FFT(DIF)+BitReverse: natural in and out (as arkworks fft_in_place); clean 5/5 runs
"""

ARK_OUT = """\
# rayon threads = 2 (set RAYON_NUM_THREADS)
system,op,curve,size,threads,runs,min_ms,median_ms,extra
arkworks-0.6,fr_mul_chain,bn254,20000000,1,5,389.000,390.000,19.45 ns/mul; 51.4 Mmul/s; clean 5/5 runs
arkworks-0.6,g1_msm,bls12-381,262144,2,0,900.000,910.000,random scalars; affine bases; clean 0/20 runs
arkworks-0.6,fr_fft_in_place,bn254,65536,2,20,15.500,15.700,Radix2EvaluationDomain; clean 20/20 runs
"""


def test_split_system():
    assert split_system("gnark-crypto-v0.22.0") == ("gnark-crypto", "v0.22.0")
    assert split_system("arkworks-0.6") == ("arkworks", "0.6")
    assert split_system("weird") == ("weird", "")


def test_skips_comments_and_header():
    assert parse_peer_line("# rayon threads = 2") is None
    assert parse_peer_line("system,op,curve,size,threads,runs,min_ms,median_ms,extra") is None
    assert parse_peer_line("   ") is None


def test_parse_gnark_output():
    rs = parse_peer_output(GNARK_OUT)
    assert len(rs) == 6
    assert all(isinstance(r, PeerResult) for r in rs)
    assert {r.system for r in rs} == {"gnark-crypto"}
    assert rs[0].version == "v0.22.0"
    chain = rs[0]
    assert (chain.op, chain.curve, chain.size, chain.threads, chain.runs) == ("fr_mul_chain", "bn254", 20000000, 1, 5)
    assert chain.min_ms == pytest.approx(335.112) and chain.median_ms == pytest.approx(336.001)
    assert chain.median_s == pytest.approx(0.336001)
    # extra contains a comma: it must stay whole
    arr = rs[1]
    assert "a[i].Mul(&a[i],&b[i])" in arr.extra
    assert arr.clean == 5 and arr.tried == 5
    vec = rs[2]
    assert (vec.clean, vec.tried, vec.runs) == (4, 6, 4)
    assert [r.threads for r in rs if r.op == "g1_msm"] == [2, 1]
    assert rs[5].group == "fr_fft"


def test_parse_arkworks_output_and_rows():
    rs = parse_peer_output(ARK_OUT)
    assert [r.op for r in rs] == ["fr_mul_chain", "g1_msm", "fr_fft_in_place"]
    assert rs[1].curve == "bls12-381" and rs[1].size == 262144 and rs[1].clean == 0 and rs[1].tried == 20
    row = rs[0].to_row()
    assert row["system"] == "arkworks" and row["version"] == "0.6"
    assert row["field_or_curve"] == "bn254" and row["target"] == "cpu"
    assert row["median_s"] == pytest.approx(0.390) and row["min_s"] == pytest.approx(0.389)
    assert row["unit"] == "mul/s"
    assert row["unit_value"] == pytest.approx(20000000 / 0.390)
    assert rs[1].to_row()["unit"] == "points/s"
    assert rs[2].to_row()["unit"] == "elements/s"


def test_bad_line_raises():
    with pytest.raises(ValueError):
        parse_peer_line("gnark-crypto-v0.22.0,fr_mul_chain,bn254")
    with pytest.raises(ValueError):
        parse_peer_line("gnark-crypto-v0.22.0,fr_mul_chain,bn254,x,1,5,1.0,2.0,extra")


def test_is_clean():
    from bench.peers import is_clean

    rs = {r.op + str(r.size) + str(r.threads): r for r in parse_peer_output(GNARK_OUT + ARK_OUT)}
    assert is_clean(rs["fr_mul_chain200000001"])  # 5/5
    assert is_clean(rs["fr_mul_vector204800001"])  # 4/6
    assert not is_clean(rs["g1_msm2621442"])  # 0/20


def test_run_plan_retries_disturbed_ops(monkeypatch):
    import bench.peers as peers

    attempts = []
    outputs = [
        "gnark-crypto-v0.22.0,g1_msm,bn254,65536,2,1,150.0,160.0,x; clean 1/40 runs\n"
        "gnark-crypto-v0.22.0,g1_msm,bn254,4096,2,20,9.0,9.5,x; clean 20/20 runs\n",
        "gnark-crypto-v0.22.0,g1_msm,bn254,65536,2,10,140.0,145.0,x; clean 10/12 runs\n"
        "gnark-crypto-v0.22.0,g1_msm,bn254,4096,2,3,12.0,13.0,x; clean 3/80 runs\n",
    ]

    def fake_run_peer(p, op, threads, **kw):
        attempts.append((p, op, threads))
        return parse_peer_output(outputs[len(attempts) - 1])

    monkeypatch.setattr(peers, "build_peer", lambda p, **kw: None)
    monkeypatch.setattr(peers, "run_peer", fake_run_peer)
    saved = []
    res = peers.run_plan(["gnark"], [("msm", 2)], retries=2, on_done=saved.append)
    assert attempts == [("gnark", "msm", 2)] * 2  # second attempt clean enough
    by_size = {r.size: r for r in res}
    assert by_size[65536].clean == 10  # better second attempt kept
    assert by_size[4096].clean == 20  # better first attempt kept
    assert len(saved) == 1 and len(saved[0]) == 2


def test_save_peer_results_merge(tmp_path):
    from bench.common import read_results
    from bench.peers import save_peer_results

    from bench_synthetic import CPU_MACHINE

    first = parse_peer_output(GNARK_OUT)
    save_peer_results(first, "peers", results_dir=tmp_path, machine=dict(CPU_MACHINE))
    newer = parse_peer_output(
        "gnark-crypto-v0.22.0,g1_msm,bn254,65536,2,10,100.0,101.0,again; clean 10/10 runs\n")
    p = save_peer_results(newer, "peers", results_dir=tmp_path, merge=True,
                          machine=dict(CPU_MACHINE, date="2026-11-22T00:00:00+00:00"))
    rows = read_results(p)["rows"]
    assert len(rows) == len(first)  # one replaced, none added
    msm = [r for r in rows if r["op"] == "g1_msm" and r["threads"] == 2]
    assert len(msm) == 1 and msm[0]["median_s"] == pytest.approx(0.101)
    assert msm[0]["measured"].startswith("2026-11-22")
    # a file from another machine is not merged into
    other = dict(CPU_MACHINE, hostname="elsewhere")
    rows = read_results(save_peer_results(newer, "peers", results_dir=tmp_path, merge=True, machine=other))["rows"]
    assert len(rows) == 1


def test_peer_programs_live_in_the_repository():
    """bench.peers builds the programs under bench/peers/ (pinned by their lock files),
    and every op they print is one the report knows how to compare."""
    import re
    from pathlib import Path

    from bench.common import OP_GROUPS, op_group
    from bench.peers import PEERS, peers_dir

    root = Path(__file__).resolve().parents[2]
    assert peers_dir() == root / "bench" / "peers"
    expect = {"arkworks": ("Cargo.toml", "Cargo.lock", ".cargo/config.toml", "src/main.rs"),
              "gnark": ("go.mod", "go.sum", "main.go")}
    for name, spec in PEERS.items():
        for f in expect[name]:
            assert (peers_dir() / spec.subdir / f).is_file(), f
    src = (peers_dir() / "arkworks" / "src" / "main.rs").read_text() + (peers_dir() / "gnark" / "main.go").read_text()
    ops = set(re.findall(r'report\((?:&format!\()?"(\w+)"', src)) | \
        {f"{p}_mul_{k}" for p in re.findall(r'bench_mul::<[^>]+>\("(\w+)"', src) for k in ("chain", "array")}
    assert {"g1_msm", "fr_fft_in_place", "fr_fft_dif", "fr_fft_dif_bitrev", "fr_mul_vector",
            "fr_mul_chain", "fq_mul_array"} <= ops
    assert all(op_group(op) in OP_GROUPS for op in ops)
