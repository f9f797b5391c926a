"""The compiled column gathers (`kernels.cpu_gather`) against torch's indexing."""
from __future__ import annotations

import numpy as np
import pytest
import torch


def test_gather_cols(monkeypatch):
    """`cpu_gather.gather_cols` against torch's indexing: columns [lo, hi) of a few blocks
    with a ragged end (not a multiple of the 8 lanes), repeated and descending indices, from
    a point-major table into a strided view; the columns outside [lo, hi) untouched; bad
    arguments refused."""
    from zktensor.kernels import cpu_gather
    if not cpu_gather.available():
        pytest.skip(f"no compiled gather: {cpu_gather.LOOPS.error}")
    monkeypatch.setattr(cpu_gather, "BLOCK", 16)
    g = torch.Generator().manual_seed(7)
    t = torch.randint(-2**31, 2**31 - 1, (12, 97), dtype=torch.int32, generator=g)
    idx = np.concatenate([np.arange(96, -1, -1), np.full(5, 40), np.arange(0, 97, 3)]).astype(np.int64)
    table = t.T.contiguous().numpy()
    wide = np.zeros((12, len(idx) + 6), dtype=np.int32)
    lo, hi = 3, len(idx) - 2
    cpu_gather.gather_cols(table, idx, wide[:, 2:2 + len(idx)], lo, hi)
    want = t[:, torch.from_numpy(idx)].numpy()
    assert np.array_equal(wide[:, 2 + lo:2 + hi], want[:, lo:hi])
    assert not wide[:, :2 + lo].any() and not wide[:, 2 + hi:].any()
    with pytest.raises(ValueError, match="int64 indices"):
        cpu_gather.gather_cols(table, idx.astype(np.int32), wide, 0, 4)
    with pytest.raises(ValueError, match="outside"):
        cpu_gather.gather_cols(table, idx, wide, 0, len(idx) + 1)
    with pytest.raises(ValueError, match="unit column stride"):
        cpu_gather.gather_cols(table, idx, wide[:, ::2], 0, 4)
