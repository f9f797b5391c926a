"""py_ecc as an oracle: conversion between our point tuples and py_ecc's objects, py_ecc's
pairing, and snarkjs's printed form of a pairing value from py_ecc's.

py_ecc (the Ethereum Foundation's pure-Python pairing library) represents
* in ``py_ecc.bn128`` / ``py_ecc.bls12_381``: affine points ``(x, y)`` of FQ or
  FQ2 objects, ``None`` for infinity;
* in ``py_ecc.optimized_bn128`` / ``py_ecc.optimized_bls12_381``: homogeneous
  projective triples ``(X, Y, Z)`` (affine x = X/Z, y = Y/Z), Z = 0 for infinity.
An FQ2 element's ``.coeffs`` are (c0, c1) for c0 + c1·u with u^2 = -1, which is
our order.
"""
from __future__ import annotations

import functools
import importlib
from types import SimpleNamespace

from zktensor.algebra import field

_MODULES = {"bn254": "bn128", "bls12_381": "bls12_381"}


def module(G, optimized: bool = False):
    """The py_ecc module for G's curve (``py_ecc.bn128``, ``py_ecc.optimized_bls12_381``, ...)."""
    if G.curve not in _MODULES:
        raise ValueError(f"py_ecc has no {G.curve}")
    return importlib.import_module("py_ecc." + ("optimized_" if optimized else "") + _MODULES[G.curve])


def _coord(G, c):
    if G.degree == 1:
        return int(c)
    c0, c1 = c.coeffs
    return (int(c0), int(c1))


def from_py_ecc(G, P):
    """Our affine tuple (or None) from a py_ecc point of either flavour."""
    if P is None:
        return None
    if len(P) == 3:  # optimized: projective
        if P[2] == P[2].zero():
            return None
        x, y = P[0] / P[2], P[1] / P[2]
    else:
        x, y = P
    return (_coord(G, x), _coord(G, y))


def to_py_ecc(G, P, optimized: bool = False):
    """A py_ecc point of the chosen flavour from our affine tuple (or None)."""
    m = module(G, optimized)
    FQ = m.FQ if G.degree == 1 else m.FQ2
    wrap = (lambda c: FQ(c)) if G.degree == 1 else (lambda c: FQ(list(c)))
    if P is None:
        if not optimized:
            return None
        return (FQ.one(), FQ.one(), FQ.zero())
    x, y = wrap(P[0]), wrap(P[1])
    return (x, y, FQ.one()) if optimized else (x, y)


# -- py_ecc's optimized modules and pairing (by curve name) ---------------------------
#
# The Miller loop and the final exponentiation are separate there, so a product of pairings
# costs one final exponentiation: e(P1, Q1)·…·e(Pn, Qn) = FE(ML(P1, Q1)·…·ML(Pn, Qn)).
_XI0 = {"bn254": 9, "bls12_381": 1}  # xi = xi0 + u, the Fq6 non-residue


@functools.lru_cache(maxsize=None)
def pyecc(curve: str) -> SimpleNamespace:
    """py_ecc's optimized curve and pairing for ``curve`` (imported on first use)."""
    name = _MODULES[curve]
    mod = importlib.import_module(f"py_ecc.optimized_{name}")
    pairing_mod = importlib.import_module(f"py_ecc.optimized_{name}.optimized_pairing")
    fields = importlib.import_module("py_ecc.fields")
    return SimpleNamespace(
        FQ=getattr(fields, f"optimized_{name}_FQ"), FQ2=getattr(fields, f"optimized_{name}_FQ2"),
        FQ12=getattr(fields, f"optimized_{name}_FQ12"), add=mod.add, multiply=mod.multiply,
        neg=mod.neg, normalize=mod.normalize, is_inf=mod.is_inf, Z1=mod.Z1,
        miller_loop=functools.partial(pairing_mod.pairing, final_exponentiate=False),
        final_exponentiate=pairing_mod.final_exponentiate)


def g1_to_pyecc(curve: str, P):
    m = pyecc(curve)
    if P is None:
        return m.Z1
    return (m.FQ(P[0]), m.FQ(P[1]), m.FQ.one())


def g2_to_pyecc(curve: str, Q):
    m = pyecc(curve)
    if Q is None:
        return (m.FQ2.one(), m.FQ2.one(), m.FQ2.zero())
    return (m.FQ2(list(Q[0])), m.FQ2(list(Q[1])), m.FQ2.one())


def g1_from_pyecc(curve: str, P):
    m = pyecc(curve)
    if m.is_inf(P):
        return None
    x, y = m.normalize(P)
    return (int(x), int(y))


def g2_from_pyecc(curve: str, Q):
    m = pyecc(curve)
    if m.is_inf(Q):
        return None
    x, y = m.normalize(Q)
    return (tuple(int(c) for c in x.coeffs), tuple(int(c) for c in y.coeffs))


def miller_product(curve: str, pairs):
    """prod ML(P, Q) over (P, Q) pairs of py_ecc points (G1, G2), before the final
    exponentiation."""
    m = pyecc(curve)
    f = m.FQ12.one()
    for P, Q in pairs:
        f = f * m.miller_loop(Q, P)
    return f


def pairing_product(curve: str, pairs):
    """prod e(P, Q) with a single final exponentiation (py_ecc's pairing)."""
    return pyecc(curve).final_exponentiate(miller_product(curve, pairs))


def pairing(curve: str, P, Q):
    """e(P, Q) for Python-int affine points (py_ecc's pairing)."""
    return pairing_product(curve, [(g1_to_pyecc(curve, P), g2_to_pyecc(curve, Q))])


# -- snarkjs's layout of a pairing value (see zktensor/groth16/formats/gt.py) ---------------
#
# py_ecc's FQ12 is Fq[w]/(w^12 - 2·xi0·w^6 + xi0^2 + 1), with the same w as ffjavascript's
# tower: v = w^2 and u = w^6 - xi0, so snarkjs's c_ij·v^j·w^i contributes a - xi0·b to the
# coefficient of w^(2j+i) and b to that of w^(2j+i+6). The exponent lambda is computed here
# from a seed solved from q, not read from the curve records.


@functools.lru_cache(maxsize=None)
def bn_seed(q: int) -> int:
    """The BN parameter x with q = 36x^4 + 36x^3 + 24x^2 + 6x + 1 (solved, not pasted)."""
    x = _iroot(q // 36, 4)
    for cand in range(x - 2, x + 3):
        if 36 * cand**4 + 36 * cand**3 + 24 * cand**2 + 6 * cand + 1 == q:
            return cand
    raise ArithmeticError("q is not a BN prime")


def _iroot(n: int, k: int) -> int:
    x = 1 << -(-n.bit_length() // k)  # >= the root
    while True:
        y = ((k - 1) * x + n // x ** (k - 1)) // k
        if y >= x:
            return x
        x = y


def snarkjs_lambda(curve: str) -> int:
    """snarkjs's exponent over py_ecc's pairing, mod r (BN254: 2x(6x^2 + 3x + 1); BLS12-381: -3)."""
    r = field(f"{curve}.fr").p
    if curve == "bn254":
        x = bn_seed(field("bn254.fq").p)
        return 2 * x * (6 * x * x + 3 * x + 1) % r
    if curve == "bls12_381":
        return -3 % r
    raise ValueError(f"no snarkjs pairing for {curve}")


def gt_to_snarkjs(curve: str, f) -> tuple:
    """A py_ecc pairing value as snarkjs prints it: ((c00, c01, c02), (c10, c11, c12)),
    c_ij = (a, b) ints; raises f to snarkjs's lambda first."""
    g = f ** snarkjs_lambda(curve)
    c = [int(v) for v in g.coeffs]
    p, xi0 = field(f"{curve}.fq").p, _XI0[curve]
    return tuple(tuple(((c[2 * j + i] + xi0 * c[2 * j + i + 6]) % p, c[2 * j + i + 6])
                       for j in range(3)) for i in range(2))


def gt_from_snarkjs(curve: str, t) -> object:
    """The inverse of the basis change in ``gt_to_snarkjs`` (not of the exponent): an
    FQ12 in py_ecc's basis equal to snarkjs's element."""
    p, xi0 = field(f"{curve}.fq").p, _XI0[curve]
    c = [0] * 12
    for i in range(2):
        for j in range(3):
            a, b = t[i][j]
            c[2 * j + i] = (c[2 * j + i] + a - xi0 * b) % p
            c[2 * j + i + 6] = (c[2 * j + i + 6] + b) % p
    return pyecc(curve).FQ12(c)
