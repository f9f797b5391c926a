"""Montgomery conversions by torch integer operations (`kernels.mont_torch`), against Python
ints: every field, reduced values and any word pattern, in chunks and any batch shape."""
import random

import pytest
import torch

import zktensor as zt
from zktensor.algebra import FIELD_NAMES
from zktensor.kernels import mont_torch

from tests.field.values import sample


@pytest.mark.parametrize("name", FIELD_NAMES)
def test_mont_torch_matches_python_ints(name):
    F = zt.field(name)
    p, L = F.p, F.limbs
    vals = sample(p, 64, seed=7)
    words = torch.tensor([[(v >> (32 * j)) & 0xFFFFFFFF for v in vals] for j in range(L)],
                         dtype=torch.int64).to(torch.int32)
    R = pow(2, 32 * L, p)
    mont = mont_torch.to_mont(words, p)
    as_int = lambda t: [sum((int(t[j, i]) & 0xFFFFFFFF) << (32 * j) for j in range(L))  # noqa: E731
                        for i in range(t.shape[1])]
    assert as_int(mont) == [v * R % p for v in vals]
    assert as_int(mont_torch.from_mont(mont, p)) == vals
    # any word pattern below 2^(32L), not only reduced values: the product is still reduced
    rng = random.Random(3)
    raw = [rng.randrange(1 << (32 * L)) for _ in range(32)] + [(1 << (32 * L)) - 1]
    w = torch.tensor([[(v >> (32 * j)) & 0xFFFFFFFF for v in raw] for j in range(L)],
                     dtype=torch.int64).to(torch.int32)
    c = rng.randrange(p)
    assert as_int(mont_torch.mont_mul_const(w, c, p)) == [x * c * pow(R, -1, p) % p for x in raw]


def test_mont_torch_chunks_and_shapes(monkeypatch):
    F = zt.field("bn254.fr")
    rng = random.Random(1)
    vals = [rng.randrange(F.p) for _ in range(24)]
    x = F.tensor(vals).data.reshape(F.limbs, 4, 6)
    whole = mont_torch.from_mont(x, F.p)
    monkeypatch.setattr(mont_torch, "CHUNK", 5)           # 24 columns in passes of 5
    parts = mont_torch.from_mont(x, F.p)
    assert parts.shape == x.shape and torch.equal(parts, whole)
    got = [sum((int(parts.reshape(F.limbs, -1)[j, i]) & 0xFFFFFFFF) << (32 * j) for j in range(F.limbs))
           for i in range(24)]
    assert got == vals
