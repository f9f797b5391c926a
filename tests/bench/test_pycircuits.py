"""bench/pycircuits.py: the bench's circuits without circom, written as .r1cs/.wtns files that
zktensor's readers take, every constraint satisfied by the witness (Python ints) and a
wrong witness value caught; the sizes of bench/groth16.py's circom shapes."""
from __future__ import annotations

import pytest

from bench.groth16 import shape, shape_bits
from bench.pycircuits import circuit
from zktensor.groth16.formats import read_r1cs, read_wtns
from zktensor.groth16.setup import domain_power


@pytest.mark.parametrize("kind", ["bench", "bits"])
def test_written_circuit_is_satisfied(tmp_path, kind):
    k = 9
    c = circuit(k, kind)
    c.write(tmp_path / "c.r1cs", tmp_path / "w.wtns")
    rc = read_r1cs(tmp_path / "c.r1cs")
    w = read_wtns(tmp_path / "w.wtns")
    values = list(w)
    assert (rc.n_wires, rc.n_constraints) == (c.n_wires, c.n_constraints) and values == c.witness
    assert rc.first_unsatisfied(values) is None
    if kind == "bench":
        nchain, nrange = shape(k)
        assert (rc.n_pub_out, rc.n_pub_in, rc.n_prv_in) == (1, 1, nrange)
        assert rc.n_constraints == nchain + nrange * 33 + 2
        assert values[2] == 3                                        # x, the public input
    else:
        nwords, rounds = shape_bits(k)
        assert (rc.n_pub_out, rc.n_pub_in, rc.n_prv_in) == (1, 0, nwords)
        assert rc.n_constraints == nwords * 33 + 32 * (rounds + 1) + 1
    assert domain_power(rc.n_constraints, rc.n_public) == k            # the bench's 2^k domain
    for i in (rc.n_wires - 1, rc.n_public + 1):
        bad = list(values)
        bad[i] ^= 1
        assert rc.first_unsatisfied(bad) is not None
