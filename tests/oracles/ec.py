"""Elliptic-curve oracle: affine point arithmetic with Python ints over Fq and Fq2.

Points use the representation of ``zktensor.algebra.curves``: a G1 point is
``(x, y)``, a G2 point ``((x0, x1), (y0, y1))``, and ``None`` is the identity.
Every function takes the group record ``G`` (for q, a, the degree and Fq2's
beta) first. The formulas are the textbook chord-and-tangent ones on
y^2 = x^3 + a·x + b, with every special case spelled out; scalar
multiplication is plain double-and-add over the bits of k (no reduction of k
mod r, so k = r and k > r are exercised as given).
"""
from __future__ import annotations

from . import field as ff


# -- coordinate arithmetic: Fq (ints) or Fq2 (pairs), chosen by G.degree -----------


def _beta(G) -> int:
    from zktensor.algebra.towers import tower  # data only: u^2 = beta
    return tower(G.tower).beta


def _add(G, a, b):
    return ff.add(a, b, G.p) if G.degree == 1 else ff.fq2_add(a, b, G.p)


def _sub(G, a, b):
    return ff.sub(a, b, G.p) if G.degree == 1 else ff.fq2_sub(a, b, G.p)


def _mul(G, a, b):
    return ff.mul(a, b, G.p) if G.degree == 1 else ff.fq2_mul(a, b, G.p, _beta(G))


def _small(G, k: int, a):
    """k · a for a small integer k."""
    return ff.mul(a, k, G.p) if G.degree == 1 else ff.fq2_scale(a, k, G.p)


def _inv(G, a):
    return ff.inv(a, G.p) if G.degree == 1 else ff.fq2_inv(a, G.p, _beta(G))


def _fneg(G, a):
    return ff.neg(a, G.p) if G.degree == 1 else ff.fq2_neg(a, G.p)


def _zero(G):
    return 0 if G.degree == 1 else (0, 0)


# -- points -----------------------------------------------------------------------


def on_curve(G, P) -> bool:
    """P is None or y^2 == x^3 + a x + b (coordinates taken as given, mod q)."""
    if P is None:
        return True
    x, y = P
    lhs = _mul(G, y, y)
    rhs = _add(G, _add(G, _mul(G, _mul(G, x, x), x), _mul(G, G.a, x)), G.b)
    return lhs == rhs


def neg(G, P):
    """-P = (x, -y); -O = O."""
    if P is None:
        return None
    x, y = P
    return (x, _fneg(G, y))


def double(G, P):
    """2P by the tangent rule; 2·O = O and 2P = O when y = 0."""
    if P is None:
        return None
    x, y = P
    if y == _zero(G):
        return None
    # lambda = (3 x^2 + a) / (2 y)
    lam = _mul(G, _add(G, _small(G, 3, _mul(G, x, x)), G.a), _inv(G, _small(G, 2, y)))
    x3 = _sub(G, _sub(G, _mul(G, lam, lam), x), x)
    y3 = _sub(G, _mul(G, lam, _sub(G, x, x3)), y)
    return (x3, y3)


def add(G, P, Q):
    """P + Q by the chord rule, with the cases O + Q, P + O, P + P, P + (-P)."""
    if P is None:
        return Q
    if Q is None:
        return P
    x1, y1 = P
    x2, y2 = Q
    if x1 == x2:
        if y1 == y2:
            return double(G, P)
        return None  # same x, different y: Q = -P
    # lambda = (y2 - y1) / (x2 - x1)
    lam = _mul(G, _sub(G, y2, y1), _inv(G, _sub(G, x2, x1)))
    x3 = _sub(G, _sub(G, _mul(G, lam, lam), x1), x2)
    y3 = _sub(G, _mul(G, lam, _sub(G, x1, x3)), y1)
    return (x3, y3)


def sub(G, P, Q):
    return add(G, P, neg(G, Q))


def mul(G, P, k: int):
    """k·P by left-to-right double-and-add over the bits of |k|; a negative k negates P."""
    if k < 0:
        return mul(G, neg(G, P), -k)
    result = None
    for bit in bin(k)[2:]:
        result = double(G, result)
        if bit == "1":
            result = add(G, result, P)
    return result


def msm(G, points, scalars):
    """sum_i scalars[i] · points[i], one scalar multiplication at a time."""
    points, scalars = list(points), list(scalars)
    if len(points) != len(scalars):
        raise ValueError(f"msm: {len(points)} points but {len(scalars)} scalars")
    total = None
    for P, k in zip(points, scalars):
        total = add(G, total, mul(G, P, k))
    return total
