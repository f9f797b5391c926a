"""The Triton NTT is sync-free and copies nothing it need not: after its tables exist, a
transform reads nothing back and launches one kernel per pass, plus one gather only where
the order asks for it (a DIF to natural order, a DIT to bit-reversed order).

On CPU tensors under the Triton interpreter (the device's stand-in), each of ntt, intt
(with its 1/N constant), coset ntt/intt, the bit-reversed orders and the prover's pair
(intt to bit-reversed order, coset ntt from it) runs under the sync guard (tests/guard.py:
no .item(), bool(t), .cpu(), .tolist(), numpy, no copy to the host; torch operations that
compute are counted) and gives the CPU target's words exactly.
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
         pytest.param("intt", {"output_order": "bitrev"}, id="intt-bitrev-out"),
         pytest.param("ntt", {"coset": 5, "input_order": "bitrev"}, id="ntt-coset-bitrev-in"),
         pytest.param("ntt", {}, id="ntt", marks=slow), pytest.param("intt", {"coset": 5}, id="intt-coset", marks=slow),
         pytest.param("ntt", {"output_order": "bitrev"}, id="ntt-bitrev-out", marks=slow),
         pytest.param("intt", {"input_order": "bitrev"}, id="intt-bitrev-in", marks=slow),
         pytest.param("ntt", {"input_order": "bitrev", "output_order": "bitrev"}, id="ntt-bitrev-both",
                      marks=slow)]


def _gathers(kw) -> int:
    """1 where the passes leave the other order than asked: DIF (natural input) ends
    bit-reversed, DIT (bit-reversed input) natural."""
    return int((kw.get("input_order") == "bitrev") == (kw.get("output_order") == "bitrev"))


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
    assert g.ops == ["aten::index_select"] * _gathers(kw), g.ops


@pytest.mark.parametrize("kw", [{}, {"output_order": "bitrev"}], ids=["gather", "no-gather"])
def test_triton_ntt_writes_into_out(kw):
    """`out=` (itself or a separate tensor) takes the result where the kernels or the gather
    write it: no copy after them. The input is untouched unless it is `out`."""
    F = zt.field("bn254.fr")
    x = F.random((2, 8), generator=torch.Generator().manual_seed(6))
    with zt.config(target="cpu"):
        want = zt.ntt(x, coset=5, **kw)
    with zt.config(target="triton", strategy="int32"):
        zt.ntt(x, coset=5, **kw)
        keep = x.data.clone()
        out = F.zeros((2, 8))
        with SyncGuard() as g:
            got = zt.ntt(x, coset=5, out=out, **kw)
        assert got is out and torch.equal(out.data, want.data) and torch.equal(x.data, keep)
        assert g.ops == ["aten::index_select"] * _gathers(kw), g.ops
        with SyncGuard() as g:
            zt.ntt(x, coset=5, out=x, **kw)
        assert torch.equal(x.data, want.data)
        assert g.ops == ["aten::index_select"] * _gathers(kw), g.ops
