"""The counting sort's compiled loops (`kernels.msm_place`): bucket counts and placements
against a Python loop over ints."""
from __future__ import annotations

import numpy as np
import pytest


def _place_oracle(digits, cols, width, start, pos, size, off=None):
    """msm_place.place as a Python loop over ints."""
    dst = [None] * size
    cnt = {v + 1: int(start[v]) for v in range(len(start))}
    for d, col in zip(digits.tolist(), cols.tolist()):
        v = abs(d)
        if v:
            rank = cnt[v]
            cnt[v] += 1
            at = (int(off[rank]) if off is not None else rank) + int(pos[v - 1])
            dst[at] = col + (width if d < 0 else 0)
    return dst


@pytest.mark.parametrize("ranked", [True, False])
def test_bucket_place_matches_python_loop(ranked):
    """The counting sort's compiled loops (`msm_place`) against a Python loop: counts of
    every bucket with the extreme digits +-N and zeros, and each entry placed by its rank
    from a nonzero start (a later piece of a row) through `off` (rank-major) or flat."""
    from zktensor.kernels import msm_place
    if not msm_place.available():
        pytest.skip(f"no compiled loops: {msm_place.LOOPS.error}")
    rng = np.random.default_rng(5)
    N, m, width = 16, 500, 1000
    digits = rng.integers(-N, N + 1, m).astype(np.int32)
    digits[:4] = [N, -N, 0, 0]
    cols = rng.integers(0, width, m).astype(np.int64)
    cnt = msm_place.count(digits, N)
    assert cnt.tolist() == [sum(abs(int(d)) == v for d in digits) for v in range(N + 1)]
    start = rng.integers(0, 3, N).astype(np.int64)
    ranks = start + cnt[1:]                       # a bucket's ranks end below this
    if ranked:
        R = int(ranks.max())
        off = np.arange(R, dtype=np.int64) * N    # rank-major: block t holds rank t of every bucket
        pos = rng.permutation(N).astype(np.int64)
        size = R * N
    else:
        off = None
        pos = np.concatenate([[0], np.cumsum(ranks)[:-1]]).astype(np.int64)
        size = int(ranks.sum())
    dst = np.full(size, -1, dtype=np.int64)
    msm_place.place(digits, cols, width, start, pos, dst, off)
    want = _place_oracle(digits, cols, width, start, pos, size, off)
    assert dst.tolist() == [-1 if w is None else w for w in want]
    with pytest.raises(ValueError, match="contiguous int32"):
        msm_place.place(digits.astype(np.int64), cols, width, start, pos, dst, off)
    with pytest.raises(ValueError, match="499 columns"):
        msm_place.place(digits, cols[1:], width, start, pos, dst, off)
