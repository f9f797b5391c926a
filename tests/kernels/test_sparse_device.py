"""The Triton target's sparse product (kernels/sparse_device.py): run by the interpreter
against Python ints, and compiled ahead of time for sm_90a."""
import random

import numpy as np
import pytest
import torch

import zktensor as zt
from tests.guard import SyncGuard
from zktensor.groth16.r1cs_to_qap import SparseFr, r2_form, words_to_limbs
from zktensor.kernels import msm_triton, sparse_device

CURVES = ["bn254", "bls12_381"]


def words(vals, L):
    return np.frombuffer(b"".join(v.to_bytes(4 * L, "little") for v in vals), dtype="<u4").reshape(-1, L)


@pytest.mark.parametrize("curve", CURVES)
@pytest.mark.parametrize("strategy", ["int32", "fp64"])
def test_sparse_matvec_on_the_triton_target(curve, strategy):
    """The Triton target's product (`kernels.sparse_device`, interpreted here): one launch,
    no host read, and the Python-int sums, for rows that are empty, single, long (a block
    looping past its other rows' ends) and given out of order, with coefficients and
    witness values 0, 1 and p - 1 among random ones."""
    F = zt.field(f"{curve}.fr")
    p = F.p
    rng = random.Random(3)
    lens = [0, 1, 2, 0, 70, 3, 1] + [rng.randrange(0, 6) for _ in range(30)]
    n_rows, n_cols = len(lens), 45
    ents = [(r, rng.randrange(n_cols), rng.choice([0, 1, p - 1, rng.randrange(p)]))
            for r, k in enumerate(lens) for _ in range(k)]
    rng.shuffle(ents)
    rows, cols = (np.array([e[i] for e in ents]) for i in (0, 1))
    coef = [e[2] for e in ents]
    w = [1] + [rng.choice([0, 1, p - 1, rng.randrange(p)]) for _ in range(n_cols - 1)]
    M = SparseFr(F, rows, cols, r2_form(F, words(coef, F.limbs)), n_rows)
    want = [0] * n_rows
    for r, c, k in ents:
        want[r] = (want[r] + k * w[c]) % p
    w_std = words_to_limbs(words(w, F.limbs))
    with zt.config(target="triton", strategy=strategy):
        with SyncGuard() as guard:
            got = M.matvec(w_std)
        assert guard.triton_launches == 1 and guard.torch_ops == 0
        assert got.to_ints() == want
        # no entries at all: zeros, no launch
        empty = SparseFr(F, np.zeros(0, np.int64), np.zeros(0, np.int64),
                         torch.zeros((F.limbs, 0), dtype=torch.int32), 3)
        assert empty.matvec(w_std).to_ints() == [0, 0, 0]
    for target in ("triton", "cpu"):
        with zt.config(target=target, strategy=strategy if target == "triton" else None):
            assert M.matvec(w_std).to_ints() == want
            # out=: the middle row of a (3, n_rows) buffer full of junk (the prover's a, b, c
            # rows), written in place, its neighbours left alone
            buf = zt.FieldTensor(F, torch.full((F.limbs, 3, n_rows), -1, dtype=torch.int32))
            row = buf[1]
            assert M.matvec(w_std, out=row) is row
            assert buf[1].to_ints() == want
            assert (buf.data[:, 0] == -1).all() and (buf.data[:, 2] == -1).all()
            assert empty.matvec(w_std, out=buf[2, :3]).to_ints() == [0, 0, 0]
            with pytest.raises(ValueError, match="out must be"):
                M.matvec(w_std, out=buf[1, :-1])


@pytest.mark.parametrize("strategy", ["int32", "fp64"])
def test_aot_sm90a(strategy):
    """csr_fma compiles for sm_90a (BN254 Fr) without spills, at the block and warps it launches with."""
    from zktensor.runtime import aot
    if not aot.available():
        pytest.skip("triton wheel without ptxas/cuobjdump")
    fn = sparse_device.module(zt.field("bn254.fr"), strategy, interpret=False).csr_fma
    sig, const = sparse_device.aot_signature(fn)
    rep = aot.compile_kernel(fn, "sm_90a", sig, const, num_warps=msm_triton.num_warps(sparse_device.BLOCK))
    spills = rep["sass"].get("STL", 0) + rep["sass"].get("LDL", 0)
    assert 0 < rep["registers"] <= 255 and rep["local_bytes"] == 0 and spills == 0, rep["registers"]
