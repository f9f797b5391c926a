"""The Triton NTT's launches are counted by `runtime.counters` (a profile's POLY nodes count
their NTT passes): one kernel per pass, as the independent guard (tests/guard.py) sees them."""
import torch

import zktensor as zt
from tests.guard import SyncGuard
from zktensor.runtime import counters


def test_ntt_passes_are_counted():
    F = zt.field("bn254.fr")
    x = F.random((2, 8), generator=torch.Generator().manual_seed(4))
    with zt.config(target="triton", strategy="int32"):
        with SyncGuard() as g, counters.record() as c:
            zt.ntt(x)
    assert g.triton_launches > 0
    assert c.kernels == g.triton_launches and c.syncs == 0


def test_odd_batch_of_small_transforms():
    """Three transforms of 4 points (the prover's intt_abc on a tiny circuit): tiles of a
    power of two rows that cover all of them; the CPU target's words."""
    F = zt.field("bn254.fr")
    x = F.random((3, 4), generator=torch.Generator().manual_seed(5))
    with zt.config(target="cpu"):
        want = zt.intt(x)
    with zt.config(target="triton", strategy="int32"):
        got = zt.intt(x)
    assert torch.equal(got.data, want.data)
