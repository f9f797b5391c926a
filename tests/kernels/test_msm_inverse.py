"""The blocked batch inversion (`kernels.msm_inverse`) against pow on Python ints."""
import pytest
import torch

import zktensor as zt

from tests.field.values import sample


@pytest.mark.parametrize("block", [2, 3, 4])
def test_blocked_batch_inverse_levels(block):
    """The MSM's blocked batch inversion over several levels, with and without padding, and
    of a strided view (on the CPU the levels launch by operand addresses), against pow."""
    from zktensor.kernels.msm_inverse import batch_inverse
    F = zt.field("bn254.fq")
    for n in (17, 100, 257, 1000):
        xs = [x or 1 for x in sample(F.p, n, n)]
        inv = batch_inverse(F, F.tensor(xs).data, block)
        assert zt.FieldTensor(F, inv).to_ints() == [pow(x, -1, F.p) for x in xs]
    wide = torch.zeros((F.limbs, 2 * n), dtype=torch.int32)       # every other column: a strided view
    wide[:, ::2] = F.tensor(xs).data
    inv = batch_inverse(F, wide[:, ::2], block)
    assert zt.FieldTensor(F, inv).to_ints() == [pow(x, -1, F.p) for x in xs]


def test_blocked_batch_inverse_on_triton():
    """The same levels launched as Triton kernels (the interpreter on CPU tensors), where
    run_many takes tensor views, not addresses: 34 values, so the block products (17) are
    padded with ones in place before their level."""
    from zktensor.kernels.msm_inverse import batch_inverse
    F = zt.field("bn254.fq")
    xs = [x or 1 for x in sample(F.p, 34, 5)]
    with zt.config(target="triton"):
        inv = batch_inverse(F, F.tensor(xs).data, 2)
    assert zt.FieldTensor(F, inv).to_ints() == [pow(x, -1, F.p) for x in xs]
