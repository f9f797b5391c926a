"""Parsing of the peer programs' CSV output (no cargo or go needed)."""

import pytest

from bench.peers import PeerResult, parse_peer_line, parse_peer_output, split_system

# Lines in the exact formats that ../shared/peers/{arkworks,gnark} print.
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
