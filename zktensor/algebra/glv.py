"""The GLV endomorphism of a group, as data: phi(x, y) = (beta·x, y) = lambda·(x, y).

On a curve y^2 = x^3 + b over Fq with q = 1 mod 3 (BN254 and BLS12-381: j-invariant 0),
and on its sextic twist over Fq2 that carries G2, a cube root of unity beta in Fq maps a
point to another point, and on the subgroup of order r that map is multiplication by a
cube root of unity lambda mod r (Gallant,
Lambert, Vanstone, CRYPTO 2001). A scalar k is then k1 + lambda·k2 (mod r) with k1 and k2
about sqrt(r) in size, so an MSM of n points and full-width scalars becomes one of 2n
points (P_i and phi(P_i)) and half-width scalars: half the windows, and, on the device,
half the doublings of the window combination, its longest chain.

Here everything is Python ints, computed from the group record: beta and lambda as the
cube roots of unity whose pairing holds on the generator, a short basis of the lattice
{(a, b): a + lambda·b = 0 mod r} (extended Euclid on r and lambda, stopped at sqrt(r)),
and Babai's rounding as fixed-point constants for the device's split
(`kernels.glv_split`):

    c1 = round(k·b2 / det),  c2 = round(-k·b1 / det)      (det = a1·b2 - a2·b1 = ±r)
    k1 = k - c1·a1 - c2·a2,  k2 = -c1·b1 - c2·b2

with each c_i computed as (k·g_i + 2^(m-1)) >> m, g_i = round(±b·2^m / det), so that
|c_i - exact| <= 1/2 + 2^-34 and |k1|, |k2| stay below 2^bits (`bits`, checked here).

    e = endomorphism(group("bn254.g1"))       # None for a group without one
    e.beta, e.lam, e.bits                     # ..., 127
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

M_BITS = 288        # fixed-point bits of Babai's constants: at most 2^-34 of error for k < 2^255


@dataclass(frozen=True)
class Endomorphism:
    name: str
    beta: int                   # in Fq: phi(x, y) = (beta·x, y)
    lam: int                    # in Fr: phi(P) = lam·P on the subgroup
    v1: tuple[int, int]         # (a1, b1): a1 + lam·b1 = 0 mod r
    v2: tuple[int, int]         # (a2, b2)
    g1: int                     # round(b2·2^m / det)  (signed)
    g2: int                     # round(-b1·2^m / det) (signed)
    m: int
    bits: int                   # |k1|, |k2| < 2^bits for every k in [0, r)
    r: int


def _cube_roots_of_unity(p: int) -> list[int]:
    """The two primitive cube roots of unity mod a prime p = 1 mod 3."""
    for g in range(2, 1000):
        w = pow(g, (p - 1) // 3, p)
        if w != 1:
            return [w, w * w % p]
    raise ValueError("no cube root of unity found")       # pragma: no cover (p = 1 mod 3 has them)


def short_basis(r: int, lam: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """Two short vectors (a, b) with a + lam·b = 0 mod r spanning that lattice: the
    extended Euclidean algorithm on (r, lam) stopped at the first remainder below sqrt(r)
    (GLV's section 4)."""
    s = math.isqrt(r)
    r0, r1, t0, t1 = r, lam, 0, 1          # invariant: r_i = t_i·lam (mod r)
    while r1 >= s:
        q = r0 // r1
        r0, r1, t0, t1 = r1, r0 - q * r1, t1, t0 - q * t1
    q = r0 // r1
    r2, t2 = r0 - q * r1, t0 - q * t1
    v1 = (r1, -t1)
    v2 = min((r0, -t0), (r2, -t2), key=lambda v: v[0] * v[0] + v[1] * v[1])
    return v1, v2


def phi(G, P, beta: int):
    """(beta·x, y) of a Python-int point of the record G (G2: beta in Fq scales both of x's
    components); None (the identity) stays None."""
    if P is None:
        return None
    x, y = P
    q = G.p
    return (tuple(beta * c % q for c in x) if G.degree == 2 else beta * x % q, y)


@functools.lru_cache(maxsize=None)
def endomorphism(name: str) -> Endomorphism | None:
    """The GLV data of the group named `name`, or None: a group of a curve with a = 0 (over
    Fq, or its sextic twist over Fq2, where a cube root of unity in Fq acts the same way) and
    q = r = 1 mod 3: BN254's and BLS12-381's G1 and G2; not MNT4-753 (a = 2)."""
    from .curves import _mul, group
    G = group(name)
    if G.degree not in (1, 2) or G.a not in (0, (0, 0)) or G.p % 3 != 1 or G.r % 3 != 1:
        return None
    q, r = G.p, G.r
    pairs = [(beta, lam) for beta in _cube_roots_of_unity(q) for lam in _cube_roots_of_unity(r)
             if _mul(G, G.generator, lam) == phi(G, G.generator, beta)]
    if len(pairs) != 2:         # (beta, lam) and (beta^2, lam^2): phi and phi^2
        raise ValueError(f"{name}: the cube roots of unity pair as {len(pairs)} maps on the generator, not 2")
    beta, lam = min(pairs, key=lambda bl: bl[1])
    (a1, b1), (a2, b2) = v1, v2 = short_basis(r, lam)
    for a, b in (v1, v2):
        if (a + lam * b) % r:
            raise ValueError(f"{name}: ({a}, {b}) is not in the lattice")
    det = a1 * b2 - a2 * b1
    if abs(det) != r:
        raise ValueError(f"{name}: the basis spans a lattice of determinant {det}, not ±r")

    def fixed(num: int) -> int:            # round(num·2^m / det), exactly, any signs
        n, d = num << M_BITS, det
        if d < 0:
            n, d = -n, -d
        return (2 * n + d) // (2 * d)
    # |c_i - exact| <= 1/2 (c_i's rounding) + k·(1/2)/2^m (g_i's, k < 2^255): at most 1/2 + 2^-34
    err = (1 << 34) + 2                     # (1/2 + 2^-34) as a fraction of 2^35
    bound = max((abs(a1) + abs(a2)) * err, (abs(b1) + abs(b2)) * err) >> 35
    return Endomorphism(name=name, beta=beta, lam=lam, v1=v1, v2=v2, g1=fixed(b2), g2=fixed(-b1),
                        m=M_BITS, bits=(bound + 1).bit_length(), r=r)


__all__ = ["Endomorphism", "endomorphism", "phi", "short_basis", "M_BITS"]
