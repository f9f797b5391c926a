"""The .r1cs and .wtns files: read back by zktensor's strict readers, iden3 layout (wire 0 = 1,
outputs, public inputs, private inputs), factors sorted by wire without repeats."""
import numpy as np
import torch

import zktensor.zkml as zk
from zktensor.groth16.formats import read_r1cs, read_wtns
from zkml_models import CNN, Residual, with_bn_stats


def test_r1cs_and_wtns_round_trip(tmp_path):
    torch.manual_seed(12)
    # a residual add makes LCs that name the same wire twice: merged in the file
    for m, shape in ((Residual(), (1, 8)), (with_bn_stats(CNN()), (1, 1, 8, 8))):
        c = zk.compile(m, torch.zeros(shape), input_scale=4, input_visibility="private")
        c.save_r1cs(tmp_path / "c.r1cs")
        r = read_r1cs(tmp_path / "c.r1cs")
        assert (r.n_wires, r.n_constraints) == (c.num_wires, c.num_constraints)
        assert (r.n_pub_out, r.n_pub_in, r.n_prv_in) == (c.counts["output"], 0, c.counts["private_input"])
        mem = c.r1cs()
        for M, N in ((r.A, mem.A), (r.B, mem.B), (r.C, mem.C)):
            assert np.array_equal(M.rows, N.rows) and np.array_equal(M.cols, N.cols)
            assert np.array_equal(M.coeff_words, N.coeff_words)
            key = M.rows.astype(np.int64) * (1 << 32) + M.cols
            assert np.all(np.diff(key) > 0)                      # sorted by row, then wire; no repeats
        x = torch.rand(shape[1:]) * 3
        c.save_witness(x, tmp_path / "c.wtns")
        w = read_wtns(tmp_path / "c.wtns")
        assert w.values == c.witness(x)
        assert w.values[0] == 1
        ints, _ = c.output(x)
        n_out = c.counts["output"]
        assert [v if v < zk.circuit.P // 2 else v - zk.circuit.P for v in w.values[1:1 + n_out]] == \
            ints.reshape(-1).tolist()
        assert r.first_unsatisfied(w.values) is None


def test_lazy_package_attribute():
    import zktensor as zt
    assert zt.zkml.compile is zk.compile and zt.zkml.verify is zk.verify
