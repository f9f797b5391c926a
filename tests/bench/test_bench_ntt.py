"""bench/ntt.py's prover pair (`h_pair`, and `h_pair_natural` for its A/B) runs on the CPU
and gives a row per op; an op it does not know is named, not a KeyError mid-run."""
import pytest

from bench import ntt as bench_ntt


def test_pair_ops_run(capsys):
    assert bench_ntt.main(["--ops", "h_pair,h_pair_natural", "--log-sizes", "6", "--runs", "1",
                           "--no-peers", "--quiet-wait", "0", "--no-save"]) == 0
    out = capsys.readouterr().out
    assert "h_pair " in out and "h_pair_natural" in out


def test_unknown_op_is_named(capsys):
    with pytest.raises(SystemExit):
        bench_ntt.main(["--ops", "fr_fft,h_pairs", "--no-save"])
    assert "unknown h_pairs" in capsys.readouterr().err


def test_pair_cases_are_the_prover_pairs_kernels():
    """`--aot` compiles what the pair launches at 2^20: 7 passes each way, distinct
    kernels once; N^-1 (a constant) on the inverse's last pass only, the coset table on
    the coset transform's first pass only."""
    from zktensor.kernels.ntt_triton import schedule
    from zktensor.ops.ntt import DEFAULT_CONFIG
    cases = bench_ntt.pair_cases(20)
    assert len(cases) == len(set(cases))
    for dit in (False, True):
        passes = schedule(20, 3 << 20, dit, DEFAULT_CONFIG)
        mine = [c for c in cases if c[5] == dit]
        assert {(c[2], c[3], c[4]) for c in mine} == {(p.log_r, p.C, p.Q) for p in passes}
    assert [c[7] for c in cases if c[7]] == [2] and [c[6] for c in cases if c[6]] == [1]
    first_dit = schedule(20, 3 << 20, True, DEFAULT_CONFIG)[0]
    assert ("bn254.fr", "fp64", first_dit.log_r, first_dit.C, first_dit.Q, True, 1, 0) in cases
