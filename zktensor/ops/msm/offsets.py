"""Bucket offsets: one pseudo-random multiple of the generator per bucket, so that no
bucket is empty and no two partial sums are equal by construction (see the package
docstring, step 4); their total is cancelled through the generator's scalar."""
from __future__ import annotations

from ...points import GroupSpace, scalar_mul


# -- bucket offsets ---------------------------------------------------------------------------

_offsets: dict = {}
_offset_scalars: dict = {}


def bucket_offsets(GS: GroupSpace, c: int, chunks: int, device):
    """Offset points U_v = s_v·g (v = 1..N, g the generator), one per bucket, and
    sum_v v·s_v mod r. s_v = a_j + b_k for v - 1 = k·Lc + j with a (Lc values) and b
    (K values) drawn once per process from a CSPRNG: U costs Lc + K scalar
    multiplications and one batched addition, and its points obey no linear relation
    with small coefficients that the bucket reduction could meet (so empty buckets,
    which would otherwise all be equal, are not). The scalars are drawn per (r, c, K),
    so groups of one scalar field (G1 and G2) get the same total and their prepared bases
    can share an `MSMPlan` (whose generator digits cancel it); the points are cached per
    (group, c, K, device)."""
    key = (GS.name, c, chunks, str(device))
    if key not in _offsets:
        N = 1 << (c - 1)
        K = chunks
        Lc = N // K
        a, b, total = _offset_draw(GS.r, c, K)
        g = GS.generator((Lc + K,), device=device)
        ab = scalar_mul(g, a + b)
        U = ab[:Lc].reshape(1, Lc) + ab[Lc:].reshape(K, 1)        # (K, Lc): U[k, j]
        xy, inf = U.reshape(N).affine()
        if bool(inf.any()):   # probability ~N/r
            raise AssertionError("bucket offset is the identity")
        _offsets[key] = (xy, total)
    return _offsets[key]


def _offset_draw(r: int, c: int, K: int):
    """(a, b, sum_v v·s_v mod r) of `bucket_offsets`, drawn once per (r, c, K)."""
    key = (r, c, K)
    if key not in _offset_scalars:
        import secrets
        Lc = (1 << (c - 1)) // K
        a = [secrets.randbelow(r) for _ in range(Lc)]
        b = [secrets.randbelow(r) for _ in range(K)]
        total = sum((k * Lc + j + 1) * (a[j] + b[k]) for k in range(K) for j in range(Lc)) % r
        _offset_scalars[key] = (a, b, total)
    return _offset_scalars[key]
