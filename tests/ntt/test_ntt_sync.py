"""The Triton NTT is sync-free: after its tables exist, a transform reads nothing back.

On CPU tensors under the Triton interpreter (the device's stand-in), each of ntt, intt
(with its 1/N constant), coset ntt/intt and the bit-reversed orders runs under the
sync guard (tests/guard.py: no .item(), bool(t), .cpu(), .tolist(), numpy, no copy to
the host) with one launch per pass plus the final gather, and gives the CPU target's
words exactly.
"""
import pytest
import torch

import zktensor as zt
from tests.guard import SyncGuard
from zktensor.kernels.ntt_triton import schedule
from zktensor.ops.ntt import DEFAULT_CONFIG

# an interpreted pass costs seconds: the 1/N constant and the coset table by default, the rest slow
slow = pytest.mark.slow
CALLS = [pytest.param("intt", {}, id="intt"), pytest.param("ntt", {"coset": 5}, id="ntt-coset"),
         pytest.param("ntt", {}, id="ntt", marks=slow), pytest.param("intt", {"coset": 5}, id="intt-coset", marks=slow),
         pytest.param("ntt", {"output_order": "bitrev"}, id="ntt-bitrev-out", marks=slow),
         pytest.param("intt", {"input_order": "bitrev"}, id="intt-bitrev-in", marks=slow)]


@pytest.mark.parametrize("fn,kw", CALLS)
def test_triton_ntt_has_no_host_reads(fn, kw):
    F = zt.field("bn254.fr")
    n = 8
    x = F.random((2, n), generator=torch.Generator().manual_seed(3))
    op = getattr(zt, fn)
    with zt.config(target="cpu"):
        want = op(x, **kw)
    with zt.config(target="triton", strategy="int32"):
        op(x, **kw)                               # tables and kernels, made once
        with SyncGuard() as g:
            got = op(x, **kw)
    assert torch.equal(got.data, want.data)
    passes = len(schedule(3, 2 * n, kw.get("input_order") == "bitrev", DEFAULT_CONFIG))
    assert g.triton_launches == passes
    assert g.launches <= passes + 4, g.launches
