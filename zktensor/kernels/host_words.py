"""Limb words <-> Python ints on the host, without torch: the edge where compiled kernels'
outputs become the Python-int points that `algebra` combines.

    ints(words)                       # (m, L) uint32 little-endian words -> [int] * m
    limbs(words)                      # -> (L, m) int32 limb-major data, the kernels' layout
    xyzz_to_affine(G, words)          # (4d, m, L) XYZZ Montgomery words -> affine points
    affine_table(G, points)           # affine points -> an MSM table of them and their negatives

A leaf (numpy only), shared by the tensor front end (`point_formulas.to_host`) and the
prover without torch (`groth16.numpy_prover`).
"""
from __future__ import annotations

import numpy as np


def ints(words: np.ndarray) -> list[int]:
    """The integers of (m, L) 32-bit little-endian words (any 32-bit dtype)."""
    w = np.ascontiguousarray(words).view(np.uint32)
    n = 4 * w.shape[1]
    raw = w.tobytes()
    return [int.from_bytes(raw[i * n:(i + 1) * n], "little") for i in range(w.shape[0])]


def words(values, L: int) -> np.ndarray:
    """(m, L) uint32 words of ints in [0, 2^(32·L))."""
    raw = b"".join(int(v).to_bytes(4 * L, "little") for v in values)
    return np.frombuffer(raw, dtype="<u4").reshape(-1, L).copy()


def limbs(w: np.ndarray) -> np.ndarray:
    """(n, L) little-endian words (a file's layout) -> (L, n) int32 limb-major data (a copy)."""
    return np.ascontiguousarray(np.asarray(w, dtype="<u4").T).view(np.int32)


def mont_limbs(F, values) -> np.ndarray:
    """Python ints in [0, p) -> their Montgomery form (R = 2^(32·L)) as (L, m) int32 limbs.
    F: a field's record (or a field space)."""
    P = getattr(F, "params", F)
    return limbs(words([v * P.R % P.p for v in values], P.limbs32))


def xyzz_to_affine(G, w: np.ndarray) -> list:
    """Affine Python-int points (None: the identity) of XYZZ data as (K = 4d, m, L) 32-bit
    Montgomery words (component block k: X, Y, ZZ, ZZZ, each d coordinates): x = X/ZZ,
    y = Y/ZZZ with one inversion in all (`batch_inverse`). G: the group's record
    (`algebra.curves`)."""
    d, F, p = G.degree, G.F, G.p
    K, m, L = w.shape
    r_inv = G.fq.R_inv
    vals = [v * r_inv % p for v in ints(w.reshape(K * m, L))]

    def coord(k, i):          # component block k (X, Y, ZZ, ZZZ) of point i
        c = [vals[(k * d + j) * m + i] for j in range(d)]
        return c[0] if d == 1 else tuple(c)
    live = [i for i in range(m) if coord(2, i) not in (0, (0, 0))]
    out = [None] * m
    for i, t in zip(live, batch_inverse(F, [F.mul(coord(2, i), coord(3, i)) for i in live])):
        out[i] = (F.mul(coord(0, i), F.mul(t, coord(3, i))),      # 1/ZZ = t·ZZZ
                  F.mul(coord(1, i), F.mul(t, coord(2, i))))      # 1/ZZZ = t·ZZ
    return out


def batch_inverse(F, xs: list) -> list:
    """[1/x for x in xs] (all nonzero) with one inversion (Montgomery's trick): on Python
    ints an inversion costs many products, and this trick spends three per element."""
    if not xs:
        return []
    prefix, acc = [], F.one
    for x in xs:
        prefix.append(acc)
        acc = F.mul(acc, x)
    inv = F.inv(acc)
    out = [None] * len(xs)
    for i in range(len(xs) - 1, -1, -1):
        out[i] = F.mul(inv, prefix[i])
        inv = F.mul(inv, xs[i])
    return out


def affine_table(G, points) -> tuple[np.ndarray, int]:
    """(table, neg_off): affine Python-int points (None: the identity) as the point-major
    table that the MSM kernels read (`msm_small_cpu.lane_sums`): (2m, 2d·L) int32
    Montgomery words, x's d coordinates then y's, the m points and then their negatives
    (neg_off = m); the identity is all-zero words. G: the group's record (`algebra.curves`)."""
    d, p, L = G.degree, G.p, G.fq.limbs32
    rows = []
    for sign in (1, -1):
        for P in points:
            if P is None:
                rows.append([0] * 2 * d)
                continue
            x, y = (P[0], P[1]) if d > 1 else ((P[0],), (P[1],))
            rows.append([*x, *(sign * c % p for c in y)])
    flat = [v * G.fq.R % p for row in rows for v in row]
    return np.ascontiguousarray(words(flat, L).reshape(len(rows), 2 * d * L).view(np.int32)), len(points)


__all__ = ["ints", "words", "limbs", "mont_limbs", "xyzz_to_affine", "affine_table"]
