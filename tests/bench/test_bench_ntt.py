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
