"""Conversion between our point tuples and py_ecc's objects, for cross-checks.

py_ecc (the Ethereum Foundation's pure-Python pairing library) represents
* in ``py_ecc.bn128`` / ``py_ecc.bls12_381``: affine points ``(x, y)`` of FQ or
  FQ2 objects, ``None`` for infinity;
* in ``py_ecc.optimized_bn128`` / ``py_ecc.optimized_bls12_381``: homogeneous
  projective triples ``(X, Y, Z)`` (affine x = X/Z, y = Y/Z), Z = 0 for infinity.
An FQ2 element's ``.coeffs`` are (c0, c1) for c0 + c1·u with u^2 = -1, which is
our order.
"""
from __future__ import annotations

import importlib

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
